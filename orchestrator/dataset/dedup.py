"""The set of positions already in a dataset, in bounded memory.

A position's key is a 64-bit hash of (stones, side to move, ko point) (see
:mod:`orchestrator.positions.samples`). Python's ``set`` would cost about 70 bytes
per key, so tens of millions of samples would need gigabytes. Here the keys live
in a sorted ``uint64`` array (8 bytes each) and the most recent ones in a small
set (at most ``recent_limit``, about 13 MB at the default) that is merged into the
array when full. A merge copies the array once (peak 16 bytes per key, for a
moment), so merging ``recent_limit`` keys at a time costs O(total) each, a few
seconds in all for 20 million keys. Membership tests are batched per game:
one ``searchsorted`` over the array plus set look-ups for the recent keys.

This is the reference. With numba installed (the ``fast`` extra) builds use
:mod:`.fastdedup`'s compiled index: the same layout, masks, merges and ``nbytes``.
"""

from __future__ import annotations

import numpy as np

RECENT_LIMIT = 1 << 17


class SeenPositions:
    def __init__(self, recent_limit: int = RECENT_LIMIT) -> None:
        self._sorted = np.empty(0, np.uint64)
        self._recent: set[int] = set()
        self._recent_limit = recent_limit

    def __len__(self) -> int:
        return len(self._sorted) + len(self._recent)

    @property
    def nbytes(self) -> int:
        """Bytes held by the sorted array (the recent set is bounded apart)."""
        return self._sorted.nbytes

    def fresh(self, keys: np.ndarray) -> np.ndarray:
        """Boolean mask of ``keys`` (uint64) not seen before and not repeating an
        earlier key of the same batch. Adds nothing: see :meth:`add`."""
        mask = np.zeros(len(keys), bool)
        if not len(keys):
            return mask
        mask[np.unique(keys, return_index=True)[1]] = True
        if len(self._sorted):
            at = np.searchsorted(self._sorted, keys)
            np.minimum(at, len(self._sorted) - 1, out=at)
            mask &= self._sorted[at] != keys
        if self._recent:
            # One C-level set intersection instead of a Python loop per key; only
            # the few repeated keys (mostly opening positions) go through isin.
            hits = self._recent.intersection(keys.tolist())
            if hits:
                mask &= ~np.isin(keys, np.array(list(hits), np.uint64))
        return mask

    def admit(self, keys: np.ndarray) -> np.ndarray:
        """Indices (ascending) of the :meth:`fresh` ``keys``, which are added: for a
        build that keeps every fresh position (no pick per game)."""
        mask = self.fresh(keys)
        self.add(keys[mask])
        return np.flatnonzero(mask)

    def add(self, keys: np.ndarray) -> None:
        self._recent.update(keys.tolist())
        if len(self._recent) >= self._recent_limit:
            self._merge()

    def _merge(self) -> None:
        # list() and a sort of the concatenation run in C; the result is the same
        # sorted array an insertion at the search positions would give.
        merged = np.concatenate((self._sorted, np.array(list(self._recent), np.uint64)))
        merged.sort()
        self._sorted = merged
        self._recent.clear()
