"""One replica of an endpoint. :class:`ReplicaHealth` is what every replica has, whatever
it speaks: its counters, its failure rounds and backoff schedule, down, and the background
probe that brings it back. :class:`Replica` adds GO19's talking (idle connections, connect,
PING); the OpenAI player's HTTP replica (:mod:`~orchestrator.players.openai_pool`) adds
HTTP's. :class:`~orchestrator.players.endpoint.ReplicaPool` owns the replicas and picks
one per request; see :mod:`~orchestrator.players.endpoint` for the policy."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio

from orchestrator.players.base import ConnectionFailed, PlayerError, ProtocolViolation
from orchestrator.players.connection import (
    Address,
    ClosedBeforeReply,
    Go19Connection,
    format_address,
    wire_errors,
)
from orchestrator.protocol import go19 as wire

if TYPE_CHECKING:
    from orchestrator.players.endpoint import Go19Endpoint, ReplicaPool


class Unreachable(ConnectionFailed):
    """This replica could not be connected to (now in backoff, or down): try another."""


class Skipped(Unreachable):
    """This replica is waiting out a backoff while another one is ready: no attempt made."""


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

    def percentile_ms(self, q: float) -> float | None:
        """The ``q``-th percentile (0..100, nearest rank) of the recent latencies."""
        if not self.latency_ms:
            return None
        ordered = sorted(self.latency_ms)
        return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


class ReplicaHealth:
    """A replica's state and failure schedule, without its transport.

    Subclasses count a failed attempt with :meth:`_failed`, a working one with
    :meth:`_answered`, wait their turn with :meth:`_wait_turn`, and say how a down
    replica is probed in :meth:`_probe_once`.
    """

    def __init__(self, endpoint: ReplicaPool[Any], where: str) -> None:
        self.endpoint = endpoint
        self.where = where
        self.status = "idle"
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
        # Bumped by each counted failure. An attempt that fails counts only if no
        # failure was counted since it began: concurrent requests cannot speed up the
        # schedule by failing together.
        self.round = 0
        self.probing = False  # one background probe at a time, even across reset()

    @property
    def down(self) -> bool:
        return self.status == "down"

    def waiting(self, now: float) -> bool:
        """Waiting out a backoff: no attempt before ``retry_at``."""
        return self.status == "backoff" and now < self.retry_at

    def idle_connections(self) -> int:
        return 0

    def stats(self) -> ReplicaStats:
        return ReplicaStats(
            address=self.where,
            status=self.status,
            retry_at=self.retry_at if self.status in ("backoff", "down") else None,
            in_flight=self.in_flight,
            idle_connections=self.idle_connections(),
            requests=self.requests,
            errors=self.errors,
            timeouts=self.timeouts,
            reconnects=self.reconnects,
            consecutive_failures=self.failures,
            last_attempt=self.last_attempt,
            last_error=self.last_error,
            latency_ms=tuple(self.latency_ms),
        )

    async def _wait_turn(self) -> None:
        """Wait out this replica's backoff before an attempt; Skipped when another replica
        is ready meanwhile, Unreachable when it is down."""
        # A failure elsewhere may move the backoff or take the replica down while this
        # waits: look again after every wait.
        while not self.down and trio.current_time() < self.retry_at:
            self.status = "backoff"
            if self.endpoint._ready_besides(self):
                # Picked while it looked fine, but a concurrent attempt just failed:
                # waiting here would spend the caller's deadline for nothing.
                raise Skipped(f"{self.where}: in backoff ({self.last_error})")
            await trio.sleep_until(self.retry_at)
        if self.down:
            raise Unreachable(f"{self.where}: down ({self.last_error})")

    def _answered(self) -> None:
        """An attempt made on the schedule answered: the replica works (again)."""
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
        """While down: :meth:`_probe_once` on the backoff schedule, until it answers."""
        self.probing = True
        try:
            await self._probe_until_up()
        finally:
            self.probing = False

    async def _probe_once(self) -> str:
        """One probe of a down replica: what answered (``answered PING``), or a PlayerError."""
        raise NotImplementedError

    async def _probe_until_up(self) -> None:
        endpoint = self.endpoint
        while self.down:
            await trio.sleep_until(self.retry_at)
            try:
                answered = await self._probe_once()
            except PlayerError as exc:
                self.failures += 1
                self.last_error = self._reason(exc)
                self.retry_at = trio.current_time() + self._delay()
                continue
            probes = self.failures - endpoint.max_failures + 1
            self.failures = 0
            self.retry_at = -math.inf
            self.status = "ok"
            endpoint._health_changed()
            endpoint._event(f"{self.where}: back up, {answered} after {probes} "
                            f"probe{'s' if probes > 1 else ''}; in use again")

    def reset(self) -> None:
        self.failures = 0
        self.retry_at = -math.inf
        if self.status in ("down", "backoff"):
            self.status = "idle"

    async def aclose(self) -> None:
        return None


class Replica(ReplicaHealth):
    """One GO19 replica: its idle connections over :class:`ReplicaHealth`'s schedule."""

    endpoint: Go19Endpoint

    def __init__(self, endpoint: Go19Endpoint, address: Address) -> None:
        super().__init__(endpoint, format_address(address))
        self.address = address
        self.idle: list[Go19Connection] = []
        self._lost_connection = False  # the next connect counts as a reconnect
        self._connect_lock = trio.Lock()

    def idle_connections(self) -> int:
        return len(self.idle)

    async def request(self, request: wire.Request) -> wire.MoveReply | wire.ErrorReply:
        self.requests += 1
        start = trio.current_time()
        succeeded = False
        try:
            conn = await self._checkout()
            try:
                reply = await self._first_or_later(conn, request)
            except ClosedBeforeReply:
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
        except Skipped:
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
        """One connect attempt, after this replica's backoff; Unreachable if it fails.

        The endpoint then picks again, so a request waits out a backoff only when
        no other replica is free of one. The lock keeps one attempt at a time, so
        concurrent requests cannot speed up the schedule.
        """
        endpoint = self.endpoint
        async with self._connect_lock:
            await self._wait_turn()
            self.status = "connecting"
            self.last_attempt = trio.current_time()
            attempt_round = self.round
            if self._lost_connection or self.failures:
                self.reconnects += 1
            try:
                with wire_errors(self.where), trio.fail_after(endpoint.connect_timeout):
                    conn = await Go19Connection.connect(*self.address, limits=endpoint.limits)
            except ConnectionFailed as exc:
                self._failed(exc, attempt_round)
                raise Unreachable(str(exc)) from exc
            self._lost_connection = False
            self.status = "ok"
            conn.round = attempt_round
            return conn

    async def _probe_once(self) -> str:
        """A connect and a PING; the answering connection joins the idle pool, so the
        replica serves at once."""
        endpoint = self.endpoint
        with wire_errors(self.where), trio.fail_after(endpoint.connect_timeout):
            conn = await Go19Connection.connect(*self.address, limits=endpoint.limits)
            await conn.ping()
        self.idle.append(conn)
        return "answered PING"

    async def aclose(self) -> None:
        idle, self.idle = self.idle, []
        for conn in idle:
            await conn.aclose()
