"""What the referee needs from a player, and the faults a player can report.

A player answers ``genmove(game)`` for ``game.to_play`` with a point, ``PASS``
or ``RESIGN``. It takes no timeout: the referee wraps the call in
``trio.move_on_after`` and treats a cancelled request as a timeout. Stateful
players (GTP engines) bring themselves up to date from ``game.moves`` and the
setup stones themselves; stateless ones (GO19) send the whole board.

Every fault a player can report is a :class:`PlayerError` whose ``reason`` is
the fallback reason written to SGF and ``games.jsonl`` (see docs/formats.md).
"""

from __future__ import annotations

from typing import Protocol

from orchestrator.rules.game import Game

RESIGN = -2


class PlayerError(Exception):
    reason = "error"


class ConnectionFailed(PlayerError):
    """Could not connect, or the connection broke mid-request."""

    reason = "connection"


class EndpointDown(ConnectionFailed):
    """The endpoint gave up after too many consecutive reconnect failures."""


class RefusedMove(PlayerError):
    """The player answered with an error message instead of a move."""

    reason = "error"


class ProtocolViolation(PlayerError):
    """The player's answer broke the protocol (garbage, bad frame, bad GTP reply)."""

    reason = "protocol"


class Unparsed(PlayerError):
    """The player answered in words, but no move could be read from them (a VLM's reply
    with no token that spells a move in the answer's spelling)."""

    reason = "unparsed"


class EngineDied(PlayerError):
    """A local engine process exited."""

    reason = "connection"


class Player(Protocol):
    name: str

    async def genmove(self, game: Game) -> int: ...

    async def aclose(self) -> None: ...
