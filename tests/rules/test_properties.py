"""Random games against independent references.

Each game starts from random setup stones and tries random points (occupied,
suicidal and repeating ones included) for the side to move. At every try the
verdict, and the reason for a refusal, must match an sgfmill-based referee with
exact-position superko; after every accepted move the board must match
sgfmill's stone for stone, and its groups, liberties, hash, stone counts,
tactics bits and estimate must match from-scratch computations.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS
from orchestrator.rules import Board, IllegalMove
from orchestrator.rules.estimate import estimate
from orchestrator.rules.tactics import Tactics, classify
from tests.rules.reference import SgfmillReferee, adjacent, flood_groups, zobrist_hash

MAX_TRIES = {5: 150, 9: 220, 13: 260, 19: 320}


@st.composite
def games(draw, size: int) -> tuple[dict[int, int], list[int]]:
    area = size * size
    setup = draw(st.dictionaries(st.integers(0, area - 1), st.sampled_from([BLACK, WHITE]),
                                 max_size=area // 5))
    # ``area`` stands for a pass.
    tries = draw(st.lists(st.integers(0, area), min_size=MAX_TRIES[size] // 2,
                          max_size=MAX_TRIES[size]))
    return setup, tries


def expected_tactics(stones: list[int], after: list[int], size: int, color: int,
                     point: int, before_groups: dict, after_groups: dict) -> Tactics:
    """The bits by definition, from flood fills of the positions before and after."""
    other = 3 - color
    bits = Tactics.NONE
    if after.count(other) < stones.count(other):
        bits |= Tactics.CAPTURE
    for q in adjacent(point, size):
        if after[q] == other and len(after_groups[q][1]) == 1:
            bits |= Tactics.ATARI
        if stones[q] == color and len(before_groups[q][1]) == 1:
            if len(after_groups[point][1]) >= 2:
                bits |= Tactics.ESCAPE
    return bits


def check_invariants(board: Board, groups: dict, placed: dict[int, int],
                     lost: dict[int, int]) -> None:
    size = board.size
    for p, (members, liberties) in groups.items():
        group = board.group_at(p)
        assert group is not None and group.color == board[p]
        assert group.stones == members
        assert group.liberties == liberties
        assert liberties, f"group at {p} has no liberties"
    assert all(board.group_at(p) is None for p in range(board.area) if p not in groups)
    assert board.hash == zobrist_hash(board.stones, size)
    assert board.hash in board.history
    for color in (BLACK, WHITE):
        assert board.stone_count(color) == placed[color] - lost[color]
        assert board.captures[color] == lost[3 - color]


def assert_refused(board: Board, referee: SgfmillReferee, color: int, point: int) -> None:
    reason = referee.verdict(color, point)[0]
    assert reason is not None
    before = (list(board.stones), board.hash, len(board.history), board.ko_point)
    with pytest.raises(IllegalMove) as info:
        board.play(color, point)
    assert info.value.reason == reason
    assert not board.is_legal(color, point)
    assert (list(board.stones), board.hash, len(board.history), board.ko_point) == before


def play_random_game(size: int, setup: dict[int, int], tries: list[int]) -> None:
    area = size * size
    board = Board(size)
    referee = SgfmillReferee(size)
    black = [p for p, c in setup.items() if c == BLACK]
    white = [p for p, c in setup.items() if c == WHITE]
    if referee.setup(black, white):
        board.setup(black, white)
    else:
        with pytest.raises(ValueError, match="without liberties"):
            board.setup(black, white)
    assert board.stones == referee.stones()
    placed = {BLACK: board.stone_count(BLACK), WHITE: board.stone_count(WHITE)}
    lost = {BLACK: 0, WHITE: 0}
    groups = flood_groups(board.stones, size)
    color = BLACK
    for n, t in enumerate(tries):
        point = PASS if t == area else t
        if point != PASS and board[point]:
            assert_refused(board, referee, color, point)
            # So that games fill the board, an occupied try becomes the empty point
            # of the same rank.
            empty = [p for p in range(area) if not board[p]]
            point = empty[t % len(empty)] if empty else PASS
        if n % (3 if size == 5 else 10 if size == 9 else 60) == 0:
            legal = [p for p in range(area) if referee.verdict(color, p)[0] is None]
            assert board.legal_moves(color) == legal
        reason, after, ko = referee.verdict(color, point)
        if reason is not None:
            assert_refused(board, referee, color, point)
            continue
        stones = list(board.stones)
        bits = classify(board, color, point)
        predicted = board.check(color, point)
        result = board.play(color, point)
        assert result == predicted
        referee.accept(after)
        assert board.stones == referee.stones()
        after_groups = flood_groups(board.stones, size)
        if point != PASS:
            assert board.ko_point == (None if ko is None else (size - 1 - ko[0]) * size + ko[1])
            assert bits == expected_tactics(
                stones, board.stones, size, color, point, groups, after_groups
            )
            placed[color] += 1
            lost[3 - color] += len(result.captured)
        groups = after_groups
        check_invariants(board, groups, placed, lost)
        if n % 10 == 0:
            e = estimate(board, komi=7.5)
            parts = (e.black_stones, e.white_stones, e.black_territory, e.white_territory,
                     e.black_dead, e.white_dead, e.disputed, e.dame)
            assert min(parts) >= 0 and sum(parts) == area
            assert e.black_stones + e.black_dead == board.stone_count(BLACK)
        color = 3 - color


QUICK_EXAMPLES = {5: 12, 9: 8, 13: 5, 19: 5}
HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]


def _examples(quick: int) -> int:
    """``quick`` in ``make test``; under ``make test-fuzz`` (the fuzz profile) at least its
    example count, as tests/conftest.py raises every ``@given`` test. The strategy here
    depends on the parameter, so the test builds its ``@given`` inside and says so
    itself."""
    if settings.get_current_profile_name() == "fuzz":
        return max(quick, settings.default.max_examples)
    return quick


@pytest.mark.hypothesis  # what `make test-fuzz` selects; built inside, so not detected
@pytest.mark.parametrize("size", [5, 9, 13, 19])
def test_random_games_match_the_references(size):
    quick = settings(max_examples=_examples(QUICK_EXAMPLES[size]), deadline=None,
                     suppress_health_check=HEALTH)
    quick(given(games(size))(lambda game: play_random_game(size, *game)))()


@pytest.mark.slow
@pytest.mark.parametrize("size", [5, 9, 13, 19])
def test_random_games_match_the_references_thoroughly(size):
    thorough = settings(max_examples=300, deadline=None, suppress_health_check=HEALTH)
    thorough(given(games(size))(lambda game: play_random_game(size, *game)))()
