"""The OpenAI player's HTTP exchanges (HTTP/1.1 over trio, h11 as the sans-IO protocol), and
the one place where HTTP failures become player errors:

==================================================== ================================
what happened                                        player error (fallback reason)
==================================================== ================================
no TCP connection (refused, unreachable, connect     :class:`CannotConnect`
timed out)                                           (``connection``)
the connection reset or closed before the reply      ``ConnectionFailed`` (``connection``)
ended
HTTP 429, or 503 with ``Retry-After``                :class:`Throttled` (``error``): the
                                                     replica waits, others take its load
another HTTP status other than 2xx                   ``RefusedMove`` (``error``), with
                                                     the status and the server's message
a body over the bound, or not HTTP at all            ``ProtocolViolation`` (``protocol``)
==================================================== ================================

**A reply belongs to its request: one connection per request.** HTTP/1.1 carries no
request id: on a kept-alive connection a response is taken as the answer to the oldest
request outstanding, so a server (or proxy) that sends one response too many shifts every
later answer onto the wrong request. Unread bytes after a reply, or bytes that arrive on
an idle connection, can be caught before reuse; a stray that arrives after the next
request was sent cannot (measured in docs/reliability.md: with those checks, 63 of 120
replies were another request's when the stray came 50 ms late). So every request opens
its own connection, says ``Connection: close``, reads its one response and closes; what
else the server sends on it is never read. The cost, measured with
``bench/openai_player.py``: about 0.4 ms more CPU per request on each side and one more
round trip (a TLS handshake on ``https``), beside a model's 100–500 ms. Asking the server to
close first leaves the TCP ``TIME_WAIT`` on its side (499 of 500 requests measured), so the
client's ephemeral ports are not used up at hundreds of requests per second.

Nothing here takes a deadline for a request: the referee's ``move_on_at`` cancels it
(and the connection with it), which the referee counts as a ``timeout``. Only connects
are bounded here (``connect_timeout``), and :func:`list_models` by its own wait.

Connections come from a :class:`Transport`: :class:`TcpTransport` (TCP, TLS for
``https``) unless the caller gives another (the tests' in-memory one).

Why h11 and not httpx (which the first version used): the player asks one small request
and reads one small reply per move, from servers it names itself, with no proxy, cookie,
redirect or decoder. httpx's transport and httpcore's pool cost about 0.35 ms of CPU per
request more than this client and wrote each request's head and body in two sends; here a
request is one ``send_all``.
"""

from __future__ import annotations

import email.utils
import ipaddress
import math
import socket
import ssl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import h11
import trio

from orchestrator.players.address import format_address, parse_base_url
from orchestrator.players.base import (
    ConnectionFailed,
    PlayerError,
    ProtocolViolation,
    RefusedMove,
)
from orchestrator.players.connection import describe as socket_reason
from orchestrator.players.openai_wire import BadCompletion, error_message, model_names

MAX_REPLY_BYTES = 1 << 20  # a completion of a few tokens is under 2 KiB
MAX_RETRY_AFTER_S = 60.0  # a longer Retry-After is waited in steps of this
RECEIVE_BYTES = 65536
JSON_HEADERS = (("content-type", "application/json"),)
Headers = tuple[tuple[str, str], ...]


class CannotConnect(ConnectionFailed):
    """No connection could be opened: the server is not there (try another replica)."""


class Throttled(RefusedMove):
    """HTTP 429 (or 503 with ``Retry-After``): the server asks for no requests for
    ``wait_s`` seconds (None: it said not how long)."""

    def __init__(self, message: str, wait_s: float | None) -> None:
        super().__init__(message)
        self.wait_s = wait_s


def request_headers(api_key: str | None) -> Headers:
    """The headers of every request: JSON, and the API key when there is one (go19
    writes it nowhere; :class:`~orchestrator.players.openai_pool.HttpLink` keeps it out
    of its repr)."""
    return JSON_HEADERS + ((("authorization", f"Bearer {api_key}"),) if api_key else ())


@dataclass(frozen=True, slots=True)
class Target:
    """Where a request goes: the origin and the path, parsed once."""

    scheme: str
    host: str
    port: int
    path: str

    @classmethod
    def of(cls, url: str) -> Target:
        base = parse_base_url(url)
        return cls(base.scheme, base.host, base.port, base.path or "/")

    @property
    def authority(self) -> str:
        return format_address((self.host, self.port))


class Transport(Protocol):
    """Where connections come from."""

    async def connect(self, target: Target, timeout: float, where: str) -> trio.abc.Stream:
        """A new connection to ``target`` within ``timeout`` seconds, or CannotConnect
        (its text begins with ``where``)."""
        ...


