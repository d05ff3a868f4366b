"""What the server tells about its requests: one JSON line per request in the
``--log-requests`` file, and a summary line every interval (requests/s, mean batch, where
the model's time went, p50/p95 latency per adapter).

A request's line says what the model was given, so that train/serve consistency can be
audited after the fact (as vLLM's request log lets one): ``prompt``, the exact text handed
to the processor (the chat template applied), and ``image_sha256``, of the picture's bytes
as they arrived (the GO19 request's PNG, the data URL's decoded bytes); then the adapter,
the answer (or the error), and where its time went.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from orchestrator.players.openai_wire import Completion
from orchestrator.serve.hf.jobs import BatchTimes, Job, RequestError


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0..1) of ``values`` (not empty)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass
class _Window:
    started: float
    requests: int = 0
    errors: int = 0
    batches: int = 0
    rows: int = 0
    busy_s: float = 0.0
    prepare_s: float = 0.0
    generate_s: float = 0.0
    finish_s: float = 0.0
    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))


@dataclass
class ServeStats:
    log: Callable[[str], None]
    request_log: Callable[[str], object] | None = None  # gets each request's JSON line
    dropped: int = 0  # requests whose client left while they waited in the queue
    requests: int = 0
    batches: int = 0
    rows: int = 0
    prepare_s: float = 0.0
    generate_s: float = 0.0
    finish_s: float = 0.0
    window: _Window = field(default_factory=lambda: _Window(0.0))

    def batch(self, jobs: list[Job], results: list[Completion | RequestError],
              times: BatchTimes, finished: float) -> None:
        window = self.window
        self.requests += len(jobs)
        self.batches += 1
        self.rows += len(jobs)
        self.prepare_s += times.prepare_s
        self.generate_s += times.generate_s
        self.finish_s += times.finish_s
        window.requests += len(jobs)
        window.batches += 1
        window.rows += len(jobs)
        window.busy_s += finished - jobs[0].started_at
        window.prepare_s += times.prepare_s
        window.generate_s += times.generate_s
        window.finish_s += times.finish_s
        for job, result in zip(jobs, results, strict=True):
            if isinstance(result, RequestError):
                window.errors += 1
            window.latency[job.adapter].append(finished - job.queued_at)
            if self.request_log is not None:
                self.request_log(request_line(job, result, times, finished))

    def refused(self, job: Job, error: RequestError, now: float) -> None:
        """A request whose inputs could not be made: it never reached a batch."""
        if self.request_log is not None:
            self.request_log(request_line(job, error, None, now))

    def summary(self, now: float) -> str | None:
        """The summary line of the window that ends ``now`` (None when it had no request:
        an idle server stays quiet); a new window starts."""
        window, self.window = self.window, _Window(now)
        elapsed = max(now - window.started, 1e-9)
        if not window.requests:
            return None
        worked = window.prepare_s + window.generate_s + window.finish_s
        parts = [
            f"summary: {window.requests / elapsed:.1f} requests/s over {elapsed:.0f} s",
            f"mean batch {window.rows / window.batches:.1f}",
            f"model busy {100 * window.busy_s / elapsed:.0f} % "
            f"(generate {100 * window.generate_s / max(worked, 1e-9):.0f} % of it)",
        ]
        for adapter, latencies in sorted(window.latency.items()):
            parts.append(f"{adapter}: {len(latencies)}, p50 {_ms(percentile(latencies, 0.5))}"
                         f", p95 {_ms(percentile(latencies, 0.95))}")
        parts.append(f"errors {window.errors}, dropped {self.dropped} so far")
        return "; ".join(parts)


def _ms_value(seconds: float) -> float:
    return round(seconds * 1000, 3)


def request_line(job: Job, result: Completion | RequestError, times: BatchTimes | None,
                 finished: float) -> str:
    """One request's JSON line (``times`` None: refused before any batch)."""
    record: dict = {
        "adapter": job.adapter,
        "prompt": job.prompt,
        "image_sha256": None if job.image is None else hashlib.sha256(job.image).hexdigest(),
        "answer": None if isinstance(result, RequestError) else result.text,
        "ms": _ms_value(finished - job.arrived_at),
    }
    if isinstance(result, RequestError):
        record["error"] = str(result)
    else:
        record.update(tokens=[result.prompt_tokens, result.completion_tokens],
                      finish_reason=result.finish_reason)
    record["prepare_ms"] = _ms_value(job.prepare_s)
    if times is not None:
        waited = max(0.0, job.queued_at - job.arrived_at - job.prepare_s)
        record.update(batch=job.batch_size, thread_wait_ms=_ms_value(waited),
                      queued_ms=_ms_value(job.started_at - job.queued_at),
                      generate_ms=_ms_value(times.generate_s))
    return json.dumps(record, ensure_ascii=False)
