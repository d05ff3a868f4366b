"""`go19 label INPUT... --out DIR`: KataGo labels for every position the dataset build reads."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any, TypeVar

import trio

from orchestrator.commands import (
    SUMMARIES,
    add_katago_timeout,
    count_int,
    examples,
    label_ray,
    positive_int,
)
from orchestrator.dataset.shards import DatasetError
from orchestrator.label.config import prepared_katago
from orchestrator.label.games import LabelGame, select_games
from orchestrator.label.progress import PlainReporter, RichReporter
from orchestrator.label.run import EngineFiles, Labelling, LabelRun, LabelRunError, RunOptions
from orchestrator.label.store import LabelError, LabelWriter
from orchestrator.words import found_line, plural, some

T = TypeVar("T")


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
    ``go19 review``, which labels through this command."""
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


def run_options(args: argparse.Namespace) -> RunOptions:
    return RunOptions(visits=args.visits, ownership=args.ownership,
                      max_in_flight=args.max_in_flight, max_restarts=args.max_restarts,
                      review=args.review, timeout=args.katago_timeout)


def engine_files(args: argparse.Namespace) -> EngineFiles:
    given = (args.katago, args.model, args.config)
    if all(given):
        binary, model, config = given
    else:
        prepared = prepared_katago()
        if prepared is None:
            raise LabelError("no KataGo: run `make katago` first, or pass "
                             "--katago/--model/--config")
        binary = args.katago or prepared.binary
        model = args.model or prepared.model
        config = args.config or prepared.config
    for path, what in ((binary, "--katago"), (model, "--model"), (config, "--config")):
        if not Path(path).is_file():
            raise LabelError(f"{what} {path}: no such file")
    return EngineFiles(Path(binary), Path(model), Path(config), args.out / "katago.log")


def _summary(run: Labelling, out: Path, games: list, void_files: int) -> str:
    r = run.result
    skipped: dict[str, int] = {}
    for game in games:
        if game.status != "ok":
            name = f"{game.status} {game.reason}" if game.reason else game.status
            skipped[name] = skipped.get(name, 0) + 1
    not_used = ", ".join(f"{k} {n}" for k, n in sorted(skipped.items())) or "none"
    return "\n".join([
        f"{out}: {r.labelled}/{r.games} games labelled ({r.positions} positions) in "
        f"{r.seconds:.0f} s, {r.rate:.2f} positions/s while KataGo ran",
        f"  already labelled {r.already}; KataGo errors {r.errors}; engine restarts "
        f"{r.restarts}",
        f"  not for the dataset: {not_used}; void files {void_files}",
    ])


def _nothing(games: list[LabelGame], void_files: int, out: Path) -> str | None:
    """The one line refusing inputs without a game to label, or None if there is one."""
    if any(game.status == "ok" for game in games):
        return None
    rejected = Counter(g.reason or "?" for g in games if g.status == "rejected")
    skipped = Counter(g.reason or g.status for g in games if g.status != "rejected")
    found = found_line(len({g.path for g in games}), len(games), rejected, skipped, void_files)
    return f"nothing to label, nothing written to {out}: {found}"


def run(args: argparse.Namespace) -> int:
    if args.ray is not None:
        return label_ray.run(args)
    options = run_options(args)
    opened = open_folder(args, options, engine_files, refuse_empty=True)
    if isinstance(opened, int):
        return opened
    files, games, void_files, writer = opened
    tty = sys.stderr.isatty()
    reporter = RichReporter() if tty else PlainReporter()
    label_run = LabelRun(writer, files, options, reporter)

    def label() -> None:
        with reporter if isinstance(reporter, RichReporter) else nullcontext():
            trio.run(label_run.run, games)

    return finish(label, label_run, writer, options, args, games, void_files)


def open_folder(args: argparse.Namespace, options: RunOptions,
                before: Callable[[argparse.Namespace], T], *,
                refuse_empty: bool) -> tuple[T, list[LabelGame], int, LabelWriter] | int:
    """``before(args)`` (the engine check), the games to label and the opened label folder;
    or, after one line on stderr, the exit status: 2 for unusable input (``refuse_empty``:
    also for input without a game to label) or folder, 1 if it cannot be written. Shared
    with the ``--ray`` path so that both refuse the same input the same way."""
    try:
        first = before(args)
        games, void_files = select_games(args.inputs, max_games=args.max_games,
                                         max_moves=args.max_moves, review=options.review)
        if refuse_empty and (nothing := _nothing(games, void_files, args.out)) is not None:
            print(f"label: {nothing}", file=sys.stderr)
            return 2
        writer = LabelWriter.open(args.out, options.settings(args.max_moves), map(
            str, args.inputs), resume=args.resume, run=getattr(args, "run", None))
    except (LabelError, DatasetError) as exc:
        print(f"label: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"label: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return first, games, void_files, writer


def finish(label: Callable[[], None], label_run: Labelling, writer: LabelWriter,
           options: RunOptions, args: argparse.Namespace, games: list, void_files: int, *,
           fatal: tuple[type[Exception], ...] = (),
           more: Callable[[], dict[str, Any]] = dict) -> int:
    """Runs ``label``, records the run in the folder whatever happens (``more`` adds to that
    record), prints the summary; the exit status. Shared with the ``--ray`` path so that both
    keep the same statuses and run record; ``fatal`` errors of that path exit 2 as well."""
    status, finished = 0, False
    stopped: LabelRunError | None = None
    try:
        label()
        finished = True
    except fatal as exc:
        print(f"label: {exc}", file=sys.stderr)
        status = 2
    except LabelRunError as exc:
        stopped = exc  # said once the folder is flushed: it names the games not in it
        status = 1
    except LabelError as exc:  # a resumed folder made with another model
        print(f"label: {exc}", file=sys.stderr)
        status = 2
    finally:
        result = label_run.result
        writer.add_run({"seconds": round(result.seconds, 3),
                        "querying_seconds": round(result.querying_seconds, 3),
                        "games": result.games, "labelled": result.labelled,
                        "positions": result.positions, "errors": result.errors,
                        "restarts": result.restarts, "max_in_flight": options.max_in_flight,
                        "max_games": args.max_games, "finished": finished, **more()})
        writer.flush()
    if stopped is not None:
        print(f"label: {stopped}{_left(games, writer)}", file=sys.stderr)
    print(_summary(label_run, args.out, games, void_files))
    return status


def _left(games: list[LabelGame], writer: LabelWriter) -> str:
    """What a stopped run leaves for ``--resume``: the games to label not labelled."""
    done = writer.labelled()
    left = list(dict.fromkeys(g.where for g in games
                              if g.status == "ok" and g.positions and g.ident not in done))
    if not left:
        return ""
    names = some([Path(where).name for where in left])
    return (f"; {plural(len(left), 'game')} not labelled ({names}): the same command with "
            "--resume labels them")