class TcpTransport:
    """TCP connections, TLS for ``https`` (the system's trusted certificates)."""

    def __init__(self) -> None:
        self._ssl: ssl.SSLContext | None = None

    async def connect(self, target: Target, timeout: float, where: str) -> trio.abc.Stream:
        try:
            with trio.fail_after(timeout):
                stream: trio.abc.Stream = await _open_tcp(target.host, target.port)
                if target.scheme == "https":
                    if self._ssl is None:
                        self._ssl = ssl.create_default_context()
                    tls = trio.SSLStream(stream, self._ssl, server_hostname=target.host,
                                         https_compatible=True)
                    await tls.do_handshake()
                    stream = tls
        except trio.TooSlowError:
            raise CannotConnect(f"{where}: connect timed out") from None
        except (socket.gaierror, UnicodeError) as exc:  # the name, not the network
            said = exc.strerror if isinstance(exc, socket.gaierror) else None
            raise CannotConnect(f"{where}: bad host name"
                                f"{': ' + said.lower() if said else ''}") from exc
        except (OSError, trio.BrokenResourceError, ssl.SSLError) as exc:
            raise CannotConnect(f"{where}: {socket_reason(exc)}") from exc
        return stream


async def _open_tcp(host: str, port: int) -> trio.SocketStream:
    """A TCP connection to ``host``. An IP address (a replica's usual spelling) is
    connected to directly: trio's ``open_tcp_stream`` (name lookup, happy eyeballs in a
    nursery of its own) cost about a sixth of the player's CPU per request, measured with
    ``bench/openai_player.py``. A name goes through it as before."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return await trio.open_tcp_stream(host, port)
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    sock = trio.socket.socket(family, socket.SOCK_STREAM)
    try:
        await sock.connect((host, port))
    except BaseException:
        sock.close()
        raise
    return trio.SocketStream(sock)


@dataclass(frozen=True, slots=True)
class HttpReply:
    status: int
    body: bytes
    retry_after: float | None = None  # seconds, from a Retry-After header


class HttpClient:
    """HTTP/1.1 requests, each on a connection of its own (:data:`__doc__` says why),
    from ``transport`` (default :class:`TcpTransport`)."""

    def __init__(self, transport: Transport | None = None) -> None:
        self.transport: Transport = transport if transport is not None else TcpTransport()

    async def request(self, method: str, target: Target, path: str, headers: Headers,
                      body: bytes, *, connect_timeout: float, where: str,
                      limit: int = MAX_REPLY_BYTES) -> HttpReply:
        """Send one request; its status and body (at most ``limit`` bytes), or a player
        error (:data:`__doc__`'s table, but for the status: the caller's)."""
        stream = await self.transport.connect(target, connect_timeout, where)
        try:
            with http_errors(where):
                return await _exchange(stream, method, target, path, headers, body, where,
                                       limit)
        finally:
            await trio.aclose_forcefully(stream)


async def _exchange(stream: trio.abc.Stream, method: str, target: Target, path: str,
                    headers: Headers, body: bytes, where: str, limit: int) -> HttpReply:
    protocol = h11.Connection(h11.CLIENT)
    head = [("host", target.authority), *headers, ("content-length", str(len(body))),
            ("connection", "close")]
    data = protocol.send(h11.Request(method=method, target=path, headers=head))
    if body:
        data += protocol.send(h11.Data(data=body))
    data += protocol.send(h11.EndOfMessage())
    await stream.send_all(data)  # the head and the body in one send
    response: h11.Response | None = None
    reply = bytearray()
    while True:
        event = protocol.next_event()
        if event is h11.NEED_DATA:
            chunk = await stream.receive_some(RECEIVE_BYTES)
            if not chunk and response is None and protocol.their_state is h11.SEND_RESPONSE:
                raise ConnectionFailed(f"{where}: the server closed the connection "
                                       "without replying")
            protocol.receive_data(bytes(chunk))
        elif isinstance(event, h11.Response):
            response = event
            declared = _header(event, b"content-length")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                raise ProtocolViolation(f"{where}: reply of {int(declared)} bytes, over the "
                                        f"{limit}-byte bound")
        elif isinstance(event, h11.Data):
            reply += event.data
            if len(reply) > limit:
                raise ProtocolViolation(f"{where}: reply over the {limit}-byte bound")
        elif isinstance(event, h11.EndOfMessage):
            assert response is not None  # h11 orders the events
            return HttpReply(response.status_code, bytes(reply),
                             retry_after(_header(response, b"retry-after")))
        elif isinstance(event, h11.ConnectionClosed):
            raise ConnectionFailed(f"{where}: the server closed the connection mid-reply")
        # InformationalResponse (100 Continue): read on


def _header(response: h11.Response, name: bytes) -> bytes | None:
    return dict(response.headers).get(name)


def retry_after(value: bytes | None, now: float | None = None) -> float | None:
    """A ``Retry-After`` header in seconds from ``now`` (the wall clock: an HTTP date is
    one), at most :data:`MAX_RETRY_AFTER_S`; None when absent or unreadable."""
    if value is None:
        return None
    text = value.decode("latin-1").strip()
    if text.isdigit():
        seconds = float(text)
    else:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:  # RFC 9110 dates are GMT
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


@contextmanager
def http_errors(where: str) -> Iterator[None]:
    """The one place where the socket's and h11's failures become go19 player errors."""
    try:
        yield
    except h11.RemoteProtocolError as exc:
        text = str(exc).rstrip(".")
        if "peer closed" in text.lower():
            raise ConnectionFailed(f"{where}: the server closed the connection mid-reply") \
                from exc
        raise ProtocolViolation(f"{where}: not an HTTP reply ({text})") from exc
    except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        raise ConnectionFailed(f"{where}: {socket_reason(exc)}") from exc


async def exchange(client: HttpClient, method: str, target: Target, path: str,
                   headers: Headers, body: bytes, *, connect_timeout: float, where: str,
                   limit: int = MAX_REPLY_BYTES) -> bytes:
    """Send one request; the 2xx body (at most ``limit`` bytes) or a player error."""
    reply = await client.request(method, target, path, headers, body,
                                 connect_timeout=connect_timeout, where=where, limit=limit)
    status = reply.status
    if 200 <= status < 300:
        return reply.body
    said = f"{where}: HTTP {status}: {error_message(reply.body)}"
    if status == 429 or (status == 503 and reply.retry_after is not None):
        wait = reply.retry_after
        raise Throttled(said + (f" (retry after {wait:g} s)" if wait is not None else ""), wait)
    raise RefusedMove(said)


async def fetch_models(client: HttpClient, base_url: str, headers: Headers,
                       connect_timeout: float) -> list[str]:
    """``GET /v1/models``: the names a server lists (its base model and LoRA modules)."""
    target = Target.of(base_url)
    body = await exchange(client, "GET", target, target.path.rstrip("/") + "/models",
                          headers, b"", connect_timeout=connect_timeout, where=base_url)
    try:
        return model_names(body)
    except BadCompletion as exc:
        raise ProtocolViolation(f"{base_url}: {exc}") from None


async def list_models(base_url: str, *, api_key: str | None = None,
                      timeout: float = 5.0) -> list[str]:
    """The names ``base_url`` lists, within ``timeout`` seconds (a ConnectionFailed
    naming the wait past it); for the preflight and ``go19 ping``."""
    with trio.move_on_after(timeout):
        return await fetch_models(HttpClient(), base_url, request_headers(api_key), timeout)
    raise ConnectionFailed(f"{base_url}: no answer within {timeout:g} s")


async def check_model(base_url: str, model: str | None, *, api_key: str | None = None,
                      timeout: float = 5.0) -> tuple[bool, str, float, list[str]]:
    """One model list as a check (``go19 ping``, the play page's server rows): ok, what
    it says (the failure, ``serves MODEL``, or without ``model`` how many it lists), the
    milliseconds, and without ``model`` the names listed."""
    start = trio.current_time()
    try:
        names = await list_models(base_url, api_key=api_key, timeout=timeout)
    except PlayerError as exc:
        reason = str(exc).removeprefix(f"{base_url}: ")
        return False, reason, (trio.current_time() - start) * 1000, []
    ms = (trio.current_time() - start) * 1000
    if model is None:
        return True, f"{len(names)} model{'' if len(names) == 1 else 's'}", ms, names
    missing = model_missing(model, base_url, names)
    if missing is not None:
        return False, missing.removeprefix(f"{base_url}: "), ms, []
    return True, f"serves {model}", ms, []


def model_missing(model: str, where: str, names: list[str]) -> str | None:
    """None when ``model`` is among ``names``, else the line that says what is served
    (the usual vLLM mistake: the adapter is not in ``--lora-modules``)."""
    if model in names:
        return None
    listed = ", ".join(names) if names else "no model at all"
    return f"{where}: model {model!r} is not served; it lists {listed}"
