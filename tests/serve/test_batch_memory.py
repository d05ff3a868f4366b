"""serve/hf/batch_memory: a batch's arrays reach a spawned process through the shared region
bit for bit (the dtypes and shapes a Qwen-VL processor makes, a non-contiguous one too),
the region is reused batch after batch, a batch that does not fit grows it (the process
is sent the new one), and a batch past MAX_REGION is left to the pipe."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle, send_handle

import numpy as np
import pytest

from orchestrator.serve.hf import batch_memory
from orchestrator.serve.hf.batch_memory import NewRegion, RegionView, SharedRegion

pytestmark = pytest.mark.skipif(not hasattr(os, "memfd_create"),
                                reason="the shared region is a Linux memfd")

Batch = list[dict[str, np.ndarray]]


def _reader(conn: Connection) -> None:
    """The model's process's side, as model_process runs it: regions attached as they come,
    each batch's arrays read out of the region."""
    view = RegionView()
    while (message := conn.recv()) is not None:
        if isinstance(message, NewRegion):
            view.attach(recv_handle(conn), message.size)
            continue
        conn.send([{name: view.array(slot).copy() for name, slot in slots.items()}
                   for slots in message])


def _batch(pictures: int, seed: int) -> Batch:
    rng = np.random.default_rng(seed)
    return [{"input_ids": rng.integers(0, 300, (1, 40 + k)),
             "attention_mask": np.ones((1, 40 + k), np.int64),
             "pixel_values": rng.standard_normal((64, 1176), dtype=np.float32),
             "image_grid_thw": np.array([[1, 8, 8]])} for k in range(pictures)]


@pytest.fixture
def reader() -> Iterator[Connection]:
    context = multiprocessing.get_context("spawn")
    mine, theirs = context.Pipe()
    process = context.Process(target=_reader, args=(theirs,), daemon=True)
    process.start()
    theirs.close()
    yield mine
    mine.send(None)
    process.join(30)


def test_batches_cross_exactly_and_the_region_grows_when_one_does_not_fit(
        reader: Connection) -> None:
    region = SharedRegion()
    sent_generation = 0

    def cross(batch: Batch) -> Batch:
        nonlocal sent_generation
        placed = region.place(batch)
        assert placed is not None
        if region.generation != sent_generation:
            assert region.fd is not None
            reader.send(NewRegion(region.size))
            send_handle(reader, region.fd, 0)
            sent_generation = region.generation
        reader.send(placed)
        return reader.recv()

    def same(got: Batch, batch: Batch) -> bool:
        return len(got) == len(batch) and all(
            g.keys() == b.keys() and all(g[name].dtype == b[name].dtype
                                         and np.array_equal(g[name], b[name]) for name in b)
            for g, b in zip(got, batch, strict=True))

    first = _batch(8, seed=1)
    first[0]["pixel_values"] = np.asfortranarray(first[0]["pixel_values"])  # not C-ordered
    assert same(cross(first), first)
    assert region.generation == 1
    size = region.size
    second = _batch(8, seed=2)  # the same region, its bytes overwritten
    assert same(cross(second), second)
    assert (region.generation, region.size) == (1, size)
    larger = _batch(32, seed=3)  # four times the bytes: a new region, sent again
    assert same(cross(larger), larger)
    assert region.generation == 2 and region.size > size
    region.close()


def test_a_batch_past_the_largest_region_is_left_to_the_pipe(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_memory, "MAX_REGION", 1 << 20)
    region = SharedRegion()
    assert region.place(_batch(8, seed=4)) is None  # 2.4 MB: the pipe takes it
    assert region.place(_batch(1, seed=5)) is not None  # 300 KB: the region
    region.close()
