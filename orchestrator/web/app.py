"""The ASGI apps (Starlette): a page, its WebSocket, and a few plain routes.

``go19 play`` serves ``play.html``, ``collect --web`` serves ``watch.html``; both load
ES modules from ``/static`` (no bundler). Each page gets the latest state whenever it
changes, never a backlog, as one JSON text built once and shared by every page: a page
that takes longer than ``SEND_TIMEOUT_S`` to take one is dropped (it reconnects by
itself), so a slow browser never holds up a game or a run.

Both apps answer only to trusted Host names (Starlette's TrustedHostMiddleware, for
HTTP and the WebSocket upgrade alike), and the socket also wants its Origin to be the
page's own: the page has no authentication, so neither a site that rebinds its name
to 127.0.0.1 nor a page of another origin may play, or probe hosts through the server
rows.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from importlib.resources import files
from pathlib import Path
from urllib.parse import urlsplit

import trio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from orchestrator.web.feed import WatchFeed
from orchestrator.web.session import PlaySession
from orchestrator.web.tcp_cut import cut
from orchestrator.ws_limit import TOO_BIG

STATIC = Path(str(files("orchestrator.web") / "static"))
SEND_TIMEOUT_S = 5.0
WATCH_EVERY_S = 1.0  # how often a page's watchdog looks at the send in progress
# At most this often per page: changes that come faster (a click storm, a fast game) are
# sent as one, the latest, so that a hundred tabs cost a bounded share of the loop.
SEND_INTERVAL_S = 0.04
# The page's longest message is a settings edit (a 253-character host name: under 400
# characters); Hypercorn closes a connection whose message grows past this (1009).
MAX_MESSAGE = 4096
MAX_PAGES = 256  # pages open at once per server; one more is closed at once (1013)
NO_STORE = {"Cache-Control": "no-store"}


class _Link:
    """A page's sending side: one message at a time, given up when a send outlasts
    ``SEND_TIMEOUT_S`` (the page is too slow or gone, and is dropped).

    Hypercorn writes under a shielded cancel scope, so a deadline cannot end a send that
    a page which stopped reading never takes (its task, and the server's end, would wait
    for ever): the page's watchdog, shielded too, cuts its connection instead, and the
    send then fails as for a lost connection."""

    def __init__(self, websocket: WebSocket) -> None:
        self.websocket = websocket
        self.sending_since: float | None = None
        self.too_slow = False
        self._watching = trio.CancelScope(shield=True)

    async def send(self, text: str) -> bool:
        if self.too_slow:
            return False
        self.sending_since = trio.current_time()
        try:
            await self.websocket.send_text(text)
            sent = True
        except (WebSocketDisconnect, RuntimeError, OSError, trio.BrokenResourceError):
            sent = False
        finally:
            self.sending_since = None
        return sent and not self.too_slow

    async def watch(self) -> None:
        with self._watching:
            while True:
                await trio.sleep(WATCH_EVERY_S)
                since = self.sending_since
                if since is not None and trio.current_time() - since >= SEND_TIMEOUT_S:
                    self.too_slow = True
                    scope = self.websocket.scope
                    cut(scope.get("client"), scope.get("server"))
                    return

    def stop_watching(self) -> None:
        """The page's sender is done (no send of its can be stuck any more)."""
        self._watching.cancel()


class _Pages:
    """How many pages an app has open: at most ``MAX_PAGES``."""

    def __init__(self) -> None:
        self.open = 0


async def _serve_socket(websocket: WebSocket,
                        sender: Callable[[Callable[[str], Awaitable[bool]]], Awaitable[None]],
                        on_message: Callable[[dict], None], pages: _Pages) -> None:
    """Run ``sender`` beside a receive loop until the page goes away (or the sender is
    done: the run is over, and the page is told so by a normal close)."""
    if not same_origin(websocket):
        await websocket.close(code=1008)  # policy violation: refused at the handshake
        return
    await websocket.accept()
    if pages.open >= MAX_PAGES:
        await _close(websocket, 1013, f"too many pages open ({MAX_PAGES}): close some")
        return
    pages.open += 1
    try:
        code, reason = await _exchange(websocket, sender, on_message)
    finally:
        pages.open -= 1
    await _close(websocket, code, reason)


