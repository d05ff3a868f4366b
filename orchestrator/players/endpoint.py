"""The replica pool behind one player: :class:`ReplicaPool`, and GO19's
:class:`Go19Endpoint` (the OpenAI player's is :mod:`~orchestrator.players.openai_pool`).

A request goes to the least-loaded healthy replica; each replica reconnects on
its own schedule (1.5 s, 3 s, 4.5 s … capped at 15 s between attempts) and is
marked down after 6 consecutive failures. For GO19 a failure is a connect that fails,
or a new connection that breaks or sends garbage before its first reply (a server
that accepts and hangs up is as unusable as one that refuses); timeouts are the
caller's and do not count. A down replica is probed in the background (GO19: connect
and PING on the same schedule) when the endpoint has a nursery, and serves again
as soon as it answers; :meth:`ReplicaPool.wait_up` waits for that. An
``on_event`` callback hears each failure with its backoff, each replica marked
down or back up, and each reconnect after failures, as one line naming the replica.
The connect timeout is the pool's own; callers bound a request with
``trio.move_on_after``. Each replica's own state and schedule live in
:mod:`~orchestrator.players.replica`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import replace
from typing import Generic, Self, TypeVar

import trio

from orchestrator.players.base import ConnectionFailed, EndpointDown
from orchestrator.players.connection import Address
from orchestrator.players.replica import Replica, ReplicaHealth, ReplicaStats, Unreachable
from orchestrator.protocol import go19 as wire

R = TypeVar("R", bound=ReplicaHealth)
T = TypeVar("T")


class ReplicaPool(Generic[R]):
    """The replicas of one player, whatever they speak.

    ``slots_per_replica`` bounds the requests in flight per healthy replica (one
    pool-wide ``CapacityLimiter``, resized when replicas go down or come back).
    Subclasses hand their replicas to :meth:`_adopt` and send a request with
    :meth:`_on_replica`. Use as ``async with`` so that connections get closed.
    """

    def __init__(
        self,
        *,
        slots_per_replica: int = 1,
        connect_timeout: float = 5.0,
        max_failures: int = 6,
        backoff_step: float = 1.5,
        backoff_cap: float = 15.0,
        latency_samples: int = 256,
        on_event: Callable[[str], None] | None = None,
        nursery: trio.Nursery | None = None,
    ) -> None:
        if slots_per_replica < 1:
            raise ValueError(f"slots_per_replica must be >= 1, not {slots_per_replica}")
        self.slots_per_replica = slots_per_replica
        self.connect_timeout = connect_timeout
        self.max_failures = max_failures
        self.backoff_step = backoff_step
        self.backoff_cap = backoff_cap
        self.latency_samples = latency_samples
        self.on_event = on_event
        self.closed = False
        self._nursery = nursery
        self._probes: set[trio.CancelScope] = set()  # aclose cancels them
        self._up = trio.Event()  # set while some replica is not down
        self._up.set()
        self._replicas: list[R] = []
        self._limiter = trio.CapacityLimiter(slots_per_replica)

    def _adopt(self, replicas: list[R]) -> None:
        self._replicas = replicas
        self._limiter.total_tokens = self.slots_per_replica * len(replicas)

    @property
    def addresses(self) -> list[str]:
        return [r.where for r in self._replicas]

    def __str__(self) -> str:
        return ",".join(self.addresses)

    @property
    def queued(self) -> int:
        """Requests waiting for a slot (every replica's slots are busy)."""
        return self._limiter.statistics().tasks_waiting

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

    async def _on_replica(self, call: Callable[[R], Awaitable[T]]) -> T:
        """``call(replica)`` on the least-loaded healthy replica, within the slots; a
        replica that raises Unreachable gives way to the next one.

        Raises what ``call`` raises, ConnectionFailed when every replica was tried, or
        EndpointDown when every replica is down.
        """
        if self.closed:
            raise ConnectionFailed(f"{self}: endpoint closed")
        self._check_up()  # fail fast, without queueing, when everything is down
        async with self._limiter:
            self._check_up()  # again: replicas may have gone down while we queued
            tried: list[R] = []
            while True:
                replica = self._pick(tried)
                replica.in_flight += 1
                try:
                    return await call(replica)
                except Unreachable as exc:
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

    def _pick(self, tried: list[R]) -> R:
        candidates = [r for r in self._replicas if not r.down and r not in tried]
        now = trio.current_time()
        # Prefer replicas not waiting out a backoff (else the one whose backoff ends first),
        # then the least loaded, then the least used. A replica whose backoff is over is
        # due its next attempt and competes like the others: that is how it comes back.
        return min(candidates, key=lambda r: (
            r.waiting(now), r.retry_at if r.waiting(now) else 0.0, r.in_flight, r.requests,
        ))

    def _ready_besides(self, replica: ReplicaHealth) -> bool:
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

    def _start_probe(self, replica: ReplicaHealth) -> None:
        if self._nursery is not None and not self.closed and not replica.probing:
            self._nursery.start_soon(self._probe, replica)

    async def _probe(self, replica: ReplicaHealth) -> None:
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

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class Go19Endpoint(ReplicaPool[Replica]):
    """A pool of GO19 connections over the replicas of one adapter."""

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
        super().__init__(
            slots_per_replica=slots_per_replica, connect_timeout=connect_timeout,
            max_failures=max_failures, backoff_step=backoff_step, backoff_cap=backoff_cap,
            latency_samples=latency_samples, on_event=on_event, nursery=nursery,
        )
        self.limits = limits or wire.Limits()
        if allowed_sizes is not None:
            self.limits = replace(self.limits, allowed_sizes=frozenset(allowed_sizes))
        self.max_idle = max_idle
        self._adopt([Replica(self, (host, int(port))) for host, port in replicas])

    async def request(self, request: wire.Request) -> wire.MoveReply | wire.ErrorReply:
        """Send one request to the least-loaded healthy replica and return its reply.

        Raises ConnectionFailed, ProtocolViolation, or EndpointDown when every replica is down.
        """
        return await self._on_replica(lambda replica: replica.request(request))
