"""The dashboard's score estimate on positions whose status is clear by eye."""

from __future__ import annotations

import dataclasses

import pytest

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import from_gtp
from orchestrator.rules import Board, tromp_taylor
from orchestrator.rules.estimate import Estimate, estimate
from tests.rules.diagram import board_from
from tests.rules.test_scoring import NEUTRAL, SPLIT

# Black's wall (11 stones, two eyes) has a white stone in atari inside it at B4
# whose only liberty, A4, is suicide for White: dead. White's wall (10 stones)
# has two 9-point eyes on the right.
DEAD_STONE = """
    . . X O . . .
    . . X O . . .
    X X X O . . .
    . O X O O O O
    X X X O . . .
    . . X O . . .
    . . X O . . .
"""


def counts(e: Estimate) -> dict[str, float]:
    return dataclasses.asdict(e)


def test_settled_board_equals_the_hand_count_and_tromp_taylor():
    board = board_from(SPLIT)
    e = estimate(board, komi=0.5)
    assert counts(e) == dict(
        black_stones=7, white_stones=7, black_territory=3, white_territory=8,
        black_dead=0, white_dead=0, disputed=0, dame=0, komi=0.5,
    )
    assert e.margin == tromp_taylor(board, 0.5).margin == -5.5
    assert e.summary() == "W+5.5"


def test_seam_between_living_groups_is_dame():
    e = estimate(board_from(NEUTRAL), komi=7.5)
    assert (e.black_territory, e.white_territory, e.dame, e.disputed) == (3, 3, 5, 0)
    assert e.summary() == "W+7.5"


def test_obvious_dead_stone_goes_to_the_opponent():
    board = board_from(DEAD_STONE)
    e = estimate(board, komi=0)
    assert counts(e) == dict(
        black_stones=11, white_stones=10, black_territory=9, white_territory=18,
        black_dead=0, white_dead=1, disputed=0, dame=0, komi=0,
    )
    assert e.black_area == 21 and e.white_area == 28
    assert e.summary() == "W+7"
    # Tromp-Taylor leaves the stone on the board, which spoils A4 and counts B4 for White.
    tt = tromp_taylor(board, 0)
    assert (tt.black, tt.white) == (19, 29)


def test_stone_in_atari_that_can_run_is_not_dead():
    board = board_from("""
        . . . . .
        . . X . .
        . X O . .
        . . X . .
        . . . . .
    """)
    e = estimate(board, komi=0)
    assert (e.white_dead, e.white_stones, e.black_stones) == (0, 1, 3)


def test_stone_in_atari_that_can_capture_is_not_dead():
    # B4 cannot extend (C4 would be suicide) but White can take B5, itself in atari.
    board = board_from("""
        . X O X .
        X O . X .
        . X X . .
        . . . . .
        . . . . .
    """)
    assert board.liberties_at(from_gtp("B4", 5)) == 1
    assert not board.is_legal(WHITE, from_gtp("C4", 5))
    e = estimate(board, komi=0)
    assert (e.white_dead, e.black_dead) == (0, 0)


def test_empty_board_and_opening_are_all_disputed():
    assert counts(estimate(Board(9), 7.5)) == dict(
        black_stones=0, white_stones=0, black_territory=0, white_territory=0,
        black_dead=0, white_dead=0, disputed=81, dame=0, komi=7.5,
    )
    board = Board(19)
    for color, vertex in [(BLACK, "Q16"), (WHITE, "D4"), (BLACK, "Q4"), (WHITE, "D16")]:
        board.play(color, from_gtp(vertex, 19))
    e = estimate(board, 6.5)
    assert (e.black_stones, e.white_stones, e.disputed) == (2, 2, 357)
    assert e.black_territory == e.white_territory == e.dame == 0
    assert e.summary() == "W+6.5"


@pytest.mark.parametrize(("komi", "text"), [(6.5, "B+12.5"), (19.5, "W+0.5"), (19, "0")])
def test_margin_counts_dead_stones_for_the_opponent(komi, text):
    e = Estimate(
        black_stones=30, white_stones=10, black_territory=5, white_territory=5,
        black_dead=2, white_dead=1, disputed=3, dame=1, komi=komi,
    )
    # Black 30 + 5 + 1 = 36, White 10 + 5 + 2 = 17.
    assert e.margin == 19 - komi
    assert e.summary() == text
