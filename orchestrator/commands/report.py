"""`go19 report RUN_DIR... [--out DIR] [--anchor PLAYER=ELO]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orchestrator.commands import SUMMARIES, add_labels, add_run_dirs, examples, parse_anchor
from orchestrator.report.build import ReportError, default_out, write_report


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help=SUMMARIES["report"],
        description="Rebuild a report from run folders (SGFs + games.jsonl): results, Elo "
        "with intervals, LOS, SPRT, ratings, game lengths, terminations, fallback rates and "
        "latency. Several folders are combined; folders that are not runs are skipped.",
        epilog=examples(
            "go19 report recordings/demo-20261130-150000",
            "go19 report recordings/r5-vs-r4-* --anchor gnugo-l0=0 --out reports/r5-r4",
        ),
    )
    add_run_dirs(parser)
    parser.add_argument("--out", type=Path, help="output folder (default reports/<run> for "
                        "one run, reports/combined-<UTC time> for several)")
    parser.add_argument("--anchor", type=parse_anchor, action="append", default=[],
                        metavar="PLAYER=ELO", help="fix a player's rating (repeatable; "
                        "default: the first player by name at 0)")
    add_labels(parser, "KataGo label folder for the move-quality section (repeatable; "
               "default: each run's RUN_DIR/labels, as `go19 review` writes it)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out = args.out or default_out(args.run_dirs)
    try:
        write_report(args.run_dirs, out, console=True, anchor=dict(args.anchor) or None,
                     labels=args.labels)
    except ReportError as exc:
        print(f"report: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"report: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0
