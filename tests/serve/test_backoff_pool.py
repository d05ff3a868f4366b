"""The endpoint's reconnect schedule, giving up and coming back, and load spreading."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import trio

from orchestrator.collect.standings import words
from orchestrator.color import BLACK
from orchestrator.events import Event, ReplicaChanged
from orchestrator.players.base import ConnectionFailed, EndpointDown
from orchestrator.players.go19 import Go19Endpoint
from orchestrator.protocol import go19 as wire
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

        await trio.sleep(100)  # virtual time (loopback_clock): long after any backoff
        with pytest.raises(EndpointDown):
            await endpoint.request(request())
        assert trio.current_time() == 122.5  # no attempt, no wait

        await start_server(nursery, RecordingEngine(vertex="C3"), port=port)
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
        await trio.sleep(0.5)  # virtual time: inside the 1.5 s backoff, not past it
        await start_server(nursery, RecordingEngine(vertex="K10"), port=port)
        assert await endpoint.request(request()) == wire.MoveReply(9, 9)
        assert trio.current_time() == 9.0  # waited out the third backoff, then connected
        (stats,) = endpoint.replica_stats()
        assert (stats.status, stats.consecutive_failures, stats.reconnects) == ("ok", 0, 3)


async def test_requests_avoid_a_dead_replica(nursery, loopback_clock) -> None:
    port = await start_server(nursery, RecordingEngine(vertex="A1"))
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
            while endpoint.queued < 1:
                await trio.sleep(0.005)
            assert [e.started for e in engines] == [2, 2]
            assert [r.in_flight for r in endpoint.replica_stats()] == [2, 2]
            for engine in engines:
                engine.release.set()
    assert replies == [wire.MoveReply(9, 9)] * 5
    assert sum(s.requests for s in stats) == 5


async def test_a_busy_replica_is_passed_over_until_it_is_free(nursery) -> None:
    quick, stuck = RecordingEngine(vertex="A1"), GateEngine()
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
    idle_port = await start_server(nursery, RecordingEngine(vertex="B2"), idle_timeout=20,
                                   stats=stats)
    async with Go19Endpoint([(LOCALHOST, idle_port)], max_idle=1000) as endpoint:
        assert await endpoint.request(request()) == wire.MoveReply(17, 1)
        while not stats.timeouts:  # the server drops the idle connection at 20 s
            await trio.sleep(1)  # virtual time: polls the state, steps to 20 s
        assert trio.current_time() >= 20
        assert await endpoint.request(request()) == wire.MoveReply(17, 1)
        (replica,) = endpoint.replica_stats()
        assert replica.errors == 0 and replica.reconnects == 1
    async with Go19Endpoint([(LOCALHOST, port)], max_idle=10) as endpoint:
        assert await endpoint.request(request()) == wire.MoveReply(0, 0)
        await trio.sleep(11)  # older than max_idle: not reused
        assert await endpoint.request(request()) == wire.MoveReply(1, 0)
    assert server.connections == 2


async def hang_up(conn: int, n: int, request: wire.Request) -> None:
    return None  # accept, read the request, close without a word


async def test_a_server_that_accepts_and_hangs_up_goes_down_like_a_refusing_one(
    nursery, loopback_clock
) -> None:
    server = ScriptedServer(hang_up)
    port = await server.start(nursery)
    events: list[tuple[float, Event]] = []
    async with Go19Endpoint([(LOCALHOST, port)],
                            on_event=lambda e: events.append((trio.current_time(), e))) as endpoint:
        failed_at = []
        for _ in range(5):
            with pytest.raises(ConnectionFailed, match="closed the connection") as caught:
                await endpoint.request(request())
            assert not isinstance(caught.value, EndpointDown)
            failed_at.append(trio.current_time())
            (stats,) = endpoint.replica_stats()
            assert stats.status == "backoff"
            assert stats.retry_at == failed_at[-1] + 1.5 * len(failed_at)
        with pytest.raises(ConnectionFailed):
            await endpoint.request(request())
        failed_at.append(trio.current_time())
        assert endpoint.is_down()
        with pytest.raises(EndpointDown, match="all replicas down"):
            await endpoint.request(request())
    assert failed_at == ATTEMPTS  # the refused connection's schedule, to the tick
    assert server.connections == 6
    reason = "server closed the connection before replying"
    where = f"{LOCALHOST}:{port}"
    assert [e for _, e in events] == [
        *(ReplicaChanged(where, "backoff", 1.5 * n, reason, n) for n in range(1, 6)),
        ReplicaChanged(where, "down", 9.0, reason, 6),
    ]
    assert [words(e) for _, e in events][-2:] == [
        f"{where}: connect failed ({reason}); retry in 7.5 s",
        f"{where}: down after 6 failed connects ({reason})",
    ]


async def test_hang_ups_together_do_not_speed_up_the_schedule(nursery, loopback_clock) -> None:
    port = await ScriptedServer(hang_up).start(nursery)
    events: list[tuple[float, ReplicaChanged]] = []
    async with Go19Endpoint([(LOCALHOST, port)], slots_per_replica=8,
                            on_event=lambda e: events.append((trio.current_time(), e))) as endpoint:
        async with trio.open_nursery() as clients:
            for _ in range(8):
                clients.start_soon(_expect_failure, endpoint)
        (stats,) = endpoint.replica_stats()
    # Connections opened before a failure was counted fail in the same round: each round
    # is one step of the schedule, whatever the number of requests that broke in it.
    failures = [(t, e.retry_in) for t, e in events if e.status == "backoff"]
    assert failures == [(0.0, 1.5), (1.5, 3.0), (4.5, 4.5), (9.0, 6.0)][:len(failures)]
    assert stats.consecutive_failures == len(failures) and stats.status == "backoff"


async def _expect_failure(endpoint: Go19Endpoint) -> None:
    with pytest.raises(ConnectionFailed):
        await endpoint.request(request())


async def test_a_server_that_answers_once_per_connection_is_not_down(
    nursery, loopback_clock
) -> None:
    async def first_only(conn: int, n: int, request: wire.Request) -> bytes | None:
        return move_bytes(0, 0) if n == 0 else None

    port = await ScriptedServer(first_only).start(nursery)
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        for _ in range(20):  # each second request is retried on a fresh connection
            assert await endpoint.request(request()) == wire.MoveReply(0, 0)
        (stats,) = endpoint.replica_stats()
    assert (stats.status, stats.consecutive_failures) == ("ok", 0)


async def test_down_replica_is_probed_and_used_again(nursery, loopback_clock) -> None:
    port = closed_port()
    events: list[tuple[float, ReplicaChanged]] = []
    async with trio.open_nursery() as probes:
        endpoint = Go19Endpoint([(LOCALHOST, port)], nursery=probes,
                                on_event=lambda e: events.append((trio.current_time(), e)))
        async with endpoint:
            await endpoint.wait_up()  # usable: returns at once
            assert trio.current_time() == 0.0
            for _ in range(6):
                with pytest.raises(ConnectionFailed):
                    await endpoint.request(request())
            assert endpoint.is_down() and trio.current_time() == 22.5
            (stats,) = endpoint.replica_stats()
            assert stats.retry_at == 22.5 + 9.0  # the first probe, on the schedule
            # Probes at 31.5, 42, 54, 67.5 and 82.5 fail (backoff 9, 10.5, 12, 13.5, 15 s);
            # the server is back at 70, the probe at 82.5 finds it.
            await trio.sleep(70 - 22.5)
            assert endpoint.is_down()
            stats = ServerStats()
            await start_server(nursery, RecordingEngine(vertex="C3"), port=port, stats=stats)
            await endpoint.wait_up()
            assert trio.current_time() == 82.5
            assert not endpoint.is_down()
            assert stats.pings == 1
            assert await endpoint.request(request()) == wire.MoveReply(16, 2)
            assert stats.connections == 1  # the probe's connection serves the request
            (replica,) = endpoint.replica_stats()
            assert (replica.status, replica.consecutive_failures) == ("ok", 0)
        # Closing the endpoint ends its probes: this nursery can exit.
    where = f"{LOCALHOST}:{port}"
    assert events[-2:] == [
        (22.5, ReplicaChanged(where, "down", 9.0, "connection refused", 6)),
        (82.5, ReplicaChanged(where, "ok", failures=10, probes=5, probe="answered PING")),
    ]
    assert words(events[-1][1]) == f"{where}: back up, answered PING after 5 probes; in use again"


async def test_closing_the_endpoint_stops_probing(nursery, loopback_clock) -> None:
    async with trio.open_nursery() as probes:
        async with Go19Endpoint([(LOCALHOST, closed_port())], nursery=probes,
                                max_failures=1) as endpoint:
            with pytest.raises(ConnectionFailed):
                await endpoint.request(request())
            assert endpoint.is_down()
            with trio.move_on_after(1000):
                await endpoint.wait_up()
            assert endpoint.is_down()
    assert trio.current_time() == 1000.0  # the probe nursery exited once the endpoint closed


def test_replica_percentiles_are_nearest_rank() -> None:
    from orchestrator.players.replica import ReplicaStats

    stats = ReplicaStats("a:1", "ok", None, 0, 0, 20, 0, 0, 0, 0, None, None,
                         tuple(float(ms) for ms in range(20, 0, -1)))
    assert (stats.percentile_ms(50), stats.percentile_ms(95), stats.percentile_ms(100)) == (
        10.0, 19.0, 20.0)
    assert replace(stats, latency_ms=()).percentile_ms(50) is None


async def test_a_dropped_request_is_not_counted_as_a_timeout(nursery, loopback_clock) -> None:
    """The second Ctrl-C cancels the requests in flight: the dashboard showed them as
    timeouts (t/o 4 per replica). A request cut off by its deadline is one; a request
    cancelled for any other reason before its deadline is not."""
    engine = GateEngine()
    port = await start_server(nursery, engine, slots=4)
    async with Go19Endpoint([(LOCALHOST, port)], slots_per_replica=4) as endpoint:
        with trio.move_on_after(5) as deadline:
            await endpoint.request(request())
        assert deadline.cancelled_caught and trio.current_time() == 5
        (stats,) = endpoint.replica_stats()
        assert stats.timeouts == 1

        async def dropped(task_status=trio.TASK_STATUS_IGNORED) -> None:
            with trio.move_on_after(30):  # a deadline it never reaches
                task_status.started()
                await endpoint.request(request())

        async with trio.open_nursery() as games:
            for _ in range(3):
                await games.start(dropped)
            while engine.running < 3:
                await trio.sleep(0.01)
            games.cancel_scope.cancel()  # as collect drops the games in flight
        (stats,) = endpoint.replica_stats()
        assert (stats.timeouts, stats.errors, stats.requests) == (1, 0, 4)
