"""The move deadline is one clock reading: a reply that completes after it is a
``timeout`` fallback, never the player's move, however the event loop was scheduled.

The race: the reply's bytes arrive and the deadline expires in the same scheduler
tick. trio then wakes the waiting task with the data and cannot deliver the
cancellation until its next checkpoint, which a client that got its whole reply never
reaches. Here the server makes that tick happen on purpose: it moves the virtual clock
past the deadline and sends at once, without a checkpoint in between.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from orchestrator.collect.referee import GameSpec, RefereeSettings, play_game
from orchestrator.players.go19 import Go19Endpoint, Go19Player
from orchestrator.protocol import go19 as wire

from .conftest import LOCALHOST, ScriptedServer

TIMEOUT = 2.0
SIZE = 19


def answering_after(clock: trio.testing.MockClock, seconds: float) -> ScriptedServer:
    """Answers the first empty point, ``seconds`` of virtual time after the request."""

    async def script(conn: int, n: int, request: wire.Request) -> bytes:
        empty = request.board.index(0)
        clock.jump(seconds)
        return b"RPLY\x01" + bytes(divmod(empty, SIZE))

    return ScriptedServer(script)


async def refereed(port: int, moves: int):
    settings = RefereeSettings(size=SIZE, move_cap=moves, move_timeout_s=TIMEOUT, void_after=99)
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        players = {"a": Go19Player(endpoint, "a"), "b": Go19Player(endpoint, "b")}
        return await play_game(GameSpec(0, "a", "b"), 1, players, settings)


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock()  # no autojump: only the server moves time


async def test_a_reply_completing_after_the_deadline_is_a_timeout(nursery, clock) -> None:
    port = await answering_after(clock, TIMEOUT + 0.005).start(nursery)
    game = await refereed(port, moves=6)
    assert [m.source for m in game.moves] == ["fallback:timeout"] * 6
    assert all(m.ms is None for m in game.moves)
    assert game.latencies_ms == {"a": [], "b": []}
    assert game.fallbacks == {"a": {"timeout": 3}, "b": {"timeout": 3}}


async def test_a_reply_just_before_the_deadline_is_the_players_move(nursery, clock) -> None:
    port = await answering_after(clock, TIMEOUT - 0.005).start(nursery)
    game = await refereed(port, moves=6)
    assert [m.source for m in game.moves] == [None] * 6
    # Timed on the trio clock: the latency is exactly the virtual time the server took.
    assert [m.ms for m in game.moves] == [pytest.approx(1995.0)] * 6
    assert game.latencies_ms["a"] == [pytest.approx(1995.0)] * 3
