"""What `collect --review` costs the games (issue 25), not a test: `.venv/bin/python
bench/collect_review.py [--rounds N] [--games N] [--move-cap N]`.

A demo-like collection (`make demo`'s matchup as it was when this was measured: two
embedded GO19 servers serving the heuristic AI at levels 2 and 1, concurrency 8, games cut
at ``--move-cap`` moves; the demo now plays level 0 one game at a time) is played
whole without and with the live review (one CPU KataGo of `make katago`, 1 visit, at
the priority the review runs it at), in turns so that neighbouring runs share the machine's
load. Per run: games/min between the first game's start and the
last game's record (from the run's own events), this process's CPU seconds per game over
the same span (the games, the embedded servers and the review's own work all live here;
KataGo is a child process), how many games the review had labelled by then, and KataGo's
CPU (getrusage of the reaped children; /proc for the span of the games).

A third arm runs the review with its KataGo stopped (SIGSTOP) from the first game to the
last: the review's own machinery in this process without KataGo's CPU, which tells what the
code costs from what KataGo's use of the machine's other core costs. Arms rotate (off, on,
paused; on, paused, off; …). A run with the review ends with a Ctrl-C (SIGINT to
this process) as soon as its last game is recorded: the review falls behind on purpose and
is not waited for.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import trio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from orchestrator.collect.review import LiveReview, ReviewOptions  # noqa: E402
from orchestrator.collect.run import CollectOptions, collect  # noqa: E402
from orchestrator.events import Event, GameRecorded, GameReviewed, GameStarted  # noqa: E402
from orchestrator.label.config import prepared_katago  # noqa: E402


def matchup(folder: Path, move_cap: int) -> Path:
    text = (REPO / "matchups" / "demo.toml").read_text()
    game = tomllib.loads(text)["game"]
    path = folder / "demo-bench.toml"
    path.write_text(text.replace(f"move_cap = {game['move_cap']}", f"move_cap = {move_cap}")
                    .replace(f"concurrency = {game['concurrency']}", "concurrency = 8")
                    .replace("level = 0, seed = 2", "level = 1, seed = 2"))
    return path


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def katago_stats(folder: Path) -> dict[int, float]:
    """pid -> CPU seconds so far of the KataGo processes logging under ``folder`` (/proc)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if str(folder).encode() not in (entry / "cmdline").read_bytes():
                continue
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[int(entry.name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return found


def katago_cpu(folder: Path) -> float:
    return sum(katago_stats(folder).values())


def one_run(path: Path, folder: Path, games: int, mode: str) -> dict:
    review = mode != "off"
    marks: dict[str, float] = {}
    counts = {"recorded": 0, "reviewed": 0}

    def on_event(event: Event) -> None:
        if isinstance(event, GameStarted) and "start" not in marks:
            if mode == "paused":
                for pid in katago_stats(folder):
                    os.kill(pid, signal.SIGSTOP)
            marks["start"], marks["cpu0"] = time.monotonic(), time.process_time()
            marks["kg0"] = katago_cpu(folder)
        elif isinstance(event, GameRecorded) and not event.record.void:
            counts["recorded"] += 1
            if counts["recorded"] == games:
                marks["end"], marks["cpu1"] = time.monotonic(), time.process_time()
                marks["kg1"] = katago_cpu(folder)
                counts["reviewed_at_end"] = counts["reviewed"]
                if mode == "paused":
                    for pid in katago_stats(folder):
                        os.kill(pid, signal.SIGCONT)
                if review:
                    os.kill(os.getpid(), signal.SIGINT)  # the review is not waited for
        elif isinstance(event, GameReviewed):
            counts["reviewed"] += 1

    live = None
    if review:
        katago = prepared_katago()
        assert katago is not None, "run `make katago` first"
        live = LiveReview(ReviewOptions(katago.binary, katago.model, katago.config))
    options = CollectOptions(matchup_path=path, games=games, recordings=folder,
                             dashboard=False)
    kids = children_cpu()
    trio.run(collect, options, on_event, None, lambda line: None, live)
    span = marks["end"] - marks["start"]
    return {"mode": mode, "games_per_min": 60 * games / span,
            "cpu_per_game": (marks["cpu1"] - marks["cpu0"]) / games,
            "reviewed": counts.get("reviewed_at_end", 0),
            "katago_cpu": children_cpu() - kids, "katago_span": marks["kg1"] - marks["kg0"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="pairs of runs (default 3)")
    parser.add_argument("--games", type=int, default=16, help="games a run (default 16)")
    parser.add_argument("--move-cap", type=int, default=120, help="default 120")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="go19-bench-review-") as tmp:
        path = matchup(Path(tmp), args.move_cap)
        arms = ["off", "on", "paused"]
        order = [arms[(r + k) % 3] for r in range(args.rounds) for k in range(3)]
        for k, mode in enumerate(order):
            row = one_run(path, Path(tmp) / f"rec{k}", args.games, mode)
            rows.append(row)
            print(f"run {k + 1}: review {mode:6s}  "
                  f"{row['games_per_min']:6.1f} games/min  {row['cpu_per_game']:.3f} CPU s/game"
                  f"  reviewed by the last game {row['reviewed']}/{args.games}"
                  f"  KataGo CPU {row['katago_cpu']:.1f} s ({row['katago_span']:.1f} s "
                  "during the games)", flush=True)
    for key, what in (("games_per_min", "games/min"), ("cpu_per_game", "CPU s/game")):
        off = statistics.median(r[key] for r in rows if r["mode"] == "off")
        on = statistics.median(r[key] for r in rows if r["mode"] == "on")
        paused = statistics.median(r[key] for r in rows if r["mode"] == "paused")
        print(f"median {what}: without review {off:.3f}, with {on:.3f} (with/without "
              f"{on / off:.3f}), with KataGo paused {paused:.3f} ({paused / off:.3f})")


if __name__ == "__main__":
    main()
