"""The seats of ``go19 play``: what sits in a :class:`Player`'s place for each side of
the five modes. A human seat waits for a legal click, the AI seat is the local heuristic
AI, a VLM seat asks a GO19 server under the page's timeout and can be cancelled; each
tells the page's :class:`~orchestrator.web.session.PlaySession` what it is doing."""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from orchestrator.coords import PASS, to_gtp
from orchestrator.players.base import RESIGN, ConnectionFailed, PlayerError
from orchestrator.players.go19 import Go19Endpoint, Go19Player
from orchestrator.players.heuristic import HeuristicPlayer
from orchestrator.protocol import go19 as wire
from orchestrator.rules.board import IllegalMove
from orchestrator.rules.game import Game

if TYPE_CHECKING:
    from orchestrator.web.session import PlaySession

SIZE = 19
AI_LEVEL = 2
IMAGE_PX = 512  # the PNG side a GO19 request carries, as collect's default


class MoveTimeout(PlayerError):
    reason = "timeout"


class ResponseCancelled(PlayerError):
    """The person pressed "cancel VLM response"."""

    reason = "cancelled"


class HumanSeat:
    """Waits for a legal click of the side to move; refuses illegal ones with the reason."""

    def __init__(self, session: PlaySession, name: str) -> None:
        self.session = session
        self.name = name

    async def genmove(self, game: Game) -> int:
        session = self.session
        session.waiting_human = True
        session.changed()
        try:
            while True:
                action = await session.clicks.receive()
                if action in (PASS, RESIGN):
                    return action
                try:
                    game.board.check(game.to_play, action)
                except IllegalMove as exc:
                    session.say(f"illegal move {to_gtp(action, SIZE)}: {exc.reason}", "error")
                    continue
                session.say("", "info")
                return action
        finally:
            session.waiting_human = False

    async def aclose(self) -> None:
        return None


class AiSeat:
    """The local heuristic AI; announces each turn so the page redraws before it moves."""

    def __init__(self, session: PlaySession, name: str, seed: int) -> None:
        self.session = session
        self.name = name
        self._ai = HeuristicPlayer(name, seed=seed, level=AI_LEVEL)

    async def genmove(self, game: Game) -> int:
        self.session.changed()
        return await self._ai.genmove(game)

    async def aclose(self) -> None:
        return None


class _RecordingEndpoint:
    """The game's endpoint, keeping the PNG of the last request it carried."""

    def __init__(self, endpoint: Go19Endpoint, session: PlaySession) -> None:
        self.endpoint = endpoint
        self._session = session

    async def request(self, request: wire.Request) -> wire.MoveReply | wire.ErrorReply:
        self._session.vlm_png = request.png
        self._session.vlm_png_version += 1
        return await self.endpoint.request(request)


class VlmSeat:
    """A GO19 server under the page's timeout. Faults raise :class:`PlayerError` for the
    referee to replace with the heuristic AI's move; the seat marks them for the page."""

    def __init__(self, session: PlaySession, index: int, endpoint: Go19Endpoint,
                 name: str) -> None:
        self.session = session
        self.index = index
        self.name = name
        recording = _RecordingEndpoint(endpoint, session)
        self._player = Go19Player(recording, name, image_px=IMAGE_PX)  # type: ignore[arg-type]

    async def genmove(self, game: Game) -> int:
        session = self.session
        ply = game.move_number
        session.thinking = self.name
        session.changed()
        try:
            with trio.CancelScope() as cancel, trio.move_on_after(session.timeout) as deadline:
                session.vlm_scope = cancel
                try:
                    point = await self._player.genmove(game)
                except PlayerError as exc:
                    if isinstance(exc, ConnectionFailed):
                        session.server_failed(self.index, str(exc))
                    session.fallback(ply, self.name, exc.reason)
                    raise
        finally:
            session.thinking = None
            session.vlm_scope = None
        if deadline.cancelled_caught:
            session.fallback(ply, self.name, MoveTimeout.reason)
            raise MoveTimeout(f"{self.name}: no reply within {session.timeout:g} s")
        if cancel.cancelled_caught:
            session.fallback(ply, self.name, ResponseCancelled.reason)
            raise ResponseCancelled(f"{self.name}: response cancelled")
        try:
            game.board.check(game.to_play, point)
        except IllegalMove as exc:
            session.fallback(ply, self.name, f"illegal:{exc.reason}")
        return point

    async def aclose(self) -> None:
        return None
