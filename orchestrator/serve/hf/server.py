"""The whole server in go19's trio run: the batch task, one GO19 port per ``--listen``
(each bound to one adapter, served by :func:`orchestrator.serve.serve_go19`), the
OpenAI-compatible port (Hypercorn's trio worker, as ``go19 play`` runs it) and the summary
line, all feeding one :class:`~orchestrator.serve.hf.batcher.Batcher`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import trio

from orchestrator.asgi import bind_listener, serve_app
from orchestrator.protocol import go19 as wire
from orchestrator.serve import serve_go19
from orchestrator.serve.hf.batcher import Batcher, Prepare, RunBatch, default_prepare_threads
from orchestrator.serve.hf.engine import VlmEngine
from orchestrator.serve.hf.jobs import Sampling
from orchestrator.serve.hf.openai_app import Defaults, ServedModel, openai_app
from orchestrator.serve.hf.stats import ServeStats


@dataclass(frozen=True)
class Listen:
    adapter: str
    host: str
    port: int


@dataclass
class ServeOptions:
    """The ports and what they ask (the model and how it batches rows are the
    ``run_batch`` given to :func:`serve_vlm`)."""

    listens: list[Listen]
    template: str  # the prompt template's text (orchestrator.prompt.read_template)
    openai: tuple[str, int] | None = None
    api_key: str | None = field(default=None, repr=False)  # the OpenAI port's; never shown
    max_batch: int = 32
    max_wait_ms: float = 5.0
    max_new_tokens: int = 8
    temperature: float = 0.0
    top_p: float = 1.0
    prepare_threads: int = field(default_factory=default_prepare_threads)
    answer: str = "gtp"
    komi: float | None = None  # only a template that shows {komi} needs it (checked at start)
    constrain: bool = False
    request_log: Callable[[str], object] | None = None  # each request's JSON line (stats.py)
    summary_s: float = 60.0
    # The GO19 ports' connection handling, as for every `go19 serve`:
    idle_timeout: float = 60.0
    frame_timeout: float = 10.0
    max_connections: int = 256
    partial_budget: int = 256 * wire.MiB
    connection_log: Callable[[str], None] = field(default=lambda _: None)


@dataclass
class Bound:
    """What is listening once the server is up: GO19 ``(adapter, host, port)`` and the
    OpenAI API's base URL."""

    go19: list[tuple[str, str, int]]
    openai_url: str | None
    batcher: Batcher
    stats: ServeStats


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class ListenError(OSError):
    """A port that cannot be bound; ``str()`` names it."""


async def serve_vlm(options: ServeOptions, run_batch: RunBatch, models: list[ServedModel],
                    log: Callable[[str], None], prepare: Prepare | None = None,
                    task_status: trio.TaskStatus[Bound] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve until cancelled; with ``nursery.start`` it returns what is bound. A port
    that cannot be bound is a :class:`ListenError` before anything is served. ``prepare``
    makes a request's inputs as it arrives (else ``run_batch`` does, in the batch)."""
    stats = ServeStats(log, options.request_log)
    batcher = Batcher(run_batch, options.max_batch, options.max_wait_ms / 1000.0, stats,
                      prepare, options.prepare_threads)
    sampling = Sampling(options.max_new_tokens, options.temperature, options.top_p)
    failure: ListenError | None = None
    async with trio.open_nursery() as nursery:
        address = ""
        try:
            bound: list[tuple[str, str, int]] = []
            for listen in options.listens:
                address = _address(listen.host, listen.port)
                engine = VlmEngine(batcher, listen.adapter, options.template,
                                   options.answer, options.komi, sampling, options.constrain)
                port = await nursery.start(partial(
                    serve_go19, engine, listen.host, listen.port, cancel_abandoned=True,
                    slots=options.max_connections, idle_timeout=options.idle_timeout,
                    frame_timeout=options.frame_timeout,
                    max_connections=options.max_connections,
                    partial_budget=options.partial_budget, log=options.connection_log))
                bound.append((listen.adapter, listen.host, port))
            url = None
            if options.openai is not None:
                address = _address(*options.openai)
                app = openai_app(batcher, models,
                                 Defaults(options.max_new_tokens, options.temperature),
                                 options.api_key)
                listener = bind_listener(*options.openai)  # a port in use: OSError here
                url = (await nursery.start(serve_app, app, listener)).rstrip("/") + "/v1"
        except OSError as exc:
            failure = ListenError(f"cannot listen on {address}: {exc.strerror or exc}")
            nursery.cancel_scope.cancel()
        else:
            nursery.start_soon(batcher.run)
            if options.summary_s > 0:
                nursery.start_soon(_summaries, stats, options.summary_s)
            task_status.started(Bound(bound, url, batcher, stats))
    if failure is not None:
        raise failure


async def _summaries(stats: ServeStats, every_s: float) -> None:
    stats.window.started = trio.current_time()
    while True:
        await trio.sleep(every_s)
        line = stats.summary(trio.current_time())
        if line is not None:
            stats.log(line)


def startup_lines(device: str, model_line: str, adapters: list[tuple[str, str]],
                  bound: Bound) -> list[str]:
    """The lines printed once every port is bound: the device and model, one per adapter
    (``adapters``: name and description, ``base`` among them when a port serves it) with
    its ports, then the ports (the first word of the last line is ``serving``)."""
    ports: dict[str, list[str]] = {}
    for adapter, host, port in bound.go19:
        ports.setdefault(adapter, []).append(_address(host, port))
    lines = [f"device {device}; model {model_line}"]
    for name, description in adapters:
        where = ", ".join(f"GO19 {p}" for p in ports.get(name, [])) or "no GO19 port"
        lines.append(f"adapter {name}: {description}; {where}")
    served = ["GO19 on " + ", ".join(f"{_address(h, p)} ({a})" for a, h, p in bound.go19)
              ] if bound.go19 else []
    if bound.openai_url:
        served.append(f"OpenAI API on {bound.openai_url}")
    lines.append("serving " + "; ".join(served))
    return lines
