"""The ``kind = "openai"`` player: a VLM behind an OpenAI-compatible chat-completions server
(vLLM, SGLang, ``go19 serve --openai``), asked what the training export shows it.

The request (:mod:`~orchestrator.players.openai_wire`): the GO19 client's picture as a data
URL and the export's prompt for the position, sampling seeded per (run, game, move), and
optionally the legal moves as a decoding constraint. The answer: read leniently with the
export's spelling (:func:`orchestrator.prompt.read_move`); no move in it is an
:class:`~orchestrator.players.base.Unparsed` fault. HTTP failures become player errors in
:mod:`~orchestrator.players.openai_http`; the replicas are
:class:`~orchestrator.players.openai_pool.OpenAIEndpoint`.

:meth:`OpenAIPlayer.answer` gives each reply with what the record keeps of it
(:class:`~orchestrator.players.openai_wire.ReplyDetails`: latency, tokens, the bounded
reply and reasoning texts), also when the reply was a fault; :meth:`OpenAIPlayer.genmove`
is the referee's plain protocol over it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from orchestrator.players.base import PlayerError, Unparsed
from orchestrator.players.go19 import board_png
from orchestrator.players.openai_pool import OpenAIEndpoint
from orchestrator.players.openai_wire import (
    AskSettings,
    ReplyDetails,
    chat_request,
    request_seed,
)
from orchestrator.prompt import read_move, unparsed_detail
from orchestrator.rules.game import Game

__all__ = ["AskSettings", "OpenAIAnswer", "OpenAIEndpoint", "OpenAIPlayer", "ReplyDetails",
           "api_key_from_env"]


def api_key_from_env(variable: str | None) -> str | None:
    """The API key in the environment variable named by ``api_key_env`` (None: no key).
    The key itself is never written anywhere: only the variable's name is configuration."""
    if variable is None:
        return None
    key = os.environ.get(variable)
    if not key:
        raise ValueError(f"api_key_env names {variable}, but that environment variable is "
                         "not set (or empty)")
    return key


@dataclass(frozen=True, slots=True)
class OpenAIAnswer:
    """One request's outcome: the move read (a point or PASS) or the fault, and the
    details of the reply when one came (None when no reply did: connection faults)."""

    point: int | None
    fault: PlayerError | None
    details: ReplyDetails | None


class OpenAIPlayer:
    """A model behind an :class:`OpenAIEndpoint`; the endpoint belongs to whoever opened it.

    ``run`` is the run's seed, one of the three things each request's sampling seed is
    derived from (with the game number and the move number)."""

    def __init__(self, endpoint: OpenAIEndpoint, settings: AskSettings, name: str,
                 run: int = 0) -> None:
        self.endpoint = endpoint
        self.settings = settings
        self.name = name
        self.run = run

    async def answer(self, game: Game, game_number: int = 0) -> OpenAIAnswer:
        """Ask for ``game.to_play``'s move in game ``game_number`` of the run. Player errors
        come back in the answer; the caller's deadline cancels the request."""
        settings = self.settings
        move = game.move_number + 1
        seed = request_seed(settings.seed, self.run, game_number, move)
        body = chat_request(settings, game, board_png(game, settings.render), seed)
        try:
            reply = await self.endpoint.complete(body)
        except PlayerError as exc:
            return OpenAIAnswer(None, exc, None)
        completion = reply.completion
        details = ReplyDetails.of(reply.replica, reply.latency_ms, completion)
        text = completion.text or ""
        point = read_move(text, game.size, settings.answer)
        if point is None:
            return OpenAIAnswer(None, Unparsed(f"{self.name}: {unparsed_detail(text)}"),
                                details)
        return OpenAIAnswer(point, None, details)

    async def genmove(self, game: Game) -> int:
        """The plain player protocol: the move, or the fault raised, asked as game 0 of
        the run. The referee calls :meth:`answer` instead (it knows the game's number and
        keeps the reply's details); this is for callers that do neither (the play page)."""
        answer = await self.answer(game)
        if answer.fault is not None:
            raise answer.fault
        assert answer.point is not None
        return answer.point

    async def aclose(self) -> None:
        """Nothing to do: the endpoint is shared and closed by its owner."""
