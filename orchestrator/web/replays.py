"""Finished games for watch pages: each replayed from its SGF (the one source of truth)
once, in a worker thread, one at a time, and kept by game; never on the collector's
loop. A page gets the moves with what each captured and steps through them itself; the
estimate of a position it stops at is asked for separately, one at a time as well."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import trio

from orchestrator.color import BLACK
from orchestrator.coords import PASS
from orchestrator.move_record import MoveRecord
from orchestrator.rules.board import IllegalMove
from orchestrator.rules.game import Game
from orchestrator.sgf import SgfError, SgfGame, read_games
from orchestrator.web import views

# More than the finished games a page lists (watch.FINISHED_SHOWN): pages clicking through
# the list never make a game be replayed twice (about 15 KB of JSON each).
GAMES_KEPT = 256
ESTIMATES_KEPT = 2048


class ReplayError(ValueError):
    """A recording the referee cannot replay."""


def _replayed(path: Path, moves: int | None = None) -> tuple[SgfGame, Game, list[list]]:
    """The SGF's first game replayed under the referee's rules (its first ``moves``
    moves, all when None), with each move of its record as the page steps through it:
    ``[point or None, 1 or 2, source mark or None, [captured points]]``."""
    record = read_games(path.read_bytes())[0]
    if record.setup:
        raise ReplayError("setup stones (not a go19 recording)")
    game = Game(record.size, record.komi)
    steps = []
    for number, move in enumerate(map(MoveRecord.from_sgf, record.moves[:moves]), 1):
        try:
            result = game.play(move.point, move.color)
        except IllegalMove as exc:
            raise ReplayError(f"move {number}: {exc}") from None
        steps.append([None if move.point == PASS else move.point,
                      1 if move.color == BLACK else 2, move.source, list(result.captured)])
    return record, game, steps


def replay_view(path: Path, about: dict) -> str:
    """The JSON text a page replays a finished game from: ``about`` (number, players,
    result, …), the moves, and for a counted game the referee's count at the end."""
    view = {"type": "game", "kind": "replay", **about}
    try:
        record, game, steps = _replayed(path)
    except (OSError, SgfError, ReplayError) as exc:
        view["error"] = f"cannot replay {path.name}: {exc}"
    else:
        view.update(size=record.size, komi=record.komi, moves=steps, count=None,
                    end_line=views.estimate_line(game.board, game.komi))
        if about.get("reason") in views.COUNTED:
            view.update(count=views.count_marks(game.board),
                        end_line=views.count_line(game.board, game.komi))
    return json.dumps(view, separators=(",", ":"))


def estimate_view(path: Path, number: int, move: int) -> str:
    """The estimate line after ``move`` moves of a finished game, as a page asks for it."""
    view: dict = {"type": "estimate", "game": number, "move": move}
    try:
        _, game, _ = _replayed(path, move)
        view["line"] = views.estimate_line(game.board, game.komi)
    except (OSError, SgfError, ReplayError) as exc:
        view["line"] = f"no estimate: {exc}"
    return json.dumps(view, separators=(",", ":"))


class ReplayCache:
    """Replays and estimates by key, each computed once (concurrent askers wait for the
    one computation) in a worker thread under one limiter, the last ones kept."""

    def __init__(self, games_kept: int = GAMES_KEPT, estimates_kept: int = ESTIMATES_KEPT
                 ) -> None:
        self._games: OrderedDict[object, str] = OrderedDict()
        self._estimates: OrderedDict[object, str] = OrderedDict()
        self._games_kept, self._estimates_kept = games_kept, estimates_kept
        self._busy: dict[object, trio.Event] = {}
        self._limiter = trio.CapacityLimiter(1)
        self.computed = 0  # how many replays and estimates were worked out (for tests)

    async def replay(self, key: str, path: Path, about: dict) -> str:
        return await self._get(self._games, self._games_kept, ("game", key),
                               lambda: replay_view(path, about))

    async def estimate(self, key: str, path: Path, number: int, move: int) -> str:
        return await self._get(self._estimates, self._estimates_kept, ("estimate", key, move),
                               lambda: estimate_view(path, number, move))

    async def _get(self, cache: OrderedDict[object, str], kept: int, key: object,
                   work: Callable[[], str]) -> str:
        while key not in cache:
            busy = self._busy.get(key)
            if busy is None:
                break
            await busy.wait()
        else:
            cache.move_to_end(key)
            return cache[key]
        done = self._busy[key] = trio.Event()
        try:
            text = await trio.to_thread.run_sync(work, limiter=self._limiter)
            self.computed += 1
            cache[key] = text
            while len(cache) > kept:
                cache.popitem(last=False)
            return text
        finally:
            del self._busy[key]
            done.set()
