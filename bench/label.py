"""`go19 label` throughput against KataGo fed the same queries directly (not a test).

    .venv/bin/python bench/label.py [--games 3] [--moves 20] [--rounds 1]

The same positions (the first ``--moves`` positions of ``--games`` real games from
../shared/sgf/real/pro19) go through KataGo twice per round, each time in a fresh engine
with the same binary, model and config (the CPU KataGo of `make katago`):

- direct: raw JSON lines to `katago analysis`, one ``analyzeTurns`` query per game, all
  written at once, answers read until the last; no go19 code in the loop;
- go19 label: the command as a user runs it (a subprocess), timed by its manifest's
  ``querying_seconds``.

Both rates leave out KataGo's start (net loading) and count from the engine's first
answer (``query_version``) to the last position's answer. Rounds alternate the order
(direct first in odd rounds), since the machine's load drifts. Target: go19 label >= 95 %
of direct.

With Ray installed (the ``cluster`` extra), ``--engines`` runs ``go19 label --ray`` on a
local Ray with 1 engine and then with N (default 2), each engine an actor held to one core
(``--cpus-per-engine 1``), on the same positions (``--scale-games`` games, default 4 per
engine, of ``--scale-moves`` positions, none shared between games but the empty board,
see :func:`distinct_games`): scaling = rate(N) / rate(1), target >= 1.8x for 2
engines at ``--visits 1``. ``--engines 0`` skips it. Each run also gives its CPU accounting
(Linux): every process of the command's tree (driver, Ray's processes, the actors, KataGo)
is sampled twice a second; over the samples where every KataGo works it prints the CPU the
other processes take (by kind, as a share of KataGo's CPU and in ms per position: figures
that stay meaningful on a loaded machine), each KataGo's busiest thread's share of its CPU
(one core per engine: one pocl thread does the work), and each engine's idle seconds while
another still works (the tail).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from orchestrator.label.config import KataGoPaths  # noqa: E402
from orchestrator.label.engine import game_query  # noqa: E402
from orchestrator.label.games import LabelGame, select_games  # noqa: E402

PRO = REPO / ".." / "shared" / "sgf" / "real" / "pro19"


def direct(paths: KataGoPaths, games: list[LabelGame], log: Path) -> tuple[int, float]:
    """Positions answered and seconds from the engine's first answer to the last."""
    queries = []
    for n, game in enumerate(games):
        for segment in game.segments:
            query = game_query(segment.moves, komi=game.komi,
                               initial_stones=segment.initial_stones,
                               initial_player=segment.initial_player,
                               analyze_turns=range(segment.rows), max_visits=1)
            queries.append({**query, "id": f"q{n}-{segment.first}"})
    expected = sum(len(q["analyzeTurns"]) for q in queries)
    process = subprocess.Popen(
        [str(paths.binary), "analysis", "-config", str(paths.config), "-model",
         str(paths.model), "-override-config", f"logFile={log}", "-quit-without-waiting"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(json.dumps({"id": "v", "action": "query_version"}) + "\n")
        process.stdin.flush()
        json.loads(process.stdout.readline())  # the net is loaded once this comes
        started = time.monotonic()
        process.stdin.write("".join(json.dumps(q) + "\n" for q in queries))
        process.stdin.flush()
        answered = 0
        while answered < expected:
            line = process.stdout.readline()
            if not line:
                raise SystemExit("direct: KataGo exited early")
            msg = json.loads(line)
            if "error" in msg:
                raise SystemExit(f"direct: KataGo rejected a query: {msg}")
            if "turnNumber" in msg and not msg.get("isDuringSearch"):
                answered += 1
        return answered, time.monotonic() - started
    finally:
        process.stdin.close()
        process.wait(timeout=60)


def through_label(files: list[Path], moves: int, out: Path, extra: tuple[str, ...] = (),
                  watch: Callable[[int], None] | None = None) -> tuple[int, float]:
    """Positions and querying seconds of one `go19 label` run; ``watch(pid)`` is called
    in a thread while it runs."""
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "label", *map(str, files), "--out",
         str(out), "--max-moves", str(moves), *extra],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watcher = None
    if watch is not None:
        watcher = threading.Thread(target=watch, args=(process.pid,), daemon=True)
        watcher.start()
    _, err = process.communicate()
    if watcher is not None:
        watcher.join()
    if process.returncode != 0:
        raise SystemExit(f"go19 label failed: {err.strip()}")
    run = json.loads((out / "labels.json").read_text())["runs"][-1]
    return run["positions"], run["querying_seconds"]


class CpuSampler:
    """CPU seconds of every process under one pid (Linux /proc), sampled until it exits."""

    TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def __init__(self) -> None:
        self.samples: list[dict[int, float]] = []  # pid -> CPU seconds, per sample
        self.names: dict[int, str] = {}
        self.threads: list[dict[int, list[float]]] = []  # KataGo pid -> its threads' CPU

    @classmethod
    def _stat(cls, path: str) -> tuple[int, float]:
        with open(path) as f:
            text = f.read()
        fields = text[text.rindex(")") + 2:].split()
        return int(fields[1]), (int(fields[11]) + int(fields[12])) / cls.TICK

    def __call__(self, root: int) -> None:
        while os.path.exists(f"/proc/{root}"):
            children: dict[int, list[tuple[int, float]]] = {}
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    try:
                        parent, cpu = self._stat(f"/proc/{entry}/stat")
                    except (OSError, ValueError, IndexError):
                        continue
                    children.setdefault(parent, []).append((int(entry), cpu))
            try:
                tree, todo = {root: self._stat(f"/proc/{root}/stat")[1]}, [root]
            except (OSError, ValueError, IndexError):
                break
            while todo:
                for pid, cpu in children.get(todo.pop(), []):
                    tree[pid] = cpu
                    todo.append(pid)
            for pid in tree:  # read again each time: a forked child may exec since
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        command = f.read().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    command = ""
                if command or pid not in self.names:  # an exited one's reads empty
                    self.names[pid] = command
            self.samples.append(tree)
            self.threads.append({pid: self._threads(pid) for pid in tree
                                 if self._katago(pid)})
            time.sleep(0.5)

    def _katago(self, pid: int) -> bool:
        return " analysis " in self.names.get(pid, "") and "katago" in self.names[pid]

    def _threads(self, pid: int) -> list[float]:
        try:
            return [self._stat(f"/proc/{pid}/task/{t}/stat")[1]
                    for t in os.listdir(f"/proc/{pid}/task")]
        except (OSError, ValueError, IndexError):
            return []

    def report(self, positions: int) -> str:
        """While every KataGo works: the CPU of the other processes (by kind, and per
        position, counting positions by KataGo's CPU per position over the whole run),
        each KataGo's busiest thread's share of its CPU; and from the first sample where
        every KataGo works to the last where one does, each engine's idle seconds."""
        engines = sorted({pid for sample in self.samples for pid in sample
                          if self._katago(pid)})

        def used(i: int, pid: int) -> float:
            return self.samples[i].get(pid, 0.0) - self.samples[i - 1].get(pid, 0.0)

        working = [i for i in range(1, len(self.samples))
                   if engines and all(used(i, p) >= 0.05 for p in engines)]
        if len(working) < 4:
            return "    CPU accounting: too few samples with every KataGo working"
        kinds: dict[str, float] = {}
        katago = 0.0
        for i in working:
            for pid in self.samples[i]:
                if pid in engines:
                    katago += used(i, pid)
                else:
                    kind = _kind(self.names.get(pid, ""))
                    kinds[kind] = kinds.get(kind, 0.0) + used(i, pid)
        other = sum(kinds.values())
        per_position = sum(max(s.get(p, 0.0) for s in self.samples) for p in engines) / positions
        spread = []
        for pid in engines:
            before = self.threads[working[0] - 1].get(pid, [])
            after = self.threads[working[-1]].get(pid, [])
            threads = [b - (before[t] if t < len(before) else 0.0)  # threads started since
                       for t, b in enumerate(after)]
            if sum(threads) > 0:
                spread.append(f"{100 * max(threads) / sum(threads):.0f} %")
        last = max(i for i in range(1, len(self.samples))
                   if any(used(i, p) >= 0.05 for p in engines))
        idle = [0.5 * sum(used(i, p) < 0.05 for i in range(working[0], last + 1))
                for p in engines]
        parts = ", ".join(f"{k} {1000 * v / katago * per_position:.1f}"
                          for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]) if v)
        return (f"    CPU while every KataGo works ({0.5 * len(working):.0f} s): KataGo "
                f"{katago / (0.5 * len(working)):.2f} cores, {per_position:.2f} s per position; "
                f"everything else {100 * other / katago:.1f} % of KataGo's CPU = "
                f"{1000 * other / katago * per_position:.0f} ms per position ({parts}); "
                f"busiest KataGo thread's share {', '.join(spread)}\n"
                f"    engines idle while another works: "
                f"{', '.join(f'{s:.1f} s' for s in idle)} of "
                f"{0.5 * (last + 1 - working[0]):.0f} s")


