"""`go19 adjudicate RUN_DIR... [--labels DIR]`: Leela Zero's resign analysis of games
already played and labelled, for a grid of thresholds x turns, so a threshold for
``[adjudicate]`` is chosen before a new game is played (docs/adjudication.md)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TypeVar

from orchestrator.adjudicate.scan import Scan, ScanError, scan
from orchestrator.commands import SUMMARIES, add_labels, add_run_dirs, count_int, examples
from orchestrator.quality.resign import Cell, table
from orchestrator.recordings import is_run_dir
from orchestrator.words import plural

SIZE = 19  # labels are of 19x19 games only
DEFAULT_MIN_MOVE = 1 + SIZE * SIZE // 5  # KataGo's play.cpp: 73
THRESHOLDS = (0.02, 0.05, 0.1, 0.15, 0.2)
TURNS = (1, 3, 5)

EXIT_CODES = """\
exit status:
  0    the table is printed
  2    bad input: a folder that is not a run, no label folder or an unreadable one,
       no played-out game with labels, a bad grid

"""

T = TypeVar("T", int, float)


def _grid(kind: Callable[[str], T], check: Callable[[T], bool],
          expected: str) -> Callable[[str], list[T]]:
    def parse(text: str) -> list[T]:
        values = []
        for part in text.split(","):
            try:
                value = kind(part.strip())
            except ValueError:
                raise argparse.ArgumentTypeError(f"{part!r}: expected {expected}") from None
            if not check(value):
                raise argparse.ArgumentTypeError(f"{part!r}: expected {expected}")
            values.append(value)
        return sorted(set(values))
    return parse


thresholds = _grid(float, lambda v: 0.0 < v < 0.5, "win rates between 0 and 0.5, "
                   "comma-separated")
turn_counts = _grid(int, lambda v: v >= 1, "whole numbers >= 1, comma-separated")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "adjudicate",
        help=SUMMARIES["adjudicate"],
        description="Replay the KataGo win rates of runs already played out and labelled "
        "(`go19 review` or `collect --review`: RUN_DIR/labels) under [adjudicate]'s "
        "resignation rule for a grid of thresholds x turns: the side to move resigns once "
        "its win rate has been below the threshold on that many of its turns in a row, "
        "never before --min-move. For each cell: games that would resign, correct (that "
        "side lost), incorrect (it won or drew: a false resign) with a 95 % Wilson "
        "interval among the resigned, no resign, and the moves saved as a share of every "
        "move the games took. Games that already ended by resignation are left out (their "
        "played-out result is unknown). Labels made with --max-moves show no resignation "
        "after their last position (docs/adjudication.md, choosing a threshold).",
        epilog=EXIT_CODES + examples(
            "go19 adjudicate recordings/demo-20261201-150000",
            "go19 adjudicate recordings/a recordings/b --thresholds 0.02,0.05 --turns 3 --json",
        ),
    )
    add_run_dirs(parser)
    add_labels(parser, "KataGo label folder (repeatable; default: each run's RUN_DIR/labels)")
    parser.add_argument("--thresholds", type=thresholds, default=list(THRESHOLDS),
                        metavar="P,...", help="win rates below which the side to move "
                        "resigns (default: " + ",".join(f"{t:g}" for t in THRESHOLDS) + ")")
    parser.add_argument("--turns", type=turn_counts, default=list(TURNS), metavar="N,...",
                        help="its turns in a row below the threshold (default: "
                        + ",".join(map(str, TURNS)) + ")")
    parser.add_argument("--min-move", type=count_int, default=DEFAULT_MIN_MOVE,
                        metavar="N", help="no resignation before N moves are played "
                        f"(default {DEFAULT_MIN_MOVE}: KataGo's 1 + area/5)")
    parser.add_argument("--json", action="store_true",
                        help="print the table as JSON instead of text")
    parser.set_defaults(func=run)


def _percent(n: int, of: int) -> str:
    return f"{100 * n / of:.1f} %" if of else "-"


def _interval(c: Cell) -> str:
    interval = c.incorrect_of_resigned
    if interval is None:
        return "-"
    low, high = interval
    return f"{100 * c.incorrect / c.resigned:.1f} % [{100 * low:.1f}, {100 * high:.1f}]"


def text_table(cells: list[Cell]) -> list[str]:
    head = ("win rate <", "turns", "resigned", "correct", "incorrect", "no resign",
            "incorrect of resigned [95 %]", "moves saved")
    rows = [(f"{c.threshold:g}", str(c.turns), str(c.resigned),
             f"{c.correct} ({_percent(c.correct, c.games)})",
             f"{c.incorrect} ({_percent(c.incorrect, c.games)})",
             f"{c.no_resign} ({_percent(c.no_resign, c.games)})", _interval(c),
             _percent(c.saved, c.moves)) for c in cells]
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
    return ["  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True))
            for r in (head, *rows)]


def notes(found: Scan, min_move: int) -> list[str]:
    """What the table leaves out, or cannot see."""
    out = []
    left = [(found.resigned, "ended by resignation"), (found.no_winner, "without a winner"),
            (found.unreadable, "unreadable"), (found.unlabelled, "without labels")]
    for n, why in left:
        if n:
            out.append(f"{plural(n, 'game')} {why} left out")
    if found.mismatched:
        out.append(f"{plural(found.mismatched, 'label')} made for other positions than the "
                   "games' left out")
    if found.partial:
        out.append(f"{plural(found.partial, 'game')} labelled only in part (at most "
                   f"{found.last_seen} moves): no resignation is seen after their last "
                   "label")
    if found.capped:
        # Measured: of 6 GNU Go - heuristic games capped at move 160, the 2 "false
        # resigns" were games the heuristic led only on the unfinished board's count.
        out.append(f"{found.capped} of the {plural(len(found.games), 'game')} counted "
                   "ended at the move cap: the winner there is the area count of an "
                   "unfinished board, so an incorrect resign may be the cap's, not the "
                   "rule's (play games out to measure false resigns)")
    if found.last_seen < min_move:
        out.append(f"no labelled position reaches move {min_move}, where resigning may "
                   "start: nothing can resign; label whole games (go19 review without "
                   "--max-moves) or lower --min-move")
    return out


def run(args: argparse.Namespace) -> int:
    for run_dir in args.run_dirs:
        if not is_run_dir(run_dir):
            print(f"adjudicate: {run_dir}: not a go19 run folder (no run.json or "
                  "games.jsonl)", file=sys.stderr)
            return 2
    try:
        found = scan(args.run_dirs, args.labels,
                     warn=lambda line: print(f"adjudicate: {line}", file=sys.stderr))
    except ScanError as exc:
        print(f"adjudicate: {exc}", file=sys.stderr)
        return 2
    if not found.games:
        left = "; ".join(notes(found, args.min_move)) or "no finished games"
        print(f"adjudicate: no played-out game with labels in "
              f"{', '.join(map(str, found.folders))} ({left})", file=sys.stderr)
        return 2
    cells = table(found.games, args.thresholds, args.turns, args.min_move)
    said = notes(found, args.min_move)
    if args.json:
        print(json.dumps({"games": len(found.games), "moves": found.moves,
                          "moves_with_winrate": found.seen, "min_move": args.min_move,
                          "labels": [str(f) for f in found.folders], "notes": said,
                          "cells": [c.as_dict() for c in cells]}, indent=1))
        return 0
    print(f"adjudicate: {plural(len(found.games), 'played-out game')}, "
          f"{plural(found.moves, 'move')}, KataGo's win rate after {found.seen} of them; "
          f"resigning from move {args.min_move} on")
    for line in text_table(cells):
        print(line)
    for line in said:
        print(f"note: {line}")
    return 0
