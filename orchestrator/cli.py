"""The `go19` command line: argument parsing and exit codes, nothing else.

Each subcommand lives in ``orchestrator/commands/<name>.py`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (taking the
parsed args, returning an exit status). A subcommand is listed here only once
it works.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from orchestrator import __version__

COMMANDS: tuple[str, ...] = (
    "replay",
    "collect",
    "serve",
    "ping",
    "report",
    "dataset",
    "label",
    "play",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="go19",
        description="Collect, referee, rate and turn into datasets games between Go players "
        "speaking GO19, GTP engines and the built-in heuristic AI.",
    )
    parser.add_argument("--version", action="version", version=f"go19 {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"orchestrator.commands.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def collect_main(argv: list[str] | None = None) -> int:
    """The `collect` console script: `go19 collect` under its own name."""
    return main(["collect", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
