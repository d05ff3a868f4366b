"""Client and server together over real loopback TCP: round trips, passes, error
replies, the Player's fault mapping, concurrency and slots."""

from __future__ import annotations

import io

import numpy as np
import pytest
import trio
from PIL import Image

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS, from_gtp
from orchestrator.players.base import ConnectionFailed, ProtocolViolation, RefusedMove
from orchestrator.players.go19 import Go19Connection, Go19Endpoint, Go19Player
from orchestrator.players.heuristic import HeuristicPlayer
from orchestrator.players.random_player import RandomPlayer
from orchestrator.protocol import go19 as wire
from orchestrator.render import RenderSettings
from orchestrator.rules.game import Game
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


def game_with(*moves: str, size: int = 19) -> Game:
    game = Game(size=size)
    for vertex in moves:
        game.play(from_gtp(vertex, size))
    return game


def request_for(board: np.ndarray, color: int) -> wire.Request:
    return wire.Request(board.shape[0], color, b"", board.astype(np.uint8).tobytes())


async def test_player_round_trip_keeps_orientation_and_color(nursery) -> None:
    engine = RecordingEngine(vertex="D4")
    port = await start_server(nursery, engine)
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        player = Go19Player(endpoint, "r5")
        game = game_with("Q16", "C3")  # black Q16 = row 3, col 15; white C3 = row 16, col 2
        assert (await player.answer(game)).move() == from_gtp("D4", 19)
    board, color = engine.seen[0]
    assert color == BLACK
    assert board.shape == (19, 19)
    assert board[3, 15] == BLACK and board[16, 2] == WHITE
    assert int(board.sum()) == BLACK + WHITE


async def test_player_sends_a_png_of_the_requested_size(nursery) -> None:
    async def answer(conn: int, n: int, request: wire.Request) -> bytes:
        return move_bytes(0, 0)

    server = ScriptedServer(answer)
    port = await server.start(nursery)
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        game = game_with("D16")
        player = Go19Player(endpoint, "r4", RenderSettings(image_px=256))
        assert (await player.answer(game)).move() == 0
    request = server.requests[0][1]
    assert request.ai_side == WHITE
    image = Image.open(io.BytesIO(request.png))
    assert image.format == "PNG" and image.size == (256, 256)


async def test_heuristic_engine_captures_a_group_in_atari(nursery) -> None:
    # White's three stones on the top edge have one liberty left, at row 0 col 6.
    game = Game()
    white = [from_gtp(v, 19) for v in ("D19", "E19", "F19")]
    black = [from_gtp(v, 19) for v in ("C19", "D18", "E18", "F18")]
    game.setup(black=black, white=white, to_play=BLACK)
    port = await start_server(nursery, HeuristicPlayer("engine", seed=1, level=2))
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        assert (await Go19Player(endpoint, "h").answer(game)).move() == from_gtp("G19", 19)


async def test_random_engine_passes_when_only_eyes_are_left(nursery) -> None:
    # Black everywhere except the points with even row and even column: single eyes.
    board = np.full((19, 19), BLACK, dtype=np.uint8)
    board[::2, ::2] = 0
    port = await start_server(nursery, RandomPlayer("engine", seed=3))
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        for color in (BLACK, WHITE):  # black will not fill its eyes; white may not suicide
            reply = await endpoint.request(request_for(board, color))
            assert reply == wire.MoveReply(255, 255)
    game = Game()
    game.setup(black=np.flatnonzero(board.reshape(-1) == BLACK).tolist())
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        assert (await Go19Player(endpoint, "rnd").answer(game)).move() == PASS


async def test_impossible_position_gets_an_error_reply_and_the_next_request_works(
    nursery,
) -> None:
    stats = ServerStats()
    port = await start_server(nursery, HeuristicPlayer("engine", seed=0), stats=stats)
    board = np.zeros((19, 19), dtype=np.uint8)
    board[0, 0] = WHITE
    board[0, 1] = board[1, 0] = BLACK  # the white corner stone has no liberty
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        reply = await endpoint.request(request_for(board, BLACK))
        assert isinstance(reply, wire.ErrorReply)
        assert reply.message.startswith("impossible position")
        assert "A19" in reply.message
        board[0, 0] = 0
        move = await endpoint.request(request_for(board, WHITE))
        assert isinstance(move, wire.MoveReply) and board[move.row, move.col] == 0
    assert stats.error_replies == 1 and stats.requests == 2


