"""Serve a move engine over GO19: the thin trio server around the sans-IO codec.

:func:`serve_go19` accepts many connections at once and answers one request
at a time per connection. A bad frame is answered with an error frame and the
connection closed; an oversize frame is refused from its header, unread. A
client that sends nothing for ``idle_timeout`` seconds, takes longer than
``frame_timeout`` to finish a frame it started, or to take a reply (it sends without
reading), is dropped. Memory is bounded:
at most ``max_connections`` at once, and a budget for the bytes of unfinished
frames of all connections together (over it, the oldest unfinished frame's
connection is dropped); a connection's buffers go as soon as it closes. ``slots`` bounds
the engine computations running at once; ``delay_ms`` is the least time a slot
spends on a request, computing included (a fixed service time, like a model's),
for latency tests and benchmarks.

The engine is any :class:`~orchestrator.players.base.Player`, asked as the referee asks
one: the request's position becomes a fresh game (its stones as setup stones, the side
to move, ``komi``: :func:`~orchestrator.serve.engines.request_game`) and the request's PNG
is the picture it is asked with. Its point (or ``PASS``) is the reply and its fault the
error frame; GO19 has no resign, so a player that resigns is answered as a pass. With
``cancel_abandoned`` (a VLM's ports) a request is cancelled when its client closes the
connection meanwhile, so an engine that queues requests drops the ones nobody waits for;
without it an engine finishes what it started (a GTP engine cancelled mid-``genmove``
would be restarted).
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np
import trio

from orchestrator import coords
from orchestrator.players.base import RESIGN, Player
from orchestrator.protocol import go19 as wire
from orchestrator.serve.engines import EngineError, request_game

T = TypeVar("T")

_RECEIVE_CHUNK = 65536


@dataclass
class ServerStats:
    connections: int = 0
    open_connections: int = 0
    requests: int = 0
    pings: int = 0
    error_replies: int = 0
    bad_frames: int = 0
    timeouts: int = 0
    refused: int = 0  # connections closed at once: max_connections were open
    dropped: int = 0  # connections dropped to keep partial frames within their budget
    partial_bytes: int = 0  # bytes of unfinished frames buffered right now


class _Peer:
    """One open connection as the budget sees it: its unfinished frame's bytes."""

    def __init__(self, scope: trio.CancelScope) -> None:
        self.scope = scope
        self.partial = 0
        self.since = 0.0  # when its unfinished frame started


class _Timeout(Exception):
    pass


