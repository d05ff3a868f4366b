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
engine, of ``--scale-moves`` positions): scaling = rate(N) / rate(1), target >= 1.8x for 2
engines at ``--visits 1``. ``--engines 0`` skips it. Each run also gives its CPU accounting
(Linux): every process of the command's tree (driver, Ray's processes, the actors, KataGo)
is sampled twice a second, and over the samples where every KataGo is busy it prints the
CPU the processes other than KataGo take, in cores and in ms per position, and each
KataGo's busiest thread's share (one core per engine: one pocl thread does the work).
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
            tree, todo = {}, [root]
            while todo:
                for pid, cpu in children.get(todo.pop(), []):
                    tree[pid] = cpu
                    todo.append(pid)
            for pid in tree:
                name = self.names.get(pid)
                if name is None or name.startswith("/bin/"):  # a wrapper may exec since
                    try:
                        with open(f"/proc/{pid}/cmdline", "rb") as f:
                            self.names[pid] = f.read().replace(b"\0", b" ").decode(
                                errors="replace")
                    except OSError:
                        self.names.setdefault(pid, "")
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

    def report(self, rate: float) -> str:
        """While every KataGo is busy (>= 0.25 CPU s in each 0.5 s sample): the CPU
        of the other processes, and each KataGo's busiest thread's share of its CPU."""
        engines = {pid for sample in self.samples for pid in sample if self._katago(pid)}
        busy = [i for i in range(1, len(self.samples)) if engines and all(
            self.samples[i].get(p, 0) - self.samples[i - 1].get(p, 0) >= 0.25
            for p in engines)]
        if len(busy) < 4:
            return "    CPU accounting: too few samples with every KataGo busy"
        seconds = other = katago = 0.0
        spread = []
        for i in busy:
            seconds += 0.5
            for pid, cpu in self.samples[i].items():
                used = cpu - self.samples[i - 1].get(pid, cpu)
                if pid in engines:
                    katago += used
                else:
                    other += used
        first, last = busy[0] - 1, busy[-1]
        for pid in sorted(engines):
            before, after = self.threads[first].get(pid, []), self.threads[last].get(pid, [])
            used = [b - a for a, b in zip(before, after, strict=False)]
            if sum(used) > 0:
                spread.append(f"{100 * max(used) / sum(used):.0f} %")
        return (f"    CPU while every KataGo is busy ({seconds:.0f} s): KataGo "
                f"{katago / seconds:.2f} cores, everything else {other / seconds:.3f} cores "
                f"= {1000 * other / seconds / rate:.0f} ms per position; busiest KataGo "
                f"thread's share: {', '.join(spread)}")


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
    files = sorted(PRO.glob("*.sgf"))[:args.scale_games or 4 * engines]
    print(f"ray scaling: {len(files)} games x {args.scale_moves} moves, load average "
          f"{os.getloadavg()[0]:.1f}")
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
                print(sampler.report(rates[n]))
    print(f"ray scaling, {engines} engines / 1: {rates[engines] / rates[1]:.2f}x "
          f"(target >= 1.8x for 2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
