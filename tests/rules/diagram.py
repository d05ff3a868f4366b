"""Boards from text diagrams, so a test shows the position it asserts about.

``X`` black, ``O`` white, ``.`` empty; row 0 is the top line, as on screen.
"""

from __future__ import annotations

from orchestrator.coords import from_gtp
from orchestrator.rules import Board


def board_from(diagram: str) -> Board:
    rows = [line.split() for line in diagram.strip().splitlines()]
    size = len(rows)
    assert all(len(row) == size for row in rows), "diagram must be square"
    cells = [c for row in rows for c in row]
    board = Board(size)
    board.setup(
        black=[p for p, c in enumerate(cells) if c == "X"],
        white=[p for p, c in enumerate(cells) if c == "O"],
    )
    return board


def pts(size: int, *vertices: str) -> list[int]:
    """GTP vertices (``"C5"``) to points, for readable expectations."""
    return [from_gtp(v, size) for v in vertices]
