"""The request and summary lines, from batches as the batcher reports them (no model)."""

from __future__ import annotations

from orchestrator.players.openai_wire import Completion
from orchestrator.serve.hf.jobs import BatchTimes, Job, RequestError, Sampling
from orchestrator.serve.hf.stats import ServeStats, percentile


def finished_job(adapter: str, queued: float, started: float, size: int) -> Job:
    job = Job(adapter, [], None, Sampling(8), arrived_at=queued - 0.003, queued_at=queued,
              prepare_s=0.002)
    job.started_at, job.batch_size = started, size
    return job


def test_request_lines_and_the_summary_of_a_window() -> None:
    lines: list[str] = []
    stats = ServeStats(lines.append, log_requests=True)
    stats.window.started = 100.0
    jobs = [finished_job("a", 100.0, 100.1, 3), finished_job("b", 100.05, 100.1, 3),
            finished_job("a", 100.1, 100.1, 3)]
    results = [Completion("Q16", 300, 4, "stop"), Completion("D4", 300, 3, "stop"),
               RequestError("the picture cannot be decoded: nope")]
    stats.batch(jobs, results, BatchTimes(prepare_s=0.001, generate_s=0.04), finished=100.2)
    assert lines == [
        "request a: batch 3, queued 100.0 ms, prepare 2.0 ms (+1.0 ms for a thread), "
        "generate 40.0 ms, "
        "tokens 300+4, answer 'Q16'",
        "request b: batch 3, queued 50.0 ms, prepare 2.0 ms (+1.0 ms for a thread), "
        "generate 40.0 ms, "
        "tokens 300+3, answer 'D4'",
        "request a: batch 3, queued 0.0 ms, prepare 2.0 ms (+1.0 ms for a thread), "
        "generate 40.0 ms, "
        "error: the picture cannot be decoded: nope",
    ]
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