def distinct_games(count: int, moves: int) -> list[Path]:
    """``count`` real games of ``moves`` positions that share at most one position (the
    empty board) with the games before them. KataGo's nnCache answers a position it has
    seen for free: the first pro games repeat openings (the first 20 positions of 8 games
    are 120 distinct positions in 160), and one engine, with one cache, would skip more
    of them than two engines with a cache each."""
    games, _ = select_games(sorted(PRO.glob("*.sgf")), max_moves=moves)
    seen: set[int] = set()
    picked: list[Path] = []
    for game in games:
        keys = set() if game.key is None else {int(k) for k in game.key}
        if (game.status == "ok" and game.positions == moves == len(keys)
                and len(keys & seen) <= 1):
            picked.append(Path(game.path))
            seen |= keys
            if len(picked) == count:
                return picked
    raise SystemExit(f"ray scaling: only {len(picked)} games of {moves} distinct positions "
                     f"in {PRO}; ask for fewer (--scale-games)")


def _kind(command: str) -> str:
    for kind, mark in (("driver", "orchestrator.cli"), ("raylet", "raylet/raylet"),
                       ("gcs", "gcs_server"), ("agents", "ray::DashboardAgent"),
                       ("agents", "ray::RuntimeEnvAgent"), ("idle workers", "ray::IDLE"),
                       ("actors", "ray::"), ("log monitor", "log_monitor"),
                       ("dashboard", "dashboard"), ("monitor", "monitor.py")):
        if mark in command:
            return kind
    return "other"

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=3)
    parser.add_argument("--moves", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--engines", type=int, default=2,
                        help="engines for the Ray scaling run (0: skip it)")
    parser.add_argument("--scale-games", type=int, default=0,
                        help="games of the scaling run (default 4 per engine)")
    parser.add_argument("--scale-moves", type=int, default=20,
                        help="positions per game in the scaling run (default 20)")
    parser.add_argument("--only-scaling", action="store_true",
                        help="skip the direct / go19 label comparison")
    args = parser.parse_args()
    paths = KataGoPaths(REPO / ".katago")
    if paths.missing():
        print(f"bench/label.py: KataGo not prepared in {paths.root} (run `make katago`); "
              "nothing to benchmark")
        return 0
    files = sorted(PRO.glob("*.sgf"))[:args.games] if PRO.is_dir() else []
    if len(files) < args.games:
        print(f"bench/label.py: needs {args.games} games in {PRO.resolve()}; nothing to benchmark")
        return 0
    if args.only_scaling:
        return scaling(args)
    games, _ = select_games(files, max_moves=args.moves)
    positions = sum(g.positions for g in games)
    print(f"{len(games)} games x {args.moves} moves = {positions} positions, "
          f"{args.rounds} round(s), KataGo {paths.binary.resolve().parent.name}")
    totals = {"direct": [0, 0.0], "label": [0, 0.0]}
    with tempfile.TemporaryDirectory(prefix="bench-label-") as tmp:
        for r in range(args.rounds):
            order = ("direct", "label") if r % 2 == 0 else ("label", "direct")
            for kind in order:
                if kind == "direct":
                    n, seconds = direct(paths, games, Path(tmp) / f"direct-{r}.log")
                else:
                    n, seconds = through_label(files, args.moves, Path(tmp) / f"labels-{r}")
                totals[kind][0] += n
                totals[kind][1] += seconds
                print(f"  round {r + 1} {kind:>6}: {n} positions in {seconds:.1f} s = "
                      f"{n / seconds:.3f} positions/s")
    rate = {kind: n / seconds for kind, (n, seconds) in totals.items()}
    print(f"direct (raw JSON, one analyzeTurns query per game): {rate['direct']:.3f} positions/s")
    print(f"go19 label:                                         {rate['label']:.3f} positions/s")
    ratio = rate["label"] / rate["direct"]
    print(f"ratio go19 label / direct: {100 * ratio:.1f} % (target >= 95 %)")
    return scaling(args) if args.engines else 0


