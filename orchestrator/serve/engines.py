"""What a GO19 server's engine is: any :class:`~orchestrator.players.base.Player` (the
heuristic and random players, a pool of GTP engines, a VLM), asked with the request's
position as a game (:func:`request_game`) and its PNG. The transformers VLM is
:mod:`orchestrator.serve.hf`."""

from __future__ import annotations

import numpy as np

from orchestrator.color import BLACK, WHITE
from orchestrator.players.base import RefusedMove
from orchestrator.rules.board import Board
from orchestrator.rules.game import Game


class EngineError(RefusedMove):
    """The engine cannot answer this request (an impossible position, a reply no move can
    be read from); the message goes back in an error frame as it is."""


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


def request_game(board: np.ndarray, color: int, komi: float) -> Game:
    """A GO19 request's position as a fresh game: its stones as setup stones, ``color`` to
    play, no moves (so a stateful player, GTP, replays it from scratch: ``clear_board`` and
    a ``play`` per stone; every intermediate position keeps a liberty per group, so no
    stone is captured on the way). A group without liberties is an EngineError."""
    game = Game(size=board.shape[0], komi=komi)
    black, white = stone_points(board)
    try:
        game.setup(black=black, white=white, to_play=color)
    except ValueError as exc:
        raise EngineError(f"impossible position: {exc}") from None
    return game
