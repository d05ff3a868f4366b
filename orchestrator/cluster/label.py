"""``go19 label --ray``: many KataGo engines, one Ray actor each, one label folder.

The driver (this process) owns the :class:`~orchestrator.label.store.LabelWriter`, so the
folder, ``labels.json``, ``--resume`` and the shards are exactly the single-engine path's.
Games are handed out earliest first, up to ``max_in_flight`` per engine; each actor is an
:class:`~orchestrator.cluster.label_actor.EngineActor` running go19's own label client.
As the queue drains, games go out in pieces (runs of their rows) of at most the queued
positions / (2 x the pieces in flight over all engines), so that pieces shrink towards the
end and the engines finish together (guided self-scheduling): with whole games, one engine
idles while another answers the rest of its last game. Early on, and on a long queue
always, a piece is the whole game. The driver puts a game's pieces together and writes the
game when its last piece is back.

Faults: an actor that dies (killed, its node lost) loses only its pieces in flight: they go
back to the queue in their place and a new actor takes the slot; after ``max_restarts``
replacements of one slot in a row with no game finished there, the run stops with
:class:`LabelRunError`. Finished games stay written whatever happens (the caller flushes).

Progress: the bar advances by a piece's positions when it is back; every ``interval``
seconds a line gives each engine's positions/s and the total, polled from the actors.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from orchestrator.cluster.label_actor import EngineActor, EngineSpec, PieceOutcome
from orchestrator.label.games import LabelGame
from orchestrator.label.run import LabelRunError, Reporter, RunOptions, RunResult, plan
from orchestrator.label.store import LabelWriter, empty_labels
from orchestrator.words import plural


@dataclass(frozen=True, slots=True)
class ClusterOptions:
    engines: int = 1
    gpus_per_engine: float = 0.0
    cpus_per_engine: float = 1.0
    interval: float = 10.0  # seconds between per-engine rate lines


@dataclass
class _Slot:
    index: int
    actor: Any = None
    generation: int = 0
    in_flight: int = 0
    replaced: int = 0  # replacements in a row with no game finished in between
    seen: int = 0  # the actor's answered positions at the last poll, and when it came
    seen_at: float = 0.0
    finished: int = 0  # positions of the games this actor returned
    polling: Any = None  # the positions() call not yet answered
    line_seen: int = 0  # ``seen`` and the time at the last rate line
    line_time: float = 0.0
    node: str = ""


@dataclass
class _Sent:
    slot: int
    generation: int
    order: int
    rows: range


@dataclass
class _Open:
    """A game with pieces out: its arrays filled as they come back."""

    game: LabelGame
    arrays: dict[str, np.ndarray]
    left: int  # rows not yet back
    warnings: set[str] = field(default_factory=set)
    failed: bool = False  # KataGo refused one of its pieces: the game is an error
    error: str | None = None  # the first refusal's detail and line
    error_line: str | None = None


@dataclass
class RayLabelRun:
    """One run over Ray; ``result`` says how far it got, also after an error."""

    writer: LabelWriter
    spec: EngineSpec
    options: RunOptions
    cluster: ClusterOptions
    reporter: Reporter
    watch: Callable[[RayLabelRun], None] | None = None  # called once per loop (tests)
    result: RunResult = field(default_factory=RunResult)
    slots: list[_Slot] = field(default_factory=list)
    _polled: float = 0.0  # when the last round of positions() calls went out

    def run(self, ray: Any, games: Sequence[LabelGame]) -> RunResult:
        started = time.monotonic()
        try:
            self._run(ray, games)
        finally:
            self.result.seconds = time.monotonic() - started
            self._close(ray)
        return self.result

    # -- state the tests wait for -------------------------------------------------------

    def in_flight(self, slot: int) -> int:
        return self.slots[slot].in_flight

    def answered(self, slot: int) -> int:
        """Positions the slot's current actor has answered (at the last poll)."""
        return self.slots[slot].seen

    def finished(self, slot: int) -> int:
        """Positions of the games the slot's current actor has returned."""
        return self.slots[slot].finished

    # -- the loop -------------------------------------------------------------------------

    def _run(self, ray: Any, games: Sequence[LabelGame]) -> None:
        # The single-engine path's own accounting (resume, void).
        todo, self.result.already = plan(self.writer, games, self.options.ownership,
                                         self.options.review)
        self.result.games = len(todo)
        self.reporter.start(len(todo), sum(g.positions for g in todo))
        if not todo:
            return
        remote = ray.remote(EngineActor)
        self.slots = [_Slot(i) for i in range(min(self.cluster.engines, len(todo)))]
        self._check_resources(ray, len(self.slots))
        for slot in self.slots:
            self._start_actor(remote, slot)
        try:
            first = ray.get([s.actor.info.remote() for s in self.slots])
        except ray.exceptions.RayError as exc:
            raise LabelRunError(f"KataGo engines did not start: {_why(exc)}") from None
        self.writer.set_engine(first[0])
        self.result.engine = first[0]
        for slot in self.slots:
            slot.node = ray.get(slot.actor.node.remote())
            slot.line_time = slot.seen_at = time.monotonic()
            self.reporter.engine_started(slot.index)
        ready_at = time.monotonic()
        try:
            self._loop(ray, remote, todo)
        finally:
            self.result.querying_seconds = time.monotonic() - ready_at

    def _check_resources(self, ray: Any, engines: int) -> None:
        """Engines the cluster cannot hold would wait for ever: say so instead."""
        have = ray.cluster_resources()
        for what, each in (("CPU", self.cluster.cpus_per_engine),
                           ("GPU", self.cluster.gpus_per_engine)):
            need = engines * each
            if need > have.get(what, 0) + 1e-9:
                raise LabelRunError(
                    f"{engines} engines x {each:g} {what} need {need:g} {what}s; the Ray "
                    f"cluster has {have.get(what, 0):g} (fewer --engines, or less "
                    f"--{what.lower()}s-per-engine)")

    def _start_actor(self, remote: Any, slot: _Slot) -> None:
        limit = self.options.max_in_flight
        slot.actor = remote.options(
            num_cpus=self.cluster.cpus_per_engine, num_gpus=self.cluster.gpus_per_engine,
            max_concurrency=limit + 4, max_restarts=0,
        ).remote(slot.index, self.spec, self.options)
        slot.generation += 1
        slot.in_flight = 0
        slot.seen = slot.finished = slot.line_seen = 0
        slot.polling = None
        slot.line_time = slot.seen_at = time.monotonic()

    def _loop(self, ray: Any, remote: Any, todo: list[LabelGame]) -> None:
        # A heap of (order, first row, end row): earliest game first, lost pieces in place.
        queue = [(order, 0, game.positions) for order, game in enumerate(todo)]
        queued = sum(game.positions for game in todo)
        pieces = 2 * len(self.slots) * self.options.max_in_flight
        open_games: dict[int, _Open] = {}
        sent: dict[Any, _Sent] = {}
        last_line = time.monotonic()
        while queue or sent:
            while queue:  # the next piece to the least busy engine: few games spread too
                slot = min(self.slots, key=lambda s: s.in_flight)
                if slot.in_flight >= self.options.max_in_flight:
                    break
                order, rows = next_piece(queue, queued, pieces)
                queued -= len(rows)
                game = todo[order]
                if order not in open_games:
                    open_games[order] = _Open(game, empty_labels(
                        game, self.options.ownership, self.options.review), game.positions)
                sent[slot.actor.label.remote(order, game, rows)] = _Sent(
                    slot.index, slot.generation, order, rows)
                slot.in_flight += 1
            done, _ = ray.wait(list(sent), num_returns=1, timeout=min(1.0, self.cluster.interval))
            for ref in done:
                item = sent.pop(ref)
                slot = self.slots[item.slot]
                if item.generation == slot.generation:
                    slot.in_flight -= 1
                try:
                    outcome = ray.get(ref)
                except ray.exceptions.RayActorError as exc:
                    heapq.heappush(queue, (item.order, item.rows.start, item.rows.stop))
                    queued += len(item.rows)
                    if item.generation == slot.generation:
                        self._replace(remote, slot, exc)
                    continue
                except ray.exceptions.RayTaskError as exc:
                    cause = getattr(exc, "cause", None)
                    if isinstance(cause, LabelRunError):
                        raise LabelRunError(str(cause)) from None
                    raise
                slot.replaced = 0
                if item.generation == slot.generation:
                    slot.finished += len(item.rows)
                piece_of = open_games[item.order]
                self._piece_back(piece_of, item.rows, outcome)
                if not piece_of.left:
                    del open_games[item.order]
                    self._write(piece_of)
            self._poll(ray)
            if time.monotonic() - last_line >= self.cluster.interval:
                last_line = time.monotonic()
                self.reporter.message(self.rates_line())
            if self.watch is not None:
                self.watch(self)

    def _replace(self, remote: Any, slot: _Slot, death: Exception) -> None:
        slot.replaced += 1
        first = _why(death)
        if slot.replaced > self.options.max_restarts:
            raise LabelRunError(f"engine {slot.index} died {plural(slot.replaced, 'time')} in "
                                "a row without finishing a game or a piece of one; last: "
                                f"{first}")
        self.result.restarts += 1
        self.reporter.message(f"engine {slot.index} on {slot.node or '?'} lost ({first}); "
                              "its games in flight go back to the queue; starting a new one")
        self._start_actor(remote, slot)

    def _piece_back(self, game: _Open, rows: range, outcome: PieceOutcome) -> None:
        game.left -= len(rows)
        game.warnings.update(outcome.warnings)
        if outcome.arrays is None:
            if not game.failed:  # the first error of the game, as one engine reports it
                game.failed, game.error = True, outcome.error
                game.error_line = next((line for line in outcome.messages
                                        if line.startswith("error: ")), None)
        elif not game.failed:
            for name, values in outcome.arrays.items():
                game.arrays[name][rows.start:rows.stop] = values
        self.reporter.advance(len(rows))

    def _write(self, done: _Open) -> None:
        """A game whose last piece is back, written (and its lines said) as
        :meth:`LabelRun._label` would for the whole game."""
        game = done.game
        if done.failed:
            if done.error_line is not None:
                self.reporter.message(done.error_line)
            self.result.errors += 1
            self.writer.record(game, "error", "katago", done.error, done.warnings)
        else:
            if done.warnings:
                self.reporter.message(
                    f"warning: {game.where}: KataGo: {'; '.join(sorted(done.warnings))}")
            self.writer.add(game, done.arrays, done.warnings)
            self.result.labelled += 1
            self.result.positions += game.positions
        self.reporter.game_done(game)

    def _poll(self, ray: Any) -> None:
        """Each actor's answered positions: one call per actor at a time, read when it has
        come back (a loaded node answers late; a dead one never). A round every half
        interval is all the rate lines need; with a ``watch`` (tests wait on
        :meth:`answered`), a round per loop."""
        now = time.monotonic()
        if self.watch is not None or now - self._polled >= self.cluster.interval / 2:
            self._polled = now
            for slot in self.slots:
                if slot.polling is None:
                    slot.polling = slot.actor.positions.remote()
        pending = {s.polling: s for s in self.slots if s.polling is not None}
        if not pending:
            return
        ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0)
        for ref in ready:
            slot = pending[ref]
            slot.polling = None
            try:
                slot.seen, slot.seen_at = ray.get(ref), time.monotonic()
            except ray.exceptions.RayError:
                continue  # its label calls say it died

    def rates_line(self) -> str:
        """Each engine's positions/s between its last two polls a line apart, and their
        sum."""
        rates = []
        for slot in self.slots:
            rates.append(max(slot.seen - slot.line_seen, 0)
                         / max(slot.seen_at - slot.line_time, 1e-9))
            slot.line_seen, slot.line_time = slot.seen, slot.seen_at
        parts = ", ".join(f"#{s.index} {rate:.2f}" for s, rate in zip(self.slots, rates,
                                                                       strict=True))
        return f"engines (positions/s): {parts}; total {sum(rates):.2f}"

    def _close(self, ray: Any) -> None:
        for slot in self.slots:
            if slot.actor is None:
                continue
            try:
                ray.get(slot.actor.close.remote(), timeout=30)
            except Exception:
                pass  # dead or slow: killing it is all that is left
            ray.kill(slot.actor)


def next_piece(queue: list[tuple[int, int, int]], queued: int, pieces: int) -> tuple[int, range]:
    """The earliest piece of ``queue`` (a heap of (order, first row, end row)), at most
    ``queued / pieces`` rows (rounded up), what is left of it put back: guided
    self-scheduling, pieces shrinking as the ``queued`` positions drain."""
    order, start, stop = heapq.heappop(queue)
    size = max(1, -(-queued // pieces))
    if stop - start > size:
        heapq.heappush(queue, (order, start + size, stop))
        stop = start + size
    return order, range(start, stop)


def _why(error: BaseException) -> str:
    """One line from a Ray error: the go19 error inside it if there is one."""
    text = str(error)
    for line in text.splitlines():
        if "LabelRunError: " in line:
            return line.split("LabelRunError: ", 1)[1].strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__
