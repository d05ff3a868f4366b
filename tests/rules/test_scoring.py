"""Tromp-Taylor area scores and result strings on boards counted by hand."""

from __future__ import annotations

import pytest

from orchestrator.color import BLACK, EMPTY, WHITE
from orchestrator.coords import from_gtp
from orchestrator.rules import Board, result_string, tromp_taylor
from tests.rules.diagram import board_from

# Black: 7 stones + A5, A3, A1 = 10. White: 7 stones + 6 (top right) + 2 (bottom right) = 15.
SPLIT = """
    . X O . .
    X X O . .
    . X O . .
    X X O O O
    . X O . .
"""

# Column C touches both colours: 5 neutral points. Black 7 + 3, White 7 + 3.
NEUTRAL = """
    . X . O .
    X X . O O
    . X . O .
    X X . O O
    . X . O .
"""


def test_split_board():
    score = tromp_taylor(board_from(SPLIT), komi=0.5)
    assert (score.black, score.white) == (10, 15)
    assert score.margin == -5.5
    assert score.winner == WHITE
    assert score.result == "W+5.5"


def test_neutral_points_count_for_nobody():
    board = board_from(NEUTRAL)
    score = tromp_taylor(board, komi=7.5)
    assert (score.black, score.white) == (10, 10)
    assert score.result == "W+7.5"
    jigo = tromp_taylor(board, komi=0)
    assert (jigo.result, jigo.winner) == ("0", EMPTY)


def test_empty_board_and_one_stone():
    board = Board(9)
    assert tromp_taylor(board, 7.5).result == "W+7.5"
    board.play(BLACK, from_gtp("E5", 9))
    # Every empty point reaches only Black.
    assert tromp_taylor(board, 7.5).result == "B+73.5"
    board.play(WHITE, from_gtp("C3", 9))
    score = tromp_taylor(board, 7.5)
    assert (score.black, score.white) == (1, 1)


def test_stones_left_in_enemy_territory_spoil_it():
    # Nobody removes dead stones in Tromp-Taylor: the white stone at D3 makes the
    # black region neutral, so Black gets only its stones plus the A5 corner.
    board = board_from("""
        . X . . .
        X X . . .
        . . . O .
        . . . . .
        . . . . .
    """)
    score = tromp_taylor(board, komi=0)
    assert (score.black, score.white) == (3 + 1, 1)


@pytest.mark.parametrize(
    ("margin", "text"),
    [
        (3.5, "B+3.5"),
        (-0.5, "W+0.5"),
        (0, "0"),
        (0.0, "0"),
        (-0.0, "0"),
        (12, "B+12"),
        (12.0, "B+12"),
        (-7.0, "W+7"),
        (-12.75, "W+12.75"),
        (361, "B+361"),
    ],
)
def test_result_string(margin, text):
    assert result_string(margin) == text
