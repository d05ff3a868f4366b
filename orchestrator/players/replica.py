"""One replica of an endpoint. :class:`ReplicaHealth` is what every replica has, whatever
it speaks: its counters, its failure rounds and backoff schedule, down, and the background
probe that brings it back (each kind says what one probe is: :meth:`ReplicaHealth.probe_once`).
:class:`Replica` adds GO19's talking (idle connections, connect, PING); the OpenAI
player's HTTP replica (:mod:`~orchestrator.players.openai_pool`) adds HTTP's.

A replica knows the pool that owns it only as a :class:`ReplicaHost` (whether another
replica is ready, and the hook it calls when its health changes, with a
:class:`~orchestrator.events.ReplicaChanged`), and shares the pool's frozen
:class:`ReplicaPolicy`. :class:`~orchestrator.players.endpoint.ReplicaPool` owns the
replicas and picks one per request; see :mod:`~orchestrator.players.endpoint` for the
policy."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass
from typing import Literal, Protocol

import trio

from orchestrator.events import ReplicaChanged
from orchestrator.players.base import ConnectionFailed, PlayerError, ProtocolViolation
from orchestrator.players.connection import (
    Address,
    ClosedBeforeReply,
    Go19Connection,
    format_address,
    wire_errors,
)
from orchestrator.protocol import go19 as wire


@dataclass(frozen=True, slots=True)
class ReplicaPolicy:
    """What the replicas of one pool share, whatever they speak: the connect timeout, the
    failure schedule (``backoff_step`` more seconds per failure, capped; down after
    ``max_failures``) and how many latencies are kept."""

    connect_timeout: float = 5.0
    max_failures: int = 6
    backoff_step: float = 1.5
    backoff_cap: float = 15.0
    latency_samples: int = 256


class ReplicaHost(Protocol):
    """What a replica needs of the pool that owns it."""

    @property
    def closed(self) -> bool: ...

    def others_ready(self, replica: ReplicaHealth) -> bool:
        """Whether a request could go to another replica now instead of waiting here."""
        ...

    def replica_changed(self, replica: ReplicaHealth, event: ReplicaChanged) -> None:
        """The replica's health changed (into backoff, down, or working again)."""
        ...


WAITING = ("backoff", "throttled")  # the states in which a replica waits for retry_at


class Unreachable(ConnectionFailed):
    """This replica could not be connected to (now in backoff, or down): try another."""


class Skipped(Unreachable):
    """This replica is waiting out a backoff while another one is ready: no attempt made."""


@dataclass(frozen=True, slots=True)
class ReplicaStats:
    """A snapshot of one replica for a dashboard; times are ``trio.current_time()``."""

    address: str
    status: str  # idle (no connection yet) | ok | connecting | backoff | throttled | down
    retry_at: float | None  # in backoff: the next connect attempt; throttled: the end of
    # the wait the server asked for; down: the next probe
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


