"""`go19 --help` and every command's help: workflow order, a help text and a default for
every option, and example lines that go19 itself accepts."""

from __future__ import annotations

import argparse
import re
import shlex

import pytest

from orchestrator.cli import build_parser
from tests.conftest import go19_here

WORKFLOW = ["collect", "report", "gate", "replay", "dataset", "label", "review", "adjudicate",
            "serve", "ping"]


def parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """(command words, parser) of go19 and every command and subcommand under it."""
    found, todo = [], [("go19", build_parser())]
    while todo:
        name, parser = todo.pop(0)
        found.append((name, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [(f"{name} {word}", sub) for word, sub in action.choices.items()]
    return found


COMMANDS = [pytest.param(parser, id=name) for name, parser in parsers()[1:]]


def option_entries(help_text: str) -> dict[str, str]:
    """The options' entries of a help text (in any section: argument groups have their
    own headings), by their first word, whitespace collapsed."""
    out: dict[str, str] = {}
    for block in re.findall(r"^  -.*(?:\n   +\S.*)*", help_text, re.M):
        words = block.split()
        out[words[0].rstrip(",")] = " ".join(words)
    return out


def test_go19_help_lists_the_commands_in_workflow_order() -> None:
    result = go19_here("--help")
    assert result.returncode == 0, result.stderr
    listed = [line.split()[0] for line in result.stdout.splitlines()
              if re.match(r"^    \w", line)]
    # Commands added later (a web UI's `play`) come after these.
    assert listed[:len(WORKFLOW)] == WORKFLOW


@pytest.mark.parametrize("parser", COMMANDS)
def test_every_option_has_a_help_text_and_shows_its_default(parser) -> None:
    options = option_entries(parser.format_help())
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        assert action.help, f"{action.dest} has no help text"
        if not action.option_strings:
            continue
        entry = options[action.option_strings[0]]
        takes_value = action.nargs != 0
        if takes_value and not action.required:
            assert "default" in entry, f"{entry!r} does not show its default"


@pytest.mark.parametrize("parser", COMMANDS)
def test_help_ends_with_examples_go19_accepts(parser) -> None:
    text = parser.format_help().rstrip("\n")
    head, sep, tail = text.rpartition("\nexamples:\n")
    assert sep, f"{parser.prog}: no examples at the end of its help"
    lines = tail.splitlines()
    assert 1 <= len(lines) <= 2
    for line in lines:
        words = shlex.split(line.split(" > ")[0])  # no shell redirection
        assert words[:len(parser.prog.split())] == parser.prog.split(), line
        args = build_parser().parse_args(words[1:])  # exits (fails the test) if refused
        assert callable(args.func)


def test_a_bad_option_value_is_one_line_and_status_2(capsys) -> None:
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(["dataset", "build", "x", "--out", "y", "--workers", "0"])
    assert caught.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == "go19 dataset build: error: argument --workers: '0': expected a whole " \
        "number >= 1"


def test_dataset_help_names_every_action_and_the_dpo_pairs() -> None:
    """Issue 30, item 11: `go19 dataset --help` spoke of building and checking only, and its
    export line of parquet and jsonl, not of the DPO pairs."""
    result = go19_here("dataset", "--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    description = text.split(" positional arguments:")[0]
    assert "export" in description and "DPO preference pairs" in description
    export = re.search(r"^    export .*(?:\n {10,}\S.*)*", result.stdout, re.M)
    assert export is not None and "dpo" in export.group(0)
