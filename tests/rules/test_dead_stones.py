"""KataGo's dead-stone rule on hand-built positions whose answer is known by eye."""

from __future__ import annotations

import pytest

from orchestrator.color import BLACK, WHITE
from orchestrator.rules.board import Board
from orchestrator.rules.dead_stones import adjudicated_score, dead_chains


def position() -> tuple[Board, list[float]]:
    """9x9: Black owns columns 0-3, White columns 5-8 with one black stone inside it,
    column 4 is the wall of white stones. Ownership as a settled game would give it."""
    board = Board(9)
    black = [row * 9 + 3 for row in range(9)]
    white = [row * 9 + 4 for row in range(9)]
    invader = 4 * 9 + 7
    board.setup(black=[*black, invader], white=white)
    ownership = [1.0 if point % 9 <= 3 else -1.0 for point in range(81)]
    ownership[invader] = -0.9  # White's point: the stone is dead
    return board, ownership


def test_the_lone_stone_in_the_opponents_area_is_dead_and_the_walls_live() -> None:
    board, ownership = position()
    assert dead_chains(board, ownership) == [frozenset({4 * 9 + 7})]


def test_lifting_the_dead_stone_gives_white_its_area() -> None:
    board, ownership = position()
    score = adjudicated_score(board, ownership, komi=0.5)
    # Plain area: Black 36 + 1 stone, White 9 wall stones only (its area touches the invader).
    assert (score.plain.black, score.plain.white) == (37, 9)
    # Lifted: Black 36, White 45 (wall and the four empty columns).
    assert (score.adjudicated.black, score.adjudicated.white) == (36, 45)
    assert score.plain.winner == BLACK and score.adjudicated.winner == WHITE
    assert score.flipped


@pytest.mark.parametrize(("mean", "worst", "dead"), [
    (0.25, 0.25, False),   # weakly own: lives
    (0.15, 0.15, True),    # mean below 0.2
    (0.7, -0.7, True),     # one stone deep in the opponent's area
])
def test_thresholds(mean: float, worst: float, dead: bool) -> None:
    board = Board(9)
    board.setup(white=[40, 41])
    ownership = [0.0] * 81
    ownership[40], ownership[41] = -(2 * mean - worst), -worst  # White's view negated
    assert bool(dead_chains(board, ownership)) is dead
    assert WHITE == board[40]


def test_ownership_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="ownership has 80 values for 81 points"):
        dead_chains(Board(9), [0.0] * 80)
