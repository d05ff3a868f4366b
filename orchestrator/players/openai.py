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
(:class:`~orchestrator.move_record.ReplyDetails`: latency, tokens, the bounded reply and
reasoning texts), also when the reply was a fault.
"""

from __future__ import annotations

import os

from orchestrator.players.base import Answer, PlayerError, Unparsed
from orchestrator.players.go19 import board_png
from orchestrator.players.openai_pool import OpenAIEndpoint
from orchestrator.players.openai_wire import (
    AskSettings,
    chat_request,
    reply_details,
    request_seed,
)
from orchestrator.prompt import read_move, unparsed_detail
from orchestrator.rules.game import Game

__all__ = ["AskSettings", "OpenAIEndpoint", "OpenAIPlayer", "api_key_from_env"]


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

    async def answer(self, game: Game, number: int = 0,
                     picture: bytes | None = None) -> Answer:
        """Ask for ``game.to_play``'s move in game ``number`` of the run, with ``picture``
        when given (else the board drawn as the settings say). Player errors come back in
        the answer; the caller's deadline cancels the request."""
        settings = self.settings
        move = game.move_number + 1
        seed = request_seed(settings.seed, self.run, number, move)
        png = board_png(game, settings.render) if picture is None else picture
        body = chat_request(settings, game, png, seed)
        try:
            reply = await self.endpoint.complete(body)
        except PlayerError as exc:
            return Answer(None, exc)
        completion = reply.completion
        details = reply_details(reply.replica, reply.latency_ms, completion)
        text = completion.text or ""
        point = read_move(text, game.size, settings.answer)
        if point is None:
            return Answer(None, Unparsed(f"{self.name}: {unparsed_detail(text)}"), details)
        return Answer(point, None, details)

    async def aclose(self) -> None:
        """Nothing to do: the endpoint is shared and closed by its owner."""
