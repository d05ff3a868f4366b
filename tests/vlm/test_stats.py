"""The request log's JSON lines and the summary line, from batches as the batcher reports
them (no model)."""

from __future__ import annotations

import hashlib
import json

from orchestrator.players.openai_wire import Completion
from orchestrator.serve.hf.jobs import BatchTimes, Job, RequestError, Sampling
from orchestrator.serve.hf.stats import ServeStats, percentile


def finished_job(adapter: str, queued: float, started: float, size: int) -> Job:
    job = Job(adapter, [], b"png bytes", Sampling(8), arrived_at=queued - 0.003,
              queued_at=queued, prepare_s=0.002, prompt=f"<|im_start|>user {adapter}")
    job.started_at, job.batch_size = started, size
    return job


def test_request_log_lines_and_the_summary_of_a_window() -> None:
    lines: list[str] = []
    stats = ServeStats(print, request_log=lines.append)
    stats.window.started = 100.0
    jobs = [finished_job("a", 100.0, 100.1, 3), finished_job("b", 100.05, 100.1, 3),
            finished_job("a", 100.1, 100.1, 3)]
    results = [Completion("Q16", 300, 4, "stop"), Completion("D4", 300, 3, "stop"),
               RequestError("the picture cannot be decoded: nope")]
    stats.batch(jobs, results, BatchTimes(prepare_s=0.001, generate_s=0.04), finished=100.2)
    sha = hashlib.sha256(b"png bytes").hexdigest()
    timings = {"prepare_ms": 2.0, "batch": 3, "thread_wait_ms": 1.0, "generate_ms": 40.0}
    assert [json.loads(line) for line in lines] == [
        {"adapter": "a", "prompt": "<|im_start|>user a", "image_sha256": sha, "answer": "Q16",
         "ms": 203.0, "tokens": [300, 4], "finish_reason": "stop", **timings,
         "queued_ms": 100.0},
        {"adapter": "b", "prompt": "<|im_start|>user b", "image_sha256": sha, "answer": "D4",
         "ms": 153.0, "tokens": [300, 3], "finish_reason": "stop", **timings,
         "queued_ms": 50.0},
        {"adapter": "a", "prompt": "<|im_start|>user a", "image_sha256": sha, "answer": None,
         "ms": 103.0, "error": "the picture cannot be decoded: nope", **timings,
         "queued_ms": 0.0},
    ]
    refused = finished_job("b", 100.0, 0.0, 0)
    refused.prompt = None
    stats.refused(refused, RequestError("no adapter named 'b'"), 100.01)
    assert json.loads(lines[-1]) == {
        "adapter": "b", "prompt": None, "image_sha256": sha, "answer": None, "ms": 13.0,
        "error": "no adapter named 'b'", "prepare_ms": 2.0}
    stats.dropped = 1
    summary = stats.summary(110.0)
    assert summary == ("summary: 0.3 requests/s over 10 s; mean batch 3.0; model busy 1 % "
                       "(generate 98 % of it); a: 2, p50 100.0 ms, p95 200.0 ms; "
                       "b: 1, p50 150.0 ms, p95 150.0 ms; errors 1, dropped 1 so far")
    assert stats.summary(120.0) is None  # an idle window says nothing


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.95)) == (50.0, 95.0)
    assert percentile([7.0], 0.95) == 7.0
