"""A model's reply read as a move, in the export's spelling, leniently: the whole reply
when it spells a move as the export writes it, else the first token that does.

What a trained adapter answers is the export's answer (``Q16``); a base model or a chatty
one wraps it (``I play Q16.``, ``**pd**``, ``(3, 15)``). Reading the first token that
spells a move keeps those, and reading nothing from a reply with no move keeps a guess out
of the recordings: the caller turns ``None`` into an ``unparsed`` fault with
:func:`unparsed_detail`.
"""

from __future__ import annotations

import re

from orchestrator.coords import CoordinateError, move_from_text

# Tokens by spelling: GTP vertices and SGF letter pairs are words; row,col is two numbers.
_WORDS = re.compile(r"[A-Za-z0-9]+")
_ROWCOL = re.compile(r"\d+\s*,\s*\d+")
UNPARSED_SHOWN = 80


def read_move(text: str, size: int, spelling: str = "gtp") -> int | None:
    """The move ``text`` spells (a point or ``PASS``), or None when no token does."""
    candidates = [text]
    candidates += _ROWCOL.findall(text) if spelling == "rowcol" else _WORDS.findall(text)
    for candidate in candidates:
        try:
            return move_from_text(candidate, size, spelling)
        except CoordinateError:
            continue
    return None


def unparsed_detail(text: str) -> str:
    """``unparsed: <the first 80 characters of the reply>``, on one line."""
    shown = " ".join(text.split())
    if len(shown) > UNPARSED_SHOWN:
        shown = shown[:UNPARSED_SHOWN] + "…"
    return f"unparsed: {shown}"
