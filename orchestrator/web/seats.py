"""The seats of ``go19 play``: what sits in a :class:`Player`'s place for each side of
the five modes. A human seat waits for a legal click, the AI seat is the local heuristic
AI, a VLM seat asks a GO19 server or an OpenAI-compatible one; each tells the page's
:class:`~orchestrator.web.session.PlaySession` what it is doing (through
:class:`SeatHost`, the part of it a seat uses: the session builds the seats, so they
cannot import it). The clocks, the page's "cancel VLM response" and the fallback marks
are the referee's (collect's :func:`~orchestrator.collect.referee.play_game`), as in a
collected game."""

from __future__ import annotations

from typing import Protocol

import trio

from orchestrator.coords import PASS, to_gtp
from orchestrator.players.base import RESIGN, Answer, ConnectionFailed, Player
from orchestrator.players.go19 import Go19Player, Go19Service, board_png
from orchestrator.players.heuristic import HeuristicChooser, HeuristicPlayer
from orchestrator.players.openai import OpenAIPlayer
from orchestrator.protocol import go19 as wire
from orchestrator.render import RenderSettings
from orchestrator.rules.board import IllegalMove
from orchestrator.rules.dead_stones import without
from orchestrator.rules.estimate import end_of_play_dead
from orchestrator.rules.game import Game

SIZE = 19
AI_LEVEL = 2


class SeatHost(Protocol):
    """What a seat reads and sets of the play session it sits in."""

    waiting_human: bool
    thinking: str | None
    vlm_png: bytes | None
    vlm_png_version: int
    clicks: trio.MemoryReceiveChannel

    def changed(self) -> None: ...

    def say(self, text: str, level: str) -> None: ...

    def server_failed(self, index: int, reason: str) -> None: ...


class HumanSeat:
    """Waits for a legal click of the side to move; refuses illegal ones with the reason."""

    def __init__(self, session: SeatHost, name: str) -> None:
        self.session = session
        self.name = name

    async def answer(self, game: Game, number: int = 0,
                     picture: bytes | None = None) -> Answer:
        session = self.session
        session.waiting_human = True
        session.changed()
        try:
            while True:
                action = await session.clicks.receive()
                if action not in (PASS, RESIGN):
                    try:
                        game.board.check(game.to_play, action)
                    except IllegalMove as exc:
                        session.say(f"illegal move {to_gtp(action, SIZE)}: {exc.reason}",
                                    "error")
                        continue
                session.say("", "info")  # a move is made: a refused one is old news
                return Answer(action)
        finally:
            session.waiting_human = False

    async def aclose(self) -> None:
        return None


class AiSeat:
    """The local heuristic AI; announces each turn so the page redraws before it moves.

    ``agrees_to_end`` (against a human): after the human's pass it passes too when it
    would pass were the stones dead at the end of play
    (:func:`~orchestrator.rules.estimate.end_of_play_dead`) off the board. Else it plays
    on in the human's area until its dead stones are captured (a game once took 212
    passes), where the scoring phase lifts them instead."""

    def __init__(self, session: SeatHost, name: str, seed: int,
                 agrees_to_end: bool = False) -> None:
        self.session = session
        self.name = name
        self._ai = HeuristicPlayer(name, seed=seed, level=AI_LEVEL)
        self._judge = HeuristicChooser(seed, AI_LEVEL) if agrees_to_end else None

    async def answer(self, game: Game, number: int = 0,
                     picture: bytes | None = None) -> Answer:
        self.session.changed()
        if self._judge is not None and game.moves and game.moves[-1].point == PASS:
            board = game.board
            if self._judge.choose(without(board, end_of_play_dead(board)),
                                  game.to_play) == PASS:
                return Answer(PASS)
        return await self._ai.answer(game, number, picture)

    async def aclose(self) -> None:
        return None


class _RecordingEndpoint:
    """The game's endpoint, keeping the PNG of the last request it carried."""

    def __init__(self, endpoint: Go19Service, session: SeatHost) -> None:
        self.endpoint = endpoint
        self._session = session

    async def request(self, request: wire.Request) -> wire.MoveReply | wire.ErrorReply:
        self._session.vlm_png = request.png
        self._session.vlm_png_version += 1
        return await self.endpoint.request(request)


class VlmSeat:
    """A GO19 server (an endpoint) or an OpenAI-compatible one (its player), asked with
    pictures drawn as ``render`` says. A failed connection also shows on the server's
    row."""

    def __init__(self, session: SeatHost, index: int, server: Go19Service | OpenAIPlayer,
                 name: str, render: RenderSettings) -> None:
        self.session = session
        self.index = index
        self.name = name
        self.render = render
        self._player: Player
        self._draws = isinstance(server, OpenAIPlayer)  # the request's PNG is not seen
        if isinstance(server, OpenAIPlayer):
            self._player = server
        else:
            self._player = Go19Player(_RecordingEndpoint(server, session), name, render)

    async def answer(self, game: Game, number: int = 0,
                     picture: bytes | None = None) -> Answer:
        session = self.session
        session.thinking = self.name
        if self._draws:  # the same picture the player sends ("what the VLM sees")
            session.vlm_png = board_png(game, self.render)
            session.vlm_png_version += 1
        session.changed()
        try:
            answer = await self._player.answer(game, number, picture)
            if isinstance(answer.fault, ConnectionFailed):
                session.server_failed(self.index, str(answer.fault))
            return answer
        finally:
            session.thinking = None

    async def aclose(self) -> None:
        return None
