"""Step 1 of a build: every game of the input files read and replayed
(:func:`orchestrator.positions.samples.read_file`), in worker processes, results in input
order. The batches are the unit of work, here and on a Ray cluster
(:mod:`orchestrator.cluster.dataset`), so both hand the build the same games in the same
order."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator, Sequence

from orchestrator.files import MAX_SGF_BYTES
from orchestrator.positions.samples import GameRead, read_file, read_files
from orchestrator.workers import pool as worker_pool

BATCH_BYTES = 128 * 1024


def batches(files: Sequence[str]) -> Iterator[list[str]]:
    """Files grouped into worker tasks of about BATCH_BYTES of SGF: a task's result
    (about 400 bytes per move, some 60 times the SGF's size) stays a few MB."""
    batch: list[str] = []
    size = 0
    for path in files:
        batch.append(path)
        try:
            size += os.path.getsize(path)
        except OSError:
            pass  # the worker reports it
        if size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def read_all(files: Sequence[str], workers: int,
             max_bytes: int | None = MAX_SGF_BYTES) -> Iterator[GameRead]:
    """Every game of ``files`` in order, read in ``workers`` processes (which die with
    this one); a file over ``max_bytes`` is rejected unread.

    At most ``2 * workers`` tasks are in flight, so a slow consumer holds back the
    workers instead of piling up their results in memory.
    """
    if workers <= 1:
        for path in files:
            yield from read_file(path, max_bytes)
        return
    with worker_pool(workers) as pool:
        pending: deque = deque()
        for batch in batches(files):
            pending.append(pool.apply_async(read_files, (batch, max_bytes)))
            if len(pending) >= 2 * workers:
                for games in pending.popleft().get():
                    yield from games
        while pending:
            for games in pending.popleft().get():
                yield from games