def scaling(args: argparse.Namespace) -> int:
    """``go19 label --ray`` with 1 engine, then ``--engines``, one core each."""
    try:
        import ray  # noqa: F401
    except ImportError:
        print("ray scaling: Ray not installed (pip install 'go19[cluster]'); skipped")
        return 0
    engines = args.engines
    files = distinct_games(args.scale_games or 4 * engines, args.scale_moves)
    print(f"ray scaling: {len(files)} games x {args.scale_moves} moves (no position shared "
          f"but the empty board), load average {os.getloadavg()[0]:.1f}")
    rates = {}
    with tempfile.TemporaryDirectory(prefix="bench-label-ray-") as tmp:
        for n in (1, engines):
            sampler = CpuSampler() if sys.platform == "linux" else None
            n_pos, seconds = through_label(files, args.scale_moves, Path(tmp) / f"ray-{n}", (
                "--ray", "--engines", str(n), "--cpus-per-engine", "1"), watch=sampler)
            rates[n] = n_pos / seconds
            print(f"  go19 label --ray --engines {n}: {n_pos} positions in {seconds:.1f} s = "
                  f"{rates[n]:.3f} positions/s (load average {os.getloadavg()[0]:.1f})")
            if sampler is not None:
                print(sampler.report(n_pos))
    print(f"ray scaling, {engines} engines / 1: {rates[engines] / rates[1]:.2f}x "
          f"(target >= 1.8x for 2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
