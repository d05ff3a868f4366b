"""The endpoint's reconnect schedule, giving up and coming back, and load spreading."""

from __future__ import annotations

import numpy as np
import pytest
import trio

from orchestrator.players.base import ConnectionFailed, EndpointDown
from orchestrator.players.go19 import Go19Endpoint
from orchestrator.protocol import go19 as wire
from orchestrator.rules.board import BLACK
from orchestrator.serve import ServerStats

from .conftest import (
    LOCALHOST,
    GateEngine,
    RecordingEngine,
    ScriptedServer,
    closed_port,
    move_bytes,
    start_server,
)

# Seconds between attempts are 1.5 * n after the n-th consecutive failure, capped at 15.
ATTEMPTS = [0.0, 1.5, 4.5, 9.0, 15.0, 22.5]


def request() -> wire.Request:
    return wire.Request(19, BLACK, b"", np.zeros(361, dtype=np.uint8).tobytes())


async def test_reconnect_schedule_then_down_until_reset(nursery, loopback_clock) -> None:
    port = closed_port()
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        failed_at = []
        for _ in range(5):
            with pytest.raises(ConnectionFailed, match="connection refused") as caught:
                await endpoint.request(request())
            assert not isinstance(caught.value, EndpointDown)
            failed_at.append(trio.current_time())
            (stats,) = endpoint.replica_stats()
            assert stats.status == "backoff"
            assert stats.last_attempt == failed_at[-1]
            assert stats.retry_at == failed_at[-1] + 1.5 * len(failed_at)
        with pytest.raises(EndpointDown, match="all replicas down"):
            await endpoint.request(request())  # the sixth consecutive failure gives up
        failed_at.append(trio.current_time())
        assert failed_at == ATTEMPTS
        assert endpoint.is_down()
        (stats,) = endpoint.replica_stats()
        assert (stats.status, stats.consecutive_failures, stats.reconnects) == ("down", 6, 5)

        await trio.sleep(100)
        with pytest.raises(EndpointDown):
            await endpoint.request(request())
        assert trio.current_time() == 122.5  # no attempt, no wait

        await start_server(nursery, RecordingEngine(answer="C3"), port=port)
        endpoint.reset()
        assert await endpoint.request(request()) == wire.MoveReply(16, 2)
        assert trio.current_time() == 122.5
        (stats,) = endpoint.replica_stats()
        assert (stats.status, stats.consecutive_failures) == ("ok", 0)


async def test_backoff_is_capped_at_15_seconds(nursery, loopback_clock) -> None:
    async with Go19Endpoint([(LOCALHOST, closed_port())], max_failures=100) as endpoint:
        times = []
        for _ in range(14):
            with pytest.raises(ConnectionFailed):
                await endpoint.request(request())
            times.append(trio.current_time())
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert gaps == [1.5, 3.0, 4.5, 6.0, 7.5, 9.0, 10.5, 12.0, 13.5, 15.0, 15.0, 15.0, 15.0]


async def test_replica_that_comes_back_during_backoff_is_used_again(
    nursery, loopback_clock
) -> None:
    port = closed_port()
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        for _ in range(3):  # failures at 0, 1.5 and 4.5
            with pytest.raises(ConnectionFailed):
                await endpoint.request(request())
        await trio.sleep(0.5)
        await start_server(nursery, RecordingEngine(answer="K10"), port=port)
        assert await endpoint.request(request()) == wire.MoveReply(9, 9)
        assert trio.current_time() == 9.0  # waited out the third backoff, then connected
        (stats,) = endpoint.replica_stats()
        assert (stats.status, stats.consecutive_failures, stats.reconnects) == ("ok", 0, 3)


async def test_requests_avoid_a_dead_replica(nursery, loopback_clock) -> None:
    port = await start_server(nursery, RecordingEngine(answer="A1"))
    dead = closed_port()
    async with Go19Endpoint([(LOCALHOST, dead), (LOCALHOST, port)]) as endpoint:
        for _ in range(8):
            assert await endpoint.request(request()) == wire.MoveReply(18, 0)
        assert trio.current_time() == 0.0  # nobody waited for the dead replica's backoff
        dead_stats, live_stats = endpoint.replica_stats()
    assert dead_stats.status == "backoff" and dead_stats.consecutive_failures == 1
    assert live_stats.status == "ok" and live_stats.requests == 8


async def test_least_loaded_replica_gets_the_next_request(nursery) -> None:
    engines = [GateEngine(), GateEngine()]
    stats = [ServerStats(), ServerStats()]
    ports = [await start_server(nursery, e, slots=8, stats=s) for e, s in zip(engines, stats,
                                                                                strict=True)]
    replies = []
    async with Go19Endpoint([(LOCALHOST, p) for p in ports], slots_per_replica=2) as endpoint:

        async def one() -> None:
            replies.append(await endpoint.request(request()))

        async with trio.open_nursery() as clients:
            for expected in ([1, 0], [1, 1], [2, 1], [2, 2]):
                clients.start_soon(one)
                while [e.started for e in engines] != expected:
                    await trio.sleep(0.005)
            clients.start_soon(one)  # all four slots are busy: this one must queue
            await trio.sleep(0.2)
            assert [e.started for e in engines] == [2, 2]
            assert [r.in_flight for r in endpoint.replica_stats()] == [2, 2]
            for engine in engines:
                engine.release.set()
    assert replies == [wire.MoveReply(9, 9)] * 5
    assert sum(s.requests for s in stats) == 5


async def test_a_busy_replica_is_passed_over_until_it_is_free(nursery) -> None:
    quick, stuck = RecordingEngine(answer="A1"), GateEngine()
    quick_stats = ServerStats()
    ports = [await start_server(nursery, quick, stats=quick_stats),
             await start_server(nursery, stuck)]
    async with Go19Endpoint([(LOCALHOST, p) for p in ports], slots_per_replica=2) as endpoint:
        assert await endpoint.request(request()) == wire.MoveReply(18, 0)  # tie: the first
        async with trio.open_nursery() as clients:
            clients.start_soon(endpoint.request, request())  # tie on load: the less used one
            while stuck.started < 1:
                await trio.sleep(0.005)
            for _ in range(4):  # the stuck replica is busier: everything goes to the quick one
                assert await endpoint.request(request()) == wire.MoveReply(18, 0)
            assert stuck.started == 1
            stuck.release.set()
    assert quick_stats.requests == 5


async def test_pooled_connection_dropped_by_the_server_is_replaced(nursery, loopback_clock) -> None:
    async def answer(conn: int, n: int, request: wire.Request) -> bytes:
        return move_bytes(conn, n)

    server = ScriptedServer(answer)
    port = await server.start(nursery)
    stats = ServerStats()
    idle_port = await start_server(nursery, RecordingEngine(answer="B2"), idle_timeout=20,
                                   stats=stats)
    async with Go19Endpoint([(LOCALHOST, idle_port)], max_idle=1000) as endpoint:
        assert await endpoint.request(request()) == wire.MoveReply(17, 1)
        await trio.sleep(25)  # the server drops the idle connection at 20 s
        assert stats.timeouts == 1
        assert await endpoint.request(request()) == wire.MoveReply(17, 1)
        (replica,) = endpoint.replica_stats()
        assert replica.errors == 0 and replica.reconnects == 1
    async with Go19Endpoint([(LOCALHOST, port)], max_idle=10) as endpoint:
        assert await endpoint.request(request()) == wire.MoveReply(0, 0)
        await trio.sleep(11)  # older than max_idle: not reused
        assert await endpoint.request(request()) == wire.MoveReply(1, 0)
    assert server.connections == 2
