"""`go19 review RUN_DIR... [--labels DIR] [--out REPORT_DIR]`: KataGo labels for a run's
games (into RUN_DIR/labels, as `go19 label --review` labels them: the same job), then the
run's report with its move-quality section (docs/review.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orchestrator.commands import (
    SUMMARIES,
    add_labels,
    add_run_dirs,
    examples,
    label,
    label_ray,
    parse_anchor,
)
from orchestrator.label.store import MANIFEST
from orchestrator.recordings import RunName, is_run_dir
from orchestrator.report.build import ReportError, default_out, write_report
from orchestrator.report.quality import LABELS_DIR
from orchestrator.report.quality_tables import verdict_lines


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "review",
        help=SUMMARIES["review"],
        description="Label every position of each run's games with KataGo, the position "
        "after the last move included, into RUN_DIR/labels (the label folder of `go19 "
        "label`, made with --review), then write the runs' report (as `go19 report`) with "
        "the move-quality section: per player the mean point loss, accuracy (KaTrain's and "
        "go19's), top-1/top-5 agreement with KataGo and blunders, by phase, with 95 % "
        "bootstrap intervals over "
        "games; the paired verdict (who loses fewer points a move) beside the Elo verdict; "
        "each player's worst moves (docs/review.md). The CPU KataGo of `make katago` labels "
        "about a position a second: use --max-games and --max-moves there.",
        epilog=examples(
            "go19 review recordings/demo-20261201-150000 --max-games 4 --max-moves 60",
            "go19 review recordings/demo-20261201-150000 --labels labels/demo",
        ),
    )
    add_run_dirs(parser)
    add_labels(parser, "use this label folder as it is and label nothing (repeatable; "
               "default: label each run into RUN_DIR/labels)")
    parser.add_argument("--out", type=Path, metavar="REPORT_DIR",
                        help="report folder (default reports/<run> for one run, "
                        "reports/combined-<UTC time> for several, as collect writes it)")
    parser.add_argument("--anchor", type=parse_anchor, action="append", default=[],
                        metavar="PLAYER=ELO", help="fix a player's rating, as in go19 report")
    label.add_engine_options(parser)
    label_ray.add_options(parser)
    parser.set_defaults(func=run)


def _label(args: argparse.Namespace, run_dir: Path) -> int:
    folder = run_dir / LABELS_DIR
    if (folder / MANIFEST).exists() and not args.resume:
        print(f"review: {folder} already holds labels: --resume labels the games still "
              f"missing, --labels {folder} uses them as they are", file=sys.stderr)
        return 2
    job = label.label_job(args, [run_dir], folder, review=True, run=RunName.of(run_dir))
    return label.run_job(job, label_ray.ray_job(args))


def run(args: argparse.Namespace) -> int:
    for run_dir in args.run_dirs:
        if not is_run_dir(run_dir):
            print(f"review: {run_dir}: not a go19 run folder (no run.json or games.jsonl)",
                  file=sys.stderr)
            return 2
    if not args.labels:
        for run_dir in args.run_dirs:
            status = _label(args, run_dir)
            if status:
                return status
    out = args.out or default_out(args.run_dirs)
    try:
        report = write_report(args.run_dirs, out, console=True,
                              anchor=dict(args.anchor) or None, labels=args.labels)
    except ReportError as exc:
        print(f"review: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"review: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    for name, line in verdict_lines(report):
        print(f"{name}: {line}")
    return 0
