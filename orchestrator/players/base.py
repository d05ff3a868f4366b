"""The one protocol for "pick a move", and the faults a player can report.

Whoever asks for a move (the referee, a GO19 server answering a request, the collect
preflight) asks a :class:`Player`: ``answer(game, number, picture)`` for ``game.to_play``
gives an :class:`Answer`, a point (``PASS``, ``RESIGN``) or the fault, with what a model's
reply said when the player tells (also beside a fault: a reply no move could be read
from). It takes no timeout: the referee wraps the call in ``trio.move_on_at`` and treats
a cancelled request as a timeout. Stateful players (GTP engines) bring themselves up to
date from ``game.moves`` and the setup stones themselves; stateless ones (GO19) send the
whole board.

Every fault a player can report is a :class:`PlayerError` whose ``reason`` is
the fallback reason written to SGF and ``games.jsonl`` (see docs/formats.md).
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Protocol

from orchestrator.move_record import ReplyDetails
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


@dataclass(frozen=True, slots=True)
class Answer:
    """What a player said: the point it chose (``PASS``, ``RESIGN``) or its fault, and the
    details of a model's reply when it tells (None when no reply came or it has none)."""

    point: int | None
    fault: PlayerError | None = None
    details: ReplyDetails | None = None

    def move(self) -> int:
        """The point, or the fault raised: for callers that want only the move."""
        if self.fault is not None:
            raise self.fault
        assert self.point is not None, "an answer is a point or a fault"
        return self.point


async def answered(move: Awaitable[int]) -> Answer:
    """The answer of a player that raises its faults: the point, or the fault it raised
    (anything else that it raises is a bug, and goes on up)."""
    try:
        return Answer(await move)
    except PlayerError as exc:
        return Answer(None, exc)


class Player(Protocol):
    """Anything asked for moves. ``number`` is the game's number in its run (a model's
    sampling seed depends on it; 0 outside a run); ``picture`` the picture of the position
    the asker already has (a GO19 request's PNG), for players that look at one: they
    answer from it instead of drawing their own (None: there is none)."""

    name: str

    async def answer(self, game: Game, number: int = 0,
                     picture: bytes | None = None) -> Answer: ...

    async def aclose(self) -> None: ...
