"""`go19 gate RUN_DIR... [--candidate NAME] [--out FILE]`: accept or reject a candidate over
its baseline from finished runs, as collect's ``[stop] gate`` decides (docs/gate.md); the
answer is one line, gate.json and the exit status."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orchestrator.collect.gate import GATE_FILE, GateError, GateSettings, decide, write_gate_json
from orchestrator.commands import SUMMARIES, add_labels, add_run_dirs, count_int, examples

EXIT = {"accept": 0, "reject": 1, "undecided": 5}
EXIT_INPUT = 2

EXIT_CODES = """\
exit status:
  0    accept: the SPRT accepted H1 (the candidate is elo1 stronger rather than elo0)
  1    reject: the SPRT accepted H0
  2    bad input: a folder that is not a run, a candidate not in it, bad settings,
       or gate.json cannot be written
  5    undecided: the LLR is between its bounds, or fewer than min_games are counted

"""


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value < 0.5:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number between 0 and 0.5")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "gate",
        help=SUMMARIES["gate"],
        description="Decide whether the candidate is promoted over the other player of the "
        "runs' pairing, as collect's [stop] gate does: a GSPRT over colour-swapped pairs "
        "(pentanomial), counted pair by pair in schedule order, never in the order games "
        "finished, deciding at the first pair that takes the LLR past a bound with at least "
        "min_games counted (docs/gate.md). Settings come from the first run's [stop] gate; "
        "the options override them. Prints one line, writes gate.json (decision, LLR, "
        "games, results by colour, pentanomial counts, Elo and interval, each side's "
        "illegal moves and fallbacks, the move-quality verdict when the runs have KataGo "
        "labels) and exits with the decision, so `go19 gate RUN && promote` works in a "
        "script.",
        epilog=EXIT_CODES + examples(
            "go19 gate recordings/r5_vs_r4-20261201-150000",
            "go19 gate recordings/r5_vs_r4-20261201-150000 --candidate r5 --elo1 35",
        ),
    )
    add_run_dirs(parser, "run folder written by go19 collect (several: counted one after "
                 "another, in the order given)")
    parser.add_argument("--candidate", metavar="NAME",
                        help="the player to promote (default: the run's [stop] gate "
                        "candidate)")
    for flag, kind, metavar, what, default in (
        ("--elo0", float, "ELO", "H0's Elo difference", "0"),
        ("--elo1", float, "ELO", "H1's Elo difference", "35"),
        ("--alpha", _probability, "P", "false accept rate", "0.05"),
        ("--beta", _probability, "P", "false reject rate", "0.05"),
    ):
        parser.add_argument(flag, type=kind, metavar=metavar,
                            help=f"{what} (default: the run's gate, else {default})")
    parser.add_argument("--min-games", type=count_int, metavar="N",
                        help="no decision before N games are counted (default: the run's "
                        "gate, else 100)")
    add_labels(parser, "KataGo label folder for the move-quality verdict (repeatable; "
               "default: each run's RUN_DIR/labels, when there)")
    parser.add_argument("--out", type=Path, metavar="FILE",
                        help=f"where gate.json goes (default RUN_DIR/{GATE_FILE} for one "
                        "run; required for several)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.out is None and len(args.run_dirs) > 1:
        print(f"gate: {len(args.run_dirs)} runs: say where gate.json goes with --out FILE",
              file=sys.stderr)
        return EXIT_INPUT
    settings = GateSettings(candidate=args.candidate, elo0=args.elo0, elo1=args.elo1,
                            alpha=args.alpha, beta=args.beta, min_games=args.min_games)
    try:
        result = decide(args.run_dirs, settings, args.labels,
                        warn=lambda line: print(f"gate: {line}", file=sys.stderr))
    except GateError as exc:
        print(f"gate: {exc}", file=sys.stderr)
        return EXIT_INPUT
    out = args.out or args.run_dirs[0] / GATE_FILE
    try:
        write_gate_json(result, out)
    except OSError as exc:
        print(f"gate: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_INPUT
    print(result.line)
    return EXIT[result.decision]
