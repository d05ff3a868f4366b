"""The compiled replay (orchestrator.positions.fastreplay) gives the pure path's rows, or
its error, for every game: the whole real corpus and random games full of captures, kos,
suicides, superko repeats and setups."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.coords import PASS
from orchestrator.dataset.sources import find_sgf_files
from orchestrator.positions import fastreplay, samples
from orchestrator.positions.rows import Positions, replay_rows
from orchestrator.positions.samples import GameRead
from orchestrator.rules.board import Board
from orchestrator.sgf import Setup, SgfError, SgfGame, SgfMove, fastgrammar, read_games
from orchestrator.sgf.grammar import Node
from tests.conftest import REAL_SGF, requires_real_sgf

pytestmark = pytest.mark.skipif(
    not fastreplay.ENABLED,
    reason="numba is not installed (pip install 'go19[fast]') or GO19_PURE_REPLAY is set: "
    "the pure path is all there is")


def _outcome(replay, game: SgfGame) -> Positions | tuple[type, str, int | None]:
    try:
        return replay(game)
    except SgfError as exc:
        return type(exc), str(exc), getattr(exc, "move", None)


def _assert_same(game: SgfGame, nodes: list[Node] | None = None) -> Positions | None:
    """The kernel's rows from ``game.moves`` and, given the main line ``game`` was read
    from, from the runs' text are the pure path's, or both raise its error."""
    pure = _outcome(replay_rows, game)
    for fast in (_outcome(fastreplay.positions, game),
                 *([] if nodes is None else [_outcome(lambda g: fastreplay.positions(g, nodes),
                                                       game)])):
        if not isinstance(pure, Positions):
            assert fast == pure
            continue
        assert isinstance(fast, Positions), fast
        for name in Positions.__slots__:
            a, b = getattr(pure, name), getattr(fast, name)
            assert a.dtype == b.dtype and a.shape == b.shape, name
            assert np.array_equal(a, b), f"{game.sha1}: {name} differs"
    return pure if isinstance(pure, Positions) else None


def _read_with_nodes(data: bytes) -> list[tuple[SgfGame, list[Node]]]:
    """Games as the build reads them, each with its main line's nodes."""
    trees: list[list[Node]] = []

    def lines(text: str) -> list[list[Node]]:
        trees.extend(fastgrammar.main_lines(text))
        return trees

    games = read_games(data, require_size=19, lines=lines)
    return [(game, trees[game.game_index]) for game in games]


@requires_real_sgf
def test_whole_real_corpus() -> None:
    files, _ = find_sgf_files([REAL_SGF])
    checked = rejected = tactical = plain = 0
    for path in files:
        try:
            games = _read_with_nodes(path.read_bytes())
        except SgfError:
            continue
        for game, nodes in games:
            rows = _assert_same(game, nodes)
            checked += 1
            rejected += rows is None
            tactical += 0 if rows is None else int(np.count_nonzero(rows.tactical))
            plain += fastreplay._moves(game, nodes)[2]
    # Every kind of row was exercised: games kept, games the rules reject, tactics bits;
    # most games' moves come from their runs' text, the others' from game.moves.
    assert checked > 500 and rejected >= 1 and tactical > 1000
    assert checked - 100 > plain > checked / 2


@requires_real_sgf
def test_build_reading_equals_the_pure_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """samples.read_file, compiled (parse, plain moves, replay) and pure: the same
    GameRead for every game of every file, every field and every array."""
    files, _ = find_sgf_files([REAL_SGF])
    fast = [samples.read_file(path) for path in files]
    monkeypatch.setattr(fastreplay, "ENABLED", False)
    pure = [samples.read_file(path) for path in files]
    assert len(fast) == len(pure) == len(files)
    for fast_reads, pure_reads in zip(fast, pure, strict=True):
        assert len(fast_reads) == len(pure_reads)
        for a, b in zip(fast_reads, pure_reads, strict=True):
            for name in GameRead.__slots__:
                if name != "positions":
                    assert getattr(a, name) == getattr(b, name), (a.path, name)
            assert (a.positions is None) == (b.positions is None)
            if a.positions is not None:
                for name in Positions.__slots__:
                    x, y = getattr(a.positions, name), getattr(b.positions, name)
                    assert x.dtype == y.dtype and np.array_equal(x, y), (a.path, name)
    assert sum(r.status == "ok" for reads in fast for r in reads) > 500


# Games in a 6x6 corner, played with the rules board so they go on long enough for
# captures, kos, escapes and superko refusals; now and then a move that may be illegal
# (occupied, suicide, superko) or one side moving twice, and setups on the way.
_CORNER = [r * 19 + c for r in range(6) for c in range(6)]


