"""The model in a process of its own (``--model-process``), as vLLM's engine core is apart
from its API server: the ports, the batch queue and the request log stay in the process
that serves them, and each batch of prepared requests goes over a pipe to the model's
process, which runs :class:`~.generation.BatchRunner` on it and sends the answers back. The
requests' tensors cross in memory the two processes share (:mod:`.batch_memory`); the
pipe carries where each lies.

Why: on a CPU, a small model's ``generate`` is mostly Python, and in one process the HTTP
port, the queue and ``generate`` take turns on one GIL (one core, however many requests
wait). Apart, ``generate`` has a GIL of its own; the requests' tensors are copied once,
into the shared region, and the answers come back as plain values.

The model's process is started by ``spawn`` (no copy of the ports' process and its
threads), loads the model and the adapters once, and says what it loaded (its
:class:`Description`) or the :class:`~.loading.LoadError` that stops the server. A model
process that dies (killed, out of memory) has its batch answered with an error at once; a
new one is started then and loads the model for the next batch.
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle, send_handle
from pathlib import Path
from typing import Any

from orchestrator.players.openai_wire import Completion
from orchestrator.serve.hf.batch_memory import NewRegion, RegionView, SharedRegion, Slot
from orchestrator.serve.hf.jobs import BatchTimes, Job, ModelFault, RequestError, model_failed
from orchestrator.serve.hf.loading import Description, LoadError, describe


@dataclass(frozen=True)
class ModelSettings:
    model_dir: Path
    adapters: dict[str, Path]
    device: str
    dtype: str
    threads: int | None
    mixing: bool
    seed: int | None


def _serve_model(conn: Connection, settings: ModelSettings) -> None:
    """The model's process: load, say so, then run every batch received until the pipe
    closes. Ctrl-C is the server's (it reaches the whole process group): the server closes
    the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import torch

    from orchestrator.serve.hf.generation import BatchRunner
    from orchestrator.serve.hf.loading import load

    if settings.threads is not None:
        torch.set_num_threads(settings.threads)
    try:
        loaded = load(settings.model_dir, settings.adapters, settings.device, settings.dtype)
    except LoadError as exc:
        conn.send(exc)
        return
    runner = BatchRunner(loaded, mixing=settings.mixing, seed=settings.seed)
    region = RegionView()
    conn.send(describe(loaded))
    while True:
        try:
            message: list[Job] | NewRegion = conn.recv()
            if isinstance(message, NewRegion):
                region.attach(recv_handle(conn), message.size)
                continue
        except (EOFError, OSError):
            return
        jobs = message
        try:
            for job in jobs:
                if job.inputs is not None:
                    job.inputs = {
                        name: torch.from_numpy(region.array(value) if isinstance(value, Slot)
                                               else value)
                        for name, value in job.inputs.items()}
            reply: Any = runner.run(jobs)  # each RequestError crosses as itself
        except Exception as exc:  # the model failed on this batch: each request's answer
            reply = model_failed(exc)
        del jobs, message  # no view of the region outlives its batch's answer
        conn.send(reply)


class ModelProcess:
    """``run`` (a batch's answers) of a model in a process of its own, and what it loaded
    (``wait_ready``)."""

    def __init__(self, settings: ModelSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()  # one batch at a time on the pipe and in the region
        self._region = SharedRegion()
        self._sent: int | None = None  # the region generation the model's process has
        self._process, self._conn = self._start()
        self._loading = False  # a restarted process not yet heard from
        self._unloadable: str | None = None  # why a restarted process could not load

    def _start(self) -> tuple[Any, Connection]:
        context = multiprocessing.get_context("spawn")
        mine, theirs = context.Pipe()
        process = context.Process(target=_serve_model, args=(theirs, self.settings),
                                  name="go19-model", daemon=True)
        process.start()
        theirs.close()
        return process, mine

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def wait_ready(self) -> Description:
        """What the model's process loaded, once it has; its LoadError raised here."""
        return self._ready(self._conn)

    def _ready(self, conn: Connection) -> Description:
        try:
            said = conn.recv()
        except (EOFError, OSError):
            raise LoadError(f"--model {self.settings.model_dir}: the model's process "
                            f"stopped while loading it (exit code "
                            f"{self._process.join(5) or self._process.exitcode})") from None
        if isinstance(said, LoadError):
            raise said
        return said

    def run(self, jobs: list[Job]) -> tuple[list[Completion | RequestError], BatchTimes]:
        with self._lock:
            if self._loading:  # a new process after a death: the first batch waits for it
                self._loading = False
                try:
                    self._ready(self._conn)
                except LoadError as exc:
                    self._unloadable = f"the model's process could not be started again: {exc}"
            if self._unloadable is not None:
                return [ModelFault(self._unloadable)] * len(jobs), BatchTimes()
            # A prepared request crosses as its tensors alone; one that is not (no prepare
            # step before the queue) as its chat and picture, which the model's process
            # prepares.
            arrays = [{name: value.numpy() for name, value in job.inputs.items()}
                      for job in jobs if job.inputs is not None]
            placed = self._region.place(arrays) if arrays else None
            prepared: Iterator[dict] = iter(placed if placed is not None else arrays)
            sent = [Job(job.adapter, [], None, job.sampling, prompt=job.prompt,
                        inputs=next(prepared)) if job.inputs is not None else
                    Job(job.adapter, job.messages, job.image, job.sampling) for job in jobs]
            try:
                if placed is not None:
                    self._send_region()
                self._conn.send(sent)
                reply = self._conn.recv()
            except (EOFError, OSError):
                return self._restart(len(jobs)), BatchTimes()
        if isinstance(reply, str):
            return [ModelFault(reply)] * len(jobs), BatchTimes()
        return reply

    def _send_region(self) -> None:
        """The region's descriptor, once to each model process and after each growth."""
        if self._sent != self._region.generation:
            assert self._region.fd is not None
            self._conn.send(NewRegion(self._region.size))
            send_handle(self._conn, self._region.fd, self._process.pid or 0)
            self._sent = self._region.generation

    def _restart(self, count: int) -> list[Completion | RequestError]:
        """The answers of a batch whose model process died: at once, while a new process
        loads the model for the next batch (a load takes seconds; the clients of this
        batch need not wait for it)."""
        self._process.join(5)
        code = self._process.exitcode
        self._conn.close()
        self._process, self._conn = self._start()
        self._sent = None  # the new process has no region yet
        self._loading = True
        return [ModelFault(f"the model's process stopped (exit code {code}); a new one is "
                           f"loading the model")] * count

    def close(self) -> None:
        self._conn.close()  # the model's process ends at the pipe's end
        self._region.close()
        self._process.join(10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
