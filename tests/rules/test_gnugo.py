"""Cross-checks against GNU Go 3.8 over GTP (Chinese rules, positional superko):
move legality on real game positions, and area scores of finished self-play games."""

from __future__ import annotations

import random

import pytest

from orchestrator.color import BLACK, EMPTY, WHITE
from orchestrator.coords import from_gtp, to_gtp
from orchestrator.rules import Board, Game
from tests.conftest import REAL_SGF, requires_gnugo, requires_real_sgf
from tests.rules.corpus import Record, main_line, sgf_files
from tests.rules.gnugo import GnuGo

pytestmark = requires_gnugo

NAME = {BLACK: "black", WHITE: "white"}
GAMES, STOPS = 50, 4  # 200 positions


def setup_free_records() -> list[Record]:
    """Main lines of pro19/ and counted/ without setup stones (GNU Go gets them by `play`)."""
    records = []
    for folder in ("pro19", "counted"):
        for path in sgf_files(REAL_SGF / folder):
            try:
                record = main_line(path)
            except ValueError:
                continue
            if record.moves and not record.black and not record.white:
                records.append(record)
    return records


def stones_of(board: Board, color: int) -> set[str]:
    return {to_gtp(p, board.size) for p in range(board.area) if board[p] == color}


def compare_legality(engine: GnuGo, board: Board, plays: list[str], where: str) -> int:
    """Send ``plays``, then ask GNU Go about every empty point for both colours and
    compare with ``board`` (already holding those moves). Returns GNU Go's refusals."""
    size = board.size
    queries = [(c, p) for c in (BLACK, WHITE) for p in range(board.area) if board[p] == EMPTY]
    replies = engine.batch(
        plays
        + [f"is_legal {NAME[c]} {to_gtp(p, size)}" for c, p in queries]
        + ["list_stones black", "list_stones white"]
    )
    verdicts = replies[len(plays):len(plays) + len(queries)]
    assert set(replies[-2].split()) == stones_of(board, BLACK), where
    assert set(replies[-1].split()) == stones_of(board, WHITE), where
    disagree = [
        f"{NAME[c]} {to_gtp(p, size)}: ours {board.is_legal(c, p)}, GNU Go {v}"
        for (c, p), v in zip(queries, verdicts, strict=True)
        if board.is_legal(c, p) != (v == "1")
    ]
    assert not disagree, f"{where}: {disagree}"
    return verdicts.count("0")


@requires_real_sgf
def test_is_legal_agrees_with_gnugo_on_real_positions():
    rng = random.Random(2019)
    positions = refused_empty = 0
    with GnuGo() as engine:
        for record in rng.sample(setup_free_records(), GAMES):
            size = record.size
            engine.batch([f"boardsize {size}", "clear_board"])
            board = Board(size)
            stops = sorted(rng.sample(range(1, len(record.moves) + 1),
                                      min(STOPS, len(record.moves))))
            done = 0
            for stop in stops:
                plays = []
                for color, point in record.moves[done:stop]:
                    board.play(color, point)
                    plays.append(f"play {NAME[color]} {to_gtp(point, size)}")
                done = stop
                where = f"{record.path.name} after move {stop}"
                refused_empty += compare_legality(engine, board, plays, where)
                positions += 1
    assert positions == GAMES * STOPS
    # The positions must include refusals on empty points (suicide, ko) to mean anything.
    assert refused_empty > 50


@requires_real_sgf
def test_superko_refusal_in_a_real_game_agrees_with_gnugo():
    record = main_line(REAL_SGF / "odd" / "gnugo-gorimu.sgf")
    board = Board(record.size)
    plays = []
    for color, point in record.moves[:380]:
        board.play(color, point)
        plays.append(f"play {NAME[color]} {to_gtp(point, record.size)}")
    with GnuGo() as engine:
        engine.batch([f"boardsize {record.size}", "clear_board"])
        compare_legality(engine, board, plays, "gnugo-gorimu.sgf before move 381")
        assert engine("is_legal black L7") == "0"
    assert not board.is_legal(BLACK, from_gtp("L7", record.size))


def self_play_score(size: int, seed: int) -> None:
    """GNU Go plays itself to two passes; our referee must accept every move and,
    with no dead stones left, our Tromp-Taylor result must be GNU Go's final score."""
    options = ("--level", "0", "--capture-all-dead", "--never-resign", "--seed", str(seed))
    with GnuGo(*options) as engine:
        engine.batch([f"boardsize {size}", "clear_board", "komi 7.5"])
        game = Game(size=size, komi=7.5)
        while not game.over_by_passes:
            assert game.move_number < 3 * size * size, "self-play game did not end"
            vertex = engine(f"genmove {NAME[game.to_play]}")
            game.play(from_gtp(vertex, size))
        assert set(engine("list_stones black").split()) == stones_of(game.board, BLACK)
        assert set(engine("list_stones white").split()) == stones_of(game.board, WHITE)
        dead = engine("final_status_list dead")
        if dead:
            pytest.skip(f"GNU Go still sees dead stones ({dead.split()[:5]}...)")
        assert game.score().result == engine("final_score")


@pytest.mark.parametrize(("size", "seed"), [(9, 1), (9, 2), (9, 3), (9, 4)])
def test_tromp_taylor_matches_gnugo_final_score(size, seed):
    self_play_score(size, seed)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("size", "seed"), [(19, 1), (19, 2), (19, 3), (13, 1), (13, 2), (9, 5), (9, 6)]
)
def test_tromp_taylor_matches_gnugo_final_score_more_games(size, seed):
    self_play_score(size, seed)
