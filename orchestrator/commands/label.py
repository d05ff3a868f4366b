"""`go19 label INPUT... --out DIR`: KataGo labels for every position the dataset build reads
(the job: :mod:`orchestrator.label.job`; with ``--ray``, :mod:`orchestrator.cluster.label_job`)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.commands import (
    SUMMARIES,
    add_katago_timeout,
    count_int,
    examples,
    label_ray,
    positive_int,
)
from orchestrator.label.job import KataGoChoice, LabelJob, run_label
from orchestrator.label.run import RunOptions
from orchestrator.recordings import RunName

if TYPE_CHECKING:
    from orchestrator.cluster.label_job import RayJob


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "label",
        help=SUMMARIES["label"],
        description="Ask KataGo's analysis engine about every position of every game the "
        "dataset build would read (19x19 games that replay legally; void games skipped) "
        "and write .npz shards plus labels.json (docs/labels.md). Without --katago/--model/"
        "--config it uses the CPU KataGo that `make katago` prepares in .katago/: slow "
        "(about a position a second), for tests and small demos; use --max-games and "
        "--max-moves there. Input without a game to label is refused: nothing is written, "
        "exit status 2.",
        epilog=examples(
            "go19 label recordings --out labels/demo --max-games 1 --max-moves 20",
            "go19 label recordings --out labels/demo --resume",
        ),
    )
    parser.add_argument("inputs", nargs="+", type=Path, metavar="INPUT",
                        help="SGF file or folder (searched recursively)")
    parser.add_argument("--out", type=Path, required=True, help="label folder to write")
    add_engine_options(parser)
    parser.add_argument("--review", action="store_true",
                        help="label as `go19 review` does: also the position after the last "
                        "labelled move (the last move's point loss needs it) and the score "
                        "lead of KataGo's move when searched (--visits > 1)")
    label_ray.add_options(parser)
    parser.set_defaults(func=run)


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    """KataGo's files, visits, the folder's options and the game selection: shared with
    ``go19 review``, which labels through the same job (:func:`label_job`)."""
    parser.add_argument("--katago", type=Path, metavar="BIN",
                        help="KataGo binary (default: the one `make katago` prepared)")
    parser.add_argument("--model", type=Path, metavar="FILE",
                        help="KataGo net (default: the one `make katago` prepared)")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="analysis config (reportAnalysisWinratesAs = BLACK is assumed; "
                        "default: the one `make katago` prepared)")
    parser.add_argument("--visits", type=positive_int, default=1, metavar="N",
                        help="visits per position (default 1: the raw net)")
    parser.add_argument("--ownership", action="store_true",
                        help="also store the 361 ownership values per position")
    parser.add_argument("--max-in-flight", type=positive_int, default=4, metavar="N",
                        help="games queried at once (default 4)")
    parser.add_argument("--max-restarts", type=count_int, default=3, metavar="N",
                        help="KataGo restarts in a row without a finished game, after it "
                        "died or went silent (default 3); then the run stops, naming the "
                        "games left for --resume")
    add_katago_timeout(parser)
    parser.add_argument("--resume", action="store_true",
                        help="go on in an existing --out: skip games already labelled")
    parser.add_argument("--max-games", type=positive_int, metavar="N",
                        help="label only the first N games the build would use (default: all)")
    parser.add_argument("--max-moves", type=positive_int, metavar="N",
                        help="label only the positions before moves 1..N of each game "
                        "(default: every move)")


def label_job(args: argparse.Namespace, inputs: Sequence[Path], out: Path, *, review: bool,
              run: RunName | None = None) -> LabelJob:
    """The job the engine options of :func:`add_engine_options` ask for, on ``inputs``
    into ``out``."""
    options = RunOptions(visits=args.visits, ownership=args.ownership,
                         max_in_flight=args.max_in_flight, max_restarts=args.max_restarts,
                         review=review, timeout=args.katago_timeout)
    katago = KataGoChoice(args.katago, args.model, args.config)
    return LabelJob(tuple(inputs), out, katago, options, resume=args.resume,
                    max_games=args.max_games, max_moves=args.max_moves, run=run)


def run_job(job: LabelJob, ray: RayJob | None) -> int:
    """The job on Ray's actors (``--ray``), else on one KataGo here (also ``go19 review``'s)."""
    if ray is None:
        return run_label(job)
    from orchestrator.cluster.label_job import run_label_ray

    return run_label_ray(job, ray)


def run(args: argparse.Namespace) -> int:
    return run_job(label_job(args, args.inputs, args.out, review=args.review),
                   label_ray.ray_job(args))
