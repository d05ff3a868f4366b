"""The dashboard's score estimate on positions whose status is clear by eye."""

from __future__ import annotations

import dataclasses

import pytest

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS, from_gtp, to_gtp
from orchestrator.rules import Board, Game, tromp_taylor
from orchestrator.rules.dead_stones import dead_chains, without
from orchestrator.rules.estimate import Estimate, end_of_play_dead, estimate, final_ownership
from tests.conftest import requires_gnugo
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


# -- at the end of play -------------------------------------------------------------------

# Three dead stones, each in the other colour's closed area: White's B8 in Black's corner
# (which has no eye of its own while B8 stands), Black's G7 in White's upper right,
# Black's B2 in White's lower left. Black's G1-J3 corner has a four-point eye: alive here
# (an eye of more than MAX_DEAD_EYE points may make two).
THREE_DEAD = """
    . . . X O . . . .
    . O . X O . . . .
    . . . X O . X . .
    X X X X O . . . .
    O O O O O . . . .
    . . . . . O O O O
    . . . . . O X X X
    . X . . . O X . .
    . . . . . O X . .
"""


def dead_points(diagram: str) -> set[str]:
    board = board_from(diagram)
    chains = dead_chains(board, final_ownership(board))
    return {to_gtp(p, board.size) for chain in chains for p in chain}


def test_stones_in_the_opponents_closed_area_are_dead_at_the_end():
    assert dead_points(THREE_DEAD) == {"B8", "G7", "B2"}
    board = board_from(THREE_DEAD)
    view = final_ownership(board)
    at = {v: view[from_gtp(v, 9)] for v in ("B8", "A9", "G7", "B2", "A1", "H1", "E5")}
    # The dead stones and the points around them are the captor's; the rest as it stands.
    assert at == {"B8": 1.0, "A9": 1.0, "G7": -1.0, "B2": -1.0, "A1": -1.0, "H1": 1.0,
                  "E5": -1.0}


def test_a_surrounded_group_with_one_small_eye_dies_and_two_eyes_live():
    two_eyes = """
        . . . . . . .
        X X X X X X X
        X O O O O O X
        X O . O . O X
        X X O O O X X
        X X X X X X X
        . . . . . . .
    """
    assert dead_points(two_eyes) == set()
    one_eye = two_eyes.replace("X O . O . O X", "X O . . O O X")  # one eye of two points
    assert dead_points(one_eye) == {"B5", "C5", "D5", "E5", "F5", "B4", "E4", "F4", "C3",
                                    "D3", "E3"}


def test_nothing_is_dead_on_an_open_board():
    opening = Board(19)
    for color, vertex in [(BLACK, "Q16"), (WHITE, "D4"), (BLACK, "Q4"), (WHITE, "D16"),
                          (BLACK, "C3"), (WHITE, "D3")]:
        opening.play(color, from_gtp(vertex, 19))
    assert dead_chains(opening, final_ownership(opening)) == []


def test_a_stone_whose_area_is_still_open_is_not_dead():
    # Without F3, White's lower left and Black's lower right meet: B2 is not enclosed.
    assert dead_points(THREE_DEAD.replace(". . . . . O X X X", ". . . . . . X X X")) == {
        "B8", "G7"}


@requires_gnugo
def test_the_dead_stones_of_played_out_games_are_gnu_gos():
    """13x13 games of the heuristic AI against itself, each side passing from move 40 on
    once it would pass with the dead stones lifted (as the play page's AI agrees to end):
    every stone called dead GNU Go's ``final_status_list dead`` (an independent judge)
    calls dead too, and most of those it calls dead are found (the rest, races and big
    groups, are left for the players to mark)."""
    from orchestrator.players.heuristic import HeuristicChooser
    from tests.rules.gnugo import GnuGo

    found = judged = 0
    for seed in range(4):
        game = Game(13, 7.5)
        sides = {BLACK: HeuristicChooser(seed, 2), WHITE: HeuristicChooser(seed + 100, 2)}
        while not game.over_by_passes:
            side, board = sides[game.to_play], game.board
            if game.move_number >= 40 and side.choose(
                    without(board, end_of_play_dead(board)), game.to_play) == PASS:
                game.play(PASS)
            else:
                game.play(side.choose(board, game.to_play))
        gnugo = GnuGo("--level", "5")
        try:
            gnugo.batch(["boardsize 13", "clear_board", "komi 7.5"] + [
                f"play {'b' if m.color == BLACK else 'w'} "
                f"{'pass' if m.point == PASS else to_gtp(m.point, 13)}" for m in game.moves])
            theirs = {from_gtp(v, 13) for v in gnugo("final_status_list dead").split()}
        finally:
            gnugo.close()
        chains = dead_chains(game.board, final_ownership(game.board))
        mine = {p for chain in chains for p in chain}
        assert mine <= theirs, f"seed {seed}: {sorted(to_gtp(p, 13) for p in mine - theirs)}"
        found += len(mine)
        judged += len(theirs)
    assert judged > 0 and found >= judged / 2, (found, judged)
