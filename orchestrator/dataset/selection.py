"""Which of a game's rows may become samples (steps 3 and 6 of :mod:`.build`): the
targets (the player's own moves, the winner's, tactical ones) and the picks per game.
Plain functions of a game's rows and the build's options; the build composes them with
stages and dedup, in its own order."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np

from orchestrator.dataset.options import BuildOptions
from orchestrator.positions.rows import ORIGIN_NAMES, Positions
from orchestrator.positions.samples import GameRead


def targets(game: GameRead, positions: Positions, options: BuildOptions,
            excluded: Counter) -> np.ndarray | None:
    """Boolean mask of the rows that are targets, None when every row is; ``excluded``
    counts the rows dropped, by reason (a row is counted for the first reason only)."""
    keep: np.ndarray | None = None

    def drop(mask: np.ndarray, why: str) -> None:
        nonlocal keep
        if keep is None:
            excluded[why] += int(np.count_nonzero(mask))
            keep = ~mask
        else:
            excluded[why] += int(np.count_nonzero(keep & mask))
            keep &= ~mask

    # Most games have only the players' own moves: no mask per origin for those.
    if not options.include_fallback and np.count_nonzero(positions.origin):
        for origin, name in ORIGIN_NAMES.items():
            drop(positions.origin == origin, name)
    if options.winner_only:
        if game.winner:
            drop(positions.to_play != game.winner, "loser")
        else:
            drop(np.ones(len(positions), bool), "no winner")
    if options.tactics_only:
        drop(positions.tactical == 0, "not tactical")
    return None if keep is None or keep.all() else keep


def spread(indices: np.ndarray, n: int) -> np.ndarray:
    """``n`` of ``indices`` evenly spaced from first to last (all if there are fewer)."""
    if n >= len(indices):
        return indices
    return indices[np.linspace(0, len(indices) - 1, n).round().astype(np.intp)]


def pick(tactical: np.ndarray, n: int, tactical_bias: bool, rng: random.Random) -> np.ndarray:
    """Row indices (ascending) of at most ``n`` of the rows whose tactics bits are
    ``tactical`` (one per row)."""
    rows = np.arange(len(tactical))
    if len(rows) <= n:
        return rows
    if not tactical_bias:
        return spread(rows, n)
    bits = np.flatnonzero(tactical).tolist()
    chosen = sorted(rng.sample(bits, min(len(bits), (n + 1) // 2)))
    rest = np.ones(len(rows), bool)  # np.setdiff1d(rows, chosen), without its sort
    rest[chosen] = False
    others = rows[rest]
    return np.sort(np.concatenate([np.array(chosen, np.intp), spread(others, n - len(chosen))]))
