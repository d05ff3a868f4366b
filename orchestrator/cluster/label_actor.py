"""One KataGo analysis engine inside a Ray actor, running go19's own label client.

The actor keeps a trio loop in a thread of its own; the KataGo process lives there, opened
with :func:`orchestrator.label.engine.open_katago`, and each game is labelled by
:meth:`orchestrator.label.run.GameLabeller.label` (the single-engine path's code, not a copy:
same queries, priority ``-order``, same arrays). Ray calls :meth:`EngineActor.label` from
its thread pool (``max_concurrency``), so several games are in flight on one engine and
KataGo's threads stay busy, as with ``go19 label``'s ``--max-in-flight``.

A KataGo that dies, or stays silent past its deadline (``RunOptions.timeout``, the
client's own watchdog), is restarted here as ``go19 label`` restarts it, and the games it
was answering are asked again on the new one; after ``max_restarts`` deaths in a row with no
game finished in between, every call raises :class:`LabelRunError`.

Paths are resolved on the node the actor runs on: given paths are taken as they are (the
same install path on every node), otherwise the CPU KataGo of ``make katago`` found next
to the installed package or in the worker's working folder.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import trio

from orchestrator.label.config import prepared_katago
from orchestrator.label.engine import KataGoDied, KataGoEngine, open_katago
from orchestrator.label.games import LabelGame
from orchestrator.label.run import (
    EngineFiles,
    GameLabeller,
    LabelRunError,
    RunOptions,
    RunResult,
)
from orchestrator.words import plural


@dataclass(frozen=True, slots=True)
class EngineSpec:
    """What the driver knows of the engine; ``None`` paths are found on the node."""

    binary: str | None = None
    model: str | None = None
    config: str | None = None
    log_dir: str | None = None  # the label folder, if the node sees it; else a temp folder
    # CPU engines: the OpenCL threads pocl may use, the CPUs Ray reserved for the engine
    # (pocl would otherwise spread every engine over all the node's cores).
    opencl_threads: int | None = None

    def resolve(self, slot: int) -> EngineFiles:
        prepared = prepared_katago()  # this node's
        picked = []
        for given, what, attr in ((self.binary, "binary", "binary"),
                                  (self.model, "model", "model"),
                                  (self.config, "config", "config")):
            if given is None and prepared is None:
                raise LabelRunError(f"no KataGo on node {socket.gethostname()}: run `make "
                                    "katago` there, or pass --katago/--model/--config")
            path = Path(given) if given is not None else getattr(prepared, attr)
            if not path.is_file():
                raise LabelRunError(f"KataGo {what} {path}: no such file on node "
                                    f"{socket.gethostname()}")
            picked.append(path)
        logs = Path(self.log_dir) if self.log_dir and Path(self.log_dir).is_dir() else Path(
            tempfile.gettempdir()) / "go19-label"
        log = logs / f"katago-engine-{slot}-{os.getpid()}.log"
        return EngineFiles(picked[0], picked[1], picked[2], log)


@dataclass(frozen=True, slots=True)
class PieceOutcome:
    """A game's labels (``arrays``), or its KataGo error (``error``), for the driver's
    writer; ``messages`` are the lines the single-engine run would have printed."""

    arrays: dict[str, np.ndarray] | None
    error: str | None
    warnings: tuple[str, ...]
    messages: tuple[str, ...]


_Captured = tuple[dict[str, np.ndarray] | None, str | None, tuple[str, ...]]


class _Capture:
    """The :class:`GameLabeller`'s label sink and reporter on an actor: the actor sends
    what it captures to the driver, which owns the real writer."""

    def __init__(self) -> None:
        self.outcomes: dict[str, _Captured] = {}
        self.messages: list[str] = []
        self.positions = 0  # answered on this actor, all games (less answers dropped)

    # writer
    def add(self, game: LabelGame, arrays: dict[str, np.ndarray], warnings: Any = ()) -> None:
        self.outcomes[game.ident] = (arrays, None, tuple(sorted(set(warnings))))

    def record(self, game: LabelGame, status: str, reason: str | None = None,
               detail: str | None = None, warnings: Any = ()) -> None:
        self.outcomes[game.ident] = (None, detail, tuple(sorted(set(warnings))))

    # reporter
    def advance(self, positions: int) -> None:
        self.positions += positions

    def game_done(self, game: LabelGame) -> None:
        pass

    def message(self, line: str) -> None:
        self.messages.append(line)

    def take(self, game: LabelGame) -> PieceOutcome:
        """A finished game's outcome and its lines ("error: WHERE: ..." and "warning:
        WHERE: ...", as LabelRun writes them)."""
        arrays, error, warnings = self.outcomes.pop(game.ident)
        heads = (f"error: {game.where}: ", f"warning: {game.where}: ")
        mine = [line for line in self.messages if line.startswith(heads)]
        self.messages = [line for line in self.messages if not line.startswith(heads)]
        return PieceOutcome(arrays, error, warnings, tuple(mine))


