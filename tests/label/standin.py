"""The stand-in KataGo (``standin_katago.py``) as tests start it, and the virtual clock that
its hangs move.

A hang is made deterministic this way: the test runs trio on a ``MockClock`` that never
moves by itself; a stand-in that starts to hang says so over loopback TCP (after flushing
every answer it gives), and only once every task is blocked, those answers read, does
:class:`Hangs` move the clock past every deadline. An engine that answers is never timed
out, however slowly the machine runs it.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from orchestrator.label.run import EngineFiles

SCRIPT = Path(__file__).with_name("standin_katago.py")
# Wall-clock seconds after which a run on the frozen clock has hung (what these tests
# catch): it fails then, not the whole test session hanging. Never a test's measure.
WALL_LIMIT = 180.0


@dataclass(frozen=True)
class Standin:
    binary: Path
    model: Path
    config: Path
    log: Path  # one line per analysis query received

    def options(self) -> list[str]:
        """The command-line options naming it, as go19 label/review/collect take them."""
        return ["--katago", str(self.binary), "--model", str(self.model),
                "--config", str(self.config)]

    def files(self, log: Path) -> EngineFiles:
        return EngineFiles(self.binary, self.model, self.config, log)

    def queries(self) -> list[dict[str, Any]]:
        if not self.log.is_file():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


def standin(folder: Path, mode: str = "ok", after: int = 0, value: str = "nan",
            announce: str | None = None) -> Standin:
    """A stand-in KataGo in ``folder`` misbehaving as ``mode`` after ``after`` analysis
    queries (modes in standin_katago.py)."""
    folder.mkdir(parents=True, exist_ok=True)
    binary = folder / "katago"
    binary.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{SCRIPT}" "$@"\n')
    binary.chmod(0o755)
    model = folder / "standin.bin.gz"
    model.write_text("")
    log = folder / "queries.jsonl"
    lines = {"mode": mode, "after": after, "value": value, "log": log}
    if announce is not None:
        lines["announce"] = announce
    config = folder / "standin.cfg"
    config.write_text("".join(f"{key} = {v}\n" for key, v in lines.items()))
    return Standin(binary, model, config, log)


class Hangs:
    """A loopback port the stand-ins announce their hangs to. With ``seconds``, each
    announcement moves the clock by that much (past every deadline the engine client
    keeps); without, the test moves it itself after :meth:`wait`."""

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = seconds
        self.count = 0
        self._heard = trio.Event()
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen()
        host, port = self._socket.getsockname()
        self.address = f"{host}:{port}"

    async def serve(self, clock: trio.testing.MockClock,
                    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        # A duplicate: the listener closes its socket when the run ends, and a test may
        # run the command again.
        listener = trio.SocketListener(trio.socket.from_stdlib_socket(self._socket.dup()))

        async def heard(stream: trio.SocketStream) -> None:
            async with stream:
                while await stream.receive_some():
                    pass
            # What the stand-in wrote before it said so is read first: the scheduler has
            # seen the pipe empty once every task is blocked.
            await trio.testing.wait_all_tasks_blocked()
            self.count += 1
            self._heard.set()
            if self.seconds is not None:
                clock.jump(self.seconds)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(_fail_after_wall_time, WALL_LIMIT)
            await nursery.start(trio.serve_listeners, heard, [listener])
            task_status.started()

    def close(self) -> None:
        self._socket.close()

    async def wait(self, count: int) -> None:
        """Until ``count`` stand-ins have said that they hang."""
        while self.count < count:
            self._heard = trio.Event()
            await self._heard.wait()


async def _fail_after_wall_time(seconds: float) -> None:
    await trio.to_thread.run_sync(time.sleep, seconds, abandon_on_cancel=True)
    raise AssertionError(f"still running after {seconds:g} s of wall time: it hangs")


def run_on_frozen_clock(monkeypatch: pytest.MonkeyPatch, hangs: Hangs) -> None:
    """Every ``trio.run`` of the test (the CLI's own) on a MockClock that only ``hangs``
    moves."""
    real_run: Callable[..., Any] = trio.run

    def run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        clock = trio.testing.MockClock()

        async def main() -> Any:
            try:
                async with trio.open_nursery() as nursery:
                    await nursery.start(hangs.serve, clock)
                    result = await fn(*args)
                    nursery.cancel_scope.cancel()
            except BaseExceptionGroup as group:  # the CLI's own error, as itself
                if len(group.exceptions) != 1:
                    raise
                raise group.exceptions[0] from None
            return result

        return real_run(main, clock=clock, **kwargs)

    monkeypatch.setattr(trio, "run", run)


def record_games(folder: Path, games: int) -> Path:
    """A recorded run of ``games`` short games (`make demo`'s matchup cut to 6 moves,
    tests/review/conftest.py), played in this process; its run folder."""
    from orchestrator.cli import main
    from tests.review.conftest import short_demo

    folder.mkdir(parents=True, exist_ok=True)
    status = main(["collect", "--matchup", str(short_demo(folder)), "--games", str(games),
                   "--no-dashboard", "--no-report", "--recordings", str(folder / "rec")])
    assert status == 0
    (run,) = (folder / "rec").iterdir()
    return run
