"""Label games with one KataGo analysis engine kept busy.

Up to ``max_in_flight`` games are asked at once, each as one ``analyzeTurns`` query per
segment (:mod:`orchestrator.label.games`) with priority ``-n`` for the n-th game, so
KataGo's threads always have queued turns and earlier games finish first. Answers come
back in any order and are matched to their game by the client (query id) and to their
row here (turn number).

Faults: a query KataGo rejects, or an answer that cannot be a label (NaN, infinite, a turn
not asked), makes that game an ``error`` (one line) and the run goes on. If KataGo dies or
stays silent past its deadline (``timeout`` seconds per visit: engine.py), every game in
flight goes back to the queue (its partial answers dropped) and a new engine starts; after
``max_restarts`` deaths in a row with no game finished in between, the run stops with
:class:`LabelRunError` (finished games are kept).
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import trio

from orchestrator.coords import to_index
from orchestrator.label.engine import (
    DEFAULT_TIMEOUT,
    GO19_RULES,
    AnalysisResponse,
    KataGoBadAnswer,
    KataGoDied,
    KataGoEngine,
    KataGoQueryError,
    open_katago,
)
from orchestrator.label.games import LabelGame
from orchestrator.label.store import empty_labels
from orchestrator.words import plural


class LabelRunError(Exception):
    """The run cannot go on (KataGo does not start, or keeps dying); one line."""


@dataclass(frozen=True, slots=True)
class EngineFiles:
    binary: Path
    model: Path
    config: Path
    log: Path


@dataclass(frozen=True, slots=True)
class RunOptions:
    visits: int = 1
    ownership: bool = False
    max_in_flight: int = 4
    max_restarts: int = 3
    review: bool = False  # the position after the last labelled move too (go19 review)
    timeout: float = DEFAULT_TIMEOUT  # KataGo's deadline per visit (engine.py); not a setting

    def settings(self, max_moves: int | None) -> dict[str, Any]:
        """What a label folder must keep equal across resumed runs."""
        settings: dict[str, Any] = {
            "visits": self.visits, "ownership": self.ownership, "max_moves": max_moves,
            "rules": dict(GO19_RULES), "report_as": "BLACK"}
        if self.review:  # absent otherwise, so older folders resume as they are
            settings["review"] = True
        return settings


class GameReporter(Protocol):
    """What labelling a game says (to a progress bar, plain lines, a Ray actor's capture)."""

    def advance(self, positions: int) -> None: ...  # negative when answers are dropped
    def game_done(self, game: LabelGame) -> None: ...
    def message(self, line: str) -> None: ...


class Reporter(GameReporter, Protocol):
    """Where the run says how it goes (a progress bar, plain lines, a test)."""

    def start(self, games: int, positions: int) -> None: ...
    def engine_started(self, pid: int) -> None: ...


class LabelSink(Protocol):
    """Where a game's labels go: the label folder (``store.LabelWriter``), or a Ray
    actor's capture that hands them to the driver."""

    def add(self, game: LabelGame, arrays: dict[str, np.ndarray],
            warnings: Iterable[str] = ()) -> None: ...

    def record(self, game: LabelGame, status: str, reason: str | None = None,
               detail: str | None = None, warnings: Iterable[str] = ()) -> None: ...


class LabelStore(LabelSink, Protocol):
    """A label folder as a run uses it: what it holds already, which engine labels it."""

    def labelled(self) -> set[str]: ...
    def set_engine(self, engine: Mapping[str, Any]) -> None: ...


@dataclass
class RunResult:
    games: int = 0  # games asked about in this run
    positions: int = 0  # positions labelled in this run
    labelled: int = 0  # games labelled in this run
    already: int = 0  # games skipped because the folder has them (resume)
    errors: int = 0
    restarts: int = 0
    seconds: float = 0.0
    querying_seconds: float = 0.0  # engines up and answering (starts excluded)
    engine: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.positions / self.querying_seconds if self.querying_seconds else 0.0


class Labelling(Protocol):
    """A run that labels games (one engine here, or many over Ray): how far it got."""

    @property
    def result(self) -> RunResult: ...


class _Queue:
    """Games to ask, earliest first; a game whose engine died goes back in its place."""

    def __init__(self, games: Sequence[LabelGame]) -> None:
        self._heap = list(enumerate(games))  # already a heap: orders ascend

    def __len__(self) -> int:
        return len(self._heap)

    def pop(self) -> tuple[int, LabelGame] | None:
        return heapq.heappop(self._heap) if self._heap else None

    def put_back(self, order: int, game: LabelGame) -> None:
        heapq.heappush(self._heap, (order, game))


def _fill(arrays: dict[str, np.ndarray], row: int, r: AnalysisResponse, ownership: bool) -> None:
    arrays["policy"][row] = r.policy
    arrays["best_move"][row] = to_index(r.best_move, r.size)
    arrays["winrate"][row] = np.nan if r.winrate is None else r.winrate
    arrays["score_lead"][row] = np.nan if r.score_lead is None else r.score_lead
    arrays["visits"][row] = r.visits
    if ownership:
        arrays["ownership"][row] = r.ownership
    if "best_score_lead" in arrays and r.move_infos:  # NaN at 1 visit: no move searched
        arrays["best_score_lead"][row] = r.move_infos[0].score_lead


def _first(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


@dataclass
class GameLabeller:
    """Labels one game, or a piece of it, on a running engine: the part of a run a Ray
    actor runs too. Its outcome goes to ``sink``, its counts into ``result``;
    ``finished`` is set each time a game is finished."""

    sink: LabelSink
    reporter: GameReporter
    options: RunOptions
    result: RunResult
    finished: bool = False

    async def label(self, engine: KataGoEngine, order: int, game: LabelGame,
                    rows: range | None = None) -> None:
        """Label ``game``, or only its ``rows`` (a piece of it, for the Ray driver, which
        puts the pieces together; the writer then gets arrays with those rows filled)."""
        arrays = empty_labels(game, self.options.ownership, self.options.review)
        part = range(game.positions) if rows is None else rows
        warnings: set[str] = set()
        answered = 0
        try:
            for segment in game.segments:
                turns = range(max(part.start - segment.first, 0),
                              min(part.stop - segment.first, segment.rows))
                if not turns:
                    continue
                stream = engine.analyze_game_stream(
                    segment.moves, komi=game.komi, initial_stones=segment.initial_stones,
                    initial_player=segment.initial_player, rules=GO19_RULES,
                    analyze_turns=turns, max_visits=self.options.visits,
                    include_policy=True, include_ownership=self.options.ownership,
                    priority=-order,
                )
                asked = set(turns)  # each answered once
                async with aclosing(stream) as answers:
                    async for response in answers:
                        if response.turn not in asked:
                            raise KataGoBadAnswer(f"KataGo answered turn {response.turn} of "
                                                  f"query {response.id}, not asked or twice")
                        asked.discard(response.turn)
                        _fill(arrays, segment.first + response.turn, response,
                              self.options.ownership)
                        warnings.update(response.warnings)
                        answered += 1
                        self.reporter.advance(1)
        except (KataGoQueryError, KataGoBadAnswer) as exc:
            self.reporter.advance(len(part) - answered)  # the bar counts it as done
            self.result.errors += 1
            detail = exc.message if isinstance(exc, KataGoQueryError) else str(exc)
            self.sink.record(game, "error", "katago", detail, warnings)
            self.reporter.message(f"error: {game.where}: {exc}")
            self.reporter.game_done(game)
            return
        except BaseException:  # KataGo died, or this task was cancelled: asked again
            self.reporter.advance(-answered)
            raise
        if warnings:
            self.reporter.message(f"warning: {game.where}: KataGo: {'; '.join(sorted(warnings))}")
        self.sink.add(game, arrays, warnings)
        self.result.labelled += 1
        self.result.positions += len(part)
        self.finished = True
        self.reporter.game_done(game)


def plan(store: LabelStore, games: Sequence[LabelGame], ownership: bool,
         review: bool = False) -> tuple[list[LabelGame], int]:
    """The games to ask, in input order, and how many the folder has already; games not
    to ask (void, rejected, no positions) go into ``store`` as they are."""
    done = store.labelled()
    todo: list[LabelGame] = []
    queued: set[str] = set()
    already = 0
    for game in games:
        if game.status != "ok":
            store.record(game, game.status, game.reason, game.detail)
        elif game.ident in done:
            already += 1
        elif game.ident not in queued:  # a file given twice is labelled once
            queued.add(game.ident)
            if game.positions:
                todo.append(game)
            else:
                store.add(game, empty_labels(game, ownership, review))
    return todo, already


class LabelRun:
    """One run; ``result`` says how far it got, also after :class:`LabelRunError` or an
    interruption. The caller flushes the writer afterwards, whatever happened."""

    def __init__(self, writer: LabelStore, files: EngineFiles, options: RunOptions,
                 reporter: Reporter) -> None:
        self.writer = writer
        self.files = files
        self.options = options
        self.reporter = reporter
        self.result = RunResult()
        self._games = GameLabeller(writer, reporter, options, self.result)

    async def _worker(self, engine: KataGoEngine, queue: _Queue) -> None:
        """Games from ``queue`` until it is empty or the engine is gone; a game not
        finished goes back, whatever stopped it. A death does not cancel the other
        workers: a game whose answers all came before KataGo died is still finished."""
        while (item := queue.pop()) is not None:
            order, game = item
            try:
                await self._games.label(engine, order, game)
            except KataGoDied:
                queue.put_back(order, game)
                return
            except BaseException:
                queue.put_back(order, game)
                raise

    async def _session(self, queue: _Queue) -> None:
        files = self.files
        async with open_katago(files.binary, files.model, files.config, files.log,
                               timeout=self.options.timeout) as engine:
            if not self.result.engine:
                models = await engine.query_models()
                self.result.engine = {
                    "version": engine.version,
                    "model_names": [m.get("internalName") for m in models],
                    "models": models, "binary": str(files.binary), "model": str(files.model),
                    "config": str(files.config),
                }
                self.writer.set_engine(self.result.engine)
            self.reporter.engine_started(engine.pid)
            ready = time.monotonic()
            try:
                async with trio.open_nursery() as nursery:
                    for _ in range(min(self.options.max_in_flight, len(queue))):
                        nursery.start_soon(self._worker, engine, queue)
            finally:
                self.result.querying_seconds += time.monotonic() - ready
            if engine.death is not None and len(queue):
                raise engine.death

    async def run(self, games: Sequence[LabelGame]) -> RunResult:
        """Ask KataGo about every position of ``games`` not yet in the writer's folder."""
        started = time.monotonic()
        try:
            await self._run(games)
        finally:
            self.result.seconds = time.monotonic() - started
        return self.result

    async def _run(self, games: Sequence[LabelGame]) -> None:
        todo, self.result.already = plan(self.writer, games, self.options.ownership,
                                         self.options.review)
        queue = _Queue(todo)
        self.result.games = len(todo)
        self.reporter.start(len(todo), sum(g.positions for g in todo))
        deaths = 0
        while len(queue):
            self._games.finished = False
            try:
                await self._session(queue)
            except* KataGoDied as group:
                death = _first(group)
                if not self.result.engine:
                    raise LabelRunError(f"KataGo did not start: {death}") from None
                deaths = 1 if self._games.finished else deaths + 1
                if deaths > self.options.max_restarts:
                    raise LabelRunError(f"KataGo died {plural(deaths, 'time')} in a row without "
                                        f"finishing a game; last: {death}") from None
                self.result.restarts += 1
                self.reporter.message(f"KataGo died ({death}); restarting with "
                                      f"{plural(len(queue), 'game')} to go "
                                      f"({deaths}/{self.options.max_restarts})")
