"""``go19 dataset build --ray``: step 1 of the build (read, replay, samples) as Ray tasks.

Each task is :func:`orchestrator.positions.samples.read_files` on one batch of files, the
very function and batches (``reading.batches``) that ``--workers`` hands its processes; the
driver takes the results back in batch order, so dedup, picks and shards (steps 2-6, in
the driver as always) see the games in the same order and the dataset is the same, byte
for byte. At most ``max_in_flight`` tasks are out at once: a slow driver holds back the
cluster instead of piling results up in memory.

The files are read by path on whichever node runs the task: every node must see the
inputs at the same path (a shared or replicated folder).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from orchestrator.dataset.reading import batches
from orchestrator.files import MAX_SGF_BYTES
from orchestrator.positions.samples import GameRead, read_files

if TYPE_CHECKING:
    from orchestrator.export.chunk import ChunkResult, ExportTask


def in_flight_for(ray: Any) -> int:
    """Two tasks per CPU of the cluster, as ``--workers`` keeps two per process."""
    return max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))


def ray_reader(ray: Any, max_in_flight: int | None = None,
               max_bytes: int | None = MAX_SGF_BYTES
               ) -> Callable[[Sequence[str]], Iterator[GameRead]]:
    """A ``reader`` for :func:`orchestrator.dataset.build.build` running on ``ray``; a
    file over ``max_bytes`` is rejected unread, as ``--workers`` rejects it."""
    limit = max_in_flight or in_flight_for(ray)
    task = ray.remote(read_files)

    def read(files: Sequence[str]) -> Iterator[GameRead]:
        pending: deque = deque()
        try:
            for batch in batches(files):
                pending.append(task.remote(batch, max_bytes))
                if len(pending) >= limit:
                    for games in ray.get(pending.popleft()):
                        yield from games
            while pending:
                for games in ray.get(pending.popleft()):
                    yield from games
        finally:
            for ref in pending:  # the build stopped early: drop the rest
                ray.cancel(ref)

    return read


def ray_runner(ray: Any, max_in_flight: int | None = None
               ) -> Callable[[list[ExportTask], int, Callable[[int], None]],
                             Iterator[ChunkResult]]:
    """A ``runner`` for :func:`orchestrator.export.pipeline.export`: each chunk is
    :func:`~orchestrator.export.chunk.export_chunk` in a Ray task (the function the
    process pool runs), results in task order, at most ``max_in_flight`` out. A chunk
    writes its files under the export's folder by path: on a cluster that folder must be
    shared."""
    from orchestrator.export.chunk import export_chunk

    limit = max_in_flight or in_flight_for(ray)
    task = ray.remote(export_chunk)

    def run(tasks: list[ExportTask], workers: int, done: Callable[[int], None]
            ) -> Iterator[ChunkResult]:
        pending: deque = deque()
        written = 0
        try:
            for item in tasks:
                pending.append(task.remote(item))
                if len(pending) >= limit:
                    result = ray.get(pending.popleft())
                    written += result.rows_read
                    done(written)
                    yield result
            while pending:
                result = ray.get(pending.popleft())
                written += result.rows_read
                done(written)
                yield result
        finally:
            for ref in pending:
                ray.cancel(ref)

    return run
