"""What one request asks of the model: plain values shared by the ports that make requests,
the batcher and the generation code (no torch here). What it gets back is a
:class:`~orchestrator.players.openai_wire.Completion`, as the OpenAI player reads one."""

from __future__ import annotations

from dataclasses import dataclass, field

BASE = "base"  # the adapter name of the model without adapter, on every port and in /v1/models


@dataclass(frozen=True)
class Sampling:
    """How a request's answer is decoded. ``temperature`` 0 is greedy; ``seed`` makes a
    sampled answer repeatable whatever batch it runs in; ``choices`` restricts the answer
    to exactly one of these strings (vLLM's ``structured_outputs.choice``)."""

    max_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    choices: tuple[str, ...] | None = None


@dataclass
class Job:
    """One request: a chat in the processor's form (a ``{"type": "image"}`` part where the
    picture goes) and the picture's encoded bytes, never decoded on the trio loop."""

    adapter: str
    messages: list[dict]
    image: bytes | None
    sampling: Sampling
    arrived_at: float = 0.0  # trio.current_time() when it reached the batcher
    queued_at: float = 0.0  # ... and when, prepared, it joined the queue
    prompt: str | None = None  # the text given to the processor (chat template applied)
    inputs: dict | None = None  # the processor's tensors for this request alone, once prepared
    prepare_s: float = 0.0  # how long preparing them took (its own thread, before the queue)
    # Filled by the batcher once its batch has run:
    batch_size: int = 0
    started_at: float = 0.0
    generate_s: float = 0.0


@dataclass
class BatchTimes:
    """Where a batch's time went, in seconds of the worker thread."""

    prepare_s: float = 0.0  # batch inputs assembled (padding, device copy, constraints)
    generate_s: float = 0.0  # the model's generate calls
    finish_s: float = 0.0  # answers decoded to text
    calls: int = 0  # generate calls (1 for a mixed batch, one per adapter when split)
    rows: list[int] = field(default_factory=list)  # rows per generate call


class RequestError(ValueError):
    """A request the model cannot run (a picture that does not decode, too many tokens):
    its own error, the rest of its batch runs."""


class ModelFault(RequestError):
    """The model failed on the request's batch (its process died, ``generate`` raised), not
    the request itself: the OpenAI port answers 500, as vLLM does for its engine's faults."""


def model_failed(exc: BaseException) -> str:
    """What each request of a batch on which the model raised is answered (in the model's
    process or in the server's)."""
    return f"the model failed: {exc!r}"
