"""The GO19 client: one connection, a pool over replicas with backoff, and the Player.

:class:`Go19Connection` carries one request at a time over the sans-IO codec. A
request that is cancelled (the referee's deadline) or fails closes the
connection: GO19 has no request id, so a late reply must never be read as the
answer to the next request.

:class:`Go19Endpoint` pools connections to the replicas of one adapter. A
request goes to the least-loaded healthy replica; each replica reconnects on
its own schedule (1.5 s, 3 s, 4.5 s … capped at 15 s between attempts) and is
marked down after 6 consecutive failures. A failure is a connect that fails, or
a new connection that breaks or sends garbage before its first reply (a server
that accepts and hangs up is as unusable as one that refuses); timeouts are the
caller's and do not count. A down replica is probed in the background (connect
and PING on the same schedule) when the endpoint has a nursery, and serves again
as soon as it answers; :meth:`Go19Endpoint.wait_up` waits for that. An
``on_event`` callback hears each failure with its backoff, each replica marked
down or back up, and each reconnect after failures, as one line naming the replica.

Socket, timeout and protocol failures become go19's :class:`PlayerError` types in
one place, :func:`_wire_errors`. Nothing here takes a timeout except the
connect timeout, which is the client's own: callers bound a request with
``trio.move_on_after``.
"""

from __future__ import annotations

import math
import os
import select
import socket
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

import trio

from orchestrator import coords
from orchestrator.players.base import (
    ConnectionFailed,
    EndpointDown,
    ErrorReply,
    PlayerError,
    ProtocolViolation,
)
from orchestrator.protocol import go19 as wire
from orchestrator.render import render_png
from orchestrator.rules.game import Game

Address = tuple[str, int]
_RECEIVE_CHUNK = 65536


def format_address(address: Address) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _describe(exc: BaseException) -> str:
    """A short reason for a socket failure, digging under trio's wrappers."""
    seen = exc
    while seen.__cause__ is not None and not isinstance(seen, ExceptionGroup):
        seen = seen.__cause__
    if isinstance(seen, ExceptionGroup) and seen.exceptions:
        seen = seen.exceptions[0]
    if isinstance(seen, socket.gaierror) and seen.strerror:
        return seen.strerror.lower()
    if isinstance(seen, OSError) and seen.errno:
        return os.strerror(seen.errno).lower()
    return str(seen) or type(seen).__name__


@contextmanager
def _wire_errors(where: str) -> Iterator[None]:
    """The one place where lower-level failures become go19 player errors."""
    try:
        yield
    except wire.RemoteProtocolError as exc:
        raise ProtocolViolation(f"{where}: {exc}") from exc
    except trio.TooSlowError as exc:
        raise ConnectionFailed(f"{where}: connect timed out") from exc
    except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        raise ConnectionFailed(f"{where}: {_describe(exc)}") from exc


class _ClosedBeforeReply(ConnectionFailed):
    """The peer hung up before sending a byte of the reply."""


class _Unreachable(ConnectionFailed):
    """This replica could not be connected to (now in backoff, or down): try another."""


class _Skipped(_Unreachable):
    """This replica is waiting out a backoff while another one is ready: no attempt made."""


