"""What `collect --review` costs the games (issue 25), not a test: `.venv/bin/python
bench/collect_review.py [--rounds N] [--games N] [--move-cap N]`.

A demo-like collection (`make demo`'s matchup: two embedded GO19 servers serving the
heuristic AI at levels 2 and 1, concurrency 8, games cut at ``--move-cap`` moves) is played
whole without and with the live review (one CPU KataGo of `make katago`, 1 visit, at the
review's own priority), alternating (without, with, with, without, …) so that neighbouring
runs share the machine's load. Per run: games/min between the first game's start and the
last game's record (from the run's own events), this process's CPU seconds per game over
the same span (the games, the embedded servers and the review's own work all live here;
KataGo is a child process), how many games the review had labelled by then, and KataGo's
CPU (getrusage of the reaped children). A run with the review ends with a Ctrl-C (SIGINT to
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
from orchestrator.commands.label import prepared_katago  # noqa: E402
from orchestrator.events import Event, GameRecorded, GameReviewed, GameStarted  # noqa: E402


def matchup(folder: Path, move_cap: int) -> Path:
    text = (REPO / "matchups" / "demo.toml").read_text()
    cap = tomllib.loads(text)["game"]["move_cap"]
    path = folder / "demo-bench.toml"
    path.write_text(text.replace(f"move_cap = {cap}", f"move_cap = {move_cap}"))
    return path


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(path: Path, folder: Path, games: int, review: bool) -> dict:
    marks: dict[str, float] = {}
    counts = {"recorded": 0, "reviewed": 0}

    def on_event(event: Event) -> None:
        if isinstance(event, GameStarted) and "start" not in marks:
            marks["start"], marks["cpu0"] = time.monotonic(), time.process_time()
        elif isinstance(event, GameRecorded) and not event.record.void:
            counts["recorded"] += 1
            if counts["recorded"] == games:
                marks["end"], marks["cpu1"] = time.monotonic(), time.process_time()
                counts["reviewed_at_end"] = counts["reviewed"]
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
    return {"review": review, "games_per_min": 60 * games / span,
            "cpu_per_game": (marks["cpu1"] - marks["cpu0"]) / games,
            "reviewed": counts.get("reviewed_at_end", 0),
            "katago_cpu": children_cpu() - kids}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="pairs of runs (default 3)")
    parser.add_argument("--games", type=int, default=16, help="games a run (default 16)")
    parser.add_argument("--move-cap", type=int, default=120, help="default 120")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="go19-bench-review-") as tmp:
        path = matchup(Path(tmp), args.move_cap)
        order = [r % 4 in (1, 2) for r in range(2 * args.rounds)]  # off, on, on, off, …
        for k, review in enumerate(order):
            row = one_run(path, Path(tmp) / f"rec{k}", args.games, review)
            rows.append(row)
            print(f"run {k + 1}: review {'on ' if review else 'off'}  "
                  f"{row['games_per_min']:6.1f} games/min  {row['cpu_per_game']:.3f} CPU s/game"
                  f"  reviewed by the last game {row['reviewed']}/{args.games}"
                  f"  KataGo CPU {row['katago_cpu']:.1f} s", flush=True)
    for key, what in (("games_per_min", "games/min"), ("cpu_per_game", "CPU s/game")):
        off = statistics.median(r[key] for r in rows if not r["review"])
        on = statistics.median(r[key] for r in rows if r["review"])
        print(f"median {what}: without review {off:.3f}, with {on:.3f} "
              f"(with/without {on / off:.3f})")


if __name__ == "__main__":
    main()
