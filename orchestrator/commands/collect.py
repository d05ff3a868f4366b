"""`go19 collect` (also installed as plain `collect`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

import trio

from orchestrator.collect.matchup import MatchupError
from orchestrator.collect.run import CollectError, CollectOptions, RunSummary, collect


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "collect",
        help="play refereed games between the players of a matchup and record them",
        description="Play N finished games between the players of a matchup file, refereed "
        "under area scoring with positional superko; record every game as SGF plus one line "
        "in games.jsonl under recordings/<run>/, then write a report.",
    )
    parser.add_argument("--matchup", type=Path, required=True, help="matchup TOML file")
    parser.add_argument("--games", type=int, help="finished non-void games wanted")
    parser.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=False,
        metavar="RUN_DIR",
        help="continue the latest unfinished run of this matchup, or the given run folder",
    )
    parser.add_argument("--recordings", type=Path, default=Path("recordings"))
    parser.add_argument("--reports", type=Path, default=Path("reports"))
    parser.add_argument("--no-dashboard", action="store_true", help="plain log lines instead")
    parser.add_argument("--no-report", action="store_true", help="skip the end-of-run report")
    parser.set_defaults(func=run)

    parser.add_argument(
        "--web", metavar="[HOST:]PORT",
        help="also serve a watch page of the run (needs the web extra; host 127.0.0.1 "
        "unless given)",
    )

def run(args: argparse.Namespace) -> int:
    if args.games is not None and args.games < 1:
        print("collect: --games must be at least 1", file=sys.stderr)
        return 2
    resume = Path(args.resume) if isinstance(args.resume, str) else args.resume
    options = CollectOptions(
        matchup_path=args.matchup,
        games=args.games,
        resume=resume,
        recordings=args.recordings,
        dashboard=not args.no_dashboard and sys.stdout.isatty(),
    )
    from orchestrator.collect.dashboard import Dashboard, plain_log

    dashboard = Dashboard() if options.dashboard else None
    log = dashboard.log if dashboard else plain_log
    if args.web is not None:  # the watch page runs where the dashboard would, beside it
        dashboard = _with_web_page(args.web, dashboard)
        if dashboard is None:
            return 2
    try:
        summary = trio.run(
            collect, options, log, dashboard.run if dashboard else None
        )
    except (MatchupError, CollectError) as exc:
        print(f"collect: {exc}", file=sys.stderr)
        return 2
    print_summary(summary)
    if not args.no_report and summary.state.done:
        from orchestrator.report.build import write_report

        out = args.reports / summary.run_dir.name
        write_report([summary.run_dir], out, console=True)
    if summary.state.stop_reason and summary.state.stop_reason.startswith("player"):
        return 3
    return 130 if summary.interrupted else 0


def _with_web_page(bind: str, dashboard):
    """Something in the dashboard's place (``run`` and ``log``): the watch page
    (orchestrator/web) running beside the dashboard, if any. None after a one-line error."""
    try:
        from orchestrator.web.server import NO_AUTH_WARNING, is_loopback, parse_bind, watch_task
    except ImportError as exc:
        print(f"collect: --web needs the web extra ({exc.name} missing): "
              "pip install 'go19[web]'", file=sys.stderr)
        return None
    try:
        host, port = parse_bind(bind)
    except ValueError as exc:
        print(f"collect: --web: {exc}", file=sys.stderr)
        return None
    if not is_loopback(host):
        print(NO_AUTH_WARNING.format(host=host), file=sys.stderr)
    return SimpleNamespace(run=watch_task(host, port, dashboard.run if dashboard else None),
                           log=dashboard.log if dashboard else None)


def print_summary(summary: RunSummary) -> None:
    state = summary.state
    print(f"run {summary.run_dir}: {state.done}/{state.target} games finished, {state.void} void")
    if summary.interrupted:
        print(
            f"interrupted: {summary.dropped_in_flight} game(s) in flight were dropped "
            "(not recorded); finished games are safe. Continue with --resume."
        )
    elif state.stop_reason:
        print(f"stopped early: {state.stop_reason}")
    for name, tally in sorted(state.tally.items()):
        if tally.games:
            print(f"  {name}: {tally.wins}-{tally.losses}-{tally.draws} (W-L-D)")
