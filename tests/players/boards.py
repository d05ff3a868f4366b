"""Positions for player tests, drawn as text.

``X`` is black, ``O`` white, ``.`` empty; the first row is the top of the board.
"""

from __future__ import annotations

from orchestrator.rules import Board


def board_from(*rows: str) -> Board:
    lines = [row.split() for row in rows]
    board = Board(len(lines))
    cells = [(r * board.size + c, s) for r, row in enumerate(lines) for c, s in enumerate(row)]
    board.setup(black=[p for p, s in cells if s == "X"], white=[p for p, s in cells if s == "O"])
    return board


def point(row: int, col: int, size: int = 9) -> int:
    return row * size + col


# Black owns columns A-E with two true eyes (A9, C9), White owns F-J with two
# (G9, J9); E1 is the only point bordered by both colours.
TWO_EYES_AND_A_DAME = (
    ". X . X X O . O .",
    "X X X X X O O O O",
    "X X X X X O O O O",
    "X X X X X O O O O",
    "X X X X X O O O O",
    "X X X X X O O O O",
    "X X X X X O O O O",
    "X X X X X O O O O",
    "X X X X . O O O O",
)
DAME = point(8, 4)