class _Server:
    def __init__(
        self,
        engine: Player,
        komi: float,
        cancel_abandoned: bool,
        limits: wire.Limits,
        slots: int,
        delay_ms: float,
        idle_timeout: float,
        frame_timeout: float,
        max_connections: int,
        partial_budget: int,
        stats: ServerStats,
        log: Callable[[str], None],
    ) -> None:
        self.engine = engine
        self.komi = komi
        self.cancel_abandoned = cancel_abandoned
        self.limits = limits
        self.limiter = trio.CapacityLimiter(slots)
        self.delay = delay_ms / 1000.0
        self.idle_timeout = idle_timeout
        self.frame_timeout = frame_timeout
        self.max_connections = max_connections
        self.partial_budget = partial_budget
        self.stats = stats
        self.log = log
        self.peers: set[_Peer] = set()

    async def handle(self, stream: trio.SocketStream) -> None:
        stats = self.stats
        stats.connections += 1
        peer = _peer_name(stream)
        if len(self.peers) >= self.max_connections:
            stats.refused += 1
            self.log(f"{peer}: refused, {self.max_connections} connections already open")
            await trio.aclose_forcefully(stream)
            return
        stats.open_connections += 1
        with trio.CancelScope() as scope:
            me = _Peer(scope)
            self.peers.add(me)
            try:
                await self._serve(stream, peer, me)
            finally:
                self.peers.discard(me)
                self._account(me, 0)
                stats.open_connections -= 1
                await trio.aclose_forcefully(stream)
        if scope.cancelled_caught:
            stats.dropped += 1
            self.log(f"{peer}: dropped, its unfinished frame was the oldest when partial "
                     f"frames went over their budget of {self.partial_budget} bytes")

    def _account(self, peer: _Peer, partial: int) -> None:
        """Record ``peer``'s unfinished frame size; over the budget, drop the oldest ones."""
        stats = self.stats
        stats.partial_bytes += partial - peer.partial
        peer.partial = partial
        while stats.partial_bytes > self.partial_budget:
            oldest = min((p for p in self.peers if p.partial), key=lambda p: p.since)
            oldest.scope.cancel()
            stats.partial_bytes -= oldest.partial
            oldest.partial = 0  # its buffer goes when its task unwinds, on its next checkpoint

    async def _serve(self, stream: trio.SocketStream, peer: str, me: _Peer) -> None:
        stats = self.stats
        codec = wire.Connection(wire.SERVER, self.limits)
        try:
            while True:
                event = await self._next_event(stream, codec, me)
                if isinstance(event, wire.ConnectionClosed):
                    return
                if isinstance(event, wire.Ping):
                    stats.pings += 1
                    await self._send(stream, codec.send(wire.Pong()))
                    continue
                assert isinstance(event, wire.Request), "a server's codec reads requests"
                reply = await self._answer(event, peer, stream)
                await self._send(stream, codec.send(reply))
        except wire.RemoteProtocolError as exc:
            stats.bad_frames += 1
            self.log(f"{peer}: bad frame, closing: {exc}")
            with trio.move_on_after(self.frame_timeout):
                try:
                    await stream.send_all(codec.send(wire.ErrorReply(f"bad frame: {exc}")))
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass  # the peer is already gone; it was told as much as it could hear
        except _Timeout as exc:
            stats.timeouts += 1
            self.log(f"{peer}: {exc}, closing")
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            self.log(f"{peer}: connection lost: {exc!r}")
        except Exception as exc:
            # One connection's failure must never take the server (and every other client) down.
            self.log(f"{peer}: internal error, closing: {exc!r}")

    async def _send(self, stream: trio.SocketStream, data: bytes) -> None:
        """A reply, under the frame deadline: a client that does not take it (its receive
        buffer and our send buffer full: it sends without reading) is dropped, else it
        would hold its connection, and a connection slot, for ever."""
        with trio.move_on_after(self.frame_timeout):
            await stream.send_all(data)
            return
        raise _Timeout(f"reply not taken within {self.frame_timeout:g} s")

    async def _next_event(
        self, stream: trio.SocketStream, codec: wire.Connection, me: _Peer
    ) -> wire.Event:
        """The next frame, under the idle deadline until its first byte, then the frame deadline."""
        waiting_since = trio.current_time()
        frame_started: float | None = None
        while (event := codec.next_event()) is wire.NEED_DATA:
            if frame_started is None:
                limit, what = self.idle_timeout, "idle"
                deadline = waiting_since + limit
            else:
                limit, what = self.frame_timeout, "frame not finished"
                deadline = frame_started + limit
            with trio.move_on_at(deadline):
                data = await _receive(stream)
                codec.receive_data(data)
                if frame_started is None and data:
                    frame_started = me.since = trio.current_time()
                self._account(me, codec.buffered)
                continue
            raise _Timeout(f"{what} after {limit:g} s")
        self._account(me, codec.buffered)  # what is left belongs to the next frame
        return event

    async def _answer(self, request: wire.Request, peer: str,
                      stream: trio.SocketStream) -> wire.MoveReply | wire.ErrorReply:
        self.stats.requests += 1
        size = request.size
        board = np.frombuffer(request.board, dtype=np.uint8).reshape(size, size)
        engine = self.engine
        try:
            async with self.limiter:
                # A fixed service time, like a model's: computing counts towards the delay.
                started = trio.current_time()
                game = request_game(board, request.ai_side, self.komi)

                async def move() -> int:  # a fault is this request's error reply, undelayed
                    return (await engine.answer(game, picture=request.png or None)).move()

                point = await (_while_connected(stream, move) if self.cancel_abandoned
                               else move())
                await trio.sleep_until(started + self.delay)
            if point == RESIGN:
                point = coords.PASS
            return wire.MoveReply(*coords.to_go19(point, size))
        except _ClientGone:
            raise
        except Exception as exc:  # any engine failure is this request's answer
            self.stats.error_replies += 1
            message = str(exc) if isinstance(exc, EngineError) else f"engine failed: {exc!r}"
            self.log(f"{peer}: error reply: {message}")
            return wire.ErrorReply(message)