async def _exchange(websocket: WebSocket,
                    sender: Callable[[Callable[[str], Awaitable[bool]]], Awaitable[None]],
                    on_message: Callable[[dict], None]) -> tuple[int, str]:
    """The page's messages in, ``sender``'s out; the close code and reason it ends with."""
    link = _Link(websocket)
    ending = (1000, "")
    async with trio.open_nursery() as nursery:

        async def send_then_stop() -> None:
            try:
                await sender(link.send)
            finally:
                link.stop_watching()
            nursery.cancel_scope.cancel()

        nursery.start_soon(link.watch)
        nursery.start_soon(send_then_stop)
        try:
            while True:
                received = await websocket.receive()
                if received["type"] == "websocket.disconnect":
                    break
                text = received.get("text")
                if received.get(TOO_BIG) or (text is not None and len(text) > MAX_MESSAGE):
                    ending = (1009, "message too big")  # (Hypercorn has said so already)
                    break
                if text is None:  # a binary frame: the page sends JSON text only
                    ending = (1003, "text frames only")
                    break
                try:
                    message = json.loads(text)
                except ValueError:
                    continue
                if isinstance(message, dict):
                    on_message(message)
        except (WebSocketDisconnect, RuntimeError):
            pass
        nursery.cancel_scope.cancel()
    return ending


async def _close(websocket: WebSocket, code: int, reason: str) -> None:
    with trio.CancelScope(shield=True), trio.move_on_after(1):
        try:
            await websocket.close(code=code, reason=reason or None)
        except (RuntimeError, OSError, trio.BrokenResourceError):
            pass


def same_origin(websocket: WebSocket) -> bool:
    """The socket's Origin must be the page's own (the Host, already a trusted name). A
    client that sends none is refused: every browser sends one, and the page is all
    that talks to this socket."""
    origin = websocket.headers.get("origin")
    host = websocket.headers.get("host")
    return origin is not None and host is not None and \
        urlsplit(origin).netloc.lower() == host.lower()


def _page(name: str) -> Callable[[Request], Awaitable[Response]]:
    async def page(_: Request) -> Response:
        return FileResponse(STATIC / name, headers=NO_STORE)
    return page


def _app(routes: list, hosts: Sequence[str]) -> Starlette:
    return Starlette(
        routes=[*routes, Mount("/static", StaticFiles(directory=STATIC), name="static")],
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(hosts),
                               www_redirect=False)],
    )


def play_app(session: PlaySession, hosts: Sequence[str]) -> Starlette:
    async def vlm_png(_: Request) -> Response:
        if session.vlm_png is None:
            return PlainTextResponse("no GO19 request yet", status_code=404)
        return Response(session.vlm_png, media_type="image/png", headers=NO_STORE)

    pages = _Pages()

    async def socket(websocket: WebSocket) -> None:
        async def sender(send: Callable[[str], Awaitable[bool]]) -> None:
            seen = -1
            while True:
                seen = await session.pulse.wait(seen)
                if not await send(session.snapshot_text()):
                    return
                await trio.sleep(SEND_INTERVAL_S)

        await _serve_socket(websocket, sender, session.handle, pages)

    return _app([Route("/", _page("play.html")), Route("/vlm.png", vlm_png),
                 WebSocketRoute("/ws", socket)], hosts)


def watch_app(feed: WatchFeed, hosts: Sequence[str]) -> Starlette:
    async def sgf(request: Request) -> Response:
        path = feed.hub.sgf_path(request.path_params["name"])
        if path is None or not path.is_file():
            return PlainTextResponse("no such game", status_code=404)
        return FileResponse(path, media_type="application/x-go-sgf")

    pages = _Pages()

    async def socket(websocket: WebSocket) -> None:
        async with feed.page() as page:
            await _serve_socket(websocket, page.send_all, page.on_message, pages)

    return _app([Route("/", _page("watch.html")), Route("/sgf/{name}", sgf),
                 WebSocketRoute("/ws", socket)], hosts)