class ReplicaHealth(ABC):
    """A replica's state and failure schedule, without its transport.

    A kind of replica counts a failed attempt with :meth:`failed`, a working one with
    :meth:`answered`, a cancelled request with :meth:`cancelled`, waits its turn with
    :meth:`wait_turn`, and says how a down replica is probed in :meth:`probe_once`.
    """

    def __init__(self, host: ReplicaHost, where: str, policy: ReplicaPolicy) -> None:
        self.host = host
        self.where = where
        self.policy = policy
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
        self.latency_ms: deque[float] = deque(maxlen=policy.latency_samples)
        # Bumped by each counted failure. An attempt that fails counts only if no
        # failure was counted since it began: concurrent requests cannot speed up the
        # schedule by failing together.
        self.round = 0
        self.probing = False  # one background probe at a time, even across reset()

    @property
    def down(self) -> bool:
        return self.status == "down"

    def waiting(self, now: float) -> bool:
        """Waiting out a backoff or a server's ``Retry-After``: no attempt before
        ``retry_at``."""
        return self.status in WAITING and now < self.retry_at

    def idle_connections(self) -> int:
        return 0

    def stats(self) -> ReplicaStats:
        return ReplicaStats(
            address=self.where,
            status=self.status,
            retry_at=self.retry_at if self.status in (*WAITING, "down") else None,
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

    def cancelled(self, deadline: float) -> None:
        """A request to this replica was cancelled; ``deadline`` was its deadline when it
        was made. Only the deadline makes a timeout: a request dropped before it (a second
        Ctrl-C, a shutdown) says nothing about this replica."""
        if trio.current_time() >= deadline:
            self.timeouts += 1

    async def wait_turn(self) -> None:
        """Wait out this replica's backoff before an attempt; Skipped when another replica
        is ready meanwhile, Unreachable when it is down."""
        # A failure elsewhere (a new connection that broke) may move the backoff or take
        # the replica down while this waits: look again after every wait.
        while not self.down and trio.current_time() < self.retry_at:
            if self.status != "throttled":
                self.status = "backoff"
            if self.host.others_ready(self):
                # Picked while it looked fine, but a concurrent attempt just failed:
                # waiting here would spend the caller's deadline for nothing.
                raise Skipped(f"{self.where}: in {self.status} ({self.last_error})")
            await trio.sleep_until(self.retry_at)
        if self.down:
            raise Unreachable(f"{self.where}: down ({self.last_error})")

    def answered(self) -> None:
        """An attempt made on the schedule answered: the replica works (again)."""
        failures, self.failures = self.failures, 0
        self.retry_at = -math.inf
        self.status = "ok"
        if failures:
            self.host.replica_changed(self, ReplicaChanged(self.where, "ok", failures=failures))

    def throttled(self, wait_s: float, error: str) -> None:
        """The server asked for no requests for ``wait_s`` seconds (HTTP 429/503 with
        ``Retry-After``): none is sent before then, unless no other replica is ready and
        the caller's deadline allows the wait. Not a failure: the server is there, and
        busy; it never makes the replica down."""
        until = trio.current_time() + wait_s
        if self.down or (self.status == "throttled" and until <= self.retry_at):
            return
        self.retry_at = max(self.retry_at, until)
        self.status = "throttled"
        self.round += 1  # a reply to a request sent before this one does not end the wait
        self.host.replica_changed(self, ReplicaChanged(self.where, "throttled",
                                                       retry_in=wait_s, error=error))

    def reason(self, exc: BaseException) -> str:
        """A player error's text without this replica's address in front."""
        return str(exc).removeprefix(f"{self.where}: ")

    def failed(self, exc: PlayerError, attempt_round: int) -> None:
        """Count a failed attempt made in ``attempt_round``, unless a failure was counted
        since it started (attempts made together fail together: one step of backoff)."""
        if self.down:
            return
        if attempt_round != self.round:
            if trio.current_time() < self.retry_at and self.status != "throttled":
                self.status = "backoff"  # its connect had said "ok"; the round's failure holds
            return
        self.round += 1
        self.failures += 1
        self.last_error = self.reason(exc)
        delay = self._delay()
        self.retry_at = trio.current_time() + delay
        status: Literal["down", "backoff"] = \
            "down" if self.failures >= self.policy.max_failures else "backoff"
        self.status = status
        self.host.replica_changed(self, ReplicaChanged(
            self.where, status, retry_in=delay, error=self.last_error, failures=self.failures))

    def _delay(self) -> float:
        """The seed's schedule: 1.5 s after the first failure, 1.5 s more per failure, capped."""
        return min(self.policy.backoff_step * self.failures, self.policy.backoff_cap)

    async def probe(self) -> None:
        """While down: :meth:`probe_once` on the backoff schedule, until one answers."""
        self.probing = True
        try:
            await self._probe_until_up()
        finally:
            self.probing = False

    @abstractmethod
    async def probe_once(self) -> str:
        """One probe of a down replica: what answered (the event says it: ``answered
        PING``), or a PlayerError."""

    async def _probe_until_up(self) -> None:
        while self.down:
            await trio.sleep_until(self.retry_at)
            try:
                answered = await self.probe_once()
            except PlayerError as exc:
                self.failures += 1
                self.last_error = self.reason(exc)
                self.retry_at = trio.current_time() + self._delay()
                continue
            probes = self.failures - self.policy.max_failures + 1
            failures, self.failures = self.failures, 0
            self.retry_at = -math.inf
            self.status = "ok"
            self.host.replica_changed(self, ReplicaChanged(
                self.where, "ok", failures=failures, probes=probes, probe=answered))

    def reset(self) -> None:
        self.failures = 0
        self.retry_at = -math.inf
        if self.status in ("down", "backoff"):
            self.status = "idle"

    async def aclose(self) -> None:
        return None


class Replica(ReplicaHealth):
    """One GO19 replica: its idle connections over :class:`ReplicaHealth`'s schedule, the
    frame ``limits`` of its connections, and how long an idle one is kept."""

    def __init__(self, host: ReplicaHost, address: Address, policy: ReplicaPolicy,
                 limits: wire.Limits, max_idle: float = 30.0) -> None:
        super().__init__(host, format_address(address), policy)
        self.address = address
        self.limits = limits
        self.max_idle = max_idle
        self.idle: list[Go19Connection] = []
        self._lost_connection = False  # the next connect counts as a reconnect
        self._connect_lock = trio.Lock()

    def idle_connections(self) -> int:
        return len(self.idle)

    async def request(self, request: wire.Request) -> wire.MoveReply | wire.ErrorReply:
        self.requests += 1
        start = trio.current_time()
        deadline = trio.current_effective_deadline()
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
            self.cancelled(deadline)
            self._lost_connection = True
            raise
        except Skipped:
            raise
        except BaseException as exc:
            self.errors += 1
            self._lost_connection = True
            self.last_error = self.reason(exc)
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
                self.failed(exc, conn.round)
            raise
        if fresh and conn.round == self.round:
            # Only an attempt made on the schedule ends a backoff: a connection opened
            # before the last counted failure says nothing about the replica since.
            self.answered()
        return reply

    async def _checkout(self) -> Go19Connection:
        while self.idle:
            conn = self.idle.pop()
            quiet = conn.quiet()
            if quiet and trio.current_time() - conn.idle_since <= self.max_idle:
                return conn
            if not quiet:
                self._lost_connection = True  # replacing it is a reconnect
            await conn.aclose()
        return await self._connect()

    async def _checkin(self, conn: Go19Connection) -> None:
        if conn.closed:
            self._lost_connection = True
        elif self.host.closed:
            await conn.aclose()
        else:
            self.idle.append(conn)

    async def _connect(self) -> Go19Connection:
        """One connect attempt, after this replica's backoff; Unreachable if it fails.

        The endpoint then picks again, so a request waits out a backoff only when
        no other replica is free of one. The lock keeps one attempt at a time, so
        concurrent requests cannot speed up the schedule.
        """
        async with self._connect_lock:
            await self.wait_turn()
            self.status = "connecting"
            self.last_attempt = trio.current_time()
            attempt_round = self.round
            if self._lost_connection or self.failures:
                self.reconnects += 1
            try:
                with wire_errors(self.where), trio.fail_after(self.policy.connect_timeout):
                    conn = await Go19Connection.connect(*self.address, limits=self.limits)
            except ConnectionFailed as exc:
                self.failed(exc, attempt_round)
                raise Unreachable(str(exc)) from exc
            self._lost_connection = False
            self.status = "ok"
            conn.round = attempt_round
            return conn

    async def probe_once(self) -> str:
        """A connect and a PING; the answering connection joins the idle pool, so the
        replica serves at once."""
        with wire_errors(self.where), trio.fail_after(self.policy.connect_timeout):
            conn = await Go19Connection.connect(*self.address, limits=self.limits)
            await conn.ping()
        self.idle.append(conn)
        return "answered PING"

    async def aclose(self) -> None:
        idle, self.idle = self.idle, []
        for conn in idle:
            await conn.aclose()