class Go19Connection:
    """One client connection; one request or ping at a time."""

    def __init__(self, stream: trio.abc.Stream, where: str, limits: wire.Limits | None = None):
        self.where = where
        self._stream = stream
        self._codec = wire.Connection(wire.CLIENT, limits)
        self._busy = False
        self.closed = False
        self.exchanges = 0  # completed request/reply or ping/pong cycles
        self.round = 0  # set by the pool: which of its replica's failure rounds opened it
        self.idle_since = trio.current_time()

    @classmethod
    async def connect(
        cls, host: str, port: int, limits: wire.Limits | None = None
    ) -> Go19Connection:
        """Open a connection; callers bound it with ``trio.fail_after``."""
        where = format_address((host, port))
        with _wire_errors(where):
            stream = await trio.open_tcp_stream(host, port)
        return cls(stream, where, limits)

    async def request(self, request: wire.Request) -> wire.MoveReply | wire.ErrorReply:
        """Send one request and return its reply; an error reply closes the connection."""
        reply = await self._exchange(request)
        if isinstance(reply, wire.ErrorReply):
            await self.aclose()
        return reply

    async def ping(self) -> float:
        """Round-trip time of one PING/PONG in milliseconds."""
        start = trio.current_time()
        await self._exchange(wire.Ping())
        return (trio.current_time() - start) * 1000.0

    async def _exchange(self, event: wire.Request | wire.Ping) -> wire.Event:
        if self.closed:
            raise ConnectionFailed(f"{self.where}: connection already closed")
        if self._busy:
            raise trio.BusyResourceError(f"{self.where}: a request is already in flight")
        self._busy = True
        finished = False
        try:
            reply = await self._send_and_receive(event)
            finished = True
        finally:
            self._busy = False
            if not finished:
                # Cancelled or failed: whatever arrives later belongs to no one.
                await self.aclose()
        self.exchanges += 1
        self.idle_since = trio.current_time()
        if self._codec.trailing_data[0]:
            await self.aclose()  # the peer said more than one reply: trust nothing after it
        return reply

    async def _send_and_receive(self, event: wire.Request | wire.Ping) -> wire.Event:
        got_bytes = False
        try:
            with _wire_errors(self.where):
                await self._stream.send_all(self._codec.send(event))
                eof = False
                while (reply := self._next_reply(eof)) is wire.NEED_DATA:
                    data = await self._stream.receive_some(_RECEIVE_CHUNK)
                    got_bytes = got_bytes or bool(data)
                    eof = not data
                    self._codec.receive_data(data)
        except ConnectionFailed as exc:
            if not got_bytes:
                raise _ClosedBeforeReply(str(exc)) from exc
            raise
        if isinstance(reply, wire.ConnectionClosed):
            raise _ClosedBeforeReply(f"{self.where}: server closed the connection before replying")
        return reply

    def quiet(self) -> bool:
        """Nothing arrived since the last reply. Bytes here are a stray or duplicate reply
        that the next request would read as its answer (GO19 has no request id); an EOF
        or reset means the server dropped us. Either way the connection must not be
        reused. A stray reply still in flight when the next request goes out cannot be
        told apart: this narrows that race, it cannot close it."""
        sock = getattr(self._stream, "socket", None)
        if sock is None:
            return True
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        return not poller.poll(0)

    def _next_reply(self, eof: bool) -> wire.Event | object:
        try:
            return self._codec.next_event()
        except wire.RemoteProtocolError as exc:
            if eof:
                # Every byte so far was a valid beginning: the peer went away mid-reply, as
                # when its process dies (FIN or RST alike); a broken connection, not garbage.
                raise ConnectionFailed(f"{self.where}: {exc}") from exc
            raise

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            await trio.aclose_forcefully(self._stream)


@dataclass(frozen=True, slots=True)
class ReplicaStats:
    """A snapshot of one replica for a dashboard; times are ``trio.current_time()``."""

    address: str
    status: str  # idle (no connection yet) | ok | connecting | backoff | down
    retry_at: float | None  # in backoff: the next connect attempt; down: the next probe
    in_flight: int
    idle_connections: int
    requests: int
    errors: int
    timeouts: int
    reconnects: int
    consecutive_failures: int
    last_attempt: float | None
    last_error: str | None
    latency_ms: tuple[float, ...]


