"""Several stateful players (GTP engine processes) behind one name, as one player.

A GTP engine holds the game it last played, so a request goes to the instance that
last played this game when it is free (it then only needs the new moves), else to
any free one (which replays the game from its moves and setup stones first). At most
one request per instance at a time. ``collect`` uses it for a GTP player with
``instances``; ``go19 serve --engine gtp:...`` answers each request from it.
"""

from __future__ import annotations

from collections.abc import Sequence

import trio

from orchestrator.players.base import Answer, Player
from orchestrator.rules.game import Game


class PlayerPool:
    def __init__(self, name: str, players: Sequence[Player]) -> None:
        if not players:
            raise ValueError("a player pool needs at least one player")
        self.name = name
        self._players = list(players)
        self._free = list(players)
        self._last_game: dict[int, int] = {}  # id(player) -> id(game) it last played
        self._turn = trio.Semaphore(len(players))

    async def answer(self, game: Game, number: int = 0,
                     picture: bytes | None = None) -> Answer:
        async with self._turn:
            player = next(
                (p for p in self._free if self._last_game.get(id(p)) == id(game)), self._free[-1]
            )
            self._free.remove(player)
            self._last_game[id(player)] = id(game)
            try:
                return await player.answer(game, number, picture)
            finally:
                self._free.append(player)

    async def aclose(self) -> None:
        for player in self._players:
            await player.aclose()
