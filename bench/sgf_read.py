"""Speed of reading SGF, end to end, on the real corpus in ../shared/sgf/real.

Every file is loaded into memory first; then, best of ROUNDS rounds, one core
(CPU time of this process, so that other work on a shared machine counts less):

- sgfmill (reference): ``Sgf_game.from_bytes`` plus the main line's moves;
- go19 ``read_games`` alone, then ``read_games`` + ``replay_positions`` (the
  dataset build's loop: parse, then every position under the rules);
- the same on the corpus as go19 writes it (``write_sgf``), which is
  what the dataset build reads;
- ``write_sgf`` itself.

Run: ``.venv/bin/python bench/sgf_read.py``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from sgfmill import sgf

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from orchestrator.rules.replay import replay_positions  # noqa: E402
from orchestrator.sgf import SgfError, read_games, write_sgf  # noqa: E402

REAL_SGF = (REPO / ".." / "shared" / "sgf" / "real").resolve()
ROUNDS = 5


def sgfmill_read(files: list[bytes]) -> int:
    games = 0
    for data in files:
        try:
            game = sgf.Sgf_game.from_bytes(data)
        except ValueError:
            continue
        for node in game.get_main_sequence():
            node.get_move()
        games += 1
    return games


def go19_read(files: list[bytes]) -> int:
    games = 0
    for data in files:
        try:
            games += len(read_games(data))
        except SgfError:
            pass
    return games


def go19_read_replay(files: list[bytes]) -> int:
    games = 0
    for data in files:
        try:
            for game in read_games(data):
                for _ in replay_positions(game):
                    pass
                games += 1
        except SgfError:
            pass
    return games


def best_rate(fn: Callable[[list[bytes]], int], files: list[bytes]) -> float:
    best = float("inf")
    games = 0
    for _ in range(ROUNDS):
        start = time.process_time()
        games = fn(files)
        best = min(best, time.process_time() - start)
    return games / best


def main() -> int:
    if not REAL_SGF.is_dir():
        print(f"real SGF corpus not found at {REAL_SGF}; nothing to benchmark")
        return 0
    files = [p.read_bytes() for p in sorted(REAL_SGF.rglob("*")) if p.suffix.lower() == ".sgf"]
    games = [g for data in files for g in _readable(data)]
    written = [write_sgf(g) for g in games]
    moves = sum(len(g.moves) for g in games)
    print(f"{len(files)} files, {len(games)} readable games, {moves} moves "
          f"({moves / len(games):.0f} per game); best of {ROUNDS} rounds, one core")
    reference = best_rate(sgfmill_read, files)
    print(f"{'sgfmill from_bytes + main line':<38} {reference:>8,.0f} games/s")
    for label, fn, data in (
        ("go19 read_games", go19_read, files),
        ("go19 read_games + replay_positions", go19_read_replay, files),
        ("go19 read_games, as go19 writes", go19_read, written),
        ("  + replay_positions", go19_read_replay, written),
    ):
        rate = best_rate(fn, data)
        print(f"{label:<38} {rate:>8,.0f} games/s   {rate / reference:5.1f}x sgfmill")
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.process_time()
        for game in games:
            write_sgf(game)
        best = min(best, time.process_time() - start)
    print(f"{'go19 write_sgf':<38} {len(games) / best:>8,.0f} games/s")
    return 0


def _readable(data: bytes) -> list:
    try:
        return read_games(data)
    except SgfError:
        return []


if __name__ == "__main__":
    sys.exit(main())
