"""The OpenAI player's HTTP exchanges (httpx, on trio through anyio), and the one place
where HTTP failures become player errors:

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
are bounded here (:func:`timeouts`), and :func:`list_models` by its own wait.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx2 as httpx
import trio

from orchestrator.players.base import (
    ConnectionFailed,
    PlayerError,
    ProtocolViolation,
    RefusedMove,
)
from orchestrator.players.connection import describe as socket_reason
from orchestrator.players.openai_wire import BadCompletion, error_message, model_names

MAX_REPLY_BYTES = 1 << 20  # a completion of a few tokens is under 2 KiB
JSON_HEADERS = (("content-type", "application/json"),)


class CannotConnect(ConnectionFailed):
    """No connection could be opened: the server is not there (try another replica)."""


def request_headers(api_key: str | None) -> tuple[tuple[str, str], ...]:
    """The headers of every request: JSON, and the API key when there is one (httpx masks
    it in its reprs; go19 writes it nowhere)."""
    return JSON_HEADERS + ((("authorization", f"Bearer {api_key}"),) if api_key else ())


def make_transport(connections: int) -> httpx.AsyncHTTPTransport:
    """HTTP/1.1 keeping up to ``connections`` connections alive. httpx's transport, not its
    client: the client's layers (URL merging, cookies, auth flow, redirects, decoders) were
    a fifth of the player's CPU per request in a profile and do nothing for it; no proxy
    is configured, so a LAN server is reached directly."""
    return httpx.AsyncHTTPTransport(
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        retries=0,
    )


def timeouts(connect: float) -> dict[str, float | None]:
    """A request's timeouts: the connect only; the caller's deadline bounds the rest."""
    return {"connect": connect, "read": None, "write": None, "pool": None}


@contextmanager
def http_errors(where: str) -> Iterator[None]:
    """The one place where httpx's failures become go19 player errors."""
    try:
        yield
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise CannotConnect(f"{where}: {_reason(exc)}") from exc
    except httpx.RemoteProtocolError as exc:
        text = str(exc).rstrip(".")
        if "disconnect" in text.lower() or "closed" in text.lower():
            raise ConnectionFailed(f"{where}: {text[:1].lower()}{text[1:]}") from exc
        raise ProtocolViolation(f"{where}: not an HTTP reply ({text})") from exc
    except httpx.TransportError as exc:  # read/write errors: reset, broken pipe
        raise ConnectionFailed(f"{where}: {_reason(exc)}") from exc


def _reason(exc: httpx.TransportError) -> str:
    """The socket's own words (``connection refused``) from under httpx's and httpcore's
    wrappers, which chain it as a cause or as the context."""
    seen: BaseException = exc
    while not isinstance(seen, OSError):
        inner = seen.__cause__ or seen.__context__
        if inner is None:
            return str(exc) or type(exc).__name__
        seen = inner
    return socket_reason(seen)


async def _read_bounded(response: httpx.Response, limit: int, where: str) -> bytes:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ProtocolViolation(f"{where}: reply of {int(declared)} bytes, over the "
                                f"{limit}-byte bound")
    body = bytearray()
    stream = response.stream
    assert isinstance(stream, httpx.AsyncByteStream)
    async for chunk in stream:
        body += chunk
        if len(body) > limit:
            raise ProtocolViolation(f"{where}: reply over the {limit}-byte bound")
    return bytes(body)


async def exchange(transport: httpx.AsyncHTTPTransport, request: httpx.Request, where: str,
                   limit: int = MAX_REPLY_BYTES) -> bytes:
    """Send ``request``; the 2xx body (at most ``limit`` bytes) or a player error. An
    unfinished reply (cancelled, over the bound) closes its connection."""
    with http_errors(where):
        response = await transport.handle_async_request(request)
        try:
            body = await _read_bounded(response, limit, where)
        finally:
            await response.aclose()
    if not 200 <= response.status_code < 300:
        raise RefusedMove(f"{where}: HTTP {response.status_code}: {error_message(body)}")
    return body


def models_url(base_url: str) -> str:
    return base_url.rstrip("/") + "/models"


def completions_url(base_url: str) -> str:
    return base_url.rstrip("/") + "/chat/completions"


async def fetch_models(transport: httpx.AsyncHTTPTransport, base_url: str,
                       headers: tuple[tuple[str, str], ...], connect_timeout: float) -> list[str]:
    """``GET /v1/models``: the names a server lists (its base model and LoRA modules)."""
    request = httpx.Request("GET", models_url(base_url), headers=headers,
                            extensions={"timeout": timeouts(connect_timeout)})
    body = await exchange(transport, request, base_url)
    try:
        return model_names(body)
    except BadCompletion as exc:
        raise ProtocolViolation(f"{base_url}: {exc}") from None


async def list_models(base_url: str, *, api_key: str | None = None,
                      timeout: float = 5.0) -> list[str]:
    """The names ``base_url`` lists, on a connection of its own, within ``timeout`` seconds
    (a ConnectionFailed naming the wait past it); for the preflight and ``go19 ping``."""
    async with make_transport(1) as transport:
        with trio.move_on_after(timeout):
            return await fetch_models(transport, base_url, request_headers(api_key), timeout)
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
