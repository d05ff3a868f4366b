"""The heuristic AI: tactics on hand-drawn positions, legality everywhere, and
whole games refereed by orchestrator.rules.Game."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS
from orchestrator.players.heuristic import HeuristicChooser, HeuristicPlayer
from orchestrator.players.random_player import RandomChooser, RandomPlayer
from orchestrator.rules import Board, Game, Move, tromp_taylor
from tests.players.boards import DAME, TWO_EYES_AND_A_DAME, board_from, point

SEEDS = range(12)


def play_out(black, white, size: int, komi: float = 7.5, cap: int = 722) -> Game:
    """A game to two passes or the cap; Game.play raises on any illegal move."""
    game = Game(size, komi)
    players = {BLACK: black, WHITE: white}
    last = None
    while not game.over_by_passes and game.move_number < cap:
        last = players[game.to_play].choose(game.board, game.to_play, last)
        game.play(last)
    return game


def is_true_eye(board: Board, color: int, p: int) -> bool:
    """Textbook definition, written independently of the code under test."""
    size = board.size
    row, col = divmod(p, size)
    if board[p] != 0 or any(board[q] != color for q in board.neighbours(p)):
        return False
    diagonals = [
        (row + dr) * size + col + dc
        for dr in (-1, 1)
        for dc in (-1, 1)
        if 0 <= row + dr < size and 0 <= col + dc < size
    ]
    enemy = sum(board[q] == 3 - color for q in diagonals)
    return enemy == 0 if len(diagonals) < 4 else enemy < 2


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("seed", SEEDS)
def test_captures_the_bigger_group(level: int, seed: int) -> None:
    board = board_from(
        ". . . . . . . . .",
        ". . X . . . . . .",
        ". X O X . . . . .",
        ". . . . . . . . .",
        ". . . . . . . . .",
        ". . . . . . . . .",
        ". . . . . . . . .",
        ". . X X X . . . .",
        ". X O O O . . . .",
    )
    assert board.liberties_at(point(2, 2)) == 1 and board.liberties_at(point(8, 2)) == 1
    assert HeuristicChooser(seed, level).choose(board, BLACK) == point(8, 5)


# Black C5 is in atari; C4 would give it three liberties.
ATARI_WITH_ROOM = (
    ". . . . . . . . .",
    ". . . . . . . . .",
    ". . . . . . . . .",
    ". . . . O . . . .",
    ". . . O X O . . .",
    ". . . . . . . . .",
    ". . . . . . . . .",
    ". . . . . . . . .",
    ". . . . . . . . .",
)


@pytest.mark.parametrize("seed", SEEDS)
def test_escapes_atari_when_extending_gains_liberties(seed: int) -> None:
    board = board_from(*ATARI_WITH_ROOM)
    assert board.liberties_at(point(4, 4)) == 1
    assert HeuristicChooser(seed).choose(board, BLACK, last_move=point(4, 5)) == point(5, 4)


def test_level_one_plays_like_level_two_except_for_occasional_lapses() -> None:
    board = board_from(*ATARI_WITH_ROOM)
    escapes = sum(HeuristicChooser(seed, 1).choose(board, BLACK) == point(5, 4)
                  for seed in range(200))
    # Level 0 finds the escape only by chance (1 empty point in 76); level 2 always does.
    assert 140 <= escapes <= 195


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("seed", SEEDS)
def test_does_not_extend_into_self_atari(level: int, seed: int) -> None:
    board = board_from(
        ". . . . . . . . .",
        ". . . . . . . . .",
        ". . . . . . . . .",
        ". . . . O . . . .",
        ". . . O X O . . .",
        ". . . O . O . . .",
        ". . . . . . . . .",
        ". . . . . . . . .",
        ". . . . . . . . .",
    )
    assert board.check(BLACK, point(5, 4)).liberties == 1
    assert HeuristicChooser(seed, level).choose(board, BLACK) != point(5, 4)


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("color", [BLACK, WHITE])
def test_fills_the_dame_then_passes_without_filling_eyes(level: int, color: int) -> None:
    for seed in SEEDS:
        board = board_from(*TWO_EYES_AND_A_DAME)
        ai = HeuristicChooser(seed, level)
        assert ai.choose(board, color) == DAME
        board.play(color, DAME)
        assert ai.choose(board, BLACK) == PASS
        assert ai.choose(board, WHITE) == PASS


@pytest.mark.parametrize("level", [0, 1, 2])
def test_removes_a_dead_stone_from_its_area_before_passing(level: int) -> None:
    rows = list(TWO_EYES_AND_A_DAME)
    rows[0] = ". . O . X O . O ."
    rows[8] = "X X X X X O O O O"
    for seed in SEEDS:
        board = board_from(*rows)
        ai = HeuristicChooser(seed, level)
        for _ in range(10):
            move = ai.choose(board, BLACK)
            if move == PASS:
                break
            board.play(BLACK, move)
        assert move == PASS
        score = tromp_taylor(board, 7.5)
        # Columns A-E (45 points) are Black's, F-J (36) White's.
        assert (score.black, score.white) == (45, 36), f"seed {seed}:\n{board}"


@pytest.mark.parametrize("seed", SEEDS)
def test_opens_on_the_four_corners(seed: int) -> None:
    board = Board(19)
    ai = HeuristicChooser(seed)
    corners = set()
    for color in (BLACK, WHITE, BLACK, WHITE):
        move = ai.choose(board, color)
        row, col = divmod(move, 19)
        lines = sorted((min(row, 18 - row), min(col, 18 - col)))
        assert lines in ([2, 2], [2, 3], [3, 3]), f"{len(corners)} corners taken, then {(row, col)}"
        corners.add((row < 9, col < 9))
        board.play(color, move)
    assert len(corners) == 4


def test_level_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="level 3"):
        HeuristicChooser(level=3)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.sampled_from([5, 9, 13, 19]),
    plies=st.integers(0, 400),
    level=st.sampled_from([0, 1, 2]),
)
def test_always_answers_legal_and_never_fills_a_true_eye(
    seed: int, size: int, plies: int, level: int
) -> None:
    """Positions from random play, which leaves every kind of mess on the board."""
    game = Game(size)
    mover = RandomChooser(seed)
    for _ in range(plies):
        if game.over_by_passes:
            break
        game.play(mover.choose(game.board, game.to_play))
    board = game.board
    color = game.to_play
    last = game.moves[-1].point if game.moves else None
    before = list(board.stones)
    move = HeuristicChooser(seed, level).choose(board, color, last)
    assert board.stones == before
    if move == PASS:
        return
    result = board.check(color, move)  # raises IllegalMove if illegal
    assert not is_true_eye(board, color, move)
    if level >= 1:
        assert result.liberties > 1 or result.captured


def test_wins_against_the_random_mover() -> None:
    wins = 0
    for i in range(10):
        ai, rnd = HeuristicChooser(i), RandomChooser(100 + i)
        if i % 2 == 0:
            wins += play_out(ai, rnd, 9).score().winner == BLACK
        else:
            wins += play_out(rnd, ai, 9).score().winner == WHITE
    assert wins >= 9


def test_level_two_beats_level_zero() -> None:
    wins = 0
    for i in range(6):
        strong, weak = HeuristicChooser(i, 2), HeuristicChooser(50 + i, 0)
        if i % 2 == 0:
            wins += play_out(strong, weak, 9).score().winner == BLACK
        else:
            wins += play_out(weak, strong, 9).score().winner == WHITE
    assert wins >= 5


@pytest.mark.parametrize("level", [0, 1, 2])
def test_games_against_itself_end_by_two_passes_on_19x19(level: int) -> None:
    game = play_out(HeuristicChooser(1, level), HeuristicChooser(2, level), 19)
    assert game.over_by_passes
    assert game.move_number < 722 * 2 // 3


def test_a_seed_fixes_the_game_and_seeds_vary_it() -> None:
    first = play_out(HeuristicChooser(7), HeuristicChooser(8), 9).moves
    again = play_out(HeuristicChooser(7), HeuristicChooser(8), 9).moves
    other = play_out(HeuristicChooser(9), HeuristicChooser(10), 9).moves
    assert first == again
    assert first != other


async def test_players_answer_what_the_ai_would_for_the_side_to_move() -> None:
    """The async adapters pass board, colour and last move through unchanged:
    replaying the game with fresh AIs of the same seeds picks the same moves."""
    black, white = HeuristicPlayer("h", seed=3, level=1), RandomPlayer("r", seed=4)
    game = Game(9)
    players = {BLACK: black, WHITE: white}
    while not game.over_by_passes:
        game.play((await players[game.to_play].answer(game)).move())
    await black.aclose()
    await white.aclose()

    replay = Game(9)
    ais = {BLACK: HeuristicChooser(3, 1), WHITE: RandomChooser(4)}
    last = None
    for move in game.moves:
        last = ais[move.color].choose(replay.board, replay.to_play, last)
        assert Move(replay.to_play, last) == move
        replay.play(last)

