"""Board rules on hand-built positions: captures, suicide, ko, superko, setup, errors."""

from __future__ import annotations

import numpy as np
import pytest

from orchestrator.color import BLACK, EMPTY, WHITE
from orchestrator.coords import PASS, from_gtp
from orchestrator.rules import (
    Board,
    Game,
    IllegalMove,
    Move,
    OccupiedError,
    OffBoardError,
    SuicideError,
    SuperkoError,
)
from orchestrator.rules.board import side_ko_table
from tests.conftest import REAL_SGF, requires_real_sgf
from tests.rules.corpus import main_line
from tests.rules.diagram import board_from, pts


def snapshot(board: Board) -> tuple:
    return (
        list(board.stones),
        board.hash,
        set(board.history),
        board.ko_point,
        dict(board.captures),
        sorted((min(g.stones), sorted(g.liberties)) for g in board.groups()),
    )


def test_single_capture_frees_the_point_and_counts_it():
    board = board_from("""
        . . . . .
        . . X . .
        . X O X .
        . . . . .
        . . . . .
    """)
    result = board.play(BLACK, from_gtp("C2", 5))
    assert result.captured == tuple(pts(5, "C3"))
    assert board[from_gtp("C3", 5)] == EMPTY
    assert board.captures == {BLACK: 1, WHITE: 0}
    assert result.liberties == 4  # C3 (freed), B2, D2, C1
    assert result.ko_point is None
    assert board.liberties_at(from_gtp("C4", 5)) == 4  # C3 is a liberty again


def test_multi_stone_capture_on_the_edge_gives_liberties_to_the_whole_group():
    board = board_from("""
        O O . . .
        X X X . .
        . . . . .
        . . . . .
        . . . . .
    """)
    result = board.play(BLACK, from_gtp("C5", 5))
    assert result.captured == tuple(sorted(pts(5, "A5", "B5")))
    # A5, B5 (freed), D5, D4, A3, B3, C3
    assert result.liberties == 7
    assert board.liberties_at(from_gtp("A4", 5)) == 7
    assert board.group_at(from_gtp("A4", 5)) is board.group_at(from_gtp("C5", 5))


def test_one_move_captures_two_groups():
    board = board_from("""
        . X . X .
        X O . O X
        . X . X .
        . . . . .
        . . . . .
    """)
    result = board.play(BLACK, from_gtp("C4", 5))
    assert result.captured == tuple(sorted(pts(5, "B4", "D4")))
    assert board.captures[BLACK] == 2
    assert result.liberties == 4
    assert board.stone_count(WHITE) == 0


def test_single_stone_suicide_is_refused_and_changes_nothing():
    board = board_from("""
        . O . . .
        O . . . .
        . . . . .
        . . . . .
        . . . . .
    """)
    before = snapshot(board)
    with pytest.raises(SuicideError) as info:
        board.play(BLACK, from_gtp("A5", 5))
    assert info.value.reason == "suicide"
    assert snapshot(board) == before
    assert not board.is_legal(BLACK, from_gtp("A5", 5))
    assert board.is_legal(WHITE, from_gtp("A5", 5))


def test_multi_stone_suicide_is_refused():
    board = board_from("""
        X . O . .
        O O . . .
        . . . . .
        . . . . .
        . . . . .
    """)
    before = snapshot(board)
    with pytest.raises(SuicideError):
        board.play(BLACK, from_gtp("B5", 5))
    assert snapshot(board) == before


def test_capture_takes_precedence_over_suicide_and_makes_a_ko():
    board = board_from("""
        . O X . .
        O X . . .
        . . . . .
        . . . . .
        . . . . .
    """)
    result = board.play(BLACK, from_gtp("A5", 5))
    assert result.captured == tuple(pts(5, "B5"))
    assert result.liberties == 1
    assert result.ko_point == from_gtp("B5", 5) == board.ko_point


def test_simple_ko_retake_is_refused_until_the_position_changes():
    board = board_from("""
        . O X . .
        O X . . .
        . . . . .
        . . . . .
        . . . . .
    """)
    a5, b5 = pts(5, "A5", "B5")
    board.play(BLACK, a5)
    with pytest.raises(SuperkoError) as info:
        board.play(WHITE, b5)
    assert info.value.reason == "superko"
    assert "white B5: superko" in str(info.value)
    board.play(WHITE, from_gtp("E1", 5))
    board.play(BLACK, from_gtp("E2", 5))
    assert board.play(WHITE, b5).captured == (a5,)
    assert board.ko_point == a5
    with pytest.raises(SuperkoError):
        board.play(BLACK, a5)
    # Filling the ko is not a retake.
    assert board.is_legal(WHITE, a5)