class _Replica:
    def __init__(self, endpoint: Go19Endpoint, address: Address) -> None:
        self.endpoint = endpoint
        self.address = address
        self.where = format_address(address)
        self.status = "idle"
        self.idle: list[Go19Connection] = []
        self.in_flight = 0
        self.requests = 0
        self.errors = 0
        self.timeouts = 0
        self.reconnects = 0
        self.failures = 0
        self.retry_at = -math.inf
        self.last_attempt: float | None = None
        self.last_error: str | None = None
        self.latency_ms: deque[float] = deque(maxlen=endpoint.latency_samples)
        self._lost_connection = False  # the next connect counts as a reconnect
        # Bumped by each counted failure. A new connection that fails counts only if no
        # failure was counted since it was opened: concurrent requests cannot speed up
        # the schedule by failing together.
        self.round = 0
        self._connect_lock = trio.Lock()

    @property
    def down(self) -> bool:
        return self.status == "down"

    def waiting(self, now: float) -> bool:
        """Waiting out a backoff: no connect attempt before ``retry_at``."""
        return self.status == "backoff" and now < self.retry_at

    def stats(self) -> ReplicaStats:
        return ReplicaStats(
            address=self.where,
            status=self.status,
            retry_at=self.retry_at if self.status in ("backoff", "down") else None,
            in_flight=self.in_flight,
            idle_connections=len(self.idle),
            requests=self.requests,
            errors=self.errors,
            timeouts=self.timeouts,
            reconnects=self.reconnects,
            consecutive_failures=self.failures,
            last_attempt=self.last_attempt,
            last_error=self.last_error,
            latency_ms=tuple(self.latency_ms),
        )

    async def request(self, request: wire.Request) -> wire.MoveReply | wire.ErrorReply:
        self.requests += 1
        start = trio.current_time()
        succeeded = False
        try:
            conn = await self._checkout()
            try:
                reply = await self._first_or_later(conn, request)
            except _ClosedBeforeReply:
                if not conn.exchanges:
                    raise
                # A pooled connection the server had already dropped; requests are
                # idempotent (the whole board travels), so one fresh try is safe.
                self._lost_connection = True
                conn = await self._connect()
                reply = await self._first_or_later(conn, request)
            succeeded = True
        except trio.Cancelled:
            self.timeouts += 1
            self._lost_connection = True
            raise
        except _Skipped:
            raise
        except BaseException as exc:
            self.errors += 1
            self._lost_connection = True
            self.last_error = self._reason(exc)
            raise
        finally:
            if succeeded:
                self.latency_ms.append((trio.current_time() - start) * 1000.0)
        if isinstance(reply, wire.ErrorReply):
            self.errors += 1
            self.last_error = f"error reply: {reply.message}"
        await self._checkin(conn)
        return reply

    async def _first_or_later(
        self, conn: Go19Connection, request: wire.Request
    ) -> wire.MoveReply | wire.ErrorReply:
        """``conn.request``; on a connection that never answered, its outcome decides
        whether the replica works. A server that accepts and then hangs up (or sends
        garbage) on every connection is as unusable as one that refuses them: that
        failure counts like a failed connect, with the same backoff and the same
        giving up. Timeouts do not count: a slow answer is the caller's to judge."""
        fresh = not conn.exchanges
        try:
            reply = await conn.request(request)
        except (ConnectionFailed, ProtocolViolation) as exc:
            if fresh:
                self._failed(exc, conn.round)
            raise
        if fresh and conn.round == self.round:
            # Only an attempt made on the schedule ends a backoff: a connection opened
            # before the last counted failure says nothing about the replica since.
            self._answered()
        return reply

    async def _checkout(self) -> Go19Connection:
        max_idle = self.endpoint.max_idle
        while self.idle:
            conn = self.idle.pop()
            quiet = conn.quiet()
            if quiet and trio.current_time() - conn.idle_since <= max_idle:
                return conn
            if not quiet:
                self._lost_connection = True  # replacing it is a reconnect
            await conn.aclose()
        return await self._connect()

    async def _checkin(self, conn: Go19Connection) -> None:
        if conn.closed:
            self._lost_connection = True
        elif self.endpoint.closed:
            await conn.aclose()
        else:
            self.idle.append(conn)

    async def _connect(self) -> Go19Connection:
        """One connect attempt, after this replica's backoff; _Unreachable if it fails.

        The endpoint then picks again, so a request waits out a backoff only when
        no other replica is free of one. The lock keeps one attempt at a time, so
        concurrent requests cannot speed up the schedule.
        """
        endpoint = self.endpoint
        async with self._connect_lock:
            # A failure elsewhere (a new connection that broke) may move the backoff or
            # take the replica down while this waits: look again after every wait.
            while not self.down and trio.current_time() < self.retry_at:
                self.status = "backoff"
                if endpoint._ready_besides(self):
                    # Picked while it looked fine, but a concurrent attempt just failed:
                    # waiting here would spend the caller's deadline for nothing.
                    raise _Skipped(f"{self.where}: in backoff ({self.last_error})")
                await trio.sleep_until(self.retry_at)
            if self.down:
                raise _Unreachable(f"{self.where}: down ({self.last_error})")
            self.status = "connecting"
            self.last_attempt = trio.current_time()
            attempt_round = self.round
            if self._lost_connection or self.failures:
                self.reconnects += 1
            try:
                with _wire_errors(self.where), trio.fail_after(endpoint.connect_timeout):
                    conn = await Go19Connection.connect(*self.address, limits=endpoint.limits)
            except ConnectionFailed as exc:
                self._failed(exc, attempt_round)
                raise _Unreachable(str(exc)) from exc
            self._lost_connection = False
            self.status = "ok"
            conn.round = attempt_round
            return conn

    def _answered(self) -> None:
        """A new connection answered: the replica works (again)."""
        if self.failures:
            self.endpoint._event(f"{self.where}: reconnected after {self.failures} failed "
                                 f"attempt{'s' if self.failures > 1 else ''}")
        self.failures = 0
        self.retry_at = -math.inf
        self.status = "ok"

    def _reason(self, exc: BaseException) -> str:
        return str(exc).removeprefix(f"{self.where}: ")

    def _failed(self, exc: PlayerError, attempt_round: int) -> None:
        """Count a failed attempt made in ``attempt_round``, unless a failure was counted
        since it started (attempts made together fail together: one step of backoff)."""
        if self.down:
            return
        if attempt_round != self.round:
            if trio.current_time() < self.retry_at:
                self.status = "backoff"  # its connect had said "ok"; the round's failure holds
            return
        self.round += 1
        self.failures += 1
        self.last_error = self._reason(exc)
        endpoint = self.endpoint
        if self.failures >= endpoint.max_failures:
            self.status = "down"
            self.retry_at = trio.current_time() + self._delay()
            endpoint._health_changed()
            endpoint._event(f"{self.where}: down after {self.failures} failed connects "
                            f"({self.last_error})")
            endpoint._start_probe(self)
        else:
            delay = self._delay()
            self.retry_at = trio.current_time() + delay
            self.status = "backoff"
            endpoint._event(f"{self.where}: connect failed ({self.last_error}); "
                            f"retry in {delay:g} s")

    def _delay(self) -> float:
        """The seed's schedule: 1.5 s after the first failure, 1.5 s more per failure, capped."""
        return min(self.endpoint.backoff_step * self.failures, self.endpoint.backoff_cap)

    async def probe(self) -> None:
        """While down: a connect and a PING on the backoff schedule, until one answers.

        The answering connection joins the idle pool, so the replica serves at once.
        """
        endpoint = self.endpoint
        while self.down:
            await trio.sleep_until(self.retry_at)
            try:
                with _wire_errors(self.where), trio.fail_after(endpoint.connect_timeout):
                    conn = await Go19Connection.connect(*self.address, limits=endpoint.limits)
                    await conn.ping()
            except (ConnectionFailed, ProtocolViolation) as exc:
                self.failures += 1
                self.last_error = self._reason(exc)
                self.retry_at = trio.current_time() + self._delay()
                continue
            probes = self.failures - endpoint.max_failures + 1
            self.failures = 0
            self.retry_at = -math.inf
            self.status = "ok"
            self.idle.append(conn)
            endpoint._health_changed()
            endpoint._event(f"{self.where}: back up, answered PING after {probes} "
                            f"probe{'s' if probes > 1 else ''}; in use again")

    def reset(self) -> None:
        self.failures = 0
        self.retry_at = -math.inf
        if self.status in ("down", "backoff"):
            self.status = "idle"

    async def aclose(self) -> None:
        idle, self.idle = self.idle, []
        for conn in idle:
            await conn.aclose()


