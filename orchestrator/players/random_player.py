"""The weakest sensible player: a uniformly random legal move that does not fill
one of its own eye-like points, and a pass when no such move is left.

It is the floor the heuristic AI is measured against. An eye-like point here is
an empty point whose every neighbour is a stone of the mover's colour; never
filling those is what makes random games end instead of self-destructing.
"""

from __future__ import annotations

import random

from orchestrator.color import EMPTY
from orchestrator.coords import PASS
from orchestrator.players.local import LocalPlayer
from orchestrator.rules.board import Board


def is_eye_like(board: Board, color: int, point: int) -> bool:
    stones = board.stones
    return all(stones[q] == color for q in board.neighbours(point))


class RandomChooser:
    """Sync and pure: ``choose`` never touches I/O."""

    def __init__(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed)

    def choose(self, board: Board, color: int, last_move: int | None = None) -> int:
        stones = board.stones
        empties = [p for p in range(board.area) if stones[p] == EMPTY]
        # Trying a shuffled order and keeping the first acceptable point picks
        # uniformly among the acceptable ones without testing them all.
        self._rng.shuffle(empties)
        for point in empties:
            if not is_eye_like(board, color, point) and board.is_legal(color, point):
                return point
        return PASS


class RandomPlayer(LocalPlayer):
    """:class:`RandomChooser` as a player (the referee's opponent, a GO19 server's engine)."""

    def __init__(self, name: str, seed: int | None = None) -> None:
        super().__init__(name, RandomChooser(seed))
