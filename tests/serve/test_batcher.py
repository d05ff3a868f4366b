"""The VLM server's batch queue (serve/hf/batcher.py, no model: the batcher alone, with a
prepare and a model step that record what they are given): requests that arrive
together are prepared in calls of at most PREPARE_CHUNK, and the model starts on the
first call's requests while the later ones are still being prepared, instead of waiting
for all of them."""

from __future__ import annotations

import threading

import trio
import trio.testing

from orchestrator.players.openai_wire import Completion
from orchestrator.serve.hf.batcher import PREPARE_CHUNK, Batcher
from orchestrator.serve.hf.jobs import BatchTimes, Job, Sampling
from orchestrator.serve.hf.stats import ServeStats

REQUESTS = 2 * PREPARE_CHUNK + 4


async def test_the_model_starts_on_the_first_chunk_while_the_rest_is_prepared() -> None:
    model_started = threading.Event()
    prepared: list[int] = []
    started_before: list[bool] = []  # per prepare call after the first: model already running
    batches: list[int] = []

    def prepare(jobs: list[Job]) -> list[None]:
        if prepared:
            # A state, not a time: the call waits until the model runs (bounded, so that a
            # batcher that never starts it fails here instead of hanging).
            started_before.append(model_started.wait(timeout=30))
        prepared.append(len(jobs))
        return [None] * len(jobs)

    def run_batch(jobs: list[Job]) -> tuple[list[Completion], BatchTimes]:
        model_started.set()
        batches.append(len(jobs))
        return [Completion("Q16", 1, 1, "stop")] * len(jobs), BatchTimes()

    batcher = Batcher(run_batch, max_batch=64, max_wait_s=0.0,
                      stats=ServeStats(lambda _: None), prepare=prepare, prepare_threads=1)
    answers: list[Completion] = []
    all_answered = trio.Event()

    async def ask() -> None:
        answers.append(await batcher.submit(Job("a", [], b"png", Sampling(max_tokens=4))))
        if len(answers) == REQUESTS:
            all_answered.set()

    async with trio.open_nursery() as nursery:
        for _ in range(REQUESTS):
            nursery.start_soon(ask)
        await trio.testing.wait_all_tasks_blocked()  # every request waits to be prepared
        nursery.start_soon(batcher.run)
        await all_answered.wait()
        nursery.cancel_scope.cancel()

    assert prepared == [PREPARE_CHUNK, PREPARE_CHUNK, 4]
    assert started_before == [True, True]
    assert batches[0] <= PREPARE_CHUNK and sum(batches) == REQUESTS
    assert all(answer.text == "Q16" for answer in answers)
