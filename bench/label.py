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
(``--cpus-per-engine 1``), on the same positions: scaling = rate(N) / rate(1), target
>= 1.8x for 2 engines at ``--visits 1``. ``--engines 0`` skips it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
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


def through_label(files: list[Path], moves: int, out: Path,
                  extra: tuple[str, ...] = ()) -> tuple[int, float]:
    result = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "label", *map(str, files), "--out",
         str(out), "--max-moves", str(moves), *extra],
        cwd=REPO, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"go19 label failed: {result.stderr.strip()}")
    run = json.loads((out / "labels.json").read_text())["runs"][-1]
    return run["positions"], run["querying_seconds"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=3)
    parser.add_argument("--moves", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--engines", type=int, default=2,
                        help="engines for the Ray scaling run (0: skip it)")
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
    if args.engines:
        # As many games per engine (an engine left with fewer games idles at the end).
        scaling(sorted(PRO.glob("*.sgf"))[:2 * args.engines], args.moves, args.engines)
    return 0


def scaling(files: list[Path], moves: int, engines: int) -> None:
    """``go19 label --ray`` with 1 engine, then ``engines``, one core each."""
    try:
        import ray  # noqa: F401
    except ImportError:
        print("ray scaling: Ray not installed (pip install 'go19[cluster]'); skipped")
        return
    rates = {}
    with tempfile.TemporaryDirectory(prefix="bench-label-ray-") as tmp:
        for n in (1, engines):
            n_pos, seconds = through_label(files, moves, Path(tmp) / f"ray-{n}", (
                "--ray", "--engines", str(n), "--cpus-per-engine", "1"))
            rates[n] = n_pos / seconds
            print(f"  go19 label --ray --engines {n}: {n_pos} positions in {seconds:.1f} s = "
                  f"{rates[n]:.3f} positions/s")
    print(f"ray scaling, {engines} engines / 1: {rates[engines] / rates[1]:.2f}x "
          f"(target >= 1.8x for 2)")


if __name__ == "__main__":
    sys.exit(main())
