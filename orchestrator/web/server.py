"""Serving the pages (through :mod:`orchestrator.asgi`: Hypercorn's trio worker
inside go19's own trio run, so the web server, the games and the collector share one
event loop and one nursery tree).

The listening socket is bound before anything else starts (a busy port is one line and
exit 2 before any game), and each app answers only to the Host names it was given: the
loopback names, the bound host and any ``--allow-host``, so a page whose name was
rebound to 127.0.0.1 (DNS rebinding) gets a 400, not the game."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from orchestrator import events
from orchestrator.asgi import bind_listener, serve_app
from orchestrator.players.address import AddressError, check_host
from orchestrator.web.app import MAX_MESSAGE, play_app, watch_app
from orchestrator.web.connection import host_problem
from orchestrator.web.feed import ReportPage, WatchFeed
from orchestrator.web.katago import DEAD_VISITS, KataGoOwnership
from orchestrator.web.session import PlaySession
from orchestrator.web.watch import WatchHub

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from orchestrator.collect.collector import Collector

DEFAULT_PORT = 8019
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
WILDCARDS = ("0.0.0.0", "::")
NO_AUTH_WARNING = ("warning: {host} is not a loopback address: anyone who can reach this "
                   "port can use the page, which has no authentication")
NAMES_NOTE = ("note: the page answers to the Host names {names}; reach it by another name "
              "with --{option} NAME")
SHUTDOWN_GRACE_S = 2.0  # watch pages hear that the run is over before the server goes


def allowed_names_problem(names: Iterable[str]) -> str | None:
    """Why one of the ``--allow-host`` names is no host name, or None."""
    for name in names:
        problem = host_problem(name)
        if problem:
            return problem
    return None


def parse_bind(text: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT``; ValueError names the culprit."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]") if sep else default_host
    if not port.isdigit() or not 0 <= int(port) < 65536 or not host:
        raise ValueError(f"bad address {text!r}: expected [HOST:]PORT with a port in 0..65535")
    try:
        host = check_host(host)
    except AddressError as exc:
        raise ValueError(f"bad address {text!r}: {exc}") from None
    return host, int(port)


def trusted_hosts(host: str, extra: Iterable[str] = ()) -> list[str]:
    """The Host names a page may come by: loopback, the bound host (for a wildcard bind,
    this machine's names) and the ones given."""
    names = set(LOOPBACK_NAMES)
    if host.strip("[]") in WILDCARDS:
        names |= {socket.gethostname(), socket.getfqdn()}
    else:
        names.add(f"[{host}]" if ":" in host else host)
    names |= {f"[{n}]" if ":" in n and not n.startswith("[") else n for n in extra}
    return sorted(n.lower() for n in names if n)


@dataclass(frozen=True)
class PlayKataGo:
    """The KataGo whose ownership proposes the dead stones of ``go19 play``'s scoring
    phase (:mod:`orchestrator.web.katago`), started at the first one."""

    binary: Path
    model: Path
    config: Path
    log: Path
    visits: int = DEAD_VISITS
    timeout: float | None = None  # seconds per visit; None: collect's [adjudicate] default


async def serve_play(host: str, port: int, recordings: Path, allow_hosts: Iterable[str] = (),
                     katago: PlayKataGo | None = None,
                     task_status: trio.TaskStatus[tuple[str, PlaySession]]
                     = trio.TASK_STATUS_IGNORED) -> None:
    """``go19 play``: one session, a first human-vs-AI game, the page; until cancelled.
    A port that cannot be bound raises OSError before the session starts. Without
    ``katago`` the dead stones of a scoring phase are the estimate's only."""
    listener = bind_listener(host, port)
    async with trio.open_nursery() as nursery:
        owner = None if katago is None else KataGoOwnership(
            nursery, katago.binary, katago.model, katago.config, katago.log,
            visits=katago.visits, timeout=katago.timeout)
        session = PlaySession(nursery, recordings, katago=owner)
        app = play_app(session, trusted_hosts(host, allow_hosts))
        url = await nursery.start(partial(serve_app, websocket_max_message=MAX_MESSAGE),
                                  app, listener)
        session.new_game()
        task_status.started((url, session))


def watch_task(listener: socket.socket, hosts: list[str],
               report: Callable[[Path], Path | None] | None = None,
               then: Callable[[Collector], Awaitable[None]] | None = None,
               ) -> Callable[[Collector], Awaitable[None]]:
    """A ``dashboard_factory`` for collect: serves the watch page on ``listener`` (bound
    before the run) beside ``then`` (the terminal dashboard, if any). When the run ends,
    ``report`` (if any) writes the run's report (in a worker thread) and gives its
    ``report.html``, then the pages are told the run is over, with the report, before the
    server stops."""

    async def run(collector: Collector) -> None:
        feed = WatchFeed(WatchHub(collector))
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            if then is not None:
                nursery.start_soon(then, collector)
            nursery.start_soon(feed.run)
            url = await nursery.start(_serve_shielded, watch_app(feed, hosts), listener,
                                      stop)
            collector.state.emit(events.WatchPage(url))
            try:
                await trio.sleep_forever()
            finally:  # the run is over (or cancelled): say so, then let the server go
                with trio.CancelScope(shield=True):
                    page = None
                    if report is not None and collector.state.done:
                        page = await trio.to_thread.run_sync(
                            _report_page, report, collector.run_dir)
                    with trio.move_on_after(SHUTDOWN_GRACE_S):
                        await feed.finish(page)
                    stop.set()

    return run


def _report_page(report: Callable[[Path], Path | None], run_dir: Path) -> ReportPage | None:
    """The run's report written, and read back as the page will show it."""
    path = report(run_dir)
    return None if path is None else ReportPage.read(path)


async def _serve_shielded(app: Starlette, listener: socket.socket, stop: trio.Event,
                          task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
                          ) -> None:
    """The server outlives the run's cancellation until ``stop`` (its pages are told the
    end first); Hypercorn's graceful shutdown then gives it a bounded second."""
    with trio.CancelScope(shield=True):
        await serve_app(app, listener, stop.wait, task_status=task_status,
                        websocket_max_message=MAX_MESSAGE)
