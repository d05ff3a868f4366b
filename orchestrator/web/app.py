"""The ASGI apps (Starlette): one static page, its WebSocket, and a few plain routes.

``/`` is the page for both modes; the first WebSocket message says which (``play``
or ``watch``). Each page gets the latest snapshot whenever it changes, never a
backlog: a page that takes longer than ``SEND_TIMEOUT_S`` to take one is dropped
(it reconnects by itself), so a slow browser never holds up a game or a run.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from importlib.resources import files
from pathlib import Path
from urllib.parse import urlsplit

import trio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from orchestrator.web.session import PlaySession
from orchestrator.web.watch import WatchHub

STATIC = Path(str(files("orchestrator.web") / "static"))
SEND_TIMEOUT_S = 5.0
WATCH_POLL_S = 0.2  # the collector announces nothing: watch pages look this often
MAX_MESSAGE = 64 * 1024


async def _index(_: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})


async def _send(websocket: WebSocket, payload: dict) -> bool:
    """Send one snapshot; False when the page is too slow or gone (then it is dropped)."""
    with trio.move_on_after(SEND_TIMEOUT_S):
        try:
            await websocket.send_text(json.dumps(payload, separators=(",", ":")))
            return True
        except (WebSocketDisconnect, RuntimeError, OSError, trio.BrokenResourceError):
            return False
    return False


async def _serve_socket(websocket: WebSocket, sender: Callable[[], Awaitable[None]],
                        on_message: Callable[[dict], None]) -> None:
    """Run ``sender`` beside a receive loop until the page goes away."""
    if not same_origin(websocket):
        await websocket.close(code=1008)  # policy violation
        return
    await websocket.accept()
    async with trio.open_nursery() as nursery:

        async def send_then_stop() -> None:
            await sender()
            nursery.cancel_scope.cancel()

        nursery.start_soon(send_then_stop)
        try:
            while True:
                text = await websocket.receive_text()
                if len(text) > MAX_MESSAGE:
                    break
                try:
                    message = json.loads(text)
                except ValueError:
                    continue
                if isinstance(message, dict):
                    on_message(message)
        except (WebSocketDisconnect, RuntimeError, KeyError):
            pass
        nursery.cancel_scope.cancel()
    with trio.CancelScope(shield=True), trio.move_on_after(1):
        try:
            await websocket.close()
        except (RuntimeError, OSError, trio.BrokenResourceError):
            pass


def same_origin(websocket: WebSocket) -> bool:
    """Only our own page may open the socket: the page has no authentication, and any
    web site the user visits could otherwise play, or probe hosts through the server rows.
    Clients that send no Origin (not browsers) are let in."""
    origin = websocket.headers.get("origin")
    return origin is None or urlsplit(origin).netloc == websocket.headers.get("host")


def play_app(session: PlaySession) -> Starlette:
    async def vlm_png(_: Request) -> Response:
        if session.vlm_png is None:
            return PlainTextResponse("no GO19 request yet", status_code=404)
        return Response(session.vlm_png, media_type="image/png",
                        headers={"Cache-Control": "no-store"})

    async def socket(websocket: WebSocket) -> None:
        async def sender() -> None:
            seen = -1
            while True:
                seen = await session.pulse.wait(seen)
                if not await _send(websocket, session.snapshot()):
                    return

        await _serve_socket(websocket, sender, session.handle)

    return Starlette(routes=[
        Route("/", _index),
        Route("/vlm.png", vlm_png),
        WebSocketRoute("/ws", socket),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ])


def watch_app(hub: WatchHub) -> Starlette:
    async def sgf(request: Request) -> Response:
        path = hub.sgf_path(request.path_params["name"])
        if path is None or not path.is_file():
            return PlainTextResponse("no such game", status_code=404)
        return FileResponse(path, media_type="application/x-go-sgf")

    async def socket(websocket: WebSocket) -> None:
        # The game this page watches; "fresh": a click the page wants answered in full.
        selected: dict[str, int | bool | None] = {"game": None, "fresh": False}

        def on_message(message: dict) -> None:
            number = message.get("game")
            if message.get("type") == "watch" and (number is None or type(number) is int):
                selected["game"], selected["fresh"] = number, True

        async def sender() -> None:
            last_sent = None
            replay_sent = None
            while True:
                payload: dict = {"type": "watch", **hub.overview()}
                number = selected["game"]
                if selected["fresh"]:
                    selected["fresh"], replay_sent, last_sent = False, None, None
                if isinstance(number, int):
                    view = hub.live_view(number)
                    if view is None:
                        # Finished (or unknown): its frames go once, then only the list.
                        view = {"kind": "replay", "number": number, "same": True}
                        if replay_sent != number:
                            view = hub.finished_view(number) or {"kind": "gone",
                                                                 "number": number}
                            replay_sent = number if view["kind"] == "replay" else None
                    else:
                        replay_sent = None
                    payload["view"] = view
                if payload != last_sent:
                    if not await _send(websocket, payload):
                        return
                    last_sent = payload
                await trio.sleep(WATCH_POLL_S)

        await _serve_socket(websocket, sender, on_message)

    return Starlette(routes=[
        Route("/", _index),
        Route("/sgf/{name}", sgf),
        WebSocketRoute("/ws", socket),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ])
