"""A synchronous move chooser (HeuristicChooser, RandomChooser) as a player: the referee's
opponent or baseline, and a GO19 server's engine (``go19 serve``, collect's embedded
servers), one class for both."""

from __future__ import annotations

from typing import Protocol

import trio

from orchestrator.players.base import Answer
from orchestrator.rules.board import Board
from orchestrator.rules.game import Game


class Chooser(Protocol):
    """How a local player picks: pure and synchronous, no I/O (the referee's fallback
    calls one directly)."""

    def choose(self, board: Board, color: int, last_move: int | None = None) -> int: ...


class LocalPlayer:
    def __init__(self, name: str, chooser: Chooser) -> None:
        self.name = name
        self._chooser = chooser

    async def answer(self, game: Game, number: int = 0,
                     picture: bytes | None = None) -> Answer:
        # Yield once so a game between built-in players never starves the others.
        await trio.lowlevel.checkpoint()
        last = game.moves[-1].point if game.moves else None
        return Answer(self._chooser.choose(game.board, game.to_play, last))

    async def aclose(self) -> None:
        return None
