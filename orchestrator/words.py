"""How go19's messages count things: ``plural(1, "file")`` is ``1 file``, ``plural(2,
"file")`` ``2 files`` (a summary often counts one of something)."""

from __future__ import annotations


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``count`` and the noun, singular for exactly one; ``nouns`` when not noun + "s"."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"
