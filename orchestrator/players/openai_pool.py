"""The replicas of one OpenAI-compatible player: :class:`OpenAIEndpoint`, a
:class:`~orchestrator.players.endpoint.ReplicaPool` over HTTP replicas.

The pool's policy is GO19's (slots per replica, least-loaded pick, the 1.5 s … 15 s
backoff, down after 6 consecutive failures, a background probe while down); what differs
is what a failure and a probe are. A failure is a request that could not connect (the
pool then tries the next replica at once, as GO19 does after a failed connect): that is
how a server that died or restarts shows. A connection reset or closed mid-request is
that request's ``connection`` fault but not the replica's failure: one stray reset must
not hold every request back for a backoff. Any HTTP reply, even a 500, says the server is
there (``error`` is the request's fault). Timeouts are the caller's and count only at the
request's deadline, as GO19's. The probe of a down replica is ``GET /v1/models``, and it
succeeds only when the player's model is listed, so a server that came back without the
adapter stays out of the rotation.

A server that answers HTTP 429 (or 503 with ``Retry-After``) asks for a pause: the replica
is ``throttled`` for the time it says (1.5 s when it says none, at most 60 s), no request
is sent there meanwhile, and the request it refused goes at once to another replica that
is ready; with none ready it waits out the pause within its own deadline and is asked once
more there (the same question: requests are seeded), a second refusal being its ``error``.

One :class:`~orchestrator.players.openai_http.HttpClient` serves every replica, a
connection per request (openai_http says why); the API key, when given, travels in the
requests' headers and nowhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import trio

from orchestrator.events import OnEvent
from orchestrator.players.base import ConnectionFailed, PlayerError, ProtocolViolation
from orchestrator.players.endpoint import ReplicaPool
from orchestrator.players.openai_http import (
    MAX_REPLY_BYTES,
    CannotConnect,
    Headers,
    HttpClient,
    Target,
    Throttled,
    Transport,
    exchange,
    fetch_models,
    model_missing,
    request_headers,
)
from orchestrator.players.openai_wire import BadCompletion, Completion, read_completion
from orchestrator.players.replica import (
    ReplicaHealth,
    ReplicaHost,
    ReplicaPolicy,
    Skipped,
    Unreachable,
)


@dataclass(frozen=True, slots=True)
class Reply:
    """A chat completion, the replica that sent it and its round trip (no time queued for
    a slot)."""

    replica: str
    completion: Completion
    latency_ms: float


@dataclass(frozen=True, slots=True)
class HttpLink:
    """What the HTTP replicas of one endpoint share: the client (its transport), the
    headers (the API key), the connect timeout, the bound on a reply, and the model a
    probe looks for."""

    client: HttpClient
    headers: Headers = field(repr=False)  # the API key: in no repr
    model: str
    connect_timeout: float = 5.0
    max_reply_bytes: int = MAX_REPLY_BYTES


class HttpReplica(ReplicaHealth):
    """One OpenAI-compatible server (``base_url`` ends in ``/v1``)."""

    def __init__(self, host: ReplicaHost, base_url: str, policy: ReplicaPolicy,
                 link: HttpLink) -> None:
        super().__init__(host, base_url.rstrip("/"), policy)
        self.link = link
        self._target = Target.of(self.where)
        self._completions = self._target.path.rstrip("/") + "/chat/completions"

    async def complete(self, body: bytes) -> Reply:
        self.requests += 1
        deadline = trio.current_effective_deadline()
        for last in (False, True):
            try:
                await self.wait_turn()
            except trio.Cancelled:
                self.cancelled(deadline)  # the deadline may come while it is waiting
                raise
            try:
                return await self._attempt(body, deadline)
            except Throttled as exc:
                self.throttled(self.policy.backoff_step if exc.wait_s is None else exc.wait_s,
                               self.reason(exc))
                if last:
                    raise
                if self.host.others_ready(self):
                    raise Skipped(str(exc)) from exc  # the pool asks another replica now
        raise AssertionError("unreachable")

    async def _attempt(self, body: bytes, deadline: float) -> Reply:
        attempt_round = self.round
        link = self.link
        start = trio.current_time()
        self.last_attempt = start
        if self.failures:
            self.reconnects += 1
        try:
            reply = await exchange(link.client, "POST", self._target, self._completions,
                                   link.headers, body, connect_timeout=link.connect_timeout,
                                   where=self.where, limit=link.max_reply_bytes)
            try:
                completion = read_completion(reply)
            except BadCompletion as exc:
                raise ProtocolViolation(f"{self.where}: {exc}") from None
        except trio.Cancelled:
            self.cancelled(deadline)
            raise
        except CannotConnect as exc:
            self.errors += 1
            self.last_error = self.reason(exc)
            self.failed(exc, attempt_round)
            raise Unreachable(str(exc)) from exc
        except PlayerError as exc:
            self.errors += 1
            self.last_error = self.reason(exc)
            if isinstance(exc, Throttled):
                raise
            if not isinstance(exc, ConnectionFailed) and attempt_round == self.round:
                self.answered()  # the server is there; the reply was the request's fault
            raise
        latency = (trio.current_time() - start) * 1000.0
        self.latency_ms.append(latency)
        if attempt_round == self.round:
            # Only an attempt made on the schedule ends a backoff: a request sent before
            # the last counted failure says nothing about the replica since.
            self.answered()
        return Reply(self.where, completion, latency)

    async def probe_once(self) -> str:
        link = self.link
        wait = self.policy.connect_timeout
        with trio.move_on_after(wait) as scope:
            names = await fetch_models(link.client, self.where, link.headers, wait)
        if scope.cancelled_caught:
            raise ConnectionFailed(f"{self.where}: no answer within {wait:g} s")
        missing = model_missing(link.model, self.where, names)
        if missing is not None:
            raise ProtocolViolation(missing)
        return f"lists {link.model}"


class OpenAIEndpoint(ReplicaPool[HttpReplica]):
    """The replicas (base URLs such as ``http://10.0.0.5:8000/v1``) serving ``model``.

    Use as ``async with OpenAIEndpoint(...) as endpoint`` so that the connections close.
    """

    def __init__(
        self,
        base_urls: Sequence[str],
        model: str,
        *,
        api_key: str | None = None,
        slots_per_replica: int = 1,
        connect_timeout: float = 5.0,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        transport: Transport | None = None,
        max_failures: int = 6,
        backoff_step: float = 1.5,
        backoff_cap: float = 15.0,
        latency_samples: int = 256,
        on_event: OnEvent | None = None,
        nursery: trio.Nursery | None = None,
        name: str | None = None,
    ) -> None:
        if not base_urls:
            raise ValueError("an OpenAI endpoint needs at least one base URL")
        policy = ReplicaPolicy(
            connect_timeout=connect_timeout, max_failures=max_failures,
            backoff_step=backoff_step, backoff_cap=backoff_cap, latency_samples=latency_samples,
        )
        super().__init__(policy, slots_per_replica=slots_per_replica, on_event=on_event,
                         nursery=nursery, name=name)
        self.model = model
        self.link = HttpLink(
            client=HttpClient(transport), headers=request_headers(api_key),
            model=model, connect_timeout=connect_timeout, max_reply_bytes=max_reply_bytes,
        )
        self.adopt([HttpReplica(self, url, policy, self.link) for url in base_urls])

    async def complete(self, body: bytes) -> Reply:
        """``POST /chat/completions`` with ``body`` on the least-loaded healthy replica, and
        its completion read.

        Raises ProtocolViolation for a body that is not a completion, the player errors
        of :mod:`~orchestrator.players.openai_http`, or EndpointDown when every replica is
        down.
        """
        return await self.on_replica(lambda replica: replica.complete(body))
