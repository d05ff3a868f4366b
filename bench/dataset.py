"""Speed and memory of `go19 dataset build`.

1. The real corpus (../shared/sgf/real, read from disk, page cache warm), one core:
   the reference is go19's reader plus ``replay_positions`` with nothing kept (the
   least any build must do: parse, and every move under the rules); then the
   whole build, then the build with ``--workers 2``.
2. Where a build's time goes, per move: parse, replay, the sample extraction
   (board mirror, tactics, keys), and writing shards (stored, deflated by zlib and,
   where installed, by isal: CPU s and bytes per sample).
3. Peak memory (ru_maxrss, each size in its own subprocess) of builds over a
   synthetic corpus of N games, real 19x19 games repeated with a distinct
   ``GN[]`` each (so distinct files and SHA-1s), 100 games per file. Dedup would
   drop every copy's positions, so these builds run ``--no-dedup --max-per-game 8``
   (the writer and game table at full size, shards kept small on disk); the dedup
   index's own growth is measured apart, on random keys.

Run: ``.venv/bin/python bench/dataset.py [--sizes 10000 100000] [--workers 2]``.
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

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from orchestrator import npz_shards  # noqa: E402
from orchestrator.dataset import BuildOptions, build, iter_shards, load  # noqa: E402
from orchestrator.dataset.dedup import SeenPositions  # noqa: E402
from orchestrator.dataset.shards import ShardWriter  # noqa: E402
from orchestrator.dataset.sources import find_sgf_files  # noqa: E402
from orchestrator.files import read_sgf_file  # noqa: E402
from orchestrator.positions import fastreplay  # noqa: E402
from orchestrator.positions.rows import replay_rows  # noqa: E402
from orchestrator.rules.replay import replay_positions  # noqa: E402
from orchestrator.sgf import SgfError, read_games, write_sgf  # noqa: E402

REAL_SGF = (REPO / ".." / "shared" / "sgf" / "real").resolve()
GAMES_PER_FILE = 100


def cpu_seconds() -> float:
    """CPU time of this process and of its reaped children (pool workers): on a
    shared machine, rates per core are games over CPU seconds, not wall seconds."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def reference(paths: list[Path]) -> tuple[int, int, float]:
    """Games and moves replayed, CPU seconds: read + replay_positions, nothing kept."""
    games = moves = 0
    start = cpu_seconds()
    for path in paths:
        try:
            read = read_sgf_file(path, require_size=19)
        except SgfError:
            continue
        for game in read:
            try:
                for _ in replay_positions(game):
                    moves += 1
            except SgfError:
                continue
            games += 1
    return games, moves, cpu_seconds() - start


def timed_build(inputs: list[Path], out: Path, workers: int,
                compiled: bool = True) -> tuple[dict, float, float]:
    """The manifest, wall seconds and CPU seconds (workers included) of one build, with
    the compiled replay (where numba is installed) or the pure reference path."""
    enabled = fastreplay.ENABLED
    fastreplay.ENABLED = enabled and compiled
    try:
        wall, cpu = time.perf_counter(), cpu_seconds()
        manifest = build(inputs, out, BuildOptions(), workers=workers, force=True)
        return manifest, time.perf_counter() - wall, cpu_seconds() - cpu
    finally:
        fastreplay.ENABLED = enabled


def breakdown(paths: list[Path]) -> None:
    data = [p.read_bytes() for p in paths]
    start = cpu_seconds()
    games = []
    for blob in data:
        try:
            games += read_games(blob, require_size=19)
        except SgfError:
            pass
    parse = cpu_seconds() - start
    start = cpu_seconds()
    moves = 0
    for game in games:
        try:
            for _ in replay_positions(game):
                moves += 1
        except SgfError:
            pass
    replay = cpu_seconds() - start
    start = cpu_seconds()
    kept = []
    for game in games:
        try:
            kept.append(replay_rows(game))
        except SgfError:
            pass
    extract = cpu_seconds() - start - replay
    print(f"  CPU per move ({moves} moves): parse {parse / moves * 1e6:.1f} us, "
          f"replay {replay / moves * 1e6:.1f} us, "
          f"extraction (mirror, tactics, keys) {extract / moves * 1e6:.1f} us")
    if fastreplay.ENABLED:
        start = cpu_seconds()
        for game in games:
            try:
                fastreplay.positions(game)
            except SgfError:
                pass
        fused = cpu_seconds() - start
        print(f"  compiled replay + extraction in one pass (fastreplay): "
              f"{fused / moves * 1e6:.2f} us per move, the same rows")
    with tempfile.TemporaryDirectory() as tmp:
        writer = ShardWriter(Path(tmp), 1 << 16, compress=False)
        start = cpu_seconds()
        for i, positions in enumerate(kept):
            writer.add(positions, 1, i)
        writer.flush()
        took = cpu_seconds() - start
        print(f"  shards (rows copied in, written stored): {writer.samples} samples in "
              f"{took:.2f} s ({writer.samples / took / 1e3:.0f}k samples/s)")


