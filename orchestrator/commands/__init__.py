"""One module per go19 subcommand (see orchestrator/cli.py), and what they share: the
help layout, argument types and the check of the vlm extra."""

from __future__ import annotations

import argparse
import importlib
import math
from collections.abc import Mapping
from pathlib import Path

from orchestrator.files import MAX_SGF_BYTES, MiB


class HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, and the example lines of an epilog
    (lines that start with a space) are printed as written, not rewrapped.

    An option whose default is ``None`` says in words what happens without it (its help
    names the default); a flag is off unless given, which needs no saying.
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (not action.option_strings or action.required or "default" in text
                or action.default is None or action.default is False  # not 0: it shows
                or action.default == argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(
            indent + line if line.startswith(" ") or not line
            else super(HelpFormatter, self)._fill_text(line, width, indent)
            for line in text.splitlines()
        )


def examples(*lines: str) -> str:
    """The epilog of a command's help: its example command lines."""
    return "\n".join(["examples:", *(f"  {line}" for line in lines)])


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    return _whole(text, 1)


def count_int(text: str) -> int:
    """An argparse type: a whole number >= 0."""
    return _whole(text, 0)


def _whole(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number >= {least}")
    return value


def parse_anchor(text: str) -> tuple[str, float]:
    """An argparse type: ``PLAYER=ELO``, a rating fixed (go19 report, go19 review)."""
    name, sep, value = text.rpartition("=")
    try:
        elo = float(value)
    except ValueError:
        elo = math.nan
    if not sep or not name or not math.isfinite(elo):
        raise argparse.ArgumentTypeError(f"{text!r}: expected PLAYER=ELO, e.g. gnugo-l0=0")
    return name, elo


RUN_DIR_HELP = "run folder written by go19 collect (recordings/<run>)"


def add_run_dirs(parser: argparse.ArgumentParser, help: str = RUN_DIR_HELP) -> None:
    """The run folders a reader of recordings takes (report, review, adjudicate, gate)."""
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help=help)


def add_labels(parser: argparse.ArgumentParser, help: str) -> None:
    """``--labels DIR`` (repeatable): KataGo label folders, in place of RUN_DIR/labels."""
    parser.add_argument("--labels", type=Path, action="append", metavar="DIR", help=help)


def add_katago_files(parser: argparse.ArgumentParser | argparse._ArgumentGroup,
                     default: str) -> None:
    """``--katago``, ``--model`` and ``--config``: the KataGo files of a command that starts
    one (``default`` says what is used without them)."""
    for option, what in (("--katago", "binary"), ("--model", "net"),
                         ("--config", "analysis config")):
        parser.add_argument(option, type=Path, metavar="FILE",
                            help=f"KataGo {what} (default: {default})")


def add_max_file_mib(parser: argparse.ArgumentParser) -> None:
    """``--max-file-mib``, for commands that read SGF files (see :func:`max_file_bytes`)."""
    parser.add_argument(
        "--max-file-mib", type=_positive_mib, default=MAX_SGF_BYTES / MiB, metavar="MIB",
        help=f"refuse SGF files over MIB mebibytes, unread, one line each (default "
        f"{MAX_SGF_BYTES / MiB:g}; reading one costs a few times its size)")


def max_file_bytes(args: argparse.Namespace) -> int:
    return int(args.max_file_mib * MiB)


def _positive_mib(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive number of MiB")
    return value



def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive number of seconds")
    return value


def add_katago_timeout(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--katago-timeout``: KataGo's deadline (go19 label, review, collect --review)."""
    from orchestrator.label.engine import DEFAULT_TIMEOUT, START_FACTOR

    parser.add_argument(
        "--katago-timeout", type=positive_seconds, default=DEFAULT_TIMEOUT, metavar="S",
        help=f"seconds KataGo may go without answering, per visit (at --visits N, N x S; "
        f"its start {START_FACTOR} x S); silent longer, it is taken for hung and restarted, "
        f"as a dying one is (default {DEFAULT_TIMEOUT:g}: the CPU KataGo answers about a "
        "position a second at one visit)")


# Each subcommand: its name, its module under orchestrator/commands/, its one line in
# `go19 --help`. Here, not in the modules, so that `go19 --help` and a mistyped command import
# none of them (cli.py imports only the module of the command that runs).
COMMANDS: tuple[tuple[str, str], ...] = (
    ('collect', 'collect'),
    ('report', 'report'),
    ('gate', 'gate'),
    ('replay', 'replay'),
    ('dataset', 'dataset'),
    ('label', 'label'),
    ('review', 'review'),
    ('adjudicate', 'adjudicate'),
    ('serve', 'serve'),
    ('ping', 'ping'),
    ('play', 'play'),
    ('tiny-model', 'tiny_model'),
    ('train-lora', 'train_lora'),
)
SUMMARIES: Mapping[str, str] = {
    'adjudicate': (
        "choose a resign threshold from labelled runs: Leela Zero's table of "
        "incorrect / correct / no resign and moves saved, no new games"
    ),
    'collect': 'play refereed games between the players of a matchup and record them',
    'report': 'write report.md, report.json and report.html from recorded runs',
    'gate': (
        "accept or reject a candidate over its baseline (SPRT over colour-swapped pairs):"
        " one line, gate.json, exit 0/1/5"
    ),
    'replay': "check SGF files: replay each main line under go19's rules",
    'dataset': 'build training samples from SGF files, check them, export them for a trainer',
    'label': 'KataGo labels (policy, best move, winrate, score) for every position',
    'review': (
        "KataGo's point loss per move and per player: label a run, report its move "
        "quality"
    ),
    'serve': 'serve a move engine over the GO19 protocol',
    'ping': (
        "check GO19 endpoints with one PING each, OpenAI-compatible servers with one "
        "model list"
    ),
    'play': 'play and watch games in the browser (human, heuristic AI, GO19 servers)',
    'tiny-model': 'make a tiny random Qwen2.5-VL (about 117 k parameters) to try the model side',
    'train-lora': "train a LoRA adapter with TRL's SFTTrainer on a `go19 dataset export`",
}


VLM_EXTRA_INSTALL = ("needs the vlm extra: .venv/bin/pip install -e '.[vlm]' (on a GPU box, "
                     "the CUDA build of torch first: docs/vlm.md)")


def extra_problem(what: str) -> str | None:
    """Why ``what`` (``--engine hf``, ``the tiny model``, ``training``) cannot use the vlm
    extra here, or None. torch is looked for first: the libraries after it print warnings
    of their own when it is missing."""
    for name in ("torch", "transformers", "peft"):
        try:
            importlib.import_module(name)
        except ImportError as exc:
            return f"{what} {VLM_EXTRA_INSTALL}; {exc.name or name} is missing"
    try:
        import torchvision  # noqa: F401  (Qwen-VL processors need its video processor)
    except ImportError:
        return f"{what} {VLM_EXTRA_INSTALL}; torchvision is missing"
    except Exception as exc:  # a torchvision built for another torch fails at import
        import torch

        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return (f"torchvision does not import beside torch {torch.__version__}: {first}; "
                "install the pair together (docs/vlm.md)")
    return None