class EngineActor:
    """Wrapped by ``ray.remote`` in :mod:`orchestrator.cluster.label`; one per engine.
    Its methods are all plain functions: Ray makes an actor with any ``async def`` an
    asyncio actor and would run them on one event loop, one label call at a time."""

    def __init__(self, slot: int, spec: EngineSpec, options: RunOptions) -> None:
        if spec.opencl_threads:  # this worker process is the actor's alone; KataGo inherits it
            os.environ["POCL_MAX_PTHREAD_COUNT"] = str(spec.opencl_threads)
        self._engine = _TrioEngine(slot, spec.resolve(slot), options)
        self._engine.info()  # fails the actor's creation with KataGo's own words

    def info(self) -> dict[str, Any]:
        """The engine's identity, as ``labels.json`` keeps it (waits for the first start)."""
        return self._engine.info()

    def label(self, order: int, game: LabelGame, rows: range | None = None) -> PieceOutcome:
        """The game's labels, or those of its ``rows`` only (arrays of those rows)."""
        return self._engine.label(order, game, rows)

    def positions(self) -> int:
        """Positions answered so far on this actor (for the driver's rates)."""
        return self._engine.positions()

    def node(self) -> str:
        return socket.gethostname()

    def katago_pid(self) -> int | None:
        """The running KataGo's process id on the node (None between two KataGos)."""
        engine = self._engine._engine
        return None if engine is None else engine.pid

    def close(self) -> None:
        self._engine.close()


class _TrioEngine:
    """The KataGo side of an actor: a trio loop in a thread of its own."""

    def __init__(self, slot: int, files: EngineFiles, options: RunOptions) -> None:
        self.slot = slot
        self.files = files
        self.options = options
        self._capture = _Capture()
        self._games = GameLabeller(self._capture, self._capture, options, RunResult())
        self._engine: KataGoEngine | None = None
        self._ready: trio.Event | None = None
        self._replace: trio.Event | None = None
        self._stop: trio.Event | None = None
        self._fatal: str | None = None
        self._info: dict[str, Any] | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        started = threading.Event()
        self._thread = threading.Thread(target=trio.run, args=(self._main, started),
                                        daemon=True, name=f"go19-katago-{slot}")
        self._thread.start()
        started.wait()

    # -- called from Ray's threads ------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """The engine's identity, as ``labels.json`` keeps it (waits for the first start)."""
        return trio.from_thread.run(self._wait_info, trio_token=self._token)

    def label(self, order: int, game: LabelGame, rows: range | None) -> PieceOutcome:
        return trio.from_thread.run(self._label, order, game, rows, trio_token=self._token)

    def positions(self) -> int:
        """Positions answered so far on this actor (for the driver's rates)."""
        return self._capture.positions

    def close(self) -> None:
        """Stop KataGo (closing its stdin) and the trio loop."""
        if self._thread.is_alive():
            trio.from_thread.run_sync(self._stop_all, trio_token=self._token)
            self._thread.join(timeout=30)

    # -- trio side ------------------------------------------------------------------------

    def _stop_all(self) -> None:
        assert self._stop is not None
        self._stop.set()

    async def _main(self, started: threading.Event) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        self._ready = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._keep_engine)
            started.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    async def _keep_engine(self) -> None:
        """Keep one KataGo running: start it, wait until a game sees it die, start again."""
        deaths = 0
        while True:
            self._replace = trio.Event()
            finished_before = self._games.result.labelled
            last: KataGoDied | None = None
            try:
                async with open_katago(self.files.binary, self.files.model, self.files.config,
                                       self.files.log, timeout=self.options.timeout) as engine:
                    if self._info is None:
                        models = await engine.query_models()
                        self._info = {
                            "version": engine.version,
                            "model_names": [m.get("internalName") for m in models],
                            "models": models, "binary": str(self.files.binary),
                            "model": str(self.files.model), "config": str(self.files.config),
                        }
                    self._engine = engine
                    assert self._ready is not None
                    self._ready.set()
                    await self._replace.wait()
                    last = engine.death  # what the label call that asked for a new one saw
            except KataGoDied as death:
                last = death
                if self._info is None:
                    self._fail(f"KataGo did not start on node {socket.gethostname()}: {death}")
                    return
                self._engine_gone(self._engine)
            deaths = 1 if self._games.result.labelled > finished_before else deaths + 1
            if deaths > self.options.max_restarts:
                self._fail(f"KataGo died {plural(deaths, 'time')} in a row on node "
                           f"{socket.gethostname()} without finishing a game or a piece of "
                           f"one; last: {last}")
                return

    def _engine_gone(self, engine: KataGoEngine | None) -> None:
        """The first call to see ``engine`` die has the keeper start a new one; calls
        then wait for it."""
        if engine is not None and self._engine is engine:
            self._engine = None
            self._ready = trio.Event()
            assert self._replace is not None
            self._replace.set()

    def _fail(self, line: str) -> None:
        self._fatal = line
        assert self._ready is not None
        self._ready.set()  # wake every waiting call: they raise

    async def _current_engine(self) -> KataGoEngine:
        while True:
            assert self._ready is not None
            await self._ready.wait()
            if self._fatal is not None:
                raise LabelRunError(self._fatal)
            if self._engine is not None:
                return self._engine

    async def _wait_info(self) -> dict[str, Any]:
        await self._current_engine()
        assert self._info is not None
        return self._info

    async def _label(self, order: int, game: LabelGame, rows: range | None) -> PieceOutcome:
        while True:
            engine = await self._current_engine()
            try:
                await self._games.label(engine, order, game, rows)
            except KataGoDied:
                # Asked again on the next engine, as LabelRun puts it back in its queue.
                self._engine_gone(engine)
                continue
            # No checkpoint since _label handed its outcome to the capture: another piece
            # of the same game cannot have taken it.
            outcome = self._capture.take(game)
            if rows is None or outcome.arrays is None:
                return outcome
            part = {name: values[rows.start:rows.stop] for name, values in
                    outcome.arrays.items()}
            return PieceOutcome(part, outcome.error, outcome.warnings, outcome.messages)
