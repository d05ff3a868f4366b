"""Serving an ASGI app (Starlette) with Hypercorn's trio worker inside go19's own trio
run, so the web server, the games and the collector share one event loop and one nursery
tree: the watch and play pages (:mod:`orchestrator.web.server`) and the VLM server's
OpenAI-compatible port (:mod:`orchestrator.serve.hf.server`). The listening socket is
bound before anything else starts, so a busy port is one line before any game.

A job helper (docs/DESIGN.md's layers): the two jobs that serve HTTP share it, and
neither imports the other for it. Needs Hypercorn (the ``web`` and ``vlm`` extras)."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import cast

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from hypercorn.typing import ASGIFramework
from starlette.types import ASGIApp

from orchestrator.ws_limit import bound_websocket_messages


def bind_listener(host: str, port: int) -> socket.socket:
    """The page's listening socket, bound now; OSError (a port in use) before anything
    else has started. Hypercorn takes it over (``fd://``)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Hypercorn does
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def url_for(binds: list[str]) -> str:
    return binds[0] + "/"


async def serve_app(app: ASGIApp, listener: socket.socket,
                    shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
                    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED, *,
                    websocket_max_message: int | None = None) -> None:
    """Serve ``app`` on ``listener`` until cancelled (or ``shutdown_trigger`` returns);
    with ``nursery.start`` it returns the page's URL. A WebSocket message longer than
    ``websocket_max_message`` characters closes its connection (1009) and is not kept."""
    config = Config()
    config.bind = [f"fd://{listener.detach()}"]
    config.accesslog = None
    config.errorlog = None  # a page that goes away mid-request is not an error of ours
    config.graceful_timeout = 1.0
    if websocket_max_message is not None:
        bound_websocket_messages()
        config.websocket_max_message_size = websocket_max_message
    with _plain_oserror():
        # An ASGI 3 app whose signature spells the scope as a plain mapping, where
        # Hypercorn's spells out each kind of scope.
        await serve(cast(ASGIFramework, app), config, shutdown_trigger=shutdown_trigger,
                    task_status=_UrlStatus(task_status))


class _UrlStatus(trio.TaskStatus[list[str]]):
    """Hands ``nursery.start`` the page's URL where Hypercorn reports its binds."""

    def __init__(self, status: trio.TaskStatus[str]) -> None:
        self._status = status

    def started(self, binds: list[str] | None = None) -> None:
        self._status.started(url_for(binds or []))


@contextmanager
def _plain_oserror() -> Iterator[None]:
    """A nursery group holding only OSErrors becomes its first OSError."""
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = list(_leaves(group))
        if leaves and all(isinstance(e, OSError) for e in leaves):
            raise leaves[0] from None
        raise


def _leaves(group: BaseExceptionGroup) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc
