"""How go19's messages count things: ``plural(1, "file")`` is ``1 file``, ``plural(2,
"file")`` ``2 files`` (a summary often counts one of something); ``found_line``, what an
input held when a command found nothing in it to work on."""

from __future__ import annotations

from collections.abc import Mapping


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


def found_line(files: int, games: int, rejected: Mapping[str, int],
               skipped: Mapping[str, int], void_files: int) -> str:
    """What an input held, for commands that found nothing to work on: files, games,
    and the games refused, by reason."""
    def by_reason(counts: Mapping[str, int]) -> str:
        parts = [f"{reason} {n}" for reason, n in sorted(counts.items()) if n]
        return f" ({', '.join(parts)})" if parts else ""

    text = (f"{plural(files, 'SGF file')}, {plural(games, 'game')}: "
            f"rejected {sum(rejected.values())}"
            f"{by_reason(rejected)}, skipped {sum(skipped.values())}{by_reason(skipped)}")
    return text + (f"; {void_files} in void folders" if void_files else "")
