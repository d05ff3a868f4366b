"""Replay speed of the referee's board against sgfmill's, on the real SGF corpus.

Every 9x9, 13x13 and 19x19 file under ../shared/sgf/real that sgfmill loads and
whose main line our board accepts is read into memory first; then the same
moves are replayed with ``Board.play`` and ``Game.play`` (occupied, suicide and
positional superko checked, captures counted) and with ``sgfmill.boards.Board.play``
(captures only: no suicide or superko check). Passes count as moves for both;
sgfmill has no pass, so it skips them. It also times the dashboard's score
estimate on every 20th position of the 19x19 games, against Tromp-Taylor
scoring of the same positions. Run: ``.venv/bin/python bench/replay.py``.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from sgfmill import boards, sgf, sgf_moves

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from orchestrator.coords import PASS  # noqa: E402
from orchestrator.rules import (  # noqa: E402
    BLACK,
    WHITE,
    Board,
    Game,
    IllegalMove,
    estimate,
    tromp_taylor,
)

REAL_SGF = (REPO / ".." / "shared" / "sgf" / "real").resolve()
SIZES = (9, 13, 19)
ROUNDS = 5
COLORS = {"b": BLACK, "w": WHITE}

# One game: size, sgfmill setup (colour, (row, col)) list, sgfmill moves, our setup and moves.
Record = tuple[int, list, list, tuple[list[int], list[int]], list[tuple[int, int]]]


def load(path: Path) -> Record | None:
    """The game in ``path`` ready to replay, or None if either board cannot take it."""
    try:
        game = sgf.Sgf_game.from_bytes(path.read_bytes())
        size = game.get_size()
        if size not in SIZES:
            return None
        start, plays = sgf_moves.get_setup_and_moves(game)
    except (ValueError, IndexError):
        return None
    setup = [(color, rc) for color, rc in start.list_occupied_points()]
    ours_setup: tuple[list[int], list[int]] = ([], [])
    for color, (row, col) in setup:
        ours_setup[color == "w"].append((size - 1 - row) * size + col)
    moves = []
    for color, rc in plays:
        point = PASS if rc is None else (size - 1 - rc[0]) * size + rc[1]
        moves.append((COLORS[color], point))
    board = Board(size)
    try:
        board.setup(*ours_setup)
        for color, point in moves:
            board.play(color, point)
    except (IllegalMove, ValueError):
        return None
    return size, setup, [p for p in plays if p[1] is not None], ours_setup, moves


def replay_board(records: list[Record]) -> None:
    for size, _, _, setup, moves in records:
        board = Board(size)
        if setup[0] or setup[1]:
            board.setup(*setup)
        play = board.play
        for color, point in moves:
            play(color, point)


def replay_game(records: list[Record]) -> None:
    for size, _, _, setup, moves in records:
        game = Game(size)
        if setup[0] or setup[1]:
            game.setup(*setup)
        play = game.play
        for color, point in moves:
            play(point, color)


def replay_sgfmill(records: list[Record]) -> None:
    for size, setup, plays, _, _ in records:
        board = boards.Board(size)
        if setup:
            board.apply_setup(
                [rc for c, rc in setup if c == "b"], [rc for c, rc in setup if c == "w"], []
            )
        play = board.play
        for color, (row, col) in plays:
            play(row, col, color)


def best_times(
    fns: dict[str, Callable[[list[Record]], None]], records: list[Record]
) -> dict[str, float]:
    """Best wall time of each replay over ROUNDS rounds; the replays take turns
    within a round so that a burst of load elsewhere hits all of them alike."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(ROUNDS):
        for label, fn in fns.items():
            start = time.perf_counter()
            fn(records)
            best[label] = min(best[label], time.perf_counter() - start)
    return best


def positions_19(records: list[Record]) -> list[Board]:
    boards_seen = []
    for size, _, _, setup, moves in records:
        if size != 19:
            continue
        board = Board(size)
        board.setup(*setup)
        for n, (color, point) in enumerate(moves, 1):
            board.play(color, point)
            if n % 20 == 0:
                boards_seen.append(board.copy())
    return boards_seen


def time_each(fn: Callable[[Board, float], object], boards_in: list[Board]) -> tuple[float, float]:
    """Median and 99th percentile seconds per call of ``fn(board, 7.5)``."""
    times = []
    for board in boards_in:
        start = time.perf_counter()
        fn(board, 7.5)
        times.append(time.perf_counter() - start)
    return statistics.median(times), statistics.quantiles(times, n=100)[98]


def main() -> int:
    if not REAL_SGF.is_dir():
        print(f"real SGF corpus not found at {REAL_SGF}; nothing to benchmark")
        return 0
    paths = sorted(p for p in REAL_SGF.rglob("*") if p.suffix.lower() == ".sgf")
    records = [r for r in map(load, paths) if r is not None]
    moves = sum(len(r[4]) for r in records)
    by_size = {s: sum(1 for r in records if r[0] == s) for s in SIZES}
    print(
        f"{len(records)} of {len(paths)} files replayable "
        f"({', '.join(f'{n} {s}x{s}' for s, n in by_size.items())}), {moves} moves; "
        f"best of {ROUNDS} rounds"
    )
    best = best_times(
        {"sgfmill Board.play": replay_sgfmill, "go19 Board.play": replay_board,
         "go19 Game.play": replay_game},
        records,
    )
    reference = best.pop("sgfmill Board.play")
    print(f"{'sgfmill Board.play':<22} {moves / reference:>10,.0f} moves/s")
    for label, seconds in best.items():
        print(f"{label:<22} {moves / seconds:>10,.0f} moves/s   {reference / seconds:.2f}x sgfmill")
    sample = positions_19(records)
    tt_median, tt_p99 = time_each(tromp_taylor, sample)
    est_median, est_p99 = time_each(estimate, sample)
    print(f"{len(sample)} 19x19 positions, ms per call (median / 99th percentile): "
          f"tromp_taylor {tt_median * 1e3:.3f} / {tt_p99 * 1e3:.3f}, "
          f"estimate {est_median * 1e3:.3f} / {est_p99 * 1e3:.3f} "
          f"({est_median / tt_median:.1f}x tromp_taylor)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
