"""The GO19 player: a policy behind a :class:`Go19Endpoint`, asked with a rendered
board. The connection (:mod:`~orchestrator.players.connection`) and the replica pool
(:mod:`~orchestrator.players.endpoint`) live in their own modules; their public names are
importable from here too, as callers have always done."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from orchestrator import coords
from orchestrator.players.base import Answer, RefusedMove, answered
from orchestrator.players.connection import Go19Connection, format_address
from orchestrator.players.endpoint import Go19Endpoint
from orchestrator.players.replica import ReplicaStats
from orchestrator.protocol import go19 as wire
from orchestrator.render import RenderSettings
from orchestrator.rules.game import Game

__all__ = ["Go19Connection", "Go19Endpoint", "Go19Player", "Go19Service", "ReplicaStats",
           "board_png", "format_address"]


class Go19Service(Protocol):
    """Whatever answers a GO19 request: a :class:`Go19Endpoint`, or something in front of
    one (the play page keeps the picture each request carried)."""

    async def request(self, request: wire.Request) -> wire.MoveReply | wire.ErrorReply: ...


DEFAULT_RENDER = RenderSettings()


def _last_stone(game: Game) -> int | None:
    if game.moves and game.moves[-1].point != coords.PASS:
        return game.moves[-1].point
    return None


def board_png(game: Game, render: RenderSettings = DEFAULT_RENDER,
              board: np.ndarray | None = None) -> bytes:
    """The picture a VLM player sends for ``game``'s position, drawn with its ``render``
    settings (``board``: the position's array, when the caller has it): the one render the
    training export reproduces from the record."""
    board = game.board.to_array() if board is None else board
    return render.picture(board, _last_stone(game))


class Go19Player:
    """A policy behind a GO19 endpoint; the endpoint belongs to whoever opened it.
    ``render`` is how its pictures are drawn (the record keeps it)."""

    def __init__(self, endpoint: Go19Service, name: str,
                 render: RenderSettings = DEFAULT_RENDER) -> None:
        self.endpoint = endpoint
        self.name = name
        self.render = render

    async def answer(self, game: Game, number: int = 0,
                     picture: bytes | None = None) -> Answer:
        """The endpoint's move for the position, asked with ``picture`` when given, else
        with the board drawn as ``render`` says."""
        return await answered(self._move(game, picture))

    async def _move(self, game: Game, picture: bytes | None) -> int:
        board = game.board.to_array()
        png = board_png(game, self.render, board) if picture is None else picture
        request = wire.Request(game.size, game.to_play, png, board.tobytes())
        reply = await self.endpoint.request(request)
        if isinstance(reply, wire.ErrorReply):
            raise RefusedMove(f"{self.name}: {reply.message}")
        return coords.from_go19(reply.row, reply.col, game.size)

    async def aclose(self) -> None:
        """Nothing to do: the endpoint is shared and closed by its owner."""