class Go19Endpoint:
    """A pool of GO19 connections over the replicas of one adapter.

    ``slots_per_replica`` bounds the requests in flight per healthy replica (one
    endpoint-wide ``CapacityLimiter``, resized when replicas go down or come back).
    Use as ``async with Go19Endpoint(...) as endpoint`` so idle connections get closed.
    """

    def __init__(
        self,
        replicas: Sequence[Address],
        *,
        slots_per_replica: int = 1,
        connect_timeout: float = 5.0,
        allowed_sizes: Iterable[int] | None = None,
        limits: wire.Limits | None = None,
        max_failures: int = 6,
        backoff_step: float = 1.5,
        backoff_cap: float = 15.0,
        max_idle: float = 30.0,
        latency_samples: int = 256,
        on_event: Callable[[str], None] | None = None,
        nursery: trio.Nursery | None = None,
    ) -> None:
        if not replicas:
            raise ValueError("a GO19 endpoint needs at least one replica")
        if slots_per_replica < 1:
            raise ValueError(f"slots_per_replica must be >= 1, not {slots_per_replica}")
        self.slots_per_replica = slots_per_replica
        self.connect_timeout = connect_timeout
        self.limits = limits or wire.Limits()
        if allowed_sizes is not None:
            self.limits = replace(self.limits, allowed_sizes=frozenset(allowed_sizes))
        self.max_failures = max_failures
        self.backoff_step = backoff_step
        self.backoff_cap = backoff_cap
        self.max_idle = max_idle
        self.latency_samples = latency_samples
        self.on_event = on_event
        self.closed = False
        self._nursery = nursery
        self._probes: set[trio.CancelScope] = set()  # aclose cancels them
        self._up = trio.Event()  # set while some replica is not down
        self._up.set()
        self._replicas = [_Replica(self, (host, int(port))) for host, port in replicas]
        self._limiter = trio.CapacityLimiter(slots_per_replica * len(self._replicas))

    @property
    def addresses(self) -> list[str]:
        return [r.where for r in self._replicas]

    def __str__(self) -> str:
        return ",".join(self.addresses)

    def replica_stats(self) -> list[ReplicaStats]:
        return [r.stats() for r in self._replicas]

    def is_down(self) -> bool:
        """Every replica gave up; requests raise EndpointDown until one is back."""
        return all(r.down for r in self._replicas)

    async def wait_up(self) -> None:
        """Return once some replica is not down: at once if one is usable now, else when
        a background probe (or :meth:`reset`) brings one back. Without a ``nursery``
        nothing probes, so only ``reset`` ends the wait; callers bound it with
        ``trio.move_on_after``."""
        while self.is_down():
            await self._up.wait()

    async def request(self, request: wire.Request) -> wire.MoveReply | wire.ErrorReply:
        """Send one request to the least-loaded healthy replica and return its reply.

        Raises ConnectionFailed, ProtocolViolation, or EndpointDown when every replica is down.
        """
        if self.closed:
            raise ConnectionFailed(f"{self}: endpoint closed")
        self._check_up()  # fail fast, without queueing, when everything is down
        async with self._limiter:
            self._check_up()  # again: replicas may have gone down while we queued
            tried: list[_Replica] = []
            while True:
                replica = self._pick(tried)
                replica.in_flight += 1
                try:
                    return await replica.request(request)
                except _Unreachable as exc:
                    # Each replica gets one connect attempt per request: the next request
                    # waits out the backoff, this one reports the failure now.
                    tried.append(replica)
                    if all(r.down or r in tried for r in self._replicas):
                        self._check_up()
                        raise ConnectionFailed(str(exc)) from exc
                finally:
                    replica.in_flight -= 1

    def _check_up(self) -> None:
        if self.is_down():
            reasons = "; ".join(f"{r.where} ({r.last_error})" for r in self._replicas)
            raise EndpointDown(f"all replicas down: {reasons}")

    def _pick(self, tried: list[_Replica]) -> _Replica:
        candidates = [r for r in self._replicas if not r.down and r not in tried]
        now = trio.current_time()
        # Prefer replicas not waiting out a backoff (else the one whose backoff ends first),
        # then the least loaded, then the least used. A replica whose backoff is over is
        # due its next attempt and competes like the others: that is how it comes back.
        return min(candidates, key=lambda r: (
            r.waiting(now), r.retry_at if r.waiting(now) else 0.0, r.in_flight, r.requests,
        ))

    def _ready_besides(self, replica: _Replica) -> bool:
        now = trio.current_time()
        return any(r is not replica and not r.down and not r.waiting(now)
                   for r in self._replicas)

    def _event(self, text: str) -> None:
        if self.on_event is not None:
            self.on_event(text)

    def _health_changed(self) -> None:
        healthy = sum(not r.down for r in self._replicas)
        self._limiter.total_tokens = self.slots_per_replica * max(1, healthy)
        if healthy:
            self._up.set()
        elif self._up.is_set():
            self._up = trio.Event()

    def _start_probe(self, replica: _Replica) -> None:
        if self._nursery is not None and not self.closed:
            self._nursery.start_soon(self._probe, replica)

    async def _probe(self, replica: _Replica) -> None:
        with trio.CancelScope() as scope:
            self._probes.add(scope)
            try:
                await replica.probe()
            finally:
                self._probes.discard(scope)

    def reset(self) -> None:
        """Forget connect failures: down replicas get tried again on the next request."""
        for replica in self._replicas:
            replica.reset()
        self._health_changed()

    async def aclose(self) -> None:
        self.closed = True
        for scope in self._probes:
            scope.cancel()
        for replica in self._replicas:
            await replica.aclose()

    async def __aenter__(self) -> Go19Endpoint:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _last_stone(game: Game) -> int | None:
    if game.moves and game.moves[-1].point != coords.PASS:
        return game.moves[-1].point
    return None


class Go19Player:
    """A policy behind a GO19 endpoint; the endpoint belongs to whoever opened it."""

    def __init__(self, endpoint: Go19Endpoint, name: str, image_px: int = 512) -> None:
        self.endpoint = endpoint
        self.name = name
        self.image_px = image_px

    async def genmove(self, game: Game) -> int:
        board = game.board.to_array()
        png = render_png(board, _last_stone(game), size_px=self.image_px)
        request = wire.Request(game.size, game.to_play, png, board.tobytes())
        reply = await self.endpoint.request(request)
        if isinstance(reply, wire.ErrorReply):
            raise ErrorReply(f"{self.name}: {reply.message}")
        return coords.from_go19(reply.row, reply.col, game.size)

    async def aclose(self) -> None:
        """Nothing to do: the endpoint is shared and closed by its owner."""
