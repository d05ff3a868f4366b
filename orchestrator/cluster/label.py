"""``go19 label --ray``: many KataGo engines, one Ray actor each, one label folder.

The driver (this process) owns the :class:`~orchestrator.label.store.LabelWriter`, so the
folder, ``labels.json``, ``--resume`` and the shards are exactly the single-engine path's.
Games are handed out earliest first, up to ``max_in_flight`` per engine; each actor is an
:class:`~orchestrator.cluster.label_actor.EngineActor` running go19's own label client.

Faults: an actor that dies (killed, its node lost) loses only its games in flight: they go
back to the queue in their place and a new actor takes the slot; after ``max_restarts``
replacements of one slot in a row with no game finished there, the run stops with
:class:`LabelRunError`. Finished games stay written whatever happens (the caller flushes).

Progress: the bar advances by a game's positions when it is written; every ``interval``
seconds a line gives each engine's positions/s and the total, polled from the actors.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from orchestrator.cluster.label_actor import EngineActor, EngineSpec, GameOutcome
from orchestrator.label.games import LabelGame
from orchestrator.label.run import LabelRun, LabelRunError, Reporter, RunOptions, RunResult
from orchestrator.label.store import LabelWriter


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
    seen: int = 0  # the actor's answered positions at the last poll
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
    game: LabelGame


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
        plan = LabelRun(self.writer, None, self.options, self.reporter)  # type: ignore[arg-type]
        todo = plan._plan(games)  # the single-engine path's own accounting (resume, void)
        self.result.already = plan.result.already
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
            slot.line_time = time.monotonic()
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
        slot.line_time = time.monotonic()

    def _loop(self, ray: Any, remote: Any, todo: list[LabelGame]) -> None:
        queue = list(enumerate(todo))  # a heap: earliest game first, lost games in place
        sent: dict[Any, _Sent] = {}
        last_line = time.monotonic()
        while queue or sent:
            while queue:  # the next game to the least busy engine: few games spread too
                slot = min(self.slots, key=lambda s: s.in_flight)
                if slot.in_flight >= self.options.max_in_flight:
                    break
                order, game = heapq.heappop(queue)
                sent[slot.actor.label.remote(order, game)] = _Sent(
                    slot.index, slot.generation, order, game)
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
                    heapq.heappush(queue, (item.order, item.game))
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
                    slot.finished += item.game.positions
                self._write(item.game, outcome)
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
            raise LabelRunError(f"engine {slot.index} died {slot.replaced} times in a row "
                                f"without finishing a game; last: {first}")
        self.result.restarts += 1
        self.reporter.message(f"engine {slot.index} on {slot.node or '?'} lost ({first}); "
                              "its games go back to the queue; starting a new one")
        self._start_actor(remote, slot)

    def _write(self, game: LabelGame, outcome: GameOutcome) -> None:
        for line in outcome.messages:
            self.reporter.message(line)
        if outcome.arrays is None:
            self.result.errors += 1
            self.writer.record(game, "error", "katago", outcome.error, outcome.warnings)
        else:
            self.writer.add(game, outcome.arrays, outcome.warnings)
            self.result.labelled += 1
            self.result.positions += game.positions
        self.reporter.advance(game.positions)
        self.reporter.game_done(game)

    def _poll(self, ray: Any) -> None:
        """Each actor's answered positions: one call per actor at a time, read when it has
        come back (a loaded node answers late; a dead one never)."""
        for slot in self.slots:
            if slot.polling is None:
                slot.polling = slot.actor.positions.remote()
        pending = {s.polling: s for s in self.slots}
        ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0)
        for ref in ready:
            slot = pending[ref]
            slot.polling = None
            try:
                slot.seen = ray.get(ref)
            except ray.exceptions.RayError:
                continue  # its label calls say it died

    def rates_line(self) -> str:
        """Each engine's positions/s since the last line, and their sum."""
        now = time.monotonic()
        rates = []
        for slot in self.slots:
            rates.append(max(slot.seen - slot.line_seen, 0) / max(now - slot.line_time, 1e-9))
            slot.line_seen, slot.line_time = slot.seen, now
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


def _why(error: BaseException) -> str:
    """One line from a Ray error: the go19 error inside it if there is one."""
    text = str(error)
    for line in text.splitlines():
        if "LabelRunError: " in line:
            return line.split("LabelRunError: ", 1)[1].strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__
