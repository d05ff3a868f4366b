"""What a single move does tactically, for move statistics and the heuristic AI.

Read from the board's incremental groups before the move; nothing is played:
the only "after" fact needed (the placed stone's liberties) comes from
:meth:`Board.check`, and an adjacent opponent group that survives the move
loses exactly the one liberty at the point (captures give liberties to the
mover's groups only).
"""

from __future__ import annotations

from enum import IntFlag

from orchestrator.coords import PASS
from orchestrator.rules.board import Board


class Tactics(IntFlag):
    NONE = 0
    CAPTURE = 1  # removes at least one opponent stone
    ATARI = 2  # leaves an adjacent opponent group with exactly one liberty
    ESCAPE = 4  # an adjacent own group had one liberty; the joined group has two or more


def classify(board: Board, color: int, point: int) -> Tactics:
    """The tactics bits of ``color`` playing ``point`` on ``board`` (unchanged).

    A pass has no bits. An illegal move raises the board's :class:`IllegalMove`.
    """
    result = board.check(color, point)
    if point == PASS:
        return Tactics.NONE
    bits = Tactics.CAPTURE if result.captured else Tactics.NONE
    stones = board.stones
    other = 3 - color
    for q in board.neighbours(point):
        s = stones[q]
        if not s:
            continue
        liberties = len(board.group_at(q).liberties)
        if s == other and liberties == 2:
            bits |= Tactics.ATARI
        elif s == color and liberties == 1 and result.liberties >= 2:
            bits |= Tactics.ESCAPE
    return bits