@st.composite
def _games(draw: st.DrawFn) -> SgfGame:
    # One seed drives the game: hypothesis would draw its "now and then" choices as the
    # simplest value (0) far too often, and end nearly every game at once.
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    board = Board(19)
    moves: list[SgfMove] = []
    setups: list[Setup] = []
    color = 1
    for _ in range(rng.randrange(200)):
        if rng.random() < 0.005:
            points = rng.sample(_CORNER, rng.randrange(6))
            cut = rng.randrange(len(points) + 1)
            empty = rng.sample(_CORNER, rng.randrange(3))
            setup = Setup(len(moves), tuple(points[:cut]), tuple(points[cut:]), tuple(empty))
            setups.append(setup)
            try:
                board.setup(setup.black, setup.white, setup.empty)
            except ValueError:
                break  # an impossible setup: both paths must reject the game
        legal = [p for p in _CORNER if board.is_legal(color, p)]
        refused = [p for p in _CORNER if not board[p] and p not in legal]  # suicide, superko
        if rng.random() < 0.003:
            point = rng.choice([*_CORNER, PASS])
        elif refused and rng.random() < 0.01:
            point = rng.choice(refused)
        else:
            point = PASS if rng.random() < 0.05 or not legal else rng.choice(legal)
        moves.append(SgfMove(color, point))
        if not board.is_legal(color, point):
            break  # the game ends at its first illegal move: both paths must reject it
        board.play(color, point)
        color = color if rng.random() < 0.03 else 3 - color
    return SgfGame(moves=tuple(moves), setup=tuple(setups), sha1="random", game_index=0)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_games())
def test_random_games(game: SgfGame) -> None:
    _assert_same(game)


def _spelled(point: int, rng: random.Random) -> str:
    if point == PASS:
        return rng.choice(["", "tt"])
    return "abcdefghijklmnopqrs"[point % 19] + "abcdefghijklmnopqrs"[point // 19]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(_games(), st.integers(0, 2**32 - 1))
def test_random_games_read_from_text(game: SgfGame, seed: int) -> None:
    """The same games written as SGF text the way real files spell them (runs with
    spaces and line breaks, passes as [] or [tt], time left after moves, setup nodes,
    now and then a move with a comment) and read back as the build reads them."""
    rng = random.Random(seed)
    setups = {s.before_move: s for s in game.setup}
    parts = ["(;GM[1]SZ[19]"]
    for number, move in enumerate(game.moves):
        if number in setups:
            s = setups[number]
            parts.append(";" + "".join(f"{name}[{_spelled(p, rng)}]" for name, ps in
                                        (("AE", s.empty), ("AB", s.black), ("AW", s.white))
                                        for p in ps))
        parts.append(rng.choice(["", " ", "\n"]) + ";" + rng.choice(["", " "])
                     + "BW"[move.color - 1] + f"[{_spelled(move.point, rng)}]")
        if rng.random() < 0.05:
            parts.append(f"{'BW'[move.color - 1]}L[{rng.randrange(900)}.5]")
        if rng.random() < 0.01:
            parts.append("C[a comment]")
    parts.append(")")
    data = "".join(parts).encode()
    try:
        games = _read_with_nodes(data)
    except SgfError:
        return  # a setup point written as a pass: not a game either path sees
    [(read, nodes)] = games
    assert [(m.color, m.point) for m in read.moves] == [(m.color, m.point) for m in game.moves]
    _assert_same(read, nodes)


def test_opening_and_fallback_moves_keep_their_origin() -> None:
    game = SgfGame(moves=(SgfMove(1, 60), SgfMove(2, 61, source="opening"),
                          SgfMove(1, PASS, source="fallback:timeout")), sha1="o")
    rows = _assert_same(game)
    assert rows is not None and rows.origin.tolist() == [0, 1, 2]
    assert rows.move.tolist() == [60, 61, 361]


def test_ko_point_and_immediate_recapture() -> None:
    def p(row: int, col: int) -> int:
        return row * 19 + col

    stones = Setup(0, black=(p(0, 1), p(1, 0), p(2, 1)), white=(p(0, 2), p(2, 2), p(1, 3)))
    opening = (SgfMove(2, p(1, 1)), SgfMove(1, p(1, 2)))  # Black takes the ko
    elsewhere = SgfGame(moves=(*opening, SgfMove(2, p(10, 10))), setup=(stones,), sha1="k")
    rows = _assert_same(elsewhere)
    assert rows is not None and rows.ko.tolist() == [-1, -1, p(1, 1)]
    assert rows.tactical.tolist() == [2, 3, 0]  # atari; capture and atari; none
    retake = SgfGame(moves=(*opening, SgfMove(2, p(1, 1))), setup=(stones,), sha1="k")
    assert _assert_same(retake) is None  # both refuse it: positional superko
    with pytest.raises(SgfError, match="superko"):
        fastreplay.positions(retake)
