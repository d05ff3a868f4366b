"""`serve_go19` against raw sockets: bad and oversize frames, garbage, idle and slow clients."""

from __future__ import annotations

import socket
import struct

import trio

from orchestrator.players.heuristic import HeuristicPlayer
from orchestrator.serve import ServerStats
from tests.protocol.frames import request_head, request_prefix

from .conftest import LOCALHOST, GateEngine, RecordingEngine, start_server

REQUEST_HEAD = request_head()


def error_frame(message: str) -> bytes:
    data = message.encode()
    return b"RPLY\x00" + len(data).to_bytes(2, "big") + data


async def send_then_read_to_eof(port: int, data: bytes) -> bytes:
    """Send ``data``, keep our side open, and return everything until the server closes."""
    stream = await trio.open_tcp_stream(LOCALHOST, port)
    async with stream:
        await stream.send_all(data)
        received = bytearray()
        while chunk := await stream.receive_some(65536):
            received += chunk
        return bytes(received)


async def test_oversize_body_len_refused_without_reading_the_body(nursery) -> None:
    stats = ServerStats()
    port = await start_server(nursery, RecordingEngine(), stats=stats)
    # Only the 8-byte header is ever sent: an answer proves the server did not wait for 2 GiB.
    reply = await send_then_read_to_eof(port, request_prefix(2**31))
    assert reply == error_frame(
        "bad frame: request body_len 2147483648 exceeds the limit of 8388608"
    )
    assert stats.bad_frames == 1 and stats.requests == 0


async def test_garbage_gets_an_error_frame_and_the_server_keeps_serving(nursery) -> None:
    stats = ServerStats()
    port = await start_server(nursery, HeuristicPlayer("engine", seed=2), stats=stats)
    junk = [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"\x00" * 100, b"GO18", b"PINGPONG", b"RPLY"]
    replies = {}

    async def one(data: bytes) -> None:
        replies[data] = await send_then_read_to_eof(port, data)

    async with trio.open_nursery() as clients:
        for data in junk:
            clients.start_soon(one, data)
    assert replies[b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"] == error_frame(
        "bad frame: expected request or PING, got bytes b'GE'"
    )
    assert replies[b"\x00" * 100] == error_frame(
        "bad frame: expected request or PING, got bytes b'\\x00'"
    )
    assert replies[b"GO18"] == error_frame("bad frame: expected request or PING, got bytes b'GO18'")
    assert replies[b"PINGPONG"] == b"PONG" + error_frame(
        "bad frame: expected request or PING, got bytes b'PO'"
    )
    assert stats.bad_frames == 5
    stream = await trio.open_tcp_stream(LOCALHOST, port)
    async with stream:
        await stream.send_all(REQUEST_HEAD + bytes(361))
        reply = await stream.receive_some(7)
    assert reply[:5] == b"RPLY\x01" and reply[5] < 19 and reply[6] < 19


async def test_bad_board_byte_is_named_in_the_error_frame(nursery) -> None:
    port = await start_server(nursery, RecordingEngine())
    board = bytearray(361)
    board[5 * 19 + 11] = 7
    reply = await send_then_read_to_eof(port, REQUEST_HEAD + bytes(board))
    assert reply == error_frame("bad frame: request board byte 7 at row 5, col 11 is not 0, 1 or 2")


async def test_unsupported_board_size_is_refused(nursery) -> None:
    port = await start_server(nursery, RecordingEngine())
    head = request_head(9)
    reply = await send_then_read_to_eof(port, head)
    assert reply == error_frame("bad frame: request board size 9 not allowed (allowed: 19)")
    nine = await start_server(nursery, RecordingEngine(vertex="E5"), allowed_sizes=(9, 19))
    stream = await trio.open_tcp_stream(LOCALHOST, nine)
    async with stream:
        await stream.send_all(head + bytes(81))
        assert await stream.receive_some(7) == b"RPLY\x01\x04\x04"


async def test_idle_client_dropped_at_the_idle_timeout(nursery, loopback_clock) -> None:
    stats = ServerStats()
    port = await start_server(nursery, RecordingEngine(), idle_timeout=60, stats=stats)
    stream = await trio.open_tcp_stream(LOCALHOST, port)
    async with stream:
        await stream.send_all(b"PING")
        assert await stream.receive_some(4) == b"PONG"
        assert await stream.receive_some(100) == b""  # closed, with no error frame
    assert trio.current_time() == 60.0
    assert stats.timeouts == 1


async def test_slow_frame_dropped_at_the_frame_timeout(nursery, loopback_clock) -> None:
    stats = ServerStats()
    port = await start_server(nursery, RecordingEngine(), idle_timeout=60, frame_timeout=10,
                              stats=stats)
    stream = await trio.open_tcp_stream(LOCALHOST, port)
    async with stream:
        await trio.sleep(30)  # idle, but within the idle timeout
        await stream.send_all(REQUEST_HEAD[:5])
        await trio.sleep(5)
        await stream.send_all(REQUEST_HEAD[5:9])  # trickling does not extend the deadline
        assert await stream.receive_some(100) == b""
    assert trio.current_time() == 40.0
    assert stats.timeouts == 1 and stats.requests == 0


async def test_client_leaving_mid_request_does_not_hurt_the_server(nursery) -> None:
    stats = ServerStats()
    port = await start_server(nursery, RecordingEngine(), delay_ms=200, stats=stats)
    stream = await trio.open_tcp_stream(LOCALHOST, port)
    await stream.send_all(REQUEST_HEAD + bytes(361))
    await stream.aclose()
    while stats.open_connections:
        await trio.sleep(0.01)
    again = await trio.open_tcp_stream(LOCALHOST, port)
    async with again:
        await again.send_all(b"PING")
        assert await again.receive_some(4) == b"PONG"
    assert stats.requests == 1 and stats.connections == 2


async def test_clients_resetting_mid_frame_do_not_hurt_the_server(nursery) -> None:
    stats = ServerStats()
    port = await start_server(nursery, RecordingEngine(), stats=stats)
    for partial in (b"GO19\x00", REQUEST_HEAD + bytes(100), b"PI"):
        sock = trio.socket.socket()
        await sock.connect((LOCALHOST, port))
        await sock.send(partial)
        # Linger 0: close() sends RST, so the server's reads and its error frame both fail.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    while stats.connections < 3 or stats.open_connections:
        await trio.sleep(0.01)
    stream = await trio.open_tcp_stream(LOCALHOST, port)
    async with stream:
        await stream.send_all(b"PING")
        assert await stream.receive_some(4) == b"PONG"
    assert stats.requests == 0


async def test_a_request_whose_client_left_is_cancelled_where_asked(nursery) -> None:
    """A VLM's port (``cancel_abandoned``) drops the request of a client that went away
    (the engine is never released here); other ports let engines finish (test_interrupt's
    held requests are answered once released)."""
    engine = GateEngine()
    stats = ServerStats()
    port = await start_server(nursery, engine, cancel_abandoned=True, stats=stats)
    stream = await trio.open_tcp_stream(LOCALHOST, port)
    await stream.send_all(REQUEST_HEAD + bytes(361))
    while not engine.started:
        await trio.sleep(0.01)
    await stream.aclose()
    with trio.fail_after(10):  # the engine would hold the request for ever
        while engine.running or stats.open_connections:
            await trio.sleep(0.01)
    assert engine.started == 1 and not engine.release.is_set()
