"""Serving the apps: Hypercorn's trio worker inside go19's own trio run, so the web
server, the games and the collector share one event loop and one nursery tree."""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, cast

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from hypercorn.typing import ASGIFramework

from orchestrator.events import WatchPage
from orchestrator.web.app import play_app, watch_app
from orchestrator.web.session import PlaySession
from orchestrator.web.watch import WatchHub

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from orchestrator.collect.collector import Collector

DEFAULT_PORT = 8019
NO_AUTH_WARNING = ("warning: {host} is not a loopback address: anyone who can reach this "
                   "port can use the page, which has no authentication")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_bind(text: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT``; ValueError names the culprit."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]") if sep else default_host
    if not port.isdigit() or not 0 <= int(port) < 65536 or not host:
        raise ValueError(f"bad address {text!r}: expected [HOST:]PORT with a port in 0..65535")
    return host, int(port)


def url_for(binds: list[str]) -> str:
    return binds[0] + "/"


async def serve_app(app: Starlette, host: str, port: int,
                    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
    """Serve ``app`` until cancelled; with ``nursery.start`` it returns the page's URL.
    A port that cannot be bound raises a plain OSError (not Hypercorn's nursery group)."""
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = None  # a page that goes away mid-request is not an error of ours
    config.graceful_timeout = 1.0
    with _plain_oserror():
        # Starlette is an ASGI 3 app; its signature spells the scope as a plain mapping
        # where Hypercorn's spells out each kind of scope.
        await serve(cast(ASGIFramework, app), config, task_status=_UrlStatus(task_status))


class _UrlStatus(trio.TaskStatus[list[str]]):
    """Hands ``nursery.start`` the page's URL where Hypercorn reports its binds."""

    def __init__(self, status: trio.TaskStatus[str]) -> None:
        self._status = status

    def started(self, binds: list[str] | None = None) -> None:
        self._status.started(url_for(binds or []))


@contextmanager
def _plain_oserror() -> Iterator[None]:
    """A nursery group holding only OSErrors (a port in use) becomes its first OSError."""
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


async def serve_play(host: str, port: int, recordings: Path,
                     task_status: trio.TaskStatus[tuple[str, PlaySession]]
                     = trio.TASK_STATUS_IGNORED) -> None:
    """``go19 play``: one session, a first human-vs-AI game, the page; until cancelled."""
    with _plain_oserror():
        async with trio.open_nursery() as nursery:
            session = PlaySession(nursery, recordings)
            url = await nursery.start(serve_app, play_app(session), host, port)
            session.new_game()
            task_status.started((url, session))


def watch_task(host: str, port: int, then: Callable[[Collector], Awaitable[None]] | None = None,
               ) -> Callable[[Collector], Awaitable[None]]:
    """A ``dashboard_factory`` for collect: serves the watch page beside ``then`` (the
    terminal dashboard, if any) in the collect nursery. A port that cannot be bound is
    reported as a run event; the run goes on without its page."""

    async def run(collector: Collector) -> None:
        async with trio.open_nursery() as nursery:
            if then is not None:
                nursery.start_soon(then, collector)
            try:
                url = await nursery.start(serve_app, watch_app(WatchHub(collector)), host, port)
            except OSError as exc:
                collector.state.emit(WatchPage(f"{host}:{port}", str(exc.strerror or exc)))
                return
            collector.state.emit(WatchPage(url))

    return run
