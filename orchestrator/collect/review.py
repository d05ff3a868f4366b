"""``collect --review``: KataGo engines beside the games, labelling each recorded game into
``RUN_DIR/labels`` (the label folder of ``go19 review``: the same settings, so ``go19 review
--labels`` and ``go19 review --resume`` take it as it is) and keeping the running move
quality (:mod:`orchestrator.quality.running`).

The games never wait for it. A recorded game goes into a bounded queue without blocking
(``send_nowait``); when the queue is full the game is left for a resume, said in one line.
The KataGo processes run at the lowest priority (nice 19), so that on a machine with few
cores the games keep theirs; on one with cores to spare KataGo takes them.
A reviewer slower than the games falls behind, which the dashboard
shows (``review 12 games behind``); when the games are over the run waits for the review to
finish the queue (a Ctrl-C stops it there, keeping every game labelled so far).

Each game's labels are written as soon as it is labelled (one shard, then the manifest,
both atomic: :class:`~orchestrator.label.store.LabelWriter` with no buffering), off the
loop in a worker thread, as is reading its SGF and the running numbers' bootstrap. A
resumed run (``--resume --review``) queues its recorded games that the folder lacks and
counts the labelled ones in the quality line.

KataGo faults are ``go19 label``'s. The engines start before the first game: one that does
not is a preflight failure (one line, exit 3, a new run folder removed), and their start-up
(the net loaded) never competes with the games. One that dies, or stays silent past its
deadline (``timeout`` seconds per visit, :mod:`orchestrator.label.engine`), is restarted
with every game it had in flight asked again, and after ``max_restarts`` deaths in a row
without a labelled game the review stops in one line naming the games left, while the
collection goes on. Every recorded game is labelled, not labelled (one line), or left for
a resume, named: ``behind`` counts the ones still waiting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import trio

from orchestrator.collect.state import RunState
from orchestrator.events import (
    Event,
    GameNotReviewed,
    GameRecorded,
    GameReviewed,
    ReviewEngineDied,
    ReviewFinishing,
    ReviewLagging,
    ReviewQueueFull,
    ReviewStarted,
    ReviewStopped,
)
from orchestrator.label.engine import DEFAULT_TIMEOUT, KataGoDied, KataGoEngine, open_katago
from orchestrator.label.games import LabelGame, label_game
from orchestrator.label.join import review_game
from orchestrator.label.run import EngineFiles, GameLabeller, RunOptions, RunResult
from orchestrator.label.store import GameLabels, LabelError, LabelSet, LabelWriter
from orchestrator.positions.recorded import read_recorded_game
from orchestrator.positions.samples import GameRead, read_file
from orchestrator.quality.running import QualityStatus, RunningQuality
from orchestrator.recordings import JournalRecord, RecordError, RunName
from orchestrator.report.quality import LABELS_DIR
from orchestrator.sgf import SgfError
from orchestrator.words import plural

QUEUE_SIZE = 10_000  # recorded games waiting for KataGo (a path each)
LAG_EVERY = 10  # ReviewLagging at every 10 more games behind


def _why(exc: Exception) -> str:
    return (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)


class ReviewError(Exception):
    """The review cannot start (KataGo does not start, the label folder is unusable)."""


@dataclass(frozen=True, slots=True)
class ReviewOptions:
    binary: Path
    model: Path
    config: Path
    engines: int = 1
    visits: int = 1
    max_in_flight: int = 4  # games asked at once per engine, as go19 label
    max_restarts: int = 3
    queue: int = QUEUE_SIZE
    background: bool = True  # KataGo at the lowest priority (label/engine.py)
    timeout: float = DEFAULT_TIMEOUT  # KataGo's deadline per visit (label/engine.py)

    def run_options(self) -> RunOptions:
        return RunOptions(visits=self.visits, max_in_flight=self.max_in_flight,
                          max_restarts=self.max_restarts, review=True, timeout=self.timeout)

    def files(self, log: Path) -> EngineFiles:
        return EngineFiles(self.binary, self.model, self.config, log)


@dataclass
class _Item:
    order: int  # the record's place in the journal
    record: JournalRecord


@dataclass
class _Outcome:
    """What a labeller hands back for one game (the sink and reporter of GameLabeller)."""

    arrays: dict[str, np.ndarray] | None = None
    warnings: tuple[str, ...] = ()
    error: tuple[str, str | None] | None = None  # status, detail
    lines: list[str] = field(default_factory=list)

    def add(self, game: LabelGame, arrays: dict[str, np.ndarray], warnings: Any = ()) -> None:
        self.arrays, self.warnings = arrays, tuple(sorted(set(warnings)))

    def record(self, game: LabelGame, status: str, reason: str | None = None,
               detail: str | None = None, warnings: Any = ()) -> None:
        self.error = (status, detail)

    def advance(self, positions: int) -> None:
        pass

    def game_done(self, game: LabelGame) -> None:
        pass

    def message(self, line: str) -> None:
        self.lines.append(line)


class LiveReview:
    """The review of one run: :meth:`open` with the run folder (before any game), then
    :meth:`run` beside the games, :meth:`finish` once they are over."""

    def __init__(self, options: ReviewOptions) -> None:
        self.options = options
        self._send, self._receive = trio.open_memory_channel[_Item](options.queue)
        self._left: dict[int, JournalRecord] = {}  # by game number: queued or in flight
        self.stopped: str | None = None
        self.result = RunResult()
        self.writer: LabelWriter | None = None
        self.folder = Path()
        self._state: RunState | None = None
        self._quality: RunningQuality | None = None
        self._lagged = 0
        self._writing = trio.CapacityLimiter(1)  # the writer and the numbers: one thread
        self._idle = trio.Event()
        self._started = trio.Event()  # a resumed run's games are queued
        self._scope: trio.CancelScope | None = None

    @property
    def behind(self) -> int:
        """Recorded games queued or being labelled."""
        return len(self._left)

    @property
    def left(self) -> tuple[int, ...]:
        """The numbers of the recorded games not labelled yet (nor refused)."""
        return tuple(sorted(self._left))

    # -- before the games ---------------------------------------------------------------

    def open(self, run_dir: Path, state: RunState, pairing: tuple[str, str] | None) -> None:
        """Open (or, on resume, go on in) ``RUN_DIR/labels`` and hear the run's events from
        now on. Raises :class:`ReviewError` in one line."""
        self.folder = run_dir / LABELS_DIR
        settings = self.options.run_options().settings(None)
        try:
            self.writer = LabelWriter.open(self.folder, settings, [str(run_dir)], resume=True,
                                           flush_seconds=0.0, run=RunName.of(run_dir))
        except LabelError as exc:
            raise ReviewError(f"--review: {exc}") from None
        except OSError as exc:
            raise ReviewError(f"--review: cannot write {self.folder}: "
                              f"{exc.strerror or exc}") from None
        self._state = state
        self._quality = RunningQuality(pairing)
        state.subscribe(self.on_event)

    def on_event(self, event: Event) -> None:
        if isinstance(event, GameRecorded) and not event.record.void:
            assert self._state is not None
            self._enqueue(_Item(len(self._state.records) - 1, event.record))

    def _emit(self, event: Event) -> None:
        assert self._state is not None
        self._state.emit(event)

    def _enqueue(self, item: _Item) -> None:
        if self.stopped is not None:
            return
        try:
            self._send.send_nowait(item)
        except trio.WouldBlock:
            self._emit(ReviewQueueFull(item.record.game, self.options.queue))
            return
        self._left[item.record.game] = item.record
        self._idle = trio.Event() if self._idle.is_set() else self._idle
        if self.behind >= self._lagged + LAG_EVERY:
            self._lagged = self.behind // LAG_EVERY * LAG_EVERY
            self._emit(ReviewLagging(self.behind))

    # -- beside the games -------------------------------------------------------------

    async def run(self, say: Callable[[str], None],
                  task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the engines (``say`` gets one line; :class:`ReviewError` if one does not
        start), then label the queue until cancelled (the run's end) or stopped (KataGo
        keeps dying); the label folder records the run whatever happens after the start."""
        assert self._state is not None and self.writer is not None
        started = trio.current_time()
        failed: ReviewError | None = None
        try:
            with trio.CancelScope() as self._scope:
                async with trio.open_nursery() as nursery:
                    try:
                        for k in range(self.options.engines):
                            await nursery.start(self._engine, k)
                    except ReviewError as exc:
                        failed = exc
                        say(f"● FAILED  review: {exc}")
                        nursery.cancel_scope.cancel()
                    else:
                        say(f"● OK      review: KataGo {self.result.engine.get('version')} "
                            f"({self.options.model.name}), "
                            f"{plural(self.options.engines, 'engine')}")
                        task_status.started()
                        try:
                            await self._resumed(self._state.records)
                        except (LabelError, OSError) as exc:  # a folder spoilt meanwhile
                            self._stop(f"cannot read {self.folder}: {_why(exc)}")
                        self._started.set()
                        self._emit(ReviewStarted(self.options.engines, self.options.visits,
                                                 str(self.folder), self.behind))
        finally:
            if failed is None:
                self._record(trio.current_time() - started)
            self._started.set()
            self._idle.set()
        if failed is not None:
            raise failed

    def _record(self, seconds: float) -> None:
        assert self.writer is not None
        r = self.result
        r.seconds = seconds
        self.writer.add_run({"seconds": round(r.seconds, 3), "games": r.games,
                             "labelled": r.labelled, "positions": r.positions,
                             "errors": r.errors, "restarts": r.restarts,
                             "max_in_flight": self.options.max_in_flight,
                             "engines": self.options.engines, "collect": True,
                             "finished": self.behind == 0 and self.stopped is None})
        try:
            self.writer.flush()
        except (LabelError, OSError) as exc:
            self._stop(f"cannot write {self.folder}: {_why(exc)}")

    async def finish(self) -> None:
        """Wait until every recorded game is labelled (or the review stopped)."""
        await self._started.wait()
        if self.behind and self.stopped is None:
            self._emit(ReviewFinishing(self.behind))
            await self._idle.wait()

    async def _resumed(self, records: list[JournalRecord]) -> None:
        """A resumed run's recorded games: the labelled ones into the numbers, the others
        into the queue."""
        if not any(not r.void for r in records):
            return
        labelled = await trio.to_thread.run_sync(self._judge_labelled, records)
        for order, record in enumerate(records):
            if not record.void and order not in labelled:
                self._enqueue(_Item(order, record))

    def _judge_labelled(self, records: list[JournalRecord]) -> set[int]:
        assert self.writer is not None and self._quality is not None
        done = self.writer.labelled()
        if not done:
            return set()
        labels = LabelSet(self.folder)
        found = set()
        for order, record in enumerate(records):
            if record.void:
                continue
            for read in read_file(self._sgf(record)):
                if read.status == "ok" and f"{read.sha1}:{read.game_index}" in done:
                    game = review_game(read, labels.game(read.sha1, read.game_index))
                    self._quality.add(order, game.moves, record.black, record.white)
                    found.add(order)
        return found

    def _sgf(self, record: JournalRecord) -> Path:
        assert self._state is not None
        return self.folder.parent / record.sgf

    def _stop(self, reason: str) -> None:
        """Stop the review once: the first reason is the one said (every worker whose
        write fails on the same spoilt folder comes here)."""
        if self.stopped is not None:
            return
        self.stopped = reason
        self._emit(ReviewStopped(reason, self.left))
        self._idle.set()
        if self._scope is not None:
            self._scope.cancel()

    async def _engine(self, k: int,
                      task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """One KataGo and its workers; restarted when it dies, as go19 label restarts. Its
        first start is the review's preflight: :class:`ReviewError` if it fails."""
        deaths = 0
        first = True
        retry: list[_Item] = []
        log = self.folder / f"katago-{k}.log"
        while self.stopped is None:
            labelled = self.result.labelled
            died: BaseException | None = None
            try:
                async with open_katago(self.options.binary, self.options.model,
                                       self.options.config, log,
                                       background=self.options.background,
                                       own_session=True, timeout=self.options.timeout) as engine:
                    if not self.result.engine:
                        await self._describe(engine)
                    if first:
                        first = False
                        task_status.started()
                    async with trio.open_nursery() as nursery:
                        for _ in range(self.options.max_in_flight):
                            nursery.start_soon(self._worker, engine, retry)
                    died = engine.death
            except* KataGoDied as group:
                died = group.exceptions[0]
            if died is None:
                return  # every worker stopped the review (the label folder)
            if first:
                raise ReviewError(f"KataGo did not start: {died}")
            deaths = 1 if self.result.labelled > labelled else deaths + 1
            if deaths > self.options.max_restarts:
                self._stop(f"KataGo died {plural(deaths, 'time')} in a row without labelling "
                           f"a game; last: {died}")
            else:
                self.result.restarts += 1
                self._emit(ReviewEngineDied(k, str(died), deaths, self.options.max_restarts))

    async def _describe(self, engine: KataGoEngine) -> None:
        models = await engine.query_models()
        self.result.engine = {
            "version": engine.version, "model_names": [m.get("internalName") for m in models],
            "models": models, "binary": str(self.options.binary),
            "model": str(self.options.model), "config": str(self.options.config)}
        assert self.writer is not None
        try:
            self.writer.set_engine(self.result.engine)
        except LabelError as exc:  # a resumed folder labelled with another net
            raise ReviewError(str(exc)) from None

    async def _worker(self, engine: KataGoEngine, retry: list[_Item]) -> None:
        """Games until the engine is gone (or the review stops); a game not finished goes
        into ``retry`` for the next engine, whatever stopped it. A death does not cancel
        the other workers: a game whose answers all came before KataGo died is kept."""
        while (item := retry.pop() if retry else await self._next(engine)) is not None:
            try:
                await self._review(engine, item)
            except KataGoDied:
                retry.append(item)
                return
            except (LabelError, OSError) as exc:  # the label folder cannot be written
                self._stop(f"cannot write {self.folder}: {_why(exc)}")
                return
            except BaseException:  # cancelled: the review stops, the game is left
                retry.append(item)
                raise

    async def _next(self, engine: KataGoEngine) -> _Item | None:
        """The next recorded game, or None once the engine is gone."""
        taken: list[_Item] = []
        async with trio.open_nursery() as race:
            async def take() -> None:
                taken.append(await self._receive.receive())
                race.cancel_scope.cancel()

            async def watch() -> None:
                await engine.wait_dead()
                race.cancel_scope.cancel()

            race.start_soon(take)
            race.start_soon(watch)
        return taken[0] if taken else None

    async def _review(self, engine: KataGoEngine, item: _Item) -> None:
        path = self._sgf(item.record)
        why: str | None
        try:  # read and replayed once: the labels' queries and the judged moves
            _, read = await trio.to_thread.run_sync(read_recorded_game, path)
        except SgfError as exc:
            why = f"rejected {exc.reason}"
        except RecordError as exc:
            why = str(exc)
        else:
            why = None if read.status == "ok" else f"{read.status} {read.reason}"
        if why is not None:
            self._done(GameNotReviewed(item.record.game, f"{path.name}: {why}"))
            return
        game = label_game(read, None, True)
        outcome = _Outcome()
        await GameLabeller(outcome, outcome, self.options.run_options(), self.result).label(
            engine, item.order, game)
        with trio.CancelScope(shield=True):  # labelled: written, even if the engine just died
            status = await trio.to_thread.run_sync(self._write, item, read, game, outcome,
                                                   limiter=self._writing)
        if status is None:
            detail = outcome.error[1] if outcome.error else None
            self._done(GameNotReviewed(item.record.game, f"KataGo: {detail}"))
        else:
            self._done(GameReviewed(item.record.game, game.positions, self.behind - 1, status))

    def _write(self, item: _Item, read: GameRead, game: LabelGame,
               outcome: _Outcome) -> QualityStatus | None:
        """The game's labels into the folder, its moves into the numbers (a worker thread)."""
        assert self.writer is not None and self._quality is not None
        if outcome.arrays is None:
            status, detail = outcome.error or ("error", None)
            self.writer.record(game, status, "katago", detail, outcome.warnings)
            self.writer.flush()
            return None
        self.writer.add(game, outcome.arrays, outcome.warnings)
        reviewed = review_game(read, GameLabels(outcome.arrays))
        self._quality.add(item.order, reviewed.moves, item.record.black, item.record.white)
        return self._quality.status()

    def _done(self, event: GameReviewed | GameNotReviewed) -> None:
        self.result.games += 1
        del self._left[event.game]
        self._emit(event)
        if self.behind == 0:
            self._idle.set()
        if self.behind < self._lagged:
            self._lagged = self.behind // LAG_EVERY * LAG_EVERY
