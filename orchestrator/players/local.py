"""A synchronous move chooser (HeuristicChooser, RandomChooser) as a referee-facing player."""

from __future__ import annotations

from typing import Protocol

import trio

from orchestrator.rules.board import Board
from orchestrator.rules.game import Game


class Chooser(Protocol):
    def choose(self, board: Board, color: int, last_move: int | None = None) -> int: ...


class LocalPlayer:
    def __init__(self, name: str, chooser: Chooser) -> None:
        self.name = name
        self._chooser = chooser

    async def genmove(self, game: Game) -> int:
        # Yield once so a game between built-in players never starves the others.
        await trio.lowlevel.checkpoint()
        last = game.moves[-1].point if game.moves else None
        return self._chooser.choose(game.board, game.to_play, last)

    async def aclose(self) -> None:
        return None
