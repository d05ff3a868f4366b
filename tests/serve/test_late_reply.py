"""A reply that arrives after the caller's deadline must never answer a later request.

The server here misbehaves on purpose: the first request it ever sees is answered
(3, 3) ten seconds late, on the same connection; every other request gets (4, 4)
at once. A client that reused the timed-out connection would read (3, 3) as the
answer to its second request.
"""

from __future__ import annotations

import numpy as np
import trio

from orchestrator.color import BLACK
from orchestrator.players.base import ConnectionFailed
from orchestrator.players.go19 import Go19Connection, Go19Endpoint
from orchestrator.protocol import go19 as wire

from .conftest import LOCALHOST, ScriptedServer, move_bytes

LATE = move_bytes(3, 3)
ON_TIME = move_bytes(4, 4)


def late_first_reply() -> ScriptedServer:
    async def script(conn: int, n: int, request: wire.Request) -> bytes:
        if conn == 0 and n == 0:
            await trio.sleep(10)
            return LATE
        return ON_TIME

    return ScriptedServer(script)


def request() -> wire.Request:
    return wire.Request(19, BLACK, b"png", np.zeros(361, dtype=np.uint8).tobytes())


async def test_endpoint_never_reads_the_late_reply(nursery, loopback_clock) -> None:
    server = late_first_reply()
    port = await server.start(nursery)
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        with trio.move_on_after(1) as deadline:
            await endpoint.request(request())
        assert deadline.cancelled_caught
        assert trio.current_time() == 1.0
        assert await endpoint.request(request()) == wire.MoveReply(4, 4)
        # Still correct after the late reply has been sent into the closed connection.
        await trio.sleep(15)
        assert await endpoint.request(request()) == wire.MoveReply(4, 4)
        (stats,) = endpoint.replica_stats()
    assert stats.timeouts == 1 and stats.errors == 0
    assert [conn for conn, _ in server.requests] == [0, 1, 1]
    assert server.endings[0] in ("client closed", "broken")


async def test_connection_closes_itself_when_cancelled(nursery, loopback_clock) -> None:
    server = late_first_reply()
    port = await server.start(nursery)
    conn = await Go19Connection.connect(LOCALHOST, port)
    with trio.move_on_after(1):
        await conn.request(request())
    assert conn.closed
    try:
        await conn.request(request())
    except ConnectionFailed as exc:
        assert "connection already closed" in str(exc)
    else:
        raise AssertionError("a cancelled connection answered another request")
    while 0 not in server.endings:  # the server tries its late reply at 10 s
        await trio.sleep(1)
    assert server.endings[0] in ("client closed", "broken")
    assert len(server.requests) == 1
