"""Speed and memory of `go19 dataset export`.

A dataset is built from real 19x19 games (../shared/sgf/real/pro19), then, on one core:

1. rendering alone: ``render_png`` of every sample at 512 px with its last-move mark, the
   least an export must do (the reference);
2. ``export --format parquet`` and ``export --format jsonl`` of the same samples, each in
   a fresh process (cold render caches, like a real run), CPU seconds of that process;
   the ratio to rendering alone says what the rest (prompts, answers, arrow, files) costs.
3. peak memory (ru_maxrss) of a parquet export of the dataset and of one 4x its size (the
   games repeated): flat in samples means the two peaks are about the same.

Rates are samples per CPU second (per core): the machine is shared. Target: >= 1,500
samples/s per core for parquet. Run: ``.venv/bin/python bench/export.py [--games 40]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from orchestrator.dataset import BuildOptions, build, load, load_games  # noqa: E402
from orchestrator.export.games import NO_LAST, game_context  # noqa: E402
from orchestrator.export.pipeline import ExportOptions, export  # noqa: E402
from orchestrator.render import render_png  # noqa: E402

REAL_SGF = (REPO / ".." / "shared" / "sgf" / "real").resolve()
PX = 512
TARGET = 1500


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def child_render(dataset: str) -> None:
    data = load(dataset)
    table = load_games(dataset)
    contexts = {g: game_context(table[g], PX) for g in set(data["game"].tolist())}
    marks = [int(contexts[int(g)].last[int(n)]) for g, n in zip(data["game"], data["move_number"],
                                                                 strict=True)]
    start = cpu_seconds()
    for board, last in zip(data["board"], marks, strict=True):
        render_png(board, None if last == NO_LAST else last, PX)
    print(json.dumps({"samples": len(marks), "cpu": cpu_seconds() - start}))


def child_export(dataset: str, out: str, fmt: str) -> None:
    start = cpu_seconds()
    manifest = export(dataset, out, ExportOptions(format=fmt, image_px=PX), force=True)
    took = cpu_seconds() - start
    size = sum(f.stat().st_size for f in Path(out).rglob("*") if f.is_file())
    print(json.dumps({"samples": manifest["counts"]["samples"], "cpu": took, "bytes": size,
                      "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))


def run_child(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=40, help="real games in the dataset")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        child_render(*rest) if kind == "render" else child_export(*rest)
        return
    if not REAL_SGF.is_dir():
        print(f"real SGF corpus not found at {REAL_SGF}; nothing to benchmark")
        return
    games = sorted((REAL_SGF / "pro19").glob("*.sgf"))[:args.games]
    with tempfile.TemporaryDirectory() as tmp:
        small, large = Path(tmp) / "small", Path(tmp) / "large"
        build(games, small, BuildOptions())
        # 4x the samples: the same games, dedup off and each game listed four times over
        # hard links (distinct paths, so read four times).
        copies = []
        for k in range(4):
            folder = Path(tmp) / f"copy{k}"
            folder.mkdir()
            for game in games:
                (folder / game.name).hardlink_to(game)
                copies.append(folder / game.name)
        build(copies, large, BuildOptions(dedup=False))
        ref = run_child("render", str(small))
        rate_ref = ref["samples"] / ref["cpu"]
        print(f"{ref['samples']} samples from {len(games)} real games, {PX} px, one core")
        print(f"  render alone (render_png, last move marked): {rate_ref:.0f} samples/s per core")
        for fmt in ("parquet", "jsonl"):
            started = time.perf_counter()
            result = run_child("export", str(small), str(Path(tmp) / fmt), fmt)
            rate = result["samples"] / result["cpu"]
            verdict = "" if fmt != "parquet" else (
                f"; target {TARGET}: {'met' if rate >= TARGET else 'NOT met'}")
            print(f"  export {fmt:<7}: {rate:.0f} samples/s per core "
                  f"({rate / rate_ref:.2f} x render alone), "
                  f"{result['bytes'] / result['samples'] / 1024:.1f} KiB/sample, "
                  f"{time.perf_counter() - started:.1f} s wall{verdict}", flush=True)
        one = run_child("export", str(small), str(Path(tmp) / "m1"), "parquet")
        four = run_child("export", str(large), str(Path(tmp) / "m4"), "parquet")
        print(f"  peak RSS, parquet: {one['samples']} samples {one['peak_kib'] / 1024:.0f} MiB, "
              f"{four['samples']} samples {four['peak_kib'] / 1024:.0f} MiB "
              f"(ratio {four['peak_kib'] / one['peak_kib']:.2f} for "
              f"{four['samples'] / one['samples']:.1f}x the samples)")


if __name__ == "__main__":
    main()
