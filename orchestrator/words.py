"""How go19's messages count things: ``plural(1, "file")`` is ``1 file``, ``plural(2,
"file")`` ``2 files`` (a summary often counts one of something)."""

from __future__ import annotations


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``count`` and the noun, singular for exactly one; ``nouns`` when not noun + "s"."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"



def some(names: list[str], shown: int = 3) -> str:
    """The first ``shown`` names and how many more: ``a, b, c and 6 more``; ``a and b``."""
    if len(names) > shown:
        return f"{', '.join(names[:shown])} and {len(names) - shown} more"
    if len(names) > 1:
        return f"{', '.join(names[:-1])} and {names[-1]}"
    return "".join(names)