def test_a_pass_clears_the_ko_point_but_not_the_superko_history():
    board = board_from("""
        . O X . .
        O X . . .
        . . . . .
        . . . . .
        . . . . .
    """)
    board.play(BLACK, from_gtp("A5", 5))
    board.play(WHITE, PASS)
    assert board.ko_point is None
    board.play(BLACK, PASS)
    assert not board.is_legal(WHITE, from_gtp("B5", 5))


def test_snapback_capture_after_the_throw_in():
    board = board_from("""
        O O . . X
        X O O O X
        . X X X .
        . . . . .
        . . . . .
    """)
    c5, d5 = pts(5, "C5", "D5")
    throw_in = board.play(BLACK, c5)
    assert throw_in.captured == () and throw_in.liberties == 1
    assert board.play(WHITE, d5).captured == (c5,)
    assert board.liberties_at(d5) == 1
    snap = board.play(BLACK, c5)
    assert snap.captured == tuple(sorted(pts(5, "A5", "B5", "D5", "B4", "C4", "D4")))
    assert board.captures == {BLACK: 6, WHITE: 1}
    assert snap.ko_point is None


TRIPLE_KO = """
    . X O . . . O X .
    X O . O . O X . X
    . X O . . . O X .
    . . . . . . . . .
    . . . . . . . . .
    . X O . . . . . .
    X O . O . . . . .
    . X O . . . . . .
    . . . . . . . . .
"""


def test_triple_ko_cycle_is_refused_by_positional_superko_only():
    board = board_from(TRIPLE_KO)
    start = board.hash
    cycle = [(BLACK, "C8"), (WHITE, "H8"), (BLACK, "C3"), (WHITE, "B8"), (BLACK, "G8")]
    for color, vertex in cycle:
        assert len(board.play(color, from_gtp(vertex, 9)).captured) == 1
    b3 = from_gtp("B3", 9)
    # Simple ko would allow it: the last capture was in another ko.
    assert board.ko_point == from_gtp("H8", 9)
    with pytest.raises(SuperkoError):
        board.play(WHITE, b3)
    assert b3 not in board.legal_moves(WHITE)
    assert board.hash != start


@requires_real_sgf
def test_real_superko_case_from_gifu_2006_is_refused():
    record = main_line(REAL_SGF / "odd" / "gnugo-gorimu.sgf")
    board = Board(record.size)
    board.setup(record.black, record.white)
    for color, point in record.moves[:380]:
        board.play(color, point)
    color, point = record.moves[380]
    assert (color, point) == (BLACK, from_gtp("L7", record.size))
    assert board.ko_point != point
    with pytest.raises(SuperkoError):
        board.play(color, point)


def test_off_board_and_occupied_points_are_refused():
    board = Board(9)
    board.play(BLACK, from_gtp("E5", 9))
    for point in (81, 1000, -2):
        with pytest.raises(OffBoardError) as info:
            board.play(WHITE, point)
        assert info.value.reason == "off-board"
        assert not board.is_legal(WHITE, point)
    with pytest.raises(OccupiedError) as info:
        board.play(WHITE, from_gtp("E5", 9))
    assert info.value.reason == "occupied"
    assert str(info.value) == "white E5: occupied"
    assert isinstance(info.value, IllegalMove)
    with pytest.raises(IllegalMove):
        board.play(3, from_gtp("A1", 9))


def test_check_predicts_without_changing_the_board():
    board = board_from("""
        O O . . .
        X X X . .
        . . . . .
        . . . . .
        . . . . .
    """)
    before = snapshot(board)
    predicted = board.check(BLACK, from_gtp("C5", 5))
    assert snapshot(board) == before
    assert predicted == board.play(BLACK, from_gtp("C5", 5))


def test_legal_moves_exclude_suicide_occupied_and_superko():
    board = board_from("""
        . X .
        X . X
        . X .
    """)
    assert board.legal_moves(WHITE) == []  # every empty point is suicide for White
    assert board.legal_moves(BLACK) == [0, 2, 4, 6, 8]

    board = board_from("""
        . O X . .
        O X . . .
        . . . . .
        . . . . .
        . . . . .
    """)
    board.play(BLACK, from_gtp("A5", 5))
    empty = [p for p in range(25) if board[p] == EMPTY]
    assert board.legal_moves(BLACK) == empty
    assert board.legal_moves(WHITE) == [p for p in empty if p != from_gtp("B5", 5)]


def test_setup_places_and_clears_stones_and_joins_history():
    board = Board(9)
    board.setup(black=pts(9, "C3", "C4"), white=pts(9, "D3"))
    assert board.liberties_at(from_gtp("C3", 9)) == 5
    assert board.group_at(from_gtp("C3", 9)) is board.group_at(from_gtp("C4", 9))
    assert board.hash in board.history
    board.play(WHITE, from_gtp("D4", 9))
    # A later setup (AB/AW/AE in a move node) rebuilds groups around the game so far.
    board.setup(white=pts(9, "B3"), empty=pts(9, "D3"))
    assert board[from_gtp("D3", 9)] == EMPTY
    assert board.liberties_at(from_gtp("C3", 9)) == 4  # C2, D3, B4, C5
    assert board.liberties_at(from_gtp("D4", 9)) == 3  # D5, E4, D3
    assert board.ko_point is None
    assert board.hash in board.history


