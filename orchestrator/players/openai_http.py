"""The OpenAI player's HTTP exchanges (HTTP/1.1 keep-alive over trio, h11 as the sans-IO
protocol), and the one place where HTTP failures become player errors:

==================================================== ================================
what happened                                        player error (fallback reason)
==================================================== ================================
no TCP connection (refused, unreachable, connect     :class:`CannotConnect`
timed out)                                           (``connection``)
the connection reset or closed before the reply      ``ConnectionFailed`` (``connection``)
ended
an HTTP status other than 2xx                        ``RefusedMove`` (``error``), with
                                                     the status and the server's message
a body over the bound, or not HTTP at all            ``ProtocolViolation`` (``protocol``)
==================================================== ================================

Nothing here takes a deadline for a request: the referee's ``move_on_at`` cancels it
(and the connection with it), which the referee counts as a ``timeout``. Only connects
are bounded here (``connect_timeout``), and :func:`list_models` by its own wait.

Why h11 and not httpx (which the first version used): the player asks one small request
and reads one small reply per move, from servers it names itself, with no proxy, cookie,
redirect or decoder. httpx's transport and httpcore's pool cost about 0.35 ms of CPU per
request more than this client (0.69 against 0.36 ms per request, measured with
``bench/openai_player.py``), a third of the 1 ms a move may cost, and wrote each
request's head and body in two sends. Here a request is one ``send_all``; idle
connections wait in a list per client and one the server closed meanwhile is dropped
before use (it reads as readable).
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

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
RECEIVE_BYTES = 65536
JSON_HEADERS = (("content-type", "application/json"),)
Headers = tuple[tuple[str, str], ...]


class CannotConnect(ConnectionFailed):
    """No connection could be opened: the server is not there (try another replica)."""


def request_headers(api_key: str | None) -> Headers:
    """The headers of every request: JSON, and the API key when there is one (go19
    writes it nowhere; :class:`HttpLink` keeps it out of its repr)."""
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
    def origin(self) -> tuple[str, str, int]:
        return self.scheme, self.host, self.port

    @property
    def authority(self) -> str:
        return format_address((self.host, self.port))


@dataclass(eq=False)
class _Connection:
    stream: trio.abc.Stream
    protocol: h11.Connection = field(default_factory=lambda: h11.Connection(h11.CLIENT))

    def reusable(self) -> bool:
        """Idle and not closed by the server meanwhile (an idle keep-alive socket with
        something to read has been closed, or has sent what nobody asked for)."""
        sock = getattr(self.stream, "socket", None)
        if sock is None:  # TLS: the transport's socket
            sock = getattr(getattr(self.stream, "transport_stream", None), "socket", None)
        return sock is None or not sock.is_readable()


class HttpClient:
    """Keep-alive HTTP/1.1 connections to any number of origins, up to ``keep`` idle ones
    per origin; a request that does not finish (cancelled, failed, over its bound)
    closes its connection. Close it with :meth:`aclose`."""

    def __init__(self, keep: int = 1) -> None:
        self.keep = keep
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._ssl: ssl.SSLContext | None = None

    async def _connect(self, target: Target, timeout: float, where: str) -> _Connection:
        idle = self._idle.get(target.origin)
        while idle:
            connection = idle.pop()
            if connection.reusable():
                return connection
            await trio.aclose_forcefully(connection.stream)
        try:
            with trio.fail_after(timeout):
                stream: trio.abc.Stream = await trio.open_tcp_stream(target.host, target.port)
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
        return _Connection(stream)

    async def request(self, method: str, target: Target, path: str, headers: Headers,
                      body: bytes, *, connect_timeout: float, where: str,
                      limit: int = MAX_REPLY_BYTES) -> tuple[int, bytes]:
        """Send one request; its status and body (at most ``limit`` bytes), or a player
        error (:data:`__doc__`'s table, but for the status: the caller's)."""
        connection = await self._connect(target, connect_timeout, where)
        done = False
        try:
            with http_errors(where):
                status, reply = await _exchange(connection, method, target, path, headers,
                                                body, where, limit)
            done = True
        finally:
            if not (done and self._keep(target, connection)):
                await trio.aclose_forcefully(connection.stream)
        return status, reply

    def _keep(self, target: Target, connection: _Connection) -> bool:
        """Put a connection whose exchange ended cleanly back among the idle ones."""
        protocol = connection.protocol
        if protocol.our_state is not h11.DONE or protocol.their_state is not h11.DONE:
            return False  # the server said it closes (Connection: close), or HTTP/1.0
        idle = self._idle.setdefault(target.origin, [])
        if len(idle) >= self.keep:
            return False
        protocol.start_next_cycle()
        idle.append(connection)
        return True

    async def aclose(self) -> None:
        idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                await trio.aclose_forcefully(connection.stream)


async def _exchange(connection: _Connection, method: str, target: Target, path: str,
                    headers: Headers, body: bytes, where: str,
                    limit: int) -> tuple[int, bytes]:
    protocol, stream = connection.protocol, connection.stream
    head = [("host", target.authority), *headers, ("content-length", str(len(body)))]
    data = protocol.send(h11.Request(method=method, target=path, headers=head))
    if body:
        data += protocol.send(h11.Data(data=body))
    data += protocol.send(h11.EndOfMessage())
    await stream.send_all(data)  # the head and the body in one send
    status = 0
    reply = bytearray()
    while True:
        event = protocol.next_event()
        if event is h11.NEED_DATA:
            chunk = await stream.receive_some(RECEIVE_BYTES)
            if not chunk and status == 0 and protocol.their_state is h11.SEND_RESPONSE:
                raise ConnectionFailed(f"{where}: the server closed the connection "
                                       "without replying")
            protocol.receive_data(bytes(chunk))
        elif isinstance(event, h11.Response):
            status = event.status_code
            declared = dict(event.headers).get(b"content-length")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                raise ProtocolViolation(f"{where}: reply of {int(declared)} bytes, over the "
                                        f"{limit}-byte bound")
        elif isinstance(event, h11.Data):
            reply += event.data
            if len(reply) > limit:
                raise ProtocolViolation(f"{where}: reply over the {limit}-byte bound")
        elif isinstance(event, h11.EndOfMessage):
            return status, bytes(reply)
        elif isinstance(event, h11.ConnectionClosed):
            raise ConnectionFailed(f"{where}: the server closed the connection mid-reply")
        # InformationalResponse (100 Continue): read on


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
    status, reply = await client.request(method, target, path, headers, body,
                                         connect_timeout=connect_timeout, where=where,
                                         limit=limit)
    if not 200 <= status < 300:
        raise RefusedMove(f"{where}: HTTP {status}: {error_message(reply)}")
    return reply


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
    """The names ``base_url`` lists, on a connection of its own, within ``timeout`` seconds
    (a ConnectionFailed naming the wait past it); for the preflight and ``go19 ping``."""
    client = HttpClient()
    try:
        with trio.move_on_after(timeout):
            return await fetch_models(client, base_url, request_headers(api_key), timeout)
    finally:
        await client.aclose()
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
