"""Milliseconds per board picture (render + PNG encode) at 512 px, against a naive Pillow render.

The positions come from the first 19x19 game under ../shared/sgf/real/pro19 (replayed with
sgfmill), or from seeded random stones when that folder is absent. Cases, each a median over
many runs in this one process:

* mid-game (the first position with ~200 stones), cold: the band cache emptied before every
  run, as for a position never drawn before;
* mid-game, warm: the same position again (every band cached);
* a game replayed move by move, each position drawn once, as ``collect`` draws them;
* the empty board, warm;
* reference: a copy of the empty board picture with one ImageDraw ellipse per stone and
  Pillow's default PNG save, and one ``zlib.compress(level 1)`` of the whole picture.

Times are this thread's CPU time (``time.thread_time``): on a shared machine wall-clock
medians of millisecond jobs mostly measure the scheduler. Run: ``.venv/bin/python bench/render.py``.
"""

from __future__ import annotations

import io
import statistics
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw
from sgfmill import sgf, sgf_moves

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from orchestrator import render  # noqa: E402
from orchestrator.coords import PASS  # noqa: E402

PRO19 = (REPO / ".." / "shared" / "sgf" / "real" / "pro19").resolve()
PX = 512
RUNS = 400
MID_GAME = 200

Position = tuple[np.ndarray, int]


def real_game() -> list[Position] | None:
    """Every position of the first 19x19 game that sgfmill reads, with its last move."""
    for path in sorted(PRO19.glob("*.sgf")) if PRO19.is_dir() else []:
        try:
            game = sgf.Sgf_game.from_bytes(path.read_bytes())
            start, plays = sgf_moves.get_setup_and_moves(game)
        except ValueError:
            continue
        if game.get_size() != 19 or len(plays) < MID_GAME:
            continue
        board, positions = start.copy(), []
        for color, move in plays:
            last = PASS
            if move is not None:
                board.play(move[0], move[1], color)
                last = (18 - move[0]) * 19 + move[1]  # sgfmill's row 0 is the bottom
            array = np.zeros((19, 19), np.uint8)
            for stone, (row, col) in board.list_occupied_points():
                array[18 - row, col] = 1 if stone == "b" else 2
            positions.append((array, last))
        print(f"game: {path.name}, {len(positions)} moves")
        return positions
    return None


def random_game() -> list[Position]:
    """Stones dropped on random empty points, no captures: a stand-in for a real game."""
    rng = np.random.default_rng(19)
    board, positions = np.zeros((19, 19), np.uint8), []
    for move, point in enumerate(rng.permutation(361)[:250]):
        board.flat[point] = 1 + move % 2
        positions.append((board.copy(), int(point)))
    print("game: seeded random stones (../shared/sgf/real/pro19 not found)")
    return positions


def median_ms(work: Callable[[], object], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        start = time.thread_time()
        work()
        times.append(time.thread_time() - start)
    return statistics.median(times) * 1e3


def naive_png(background: Image.Image, board: np.ndarray, last: int) -> bytes:
    spacing, _ = render._geometry(19, PX)
    radius = spacing * 0.48
    picture = background.copy()
    draw = ImageDraw.Draw(picture)
    for point in np.flatnonzero(board):
        x, y = render.point_center(int(point), 19, PX)
        black = board.flat[point] == 1
        draw.ellipse([x - radius, y - radius, x + radius, y + radius],
                     fill=(25, 25, 25) if black else (245, 245, 240), outline=(40, 40, 40))
    if last != PASS:
        x, y = render.point_center(last, 19, PX)
        draw.ellipse([x - 3, y - 3, x + 3, y + 3], fill=render.LAST_MOVE)
    out = io.BytesIO()
    picture.save(out, "PNG")
    return out.getvalue()


def cold(board: np.ndarray, last: int) -> bytes:
    render._band.cache_clear()  # private on purpose: only a benchmark wants a cold cache
    return render.render_png(board, last, PX)


def main() -> None:
    positions = real_game() or random_game()
    mid, mid_last = next(p for p in positions if np.count_nonzero(p[0]) >= MID_GAME - 10)
    empty = np.zeros((19, 19), np.uint8)
    background = Image.fromarray(render.render_image(empty, None, PX))
    render.render_png(empty, None, PX)  # build the cached layout outside the timings

    ours_cold = median_ms(lambda: cold(mid, mid_last))
    ours_warm = median_ms(lambda: render.render_png(mid, mid_last, PX))
    ours_empty = median_ms(lambda: render.render_png(empty, None, PX))
    replay = []
    for _ in range(3):
        render._band.cache_clear()
        for board, last in positions:
            start = time.thread_time()
            render.render_png(board, last, PX)
            replay.append(time.thread_time() - start)
    ours_replay = statistics.median(replay) * 1e3
    replay_mean = statistics.mean(replay) * 1e3
    naive = median_ms(lambda: naive_png(background, mid, mid_last), RUNS // 4)
    naive_empty = median_ms(lambda: naive_png(background, empty, PASS), RUNS // 4)
    layout = render._layout(19, PX)
    indices = layout.empty.copy()
    render._fill(layout, indices[layout.origin:layout.origin + 19 * layout.spacing], 0,
                 render._variants(mid, mid_last, PX))
    one_zlib = median_ms(lambda: zlib.compress(indices, 1))

    stones = np.count_nonzero(mid)
    print(f"19x19 at {PX} px, {stones} stones mid-game; median CPU ms per picture"
          " (render + PNG)")
    rows = [
        ("mid-game, cold cache", ours_cold, naive),
        ("mid-game, warm (same position)", ours_warm, naive),
        (f"game replay, {len(positions)} positions x3", ours_replay, naive),
        ("empty board, warm", ours_empty, naive_empty),
    ]
    for name, ours, reference in rows:
        print(f"  {name:34s} {ours:7.3f} ms   naive Pillow {reference:7.3f} ms"
              f"   x{reference / ours:6.1f} faster")
    print(f"  (game replay mean {replay_mean:.3f} ms; one zlib.compress level 1 of the whole"
          f" mid-game picture {one_zlib:.3f} ms)")
    print(f"PNG bytes: ours mid-game {len(render.render_png(mid, mid_last, PX))}, "
          f"empty {len(render.render_png(empty, None, PX))}; "
          f"naive mid-game {len(naive_png(background, mid, mid_last))}")


if __name__ == "__main__":
    main()
