"""Tactics bits of single moves on hand-built positions."""

from __future__ import annotations

import pytest

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS, from_gtp
from orchestrator.rules import SuicideError
from orchestrator.rules.tactics import Tactics, classify
from tests.rules.diagram import board_from


def bits(diagram: str, color: int, vertex: str) -> Tactics:
    board = board_from(diagram)
    before = (list(board.stones), board.hash, set(board.history), board.ko_point)
    result = classify(board, color, from_gtp(vertex, board.size))
    assert (list(board.stones), board.hash, set(board.history), board.ko_point) == before
    return result


def test_capture():
    diagram = """
        . . . . .
        . . X . .
        . X O X .
        . . . . .
        . . . . .
    """
    assert bits(diagram, BLACK, "C2") == Tactics.CAPTURE
    assert bits(diagram, BLACK, "A1") == Tactics.NONE


def test_atari():
    diagram = """
        . . . . .
        . . X . .
        . . O . .
        . . X . .
        . . . . .
    """
    assert bits(diagram, BLACK, "B3") == Tactics.ATARI
    assert bits(diagram, BLACK, "D3") == Tactics.ATARI
    assert bits(diagram, BLACK, "B4") == Tactics.NONE  # diagonal: White keeps two liberties


def test_escape_needs_two_liberties_after():
    assert bits("""
        . . . . .
        . . O . .
        . O X . .
        . . O . .
        . . . . .
    """, BLACK, "D3") == Tactics.ESCAPE
    # Extending into one liberty is no escape (and White's groups keep several liberties).
    assert bits("""
        . . . . .
        . . O O .
        . O X . .
        . . O O .
        . . . . .
    """, BLACK, "D3") == Tactics.NONE


def test_capture_that_saves_a_group_in_atari():
    assert bits("""
        . . . . .
        . O . X .
        O X . O X
        . O . X .
        . . . . .
    """, BLACK, "C3") == Tactics.CAPTURE | Tactics.ESCAPE


def test_capture_and_atari_at_once():
    assert bits("""
        . . . . .
        . X O X .
        . . . O X
        . . . X .
        . . . . .
    """, BLACK, "C3") == Tactics.CAPTURE | Tactics.ATARI


def test_bits_are_the_issue_values():
    assert (Tactics.CAPTURE, Tactics.ATARI, Tactics.ESCAPE) == (1, 2, 4)


def test_pass_has_no_bits_and_illegal_moves_raise():
    diagram = """
        . X .
        X . X
        . X .
    """
    assert classify(board_from(diagram), WHITE, PASS) == Tactics.NONE
    with pytest.raises(SuicideError):
        bits(diagram, WHITE, "B2")
