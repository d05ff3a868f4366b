"""The dedup index compiled (numba, the ``fast`` extra): :class:`SeenPositions` here gives
exactly the masks, lengths and ``nbytes`` of :class:`orchestrator.dataset.dedup.SeenPositions`
(the reference), for a few microseconds per game instead of some seventy.

The layout is the reference's: every key but the most recent ones in a sorted ``uint64``
array (8 bytes per key, the figure ``nbytes`` reports), merged at the same moments (the
recent keys reach ``recent_limit``) into the same sorted array. What changes:

- the recent keys live in an open-addressing table of ``uint64`` slots, at load 1/2 (up to
  3/4 for the batch that triggers a merge): 2 MB for the default limit, where Python's
  set of ints took about 13 MB;
- :func:`_fresh`, :func:`_add` and :func:`_admit` (both at once, for builds without
  picks) run a batch in one compiled loop each (binary search in the array, probes in
  the table; a scratch table, or the table itself in ``_admit``, for the batch's own
  repeats): no ``np.unique``, no ``tolist``, no set intersection;
- a merge radix-sorts the recent keys and merges them into the array in one linear pass
  (the reference sorts the whole concatenation), so merges cost O(total) each, with the
  same peak of 16 bytes per key for a moment.

Slot value 0 means empty, so the key 0 (a possible hash, if unlikely) is held apart in a
flag. Keys are Zobrist hashes, uniform already; the multiplicative hash only guards
against keys that are not.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from orchestrator.dataset.dedup import RECENT_LIMIT

njit: Callable[..., Any] | None
try:
    import numba

    njit = numba.njit
except ImportError:  # the reference path only
    njit = None

# GO19_PURE_DEDUP=1 keeps the reference index even with numba installed (to compare).
ENABLED = njit is not None and os.environ.get("GO19_PURE_DEDUP", "") in ("", "0")

_MIX = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio: Fibonacci hashing


def _slot(key: Any, shift: Any) -> np.intp:
    return np.intp((key * _MIX) >> shift)


def _in_table(table: Any, shift: Any, key: Any) -> bool:
    mask = len(table) - 1
    at = _slot(key, shift)
    while True:
        slot = table[at]
        if slot == key:
            return True
        if slot == 0:
            return False
        at = (at + 1) & mask


def _insert(table: Any, shift: Any, key: Any) -> bool:
    """Put ``key`` (not 0) in ``table``; True when it was not there yet."""
    mask = len(table) - 1
    at = _slot(key, shift)
    while True:
        slot = table[at]
        if slot == key:
            return False
        if slot == 0:
            table[at] = key
            return True
        at = (at + 1) & mask


def _fresh(keys: Any, ordered: Any, table: Any, shift: Any, zero: bool, out: Any) -> int:
    """``out[i]``: ``keys[i]`` is in neither ``ordered`` (sorted) nor ``table`` (nor is 0
    when ``zero``, the table's flag for it) and is the first of its value in ``keys``.
    Returns how many are."""
    n = len(keys)
    # The batch's own repeats: a scratch table at load at most 1/2.
    bits = 1
    while (1 << bits) < 2 * n:
        bits += 1
    batch = np.zeros(1 << bits, np.uint64)
    batch_shift = np.uint64(64 - bits)
    batch_zero = False
    size = len(ordered)
    fresh = 0
    for i in range(n):
        key = keys[i]
        if key == 0:
            first = not batch_zero
            batch_zero = True
            ok = first and not zero
        else:
            ok = _insert(batch, batch_shift, key) and not _in_table(table, shift, key)
        if ok and size:
            lo, hi = 0, size  # ordered's first element >= key
            while lo < hi:
                mid = (lo + hi) >> 1
                if ordered[mid] < key:
                    lo = mid + 1
                else:
                    hi = mid
            ok = lo == size or ordered[lo] != key
        out[i] = ok
        fresh += ok
    return fresh


def _admit(keys: Any, ordered: Any, table: Any, shift: Any, zero: bool, out: Any
           ) -> tuple[int, bool]:
    """:func:`_fresh` and :func:`_add` in one pass: each fresh key goes into ``table`` at
    once, so the batch's later repeats find it there. ``out[:k]`` gets the k fresh keys'
    indices; returns k, and whether the key 0 was among them."""
    size = len(ordered)
    k = 0
    zero_fresh = False
    for i in range(len(keys)):
        key = keys[i]
        if key == 0:
            ok = not zero and not zero_fresh
        else:
            ok = not _in_table(table, shift, key)
        if ok and size:
            lo, hi = 0, size
            while lo < hi:
                mid = (lo + hi) >> 1
                if ordered[mid] < key:
                    lo = mid + 1
                else:
                    hi = mid
            ok = lo == size or ordered[lo] != key
        if ok:
            if key == 0:
                zero_fresh = True
            else:
                _insert(table, shift, key)
            out[k] = i
            k += 1
    return k, zero_fresh


def _add(keys: Any, table: Any, shift: Any) -> tuple[int, bool]:
    """Insert the non-zero ``keys`` into ``table``; returns how many were new, and
    whether the key 0 was among ``keys``."""
    new = 0
    zero = False
    for i in range(len(keys)):
        key = keys[i]
        if key == 0:
            zero = True
        elif _insert(table, shift, key):
            new += 1
    return new, zero


_DIGIT = 11  # radix sort digit: 6 passes over 64 bits, 2048 counters each (cache-sized)


def _sorted(keys: Any) -> Any:
    """``keys`` sorted (LSD radix sort: ~3x np.sort's speed on the recent keys)."""
    n = len(keys)
    size = 1 << _DIGIT
    digit = np.uint64(size - 1)
    passes = (64 + _DIGIT - 1) // _DIGIT
    counts = np.zeros((passes, size), np.int64)
    for i in range(n):
        key = keys[i]
        for p in range(passes):
            counts[p, np.intp((key >> np.uint64(p * _DIGIT)) & digit)] += 1
    src, dst = keys.copy(), np.empty_like(keys)
    for p in range(passes):
        at = counts[p]
        total = 0
        for digit_value in range(size):
            here = at[digit_value]
            at[digit_value] = total
            total += here
        shift = np.uint64(p * _DIGIT)
        for i in range(n):
            key = src[i]
            d = np.intp((key >> shift) & digit)
            dst[at[d]] = key
            at[d] += 1
        src, dst = dst, src
    return src


def _merged(a: Any, b: Any) -> Any:
    """The sorted ``a`` and ``b`` as one sorted array: O(len(a) + len(b))."""
    out = np.empty(len(a) + len(b), np.uint64)
    i = j = k = 0
    while i < len(a) and j < len(b):
        if b[j] < a[i]:
            out[k] = b[j]
            j += 1
        else:
            out[k] = a[i]
            i += 1
        k += 1
    while i < len(a):
        out[k] = a[i]
        i += 1
        k += 1
    while j < len(b):
        out[k] = b[j]
        j += 1
        k += 1
    return out


if ENABLED and njit is not None:
    _sorted = njit(cache=True, nogil=True)(_sorted)
    _merged = njit(cache=True, nogil=True)(_merged)
    _slot = njit(cache=True, nogil=True)(_slot)
    _in_table = njit(cache=True, nogil=True)(_in_table)
    _insert = njit(cache=True, nogil=True)(_insert)
    _fresh = njit(cache=True, nogil=True)(_fresh)
    _admit = njit(cache=True, nogil=True)(_admit)
    _add = njit(cache=True, nogil=True)(_add)


def _u64(keys: np.ndarray) -> np.ndarray:
    """``keys`` as the kernels' one signature (contiguous uint64; no copy when they are
    already): another dtype would compare as floats in numba, and each layout compiles."""
    return np.ascontiguousarray(keys, np.uint64)


def _table_bits(keys: int) -> int:
    """log2 of a table size holding ``keys`` at load at most 1/2."""
    return max(4, (2 * keys - 1).bit_length())


class SeenPositions:
    """:class:`orchestrator.dataset.dedup.SeenPositions`, compiled (same interface)."""

    def __init__(self, recent_limit: int = RECENT_LIMIT) -> None:
        self._sorted = np.empty(0, np.uint64)
        self._recent_limit = recent_limit
        self._new_table(recent_limit)

    def _new_table(self, keys: int) -> None:
        bits = _table_bits(keys)
        self._table = np.zeros(1 << bits, np.uint64)
        self._shift = np.uint64(64 - bits)
        self._count = 0  # distinct recent keys, 0 included
        self._zero = False  # the key 0 is among the recent ones

    def __len__(self) -> int:
        return len(self._sorted) + self._count

    @property
    def nbytes(self) -> int:
        """Bytes held by the sorted array (the recent table is bounded apart)."""
        return self._sorted.nbytes

    def fresh(self, keys: np.ndarray) -> np.ndarray:
        """Boolean mask of ``keys`` (uint64) not seen before and not repeating an
        earlier key of the same batch. Adds nothing: see :meth:`add`."""
        keys = _u64(keys)
        mask = np.empty(len(keys), bool)
        _fresh(keys, self._sorted, self._table, self._shift, self._zero, mask)
        return mask

    def admit(self, keys: np.ndarray) -> np.ndarray:
        """Indices (ascending) of the :meth:`fresh` ``keys``, which are added: for a
        build that keeps every fresh position (no pick per game)."""
        keys = _u64(keys)
        self._make_room(len(keys))
        rows = np.empty(len(keys), np.intp)
        k, zero = _admit(keys, self._sorted, self._table, self._shift, self._zero, rows)
        self._count += k
        self._zero |= zero
        if self._count >= self._recent_limit:
            self._merge()
        return rows[:k]

    def _make_room(self, keys: int) -> None:
        # The last batch before a merge may take the table past 1/2 (to 3/4 is still
        # a short probe); only a batch bigger than that (a huge game) needs a rehash.
        if 4 * (self._count + keys) > 3 * len(self._table):
            self._rehash(self._count + keys)

    def add(self, keys: np.ndarray) -> None:
        keys = _u64(keys)
        self._make_room(len(keys))
        new, zero = _add(keys, self._table, self._shift)
        self._count += new
        if zero and not self._zero:
            self._zero = True
            self._count += 1
        if self._count >= self._recent_limit:
            self._merge()

    def _recent(self) -> np.ndarray:
        keys = self._table[self._table != 0]
        return np.concatenate((keys, np.zeros(1, np.uint64))) if self._zero else keys

    def _rehash(self, keys: int) -> None:
        recent, zero, count = self._recent(), self._zero, self._count
        self._new_table(keys)
        _add(recent, self._table, self._shift)
        self._zero, self._count = zero, count

    def _merge(self) -> None:
        # The reference's array (the sorted concatenation), for a sort of the recent
        # keys and one linear pass instead of a sort of everything.
        self._sorted = _merged(self._sorted, _sorted(self._recent()))
        if len(self._table) == 1 << _table_bits(self._recent_limit):
            self._table.fill(0)  # the pages are in already: cheaper than fresh zeros
            self._count, self._zero = 0, False
        else:  # back from a rehash to the usual size
            self._new_table(self._recent_limit)


def warm() -> float:
    """Compile the kernels (once per machine: numba caches them) or load them (once per
    process); CPU seconds taken. Where numba cannot compile here, the reference index
    takes over with a warning."""
    global ENABLED
    started = time.process_time()
    if ENABLED:
        try:
            seen = SeenPositions(4)
            keys = np.array([0, 3, 3, 5, 7, 9], np.uint64)  # a merge too
            seen.add(keys[seen.fresh(keys)])
            seen.admit(keys)
        except Exception as exc:  # numba installed but unusable on this machine
            ENABLED = False
            warnings.warn(f"go19: the compiled dedup index is unusable here ({exc}); using "
                          "the reference one", RuntimeWarning, stacklevel=2)
    return time.process_time() - started


LOAD_SECONDS = warm()  # CPU seconds this process spent compiling or loading the kernels
