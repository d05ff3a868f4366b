"""One module per go19 subcommand (see orchestrator/cli.py), and the argument
types they share."""

from __future__ import annotations

import argparse


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