async def test_error_reply_becomes_player_error_reply(nursery) -> None:
    async def refuse(conn: int, n: int, request: wire.Request) -> bytes:
        return b"RPLY\x00\x00\x0fmodel not ready"

    port = await ScriptedServer(refuse).start(nursery)
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        with pytest.raises(RefusedMove, match="r5: model not ready"):
            (await Go19Player(endpoint, "r5").answer(Game())).move()


async def test_garbage_reply_becomes_protocol_violation(nursery) -> None:
    async def garbage(conn: int, n: int, request: wire.Request) -> bytes:
        return b"HTTP/1.1 400 Bad Request\r\n\r\n"

    port = await ScriptedServer(garbage).start(nursery)
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        with pytest.raises(ProtocolViolation, match="expected RPLY, got bytes b'H'"):
            (await Go19Player(endpoint, "r5").answer(Game())).move()


async def test_off_board_reply_becomes_protocol_violation(nursery) -> None:
    async def off_board(conn: int, n: int, request: wire.Request) -> bytes:
        return move_bytes(19, 4)

    port = await ScriptedServer(off_board).start(nursery)
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        with pytest.raises(ProtocolViolation, match=r"\(19, 4\) is off a 19x19 board"):
            (await Go19Player(endpoint, "r5").answer(Game())).move()


async def test_server_hanging_up_becomes_connection_failed(nursery) -> None:
    async def hang_up(conn: int, n: int, request: wire.Request) -> None:
        return None

    port = await ScriptedServer(hang_up).start(nursery)
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        with pytest.raises(ConnectionFailed, match="closed the connection before replying"):
            (await Go19Player(endpoint, "r5").answer(Game())).move()


async def test_refused_connect_becomes_connection_failed() -> None:
    port = closed_port()
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        with pytest.raises(ConnectionFailed, match=f"127.0.0.1:{port}: connection refused"):
            (await Go19Player(endpoint, "r5").answer(Game())).move()


async def test_ping_and_requests_share_a_connection(nursery) -> None:
    port = await start_server(nursery, RecordingEngine(vertex="pass"))
    conn = await Go19Connection.connect(LOCALHOST, port)
    try:
        assert await conn.ping() >= 0
        reply = await conn.request(request_for(np.zeros((19, 19)), BLACK))
        assert reply.is_pass
        assert await conn.ping() >= 0
        assert conn.exchanges == 3 and not conn.closed
    finally:
        await conn.aclose()


async def test_many_connections_at_once_and_slots_bound_the_engine(nursery) -> None:
    engine = GateEngine()
    stats = ServerStats()
    port = await start_server(nursery, engine, slots=3, stats=stats)
    replies: list[wire.MoveReply] = []

    async def one() -> None:
        conn = await Go19Connection.connect(LOCALHOST, port)
        try:
            replies.append(await conn.request(request_for(np.zeros((19, 19)), WHITE)))
        finally:
            await conn.aclose()

    async with trio.open_nursery() as clients:
        for _ in range(12):
            clients.start_soon(one)
        while stats.requests < 12:
            await trio.sleep(0.01)
        assert engine.running == 3  # the other nine wait for a slot
        engine.release.set()
    assert replies == [wire.MoveReply(9, 9)] * 12
    assert engine.most_running == 3
    assert stats.connections == 12


async def test_delay_holds_each_answer_back(nursery, loopback_clock) -> None:
    port = await start_server(nursery, RecordingEngine(), delay_ms=2500)
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        start = trio.current_time()
        await endpoint.request(request_for(np.zeros((19, 19)), BLACK))
        assert trio.current_time() - start == pytest.approx(2.5)


async def test_connection_is_reused_between_requests(nursery) -> None:
    async def answer(conn: int, n: int, request: wire.Request) -> bytes:
        return move_bytes(conn, n)

    server = ScriptedServer(answer)
    port = await server.start(nursery)
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        board = np.zeros((19, 19))
        replies = [await endpoint.request(request_for(board, BLACK)) for _ in range(3)]
    assert replies == [wire.MoveReply(0, 0), wire.MoveReply(0, 1), wire.MoveReply(0, 2)]
    assert server.connections == 1
