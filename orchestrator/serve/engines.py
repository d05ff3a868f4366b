"""The engines behind a GO19 server: a position in, a point out. The heuristic and random
choosers, any go19 player (a GTP engine) as an engine, and the protocols a server asks of
an engine (:class:`PictureEngine`: a VLM, asked with the request's PNG too). The
transformers VLM engine is :mod:`orchestrator.serve.hf`."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import trio

from orchestrator.color import BLACK, WHITE
from orchestrator.players.base import Player
from orchestrator.players.heuristic import HeuristicChooser
from orchestrator.players.local import Chooser
from orchestrator.players.random_player import RandomChooser
from orchestrator.rules.board import Board
from orchestrator.rules.game import Game


class Engine(Protocol):
    async def genmove(self, board: np.ndarray, color: int) -> int: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class PictureEngine(Protocol):
    """An engine that also looks at the picture the client sent (the exact PNG bytes)."""

    async def genmove_picture(self, board: np.ndarray, color: int, png: bytes) -> int: ...

    async def aclose(self) -> None: ...


class EngineError(Exception):
    """The engine cannot answer this request; the message goes back in an error frame."""


def stone_points(board: np.ndarray) -> tuple[list[int], list[int]]:
    flat = board.reshape(-1)
    return np.flatnonzero(flat == BLACK).tolist(), np.flatnonzero(flat == WHITE).tolist()


def position(board: np.ndarray) -> Board:
    """The request's stones as a Board; a group without liberties is an EngineError."""
    result = Board(board.shape[0])
    black, white = stone_points(board)
    try:
        result.setup(black=black, white=white)
    except ValueError as exc:
        raise EngineError(f"impossible position: {exc}") from None
    return result


class ChooserEngine:
    """A pure, synchronous move chooser (heuristic AI, random player) as an engine."""

    def __init__(self, chooser: Chooser) -> None:
        self._chooser = chooser

    async def genmove(self, board: np.ndarray, color: int) -> int:
        await trio.lowlevel.checkpoint()
        return self._chooser.choose(position(board), color, None)

    async def aclose(self) -> None:
        return None


class HeuristicEngine(ChooserEngine):
    def __init__(self, seed: int | None = None, level: int = 2) -> None:
        super().__init__(HeuristicChooser(seed=seed, level=level))


class RandomEngine(ChooserEngine):
    def __init__(self, seed: int | None = None) -> None:
        super().__init__(RandomChooser(seed))


class PlayerEngine:
    """A player (a :class:`PlayerPool` of GTP engine processes) as an engine.

    Each request becomes a fresh :class:`Game` whose stones are setup stones, so a
    player brings itself up to date from scratch (GTP: ``clear_board`` and a
    ``play`` per stone; every intermediate position keeps a liberty per group, so
    no stone is captured on the way). Size the pool to the server's slots.
    """

    def __init__(self, player: Player, komi: float = 7.5) -> None:
        self._player = player
        self.komi = komi

    async def genmove(self, board: np.ndarray, color: int) -> int:
        position(board)  # refuse impossible positions before an engine sees them
        game = Game(size=board.shape[0], komi=self.komi)
        black, white = stone_points(board)
        game.setup(black=black, white=white, to_play=color)
        return await self._player.genmove(game)

    async def aclose(self) -> None:
        await self._player.aclose()
