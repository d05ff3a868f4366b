"""The `go19` command line: argument parsing and exit codes, nothing else.

Each subcommand lives in ``orchestrator/commands/<name>.py`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (taking the
parsed args, returning an exit status). A subcommand is listed here only once
it works.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from orchestrator import __version__
from orchestrator.commands import COMMANDS, SUMMARIES, HelpFormatter, examples

# `go19 --help` lists the commands in `COMMANDS`' order: the workflow first (collect games,
# report on them, gate a candidate on them, check SGF files, build a dataset, label it,
# review move quality), then the tools around it. A new command goes where it fits.


class Parser(argparse.ArgumentParser):
    """go19's parsers, subcommands' included (argparse makes those of the parent's
    class): the help layout of :class:`HelpFormatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def build_parser(running: str | None = None) -> argparse.ArgumentParser:
    """The parser with the real parser of the command ``running`` (None: every command's,
    for the docs and tests that read them all)."""
    parser = Parser(
        prog="go19",
        description="Collect, referee, rate and turn into datasets games between Go players "
        "speaking GO19, GTP engines and the built-in heuristic AI. `go19 COMMAND --help` "
        "gives a command's options and examples.",
        epilog=examples(
            "go19 collect --matchup matchups/demo.toml --games 20",
            "go19 dataset build recordings --out datasets/demo",
        ),
    )
    parser.add_argument("--version", action="version", version=f"go19 {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module in COMMANDS:
        if running is None or name == running:
            importlib.import_module(f"orchestrator.commands.{module}").register(subparsers)
        else:  # listed with its line, its module not imported (only `--help` reads it)
            subparsers.add_parser(name, help=SUMMARIES[name])
    return parser


def _running(argv: list[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option."""
    return next((word for word in argv if not word.startswith("-")), None)


def _interrupted(error: BaseException) -> bool:
    """A Ctrl-C, also as trio raises it out of a nursery: a group of KeyboardInterrupts."""
    if isinstance(error, BaseExceptionGroup):
        return all(_interrupted(e) for e in error.exceptions)
    return isinstance(error, KeyboardInterrupt)


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    args = build_parser(_running(words) or "").parse_args(words)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as `go19 replay` does, and let
        # nothing try to flush into the closed pipe at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except BaseException as error:  # after BrokenPipeError, which it would catch too
        if not _interrupted(error):
            raise
        print("interrupted", file=sys.stderr)
        return 130


def collect_main(argv: list[str] | None = None) -> int:
    """The `collect` console script: `go19 collect` under its own name."""
    return main(["collect", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
