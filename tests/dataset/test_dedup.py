"""The dedup index: the reference (``dedup.SeenPositions``) on keys checked by hand and
against a plain Python set; the compiled one (``fastdedup``, the ``fast`` extra) gives the
reference's masks, ``admit`` rows, lengths and ``nbytes`` on random keys repeated within and across
batches, through merges, rehashes and the key 0."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.dataset import dedup, fastdedup

compiled = pytest.mark.skipif(
    not fastdedup.ENABLED,
    reason="numba is not installed (pip install 'go19[fast]') or GO19_PURE_DEDUP is set: "
    "the reference index is all there is")

INDEXES = [pytest.param(dedup.SeenPositions, id="reference"),
           pytest.param(fastdedup.SeenPositions, id="compiled", marks=compiled)]


def u64(*keys: int) -> np.ndarray:
    return np.array(keys, np.uint64)


@pytest.mark.parametrize("index", INDEXES)
def test_first_occurrence_wins_and_only_added_keys_count(index) -> None:
    seen = index(recent_limit=3)
    keys = u64(5, 7, 5, 9)
    assert seen.fresh(keys).tolist() == [True, True, False, True]  # the second 5 repeats
    assert len(seen) == 0  # fresh() adds nothing
    seen.add(u64(5))  # as if a pick kept only the first key
    assert seen.fresh(u64(7, 5)).tolist() == [True, False]
    assert seen.admit(u64(5, 8, 8)).tolist() == [1]  # 8 fresh (once), and now added
    assert seen.fresh(u64(8)).tolist() == [False]
    seen.add(u64(7, 9, 0))  # five recent keys (limit 3): merged into the array
    assert len(seen) == 5 and seen.nbytes == 5 * 8
    assert seen.fresh(u64(0, 9, 11, 11, 2**64 - 1)).tolist() == [False, False, True, False,
                                                                True]
    assert seen.fresh(u64()).tolist() == []


@pytest.mark.parametrize("index", INDEXES)
def test_zero_and_the_largest_key_are_keys_like_any_other(index) -> None:
    seen = index(recent_limit=100)
    seen.add(u64(0, 2**64 - 1))
    assert len(seen) == 2 and seen.nbytes == 0  # recent only: nothing merged yet
    assert seen.fresh(u64(0, 1, 2**64 - 1, 2**64 - 2)).tolist() == [False, True, False, True]


def _batches(seed: int, count: int) -> list[tuple[np.ndarray, int]]:
    """Batches of keys from a small pool of random 64-bit keys (so they repeat within and
    across batches), with 0 and 2**64 - 1 in the pool, now and then a batch far bigger
    than the table; each with a stride: the keys added are every stride-th fresh one."""
    rng = np.random.default_rng(seed)
    pool = np.concatenate([rng.integers(0, 2**64, 400, dtype=np.uint64), u64(0, 2**64 - 1)])
    out = []
    for _ in range(count):
        size = int(rng.integers(0, 700 if rng.random() < 0.05 else 40))
        out.append((rng.choice(pool, size), int(rng.integers(1, 4))))
    return out


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), limit=st.sampled_from([1, 2, 7, 64, 1000]))
def test_reference_is_a_set(seed: int, limit: int) -> None:
    seen, plain = dedup.SeenPositions(limit), set()
    for keys, stride in _batches(seed, 60):
        expected, batch = [], set()
        for key in keys.tolist():
            expected.append(key not in plain and key not in batch)
            batch.add(key)
        mask = seen.fresh(keys)
        assert mask.tolist() == expected
        added = keys[mask][::stride]
        seen.add(added)
        plain.update(added.tolist())
        assert len(seen) == len(plain)


@compiled
@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), limit=st.sampled_from([1, 2, 7, 64, 1000]))
def test_compiled_index_is_the_reference(seed: int, limit: int) -> None:
    ref, fast = dedup.SeenPositions(limit), fastdedup.SeenPositions(limit)
    merges = 0
    for keys, stride in _batches(seed, 60):
        mask = ref.fresh(keys)
        assert np.array_equal(fast.fresh(keys), mask)
        before = ref.nbytes
        if stride == 1:  # every fresh key kept: admit() is fresh() then add()
            rows = fast.admit(keys)
            assert np.array_equal(rows, np.flatnonzero(mask)) and rows.dtype == np.intp
            assert np.array_equal(ref.admit(keys), rows)
        else:
            added = keys[mask][::stride]
            ref.add(added)
            fast.add(added)
        merges += ref.nbytes != before
        assert (len(fast), fast.nbytes) == (len(ref), ref.nbytes)
    # The same sorted array, not just the same answers.
    assert np.array_equal(fast._sorted, ref._sorted)
    assert merges or limit == 1000


@compiled
def test_compiled_index_holds_8_bytes_per_merged_key() -> None:
    seen = fastdedup.SeenPositions()
    rng = np.random.default_rng(3)
    for _ in range(700):  # 175k distinct keys, 250 at a time
        keys = rng.integers(0, 2**64, 250, dtype=np.uint64)
        seen.add(keys[seen.fresh(keys)])
    assert len(seen) == 700 * 250
    # One merge, after the batch that took the recent keys to RECENT_LIMIT (2**17).
    assert seen.nbytes == 8 * 525 * 250
    assert np.all(seen._sorted[1:] > seen._sorted[:-1])
    # The recent table: at most 2 slots of 8 bytes per recent key allowed.
    assert seen._table.nbytes <= 16 * dedup.RECENT_LIMIT