def test_setup_that_leaves_a_group_without_liberties_changes_nothing():
    board = Board(5)
    board.setup(white=pts(5, "A4", "B5"))
    before = snapshot(board)
    with pytest.raises(ValueError, match="black group without liberties at A5"):
        board.setup(black=pts(5, "A5"))
    assert snapshot(board) == before
    with pytest.raises(OffBoardError):
        board.setup(black=[25])
    assert snapshot(board) == before


def test_handicap_stones_are_black_setup_and_white_moves_next():
    game = Game(size=19, komi=0.5)
    stones = pts(19, "D4", "Q16", "D16", "Q4")
    game.place_handicap(stones)
    assert game.to_play == WHITE
    assert sorted(p for p in range(361) if game.board[p] == BLACK) == sorted(stones)
    assert game.setup_stones == [Move(BLACK, p) for p in stones]
    assert game.move_number == 0
    game.play(from_gtp("K10", 19))
    assert game.board[from_gtp("K10", 19)] == WHITE
    assert game.to_play == BLACK


def test_game_turns_passes_and_illegal_moves():
    game = Game(size=9, komi=7.5)
    game.play(from_gtp("E5", 9))
    with pytest.raises(OccupiedError):
        game.play(from_gtp("E5", 9))
    assert game.to_play == WHITE and game.move_number == 1
    game.play(PASS)
    assert not game.over_by_passes
    game.play(from_gtp("E6", 9))
    game.play(PASS)
    game.play(PASS)
    assert game.over_by_passes
    assert game.moves[-1] == Move(BLACK, PASS)
    # Black's two stones own the empty board under Tromp-Taylor.
    assert (game.score().black, game.score().white) == (81, 0)
    game.play(from_gtp("A1", 9), color=WHITE)
    assert game.to_play == BLACK and game.consecutive_passes == 0


def test_copy_is_independent_and_keeps_the_superko_history():
    board = board_from("""
        . O X . .
        O X . . .
        . . . . .
        . . . . .
        . . . . .
    """)
    board.play(BLACK, from_gtp("A5", 5))
    clone = board.copy()
    assert not clone.is_legal(WHITE, from_gtp("B5", 5))
    clone.play(WHITE, from_gtp("E1", 5))
    assert board[from_gtp("E1", 5)] == EMPTY
    assert board.is_legal(WHITE, from_gtp("E1", 5))
    assert clone.hash != board.hash


def test_to_array_and_position_key():
    board = Board(5)
    board.play(BLACK, from_gtp("A5", 5))
    board.play(WHITE, from_gtp("E1", 5))
    array = board.to_array()
    assert array.dtype == np.uint8 and array.shape == (5, 5)
    assert array[0, 0] == BLACK and array[4, 4] == WHITE and int(array.sum()) == 3
    assert board.position_key(BLACK) != board.position_key(WHITE)
    assert board.copy().position_key(WHITE) == board.position_key(WHITE)
    # A ko point is part of the identity: the same stones without it are another position.
    ko = Board(5)
    for color, vertex in [(BLACK, "B5"), (WHITE, "C5"), (BLACK, "A4"), (WHITE, "D4"),
                           (BLACK, "B3"), (WHITE, "C3"), (WHITE, "B4"), (BLACK, "C4")]:
        ko.play(color, from_gtp(vertex, 5))
    assert ko.ko_point == from_gtp("B4", 5)
    no_ko = ko.copy()
    no_ko.ko_point = None
    assert no_ko.hash == ko.hash and no_ko.position_key(WHITE) != ko.position_key(WHITE)


def test_position_keys_are_those_datasets_and_label_folders_store():
    # Keys written by earlier builds must still match: the 19x19 empty board's, pinned.
    board = Board(19)
    assert board.position_key(BLACK) == 560728313190325128
    assert board.position_key(WHITE) == 12406663886011743690
    assert side_ko_table(9) == side_ko_table(19)[:3 * 82]


@pytest.mark.parametrize("size", [2, 9, 13, 19, 25])
def test_sizes_and_neighbours(size):
    board = Board(size)
    corner = from_gtp("A1", size)
    assert sorted(board.neighbours(corner)) == sorted([corner - size, corner + 1])
    assert len(board.neighbours(size * size // 2)) == (4 if size > 2 else 2)
    assert len(board.legal_moves(BLACK)) == size * size


@pytest.mark.parametrize("size", [1, 26])
def test_unsupported_sizes_are_refused(size):
    with pytest.raises(ValueError, match=f"board size {size}"):
        Board(size)
