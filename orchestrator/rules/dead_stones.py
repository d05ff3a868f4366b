"""Dead stones from an ownership map, by KataGo's rule, and the area score without them.

KataGo (``computeAnticipatedStatusesWithOwnership`` in ``cpp/search/searchhelpers.cpp``)
calls a chain dead when its stones, on average, belong to their own colour by less than
``DEAD_MEAN`` or when one of them belongs to the opponent by more than ``-DEAD_WORST``.
Ownership here is Black's view, one value per point in [-1, 1] (+1 Black's), whatever
source gives it: KataGo's search (its answer is in the side to move's view unless it is
told to report as Black; the caller turns it) or the heuristic estimate of the play page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.color import BLACK, EMPTY
from orchestrator.rules.board import Board
from orchestrator.rules.scoring import AreaScore, tromp_taylor

DEAD_MEAN = 0.2
DEAD_WORST = -0.6


def dead_chains(board: Board, ownership: Sequence[float]) -> list[frozenset[int]]:
    """The chains (stones, sorted by their lowest point) that the ownership calls dead."""
    if len(ownership) != board.area:
        raise ValueError(f"ownership has {len(ownership)} values for {board.area} points")
    dead = []
    for group in board.groups():
        sign = 1.0 if group.color == BLACK else -1.0
        own = [sign * ownership[point] for point in group.stones]
        if sum(own) / len(own) < DEAD_MEAN or min(own) < DEAD_WORST:
            dead.append(frozenset(group.stones))
    return sorted(dead, key=min)


def without(board: Board, stones: frozenset[int] | set[int]) -> Board:
    """A copy of the board with these stones lifted (captured by nobody's move)."""
    keep = board.copy()
    emptied = [point for point in stones if keep[point] != EMPTY]
    keep.setup(empty=emptied)
    return keep


@dataclass(frozen=True, slots=True)
class AdjudicatedScore:
    """The plain area count and the count after the dead stones are lifted."""

    plain: AreaScore
    adjudicated: AreaScore
    dead: tuple[frozenset[int], ...]

    @property
    def flipped(self) -> bool:
        """The dead stones change the winner."""
        return self.plain.winner != self.adjudicated.winner


def adjudicated_score(board: Board, ownership: Sequence[float], komi: float) -> AdjudicatedScore:
    dead = dead_chains(board, ownership)
    lifted = without(board, frozenset().union(*dead)) if dead else board
    return AdjudicatedScore(tromp_taylor(board, komi), tromp_taylor(lifted, komi), tuple(dead))
