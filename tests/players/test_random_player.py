"""The uniformly random legal mover: the floor the heuristic AI is measured against."""

from __future__ import annotations

from collections import Counter

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS
from orchestrator.players.random_player import RandomChooser
from orchestrator.rules import Game
from tests.players.boards import DAME, TWO_EYES_AND_A_DAME, board_from, point


def test_never_fills_its_eyes_and_passes_when_only_eyes_are_left() -> None:
    for seed in range(20):
        board = board_from(*TWO_EYES_AND_A_DAME)
        mover = RandomChooser(seed)
        assert mover.choose(board, BLACK) == DAME
        board.play(BLACK, DAME)
        assert mover.choose(board, BLACK) == PASS
        # White's only empty points are its own eyes and Black's, where it would be suicide.
        assert mover.choose(board, WHITE) == PASS


def test_picks_uniformly_among_acceptable_moves() -> None:
    rows = list(TWO_EYES_AND_A_DAME)
    rows[7] = "X X X . . O O O O"
    rows[8] = "X X X X X O O O O"
    board = board_from(*rows)
    # Black may play D2 or E2 (White's eyes are suicide, its own eyes are excluded);
    # the eye-like points are A9 and C9.
    acceptable = {point(7, 3), point(7, 4)}
    mover = RandomChooser(1)
    counts = Counter(mover.choose(board, BLACK) for _ in range(1000))
    assert set(counts) == acceptable
    assert all(400 <= n <= 600 for n in counts.values()), counts


def test_random_games_are_legal_and_end_by_two_passes() -> None:
    for seed in range(5):
        game = Game(9)
        movers = {BLACK: RandomChooser(seed), WHITE: RandomChooser(seed + 100)}
        while not game.over_by_passes and game.move_number < 722:
            game.play(movers[game.to_play].choose(game.board, game.to_play))
        assert game.over_by_passes
