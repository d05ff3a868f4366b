"""The batch queue: requests from every port wait here, and one task takes them in batches
to the model, which runs in a worker thread (``trio.to_thread``) so that the trio loop
keeps accepting connections, answering PINGs and reading frames meanwhile.

Requests are prepared as they arrive (pictures decoded, tokens and pixels made; those
waiting at once in calls of up to ``PREPARE_CHUNK``, in ``prepare_threads`` threads of
their own, each handing its calls to a worker process or running them itself), so a batch
waits only for the model, and the next batch's inputs are made while one generates. A
batch starts as soon as the model is free, unless requests still being prepared could
join it: then it waits for them until ``max_batch`` requests wait or the oldest has
waited ``max_wait_s`` (counted from its arrival, so requests that queued while the model
was busy go at once). A request whose caller is cancelled (its client disconnected)
leaves the queue; if its batch is already running its answer is thrown away. Answers are
handed back to each caller, who sends its own reply: a batch never waits for a slow client.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

from orchestrator.players.openai_wire import Completion
from orchestrator.serve.hf.jobs import BatchTimes, Job, ModelFault, RequestError, model_failed
from orchestrator.serve.hf.stats import ServeStats

# Requests prepared per call. A whole batch in one call (64 at once) made the model wait
# for all of it: requests answered together came back together and were prepared together,
# so preparing and generate took turns, the model idle 28-52 % at 64 in flight. In calls
# of 8 the first are queued while the rest are made, and the model starts on them
# (bench/serve_vs_vllm.py, go19 alone, one worker on 2 cores, two rounds each: at 64 in
# flight 86-112 req/s in one call, 98-99 in calls of 4, 116-137 of 8, 120-128 of 16; at 16,
# 87-98 / 90-91 / 105-109 / 91-105). Pictures in one image-processor call cost less each,
# and 8 keep most of that.
PREPARE_CHUNK = 8

RunBatch = Callable[[list[Job]], tuple[list[Completion | RequestError], BatchTimes]]
Prepare = Callable[[list[Job]], list[RequestError | None]]


def default_prepare_threads() -> int:
    """Half the cores, up to 4: the other half (on a CPU-only machine) is torch's."""
    return max(1, min(4, (os.cpu_count() or 2) // 2))


def default_prepare_workers(model_process: bool) -> int:
    """Prepare worker processes: half the cores, up to 4, one less when the model has a
    process of its own (the ports' process then prepares in its threads, with a GIL that
    the model no longer needs). On 2 cores that is two busy processes, one per core: with
    a worker beside them, three shared two cores and the model waited for its inputs
    (bench/serve_vs_vllm.py at 64 in flight: 241 requests/s with the worker, 256 without;
    at 16, 203 and 224)."""
    return max(0, default_prepare_threads() - model_process)


@dataclass(eq=False)
class _Pending:
    job: Job
    done: trio.Event = field(default_factory=trio.Event)
    result: Completion | RequestError | None = None


class Batcher:
    def __init__(self, run_batch: RunBatch, max_batch: int, max_wait_s: float,
                 stats: ServeStats, prepare: Prepare | None = None,
                 prepare_threads: int = 1) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, not {max_batch}")
        self._run_batch = run_batch
        self._prepare = prepare
        self._prepare_threads = prepare_threads
        self._unprepared: deque[_Pending] = deque()
        self._arrived = trio.Event()
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self.stats = stats
        self._queue: deque[_Pending] = deque()
        self._changed = trio.Event()
        self._preparing = 0  # requests arrived and being prepared, not queued yet

    @property
    def waiting(self) -> int:
        return len(self._queue)

    async def submit(self, job: Job) -> Completion:
        """The model's answer to ``job``; its RequestError is raised as itself."""
        job.arrived_at = trio.current_time()
        if self._prepare is not None:
            await self._prepared(job)
        pending = _Pending(job)
        job.queued_at = trio.current_time()
        self._queue.append(pending)
        self._changed.set()
        try:
            await pending.done.wait()
        except BaseException:
            if pending in self._queue:
                self._queue.remove(pending)
                self._changed.set()
                self.stats.dropped += 1
            raise
        result = pending.result
        if isinstance(result, RequestError):
            raise result
        assert result is not None
        return result

    async def _prepared(self, job: Job) -> None:
        """Return once a prepare worker has made ``job``'s inputs (its RequestError raised)."""
        entry = _Pending(job)
        self._unprepared.append(entry)
        self._preparing += 1
        self._arrived.set()
        try:
            await entry.done.wait()
        except BaseException:
            if entry in self._unprepared:
                self._unprepared.remove(entry)
            raise
        finally:
            self._preparing -= 1
            self._changed.set()
        if isinstance(entry.result, RequestError):
            self.stats.refused(job, entry.result, trio.current_time())
            raise entry.result

    async def _prepare_forever(self, prepare: Prepare) -> None:
        """Prepare the requests that arrived, those waiting at once (up to PREPARE_CHUNK)."""
        while True:
            while not self._unprepared:
                self._arrived = trio.Event()
                await self._arrived.wait()
            taken = [self._unprepared.popleft()
                     for _ in range(min(len(self._unprepared), PREPARE_CHUNK))]
            try:
                errors = await trio.to_thread.run_sync(prepare, [e.job for e in taken])
            except Exception as exc:  # a bug's failure is these requests' answer
                errors = [RequestError(f"preparing the request failed: {exc!r}")] * len(taken)
            for entry, error in zip(taken, errors, strict=True):
                entry.result = error
                entry.done.set()

    async def run(self) -> None:
        """Prepare requests and take batches to the model until cancelled."""
        async with trio.open_nursery() as nursery:
            if self._prepare is not None:
                for _ in range(self._prepare_threads):
                    nursery.start_soon(self._prepare_forever, self._prepare)
            await self._batches()

    async def _batches(self) -> None:
        while True:
            batch = await self._next_batch()
            started = trio.current_time()
            jobs = [pending.job for pending in batch]
            for job in jobs:
                job.started_at = started
                job.batch_size = len(jobs)
            try:
                results, times = await trio.to_thread.run_sync(self._run_batch, jobs)
            except Exception as exc:  # the model failed on this batch: each request's answer
                results = [ModelFault(model_failed(exc))] * len(jobs)
                times = BatchTimes()
            finished = trio.current_time()
            for pending, result in zip(batch, results, strict=True):
                pending.job.generate_s = times.generate_s
                pending.result = result
                pending.done.set()
            self.stats.batch(jobs, results, times, finished)

    async def _next_batch(self) -> list[_Pending]:
        queue = self._queue
        while True:
            if queue and (len(queue) >= self.max_batch or not self._preparing
                          or trio.current_time() >= queue[0].job.queued_at + self.max_wait_s):
                return [queue.popleft() for _ in range(min(len(queue), self.max_batch))]
            self._changed = trio.Event()
            if queue:
                with trio.move_on_at(queue[0].job.queued_at + self.max_wait_s):
                    await self._changed.wait()
            else:
                await self._changed.wait()