def write_shards(dataset: Path) -> None:
    """Run in a fresh subprocess: the shard writing alone (``npz_shards.write_shard``) on
    the dataset's own shards, with zlib, with isal where installed, and stored: CPU s
    (min of 5) and bytes per sample. zlib goes first, before isal has run in the
    process: after ISA-L's vector code, zlib's deflate (and OpenSSL's sha256) runs
    ~1.3-1.7x slower in that thread on AVX-512 machines (upper vector state left
    dirty), which a go19 without isal never pays."""
    shards = list(iter_shards(dataset))
    samples = sum(len(arrays["move"]) for arrays in shards)
    took = {}
    isal = npz_shards.ISAL
    with tempfile.TemporaryDirectory() as tmp:
        for deflate in (npz_shards.ZLIB, *([isal] if isal else []), None):
            best = float("inf")
            for _ in range(5):
                start = cpu_seconds()
                size = sum(npz_shards.write_shard(Path(tmp) / f"w{i}.npz", arrays,
                                                  deflate).bytes
                           for i, arrays in enumerate(shards))
                best = min(best, cpu_seconds() - start)
            name = f"{deflate.name} level {deflate.level}" if deflate else "stored"
            took[deflate] = best
            print(f"  writing shards, {name}: {best:.3f} CPU s ({samples / best / 1e3:.0f}k "
                  f"samples/s), {size / samples:.1f} bytes/sample")
    if isal is None:
        print("  (isal not installed: pip install 'go19[fast]' for ISA-L's deflate)")
    else:
        print(f"  isal writes shards {took[npz_shards.ZLIB] / took[isal]:.1f}x as fast as zlib")


def synthetic_corpus(folder: Path, games: int, templates: list[bytes]) -> None:
    """``games`` copies of the templates, 100 per file, each with its own GN[]."""
    folder.mkdir(parents=True)
    for first in range(0, games, GAMES_PER_FILE):
        trees = [templates[i % len(templates)].replace(b"@COPY@", str(i).encode())
                 for i in range(first, min(first + GAMES_PER_FILE, games))]
        (folder / f"synthetic-{first // GAMES_PER_FILE:05d}.sgf").write_bytes(b"".join(trees))


def templates(paths: list[Path]) -> list[bytes]:
    out = []
    for path in paths:
        try:
            games = read_sgf_file(path, require_size=19)
        except SgfError:
            continue
        for game in games:
            try:
                for _ in replay_positions(game):
                    pass
            except SgfError:
                continue
            out.append(write_sgf(game, extra={"GN": "copy @COPY@"}))
    return out


def child_build(corpus: Path, out: Path, workers: int) -> None:
    """Run in a subprocess: build, then print the peak memory as JSON."""
    start = time.perf_counter()
    manifest = build([corpus], out, BuildOptions(dedup=False, max_per_game=8),
                     workers=workers, force=True)
    took = time.perf_counter() - start
    cpu = cpu_seconds()
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    workers_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({"games": manifest["counts"]["games_kept"], "seconds": took, "cpu": cpu,
                      "samples": manifest["counts"]["samples"], "main_kib": own,
                      "worker_kib": workers_rss}))


def child_dedup(keys: int, kind: str) -> None:
    """The reference index (``pure``) or the compiled one (``compiled``, the build's own
    where numba is installed), fed one game's worth of random keys at a time."""
    if kind == "compiled":
        from orchestrator.dataset import fastdedup
        seen = fastdedup.SeenPositions()
    else:
        seen = SeenPositions()
    rng = np.random.default_rng(1)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    for _ in range(0, keys, 250):  # one game's worth of positions at a time
        batch = rng.integers(0, 2**64, 250, dtype=np.uint64)
        seen.add(batch[seen.fresh(batch)])
    took = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"keys": len(seen), "seconds": took, "index_bytes": seen.nbytes,
                      "peak_growth_kib": peak - base}))