class _ClientGone(trio.BrokenResourceError):
    """The client closed its connection while its request was being computed."""


async def unless_gone(watch: Callable[[trio.CancelScope], Awaitable[None]],
                     compute: Callable[[], Awaitable[T]]) -> T | None:
    """``compute()``, or None when ``watch(scope)`` cancels ``scope`` first (it watches
    the client, and cancels once the client has gone: the answer has no reader). An
    exception of ``compute`` is raised as itself, not inside a nursery's group. The GO19
    port and the OpenAI port (:mod:`orchestrator.serve.hf.openai_app`) both ask so."""
    result: T | None = None
    failure: Exception | None = None
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch, nursery.cancel_scope)
        try:
            result = await compute()
        except Exception as exc:
            failure = exc
        nursery.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result


async def _while_connected(stream: trio.SocketStream,
                           compute: Callable[[], Awaitable[int]]) -> int:
    """``compute()``, cancelled if the client closes the connection meanwhile."""
    point = await unless_gone(lambda scope: _cancel_when_closed(stream, scope), compute)
    if point is None:
        raise _ClientGone("the client closed the connection before its answer")
    return point


async def _cancel_when_closed(stream: trio.SocketStream, scope: trio.CancelScope) -> None:
    """Cancel ``scope`` at the peer's EOF or reset. Peeks, so bytes the client sends out
    of turn stay in the socket for the codec, read after the answer."""
    try:
        data = await stream.socket.recv(1, socket.MSG_PEEK)
    except OSError:
        data = b""
    if data:
        await trio.sleep_forever()
    scope.cancel()


async def _receive(stream: trio.SocketStream) -> bytes:
    try:
        return await stream.receive_some(_RECEIVE_CHUNK)
    except (trio.BrokenResourceError, OSError):
        return b""  # a reset is an EOF as far as this connection is concerned


def _peer_name(stream: trio.SocketStream) -> str:
    try:
        host, port, *_ = stream.socket.getpeername()
    except (OSError, ValueError):
        return "peer"
    return f"{host}:{port}"


def _quiet(_: str) -> None:
    return None


async def serve_go19(
    engine: Player,
    host: str | None = "127.0.0.1",
    port: int = 5019,
    *,
    komi: float = 7.5,
    cancel_abandoned: bool = False,
    slots: int = 1,
    delay_ms: float = 0.0,
    idle_timeout: float = 60.0,
    frame_timeout: float = 10.0,
    max_connections: int = 256,
    partial_budget: int = 256 * wire.MiB,
    allowed_sizes: Iterable[int] | None = None,
    limits: wire.Limits | None = None,
    stats: ServerStats | None = None,
    log: Callable[[str], None] = _quiet,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``engine`` until cancelled; with ``nursery.start`` it returns the bound port.
    ``komi`` is the komi of the games it is asked in (a GO19 request does not carry one);
    ``cancel_abandoned`` cancels a request whose client has gone.

    ``port=0`` picks a free port. ``host=None`` listens on every interface.
    Beyond ``max_connections`` open connections a new one is closed at once; when the
    unfinished frames of all connections together buffer more than ``partial_budget``
    bytes, the connection whose frame started first is dropped.
    Reports per-connection trouble (bad frames, timeouts, error replies) to ``log``.
    """
    if slots < 1:
        raise ValueError(f"slots must be >= 1, not {slots}")
    limits = limits or wire.Limits()
    if allowed_sizes is not None:
        limits = replace(limits, allowed_sizes=frozenset(allowed_sizes))
    server = _Server(
        engine, komi, cancel_abandoned, limits, slots, delay_ms, idle_timeout, frame_timeout,
        max_connections, partial_budget, stats or ServerStats(), log,
    )
    listeners = await trio.open_tcp_listeners(port, host=host)
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(server.handle, listeners)
