"""The two colours and the empty point, below everything that speaks of stones (SGF,
rules, players), so that no layer imports another for three integers."""

from __future__ import annotations

EMPTY, BLACK, WHITE = 0, 1, 2
COLOR_NAMES = {BLACK: "black", WHITE: "white"}


def opponent(color: int) -> int:
    return 3 - color
