"""The replica pool behind one player: :class:`ReplicaPool`, whatever its replicas speak,
and GO19's :class:`Go19Endpoint` (the OpenAI player's is
:class:`~orchestrator.players.openai_pool.OpenAIEndpoint`).

A request goes to the least-loaded healthy replica; each replica reconnects on
its own schedule (1.5 s, 3 s, 4.5 s … capped at 15 s between attempts) and is
marked down after 6 consecutive failures. For GO19 a failure is a connect that fails,
or a new connection that breaks or sends garbage before its first reply (a server
that accepts and hangs up is as unusable as one that refuses); timeouts are the
caller's and do not count. A down replica is probed in the background (GO19: connect
and PING on the same schedule) when the pool has a nursery, and serves again
as soon as it answers; :meth:`ReplicaPool.wait_up` waits for that. An
``on_event`` callback hears each failure with its backoff, each replica marked
down or back up, and each reconnect after failures, as a
:class:`~orchestrator.events.ReplicaChanged` event (``player``: the pool's ``name``).
The connect timeout is the pool's own; callers bound a request with
``trio.move_on_after``. Each replica's own state and schedule live in
:mod:`~orchestrator.players.replica`; a replica tells its pool what changed through
the pool's two public hooks, :meth:`ReplicaPool.others_ready` and
:meth:`ReplicaPool.replica_changed` (the replica's ``ReplicaHost``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import replace
from typing import Generic, Self, TypeVar

import trio

from orchestrator.events import OnEvent, ReplicaChanged
from orchestrator.players.base import ConnectionFailed, EndpointDown
from orchestrator.players.connection import Address
from orchestrator.players.replica import (
    Replica,
    ReplicaHealth,
    ReplicaPolicy,
    ReplicaStats,
    Unreachable,
)
from orchestrator.protocol import go19 as wire

R = TypeVar("R", bound=ReplicaHealth)
T = TypeVar("T")


class ReplicaPool(Generic[R]):
    """The replicas of one player, whatever they speak.

    ``slots_per_replica`` bounds the requests in flight per healthy replica (one
    pool-wide ``CapacityLimiter``, resized when replicas go down or come back). A kind
    of pool builds its replicas with itself as their host, hands them over with
    :meth:`adopt`, and sends each request with :meth:`on_replica`. Use as ``async with``
    so that connections get closed.
    """

    def __init__(
        self,
        policy: ReplicaPolicy,
        *,
        slots_per_replica: int = 1,
        on_event: OnEvent | None = None,
        nursery: trio.Nursery | None = None,
        name: str | None = None,
    ) -> None:
        if slots_per_replica < 1:
            raise ValueError(f"slots_per_replica must be >= 1, not {slots_per_replica}")
        self.policy = policy
        self.slots_per_replica = slots_per_replica
        self.name = name
        self.on_event = on_event
        self.closed = False
        self._nursery = nursery
        self._probes: set[trio.CancelScope] = set()  # aclose cancels them
        self._up = trio.Event()  # set while some replica is not down
        self._up.set()
        self._replicas: list[R] = []
        self._limiter = trio.CapacityLimiter(slots_per_replica)

    def adopt(self, replicas: Sequence[R]) -> None:
        """The pool's replicas (once, from the constructor of a kind of pool)."""
        if not replicas:
            raise ValueError("a replica pool needs at least one replica")
        self._replicas = list(replicas)
        self._limiter.total_tokens = self.slots_per_replica * len(self._replicas)

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

    async def on_replica(self, call: Callable[[R], Awaitable[T]]) -> T:
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

    # -- the replicas' hooks (ReplicaHost) ---------------------------------------------

    def others_ready(self, replica: ReplicaHealth) -> bool:
        """Whether another replica could take a request now (not down, not in backoff)."""
        now = trio.current_time()
        return any(r is not replica and not r.down and not r.waiting(now)
                   for r in self._replicas)

    def replica_changed(self, replica: ReplicaHealth, event: ReplicaChanged) -> None:
        """A replica went into backoff, down, or works again: resize the slots, probe a
        down one in the background, and announce it."""
        self._health_changed()
        if event.status == "down":
            self._start_probe(replica)
        if self.on_event is not None:
            self.on_event(replace(event, player=self.name))

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
    """A pool of GO19 connections over the replicas of one adapter.

    ``slots_per_replica`` bounds the requests in flight per healthy replica.
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
        on_event: OnEvent | None = None,
        nursery: trio.Nursery | None = None,
        name: str | None = None,
    ) -> None:
        if not replicas:
            raise ValueError("a GO19 endpoint needs at least one replica")
        policy = ReplicaPolicy(
            connect_timeout=connect_timeout, max_failures=max_failures,
            backoff_step=backoff_step, backoff_cap=backoff_cap, latency_samples=latency_samples,
        )
        super().__init__(policy, slots_per_replica=slots_per_replica, on_event=on_event,
                         nursery=nursery, name=name)
        limits = limits or wire.Limits()
        if allowed_sizes is not None:
            limits = replace(limits, allowed_sizes=frozenset(allowed_sizes))
        self.limits = limits
        self.adopt([Replica(self, (host, int(port)), policy, limits, max_idle)
                    for host, port in replicas])

    async def request(self, request: wire.Request) -> wire.MoveReply | wire.ErrorReply:
        """Send one request to the least-loaded healthy replica and return its reply.

        Raises ConnectionFailed, ProtocolViolation, or EndpointDown when every replica is down.
        """
        return await self.on_replica(lambda replica: replica.request(request))