def run_child(*args: str) -> str:
    """A fresh interpreter for each measurement: on Linux ru_maxrss survives fork and
    exec, so the parent stays small (it only imports) and launches everything."""
    result = subprocess.run([sys.executable, __file__, "--child", *args],
                            capture_output=True, text=True, check=True)
    return result.stdout


def speed() -> None:
    paths, _ = find_sgf_files([REAL_SGF])
    print(f"1. real corpus: {len(paths)} files")
    games, moves, ref = reference(paths)
    print(f"  reference (read + replay, nothing kept): {games} games in {ref:.2f} CPU s = "
          f"{games / ref:.0f} games/s per core, {moves / ref / 1e3:.1f}k moves/s")
    if fastreplay.ENABLED:
        print(f"  compiled replay (numba): loaded in {fastreplay.LOAD_SECONDS:.2f} CPU s, once "
              "per process, not counted below (the first run on a machine compiles it, ~6 s, "
              "then it is cached)")
    else:
        print("  compiled replay: numba not installed (pip install 'go19[fast]'); pure path")
    with tempfile.TemporaryDirectory() as tmp:
        runs = [(1, False), (1, True), (2, True)] if fastreplay.ENABLED else [(1, False),
                                                                           (2, False)]
        for workers, compiled in runs:
            manifest, wall, cpu = timed_build([REAL_SGF], Path(tmp) / f"w{workers}", workers,
                                              compiled)
            c = manifest["counts"]
            path = "compiled" if compiled else "pure"
            print(f"  build --workers {workers} ({path}): {c['games_kept']} games, "
                  f"{c['samples']} samples; "
                  f"wall {wall:.2f} s = {c['games_kept'] / wall:.0f} games/s, "
                  f"{c['samples'] / wall / 1e3:.1f}k samples/s; CPU {cpu:.2f} s = "
                  f"{c['games_kept'] / cpu:.0f} games/s per core "
                  f"({ref / cpu:.2f}x the reference's rate)")
        start = time.perf_counter()
        loaded = load(Path(tmp) / "w1")
        took = time.perf_counter() - start
        print(f"  load (sha256 checked): {len(loaded['move'])} samples in {took:.2f} s")
        print("2. where a build's time goes")
        breakdown(paths)
        print(run_child("shards", str(Path(tmp) / "w1")), end="")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--dedup-keys", type=int, default=10_000_000)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "speed":
            speed()
        elif kind == "corpus":
            paths, _ = find_sgf_files([REAL_SGF])
            synthetic_corpus(Path(rest[0]), int(rest[1]), templates(paths))
        elif kind == "shards":
            write_shards(Path(rest[0]))
        elif kind == "build":
            child_build(Path(rest[0]), Path(rest[1]), int(rest[2]))
        else:
            child_dedup(int(rest[0]), rest[1])
        return

    if not REAL_SGF.is_dir():
        print(f"real SGF corpus not found at {REAL_SGF}; nothing to benchmark")
        return
    print(run_child("speed"), end="", flush=True)
    print(f"3. peak memory, synthetic corpora (--no-dedup --max-per-game 8, "
          f"--workers {args.workers})")
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            corpus = Path(tmp) / "corpus"
            run_child("corpus", str(corpus), str(size))
            result = json.loads(run_child("build", str(corpus), str(Path(tmp) / "out"),
                                          str(args.workers)))
        print(f"  {size} games: {result['games']} kept, {result['samples']} samples in "
              f"{result['seconds']:.1f} s ({result['games'] / result['seconds']:.0f} games/s, "
              f"{result['games'] / result['cpu']:.0f} per CPU second); "
              f"peak RSS main {result['main_kib'] / 1024:.0f} MiB, "
              f"largest worker {result['worker_kib'] / 1024:.0f} MiB", flush=True)
    kinds = ["pure", "compiled"] if fastreplay.ENABLED else ["pure"]
    for kind in kinds:
        result = json.loads(run_child("dedup", str(args.dedup_keys), kind))
        print(f"  dedup index ({kind}): {result['keys']} keys in {result['seconds']:.1f} s, "
              f"{result['index_bytes'] / result['keys']:.1f} bytes/key held, "
              f"peak growth {result['peak_growth_kib'] / 1024:.0f} MiB "
              f"({result['peak_growth_kib'] * 1024 / result['keys']:.1f} bytes/key)")


if __name__ == "__main__":
    main()
