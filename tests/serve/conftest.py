"""Helpers for GO19 client/server tests: real loopback sockets, engines that record
what they were asked, and a scripted server that misbehaves on purpose."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import trio
import trio.testing

from orchestrator.coords import from_gtp
from orchestrator.players.base import Answer
from orchestrator.protocol import go19 as wire
from orchestrator.rules.game import Game
from orchestrator.serve import serve_go19

LOCALHOST = "127.0.0.1"


def closed_port() -> int:
    """A loopback port nothing listens on (bound once, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind((LOCALHOST, 0))
        return sock.getsockname()[1]


async def start_server(nursery: trio.Nursery, engine, port: int = 0, **options) -> int:
    return await nursery.start(lambda task_status: serve_go19(
        engine, LOCALHOST, port, task_status=task_status, **options
    ))


@dataclass
class RecordingEngine:
    """Answers a fixed GTP vertex and keeps a copy of every board and colour it was given."""

    vertex: str = "D4"
    seen: list[tuple[np.ndarray, int]] = field(default_factory=list)
    name: str = "recording"

    async def answer(self, game: Game, number: int = 0, picture: bytes | None = None) -> Answer:
        self.seen.append((game.board.to_array(), game.to_play))
        await trio.lowlevel.checkpoint()
        return Answer(from_gtp(self.vertex, game.size))

    async def aclose(self) -> None:
        return None


@dataclass
class GateEngine:
    """Holds every request until ``release`` is set; counts those running at once."""

    release: trio.Event = field(default_factory=trio.Event)
    running: int = 0
    most_running: int = 0
    started: int = 0
    name: str = "gate"

    async def answer(self, game: Game, number: int = 0, picture: bytes | None = None) -> Answer:
        self.started += 1
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            await self.release.wait()
        finally:
            self.running -= 1
        return Answer(from_gtp("K10", game.size))

    async def aclose(self) -> None:
        return None


# A script gets (connection number, request number on it, request) and returns what to do.
Script = Callable[[int, int, wire.Request], Awaitable[bytes | None]]


@dataclass
class ScriptedServer:
    """A real GO19-ish server whose replies are scripted bytes, sent raw.

    ``None`` from the script closes the connection. Records every request and how
    each connection ended.
    """

    script: Script
    requests: list[tuple[int, wire.Request]] = field(default_factory=list)
    endings: dict[int, str] = field(default_factory=dict)
    connections: int = 0

    async def handle(self, stream: trio.SocketStream) -> None:
        number = self.connections
        self.connections += 1
        codec = wire.Connection(wire.SERVER)
        served = 0
        try:
            while True:
                event = codec.next_event()
                if event is wire.NEED_DATA:
                    codec.receive_data(await stream.receive_some(65536))
                    continue
                if isinstance(event, wire.ConnectionClosed):
                    self.endings[number] = "client closed"
                    return
                if isinstance(event, wire.Ping):
                    await stream.send_all(codec.send(wire.Pong()))
                    continue
                self.requests.append((number, event))
                reply = await self.script(number, served, event)
                served += 1
                if reply is None:
                    self.endings[number] = "server closed"
                    return
                await stream.send_all(reply)
                # The raw bytes bypassed the codec; tell it the request was answered.
                codec.send(wire.MoveReply.pass_())
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            self.endings[number] = "broken"
        finally:
            await trio.aclose_forcefully(stream)

    async def start(self, nursery: trio.Nursery) -> int:
        listeners = await nursery.start(partial(trio.serve_tcp, self.handle, 0, host=LOCALHOST))
        return listeners[0].socket.getsockname()[1]


def move_bytes(row: int, col: int) -> bytes:
    return b"RPLY\x01" + bytes((row, col))
