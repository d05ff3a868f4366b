"""Seeded mutation fuzzing of the two parsers that read what strangers send: the GO19
codec (bytes off the network) and the SGF reader (files from anywhere).

Seeds are real material: frames as go19 sends them (requests with rendered PNGs on
9x9, 13x13 and 19x19 boards, replies, error replies, pings) and SGF files, both
go19-written ones and the real corpus in ../shared. Each case applies one to four
mutations (bit flips, special bytes, boundary values over length fields, deletions,
duplications, truncation, splices with another seed). What must hold: the codec
raises only :class:`RemoteProtocolError` and gives the same events and error
however the bytes are chunked; the reader returns games or raises :class:`SgfError`,
nothing else, and replaying what it returns raises only :class:`SgfError` too.

``make test`` runs a few thousand cases of each; ``make test-faults`` (slow) runs
100,000 of each.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS
from orchestrator.players.random_player import RandomChooser
from orchestrator.protocol.go19 import (
    CLIENT,
    NEED_DATA,
    SERVER,
    Connection,
    ConnectionClosed,
    ErrorReply,
    Limits,
    MoveReply,
    Ping,
    Pong,
    RemoteProtocolError,
    Request,
)
from orchestrator.render import render_png
from orchestrator.rules.board import Board
from orchestrator.rules.replay import replay_positions
from orchestrator.sgf import MAX_SIZE, SgfError, SgfGame, SgfMove, read_games, write_sgf
from tests.conftest import REAL_SGF, requires_real_sgf

LIMITS = Limits(allowed_sizes=frozenset({9, 13, 19}))
SPECIAL = b"\x00\x01\x02\x03\x7f\x80\xfe\xff()[];\\\n:GOXIRPLYNG"
BOUNDARY = (0, 1, 5, 6, 7, 80, 81, 87, 255, 256, 0x7FFF, 0xFFFF, 0x10000, 2**23, 2**31, 2**32 - 1)


def mutate(rng: random.Random, data: bytes, seeds: list[bytes]) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(8)
        at = rng.randrange(len(out) + 1)
        if op == 0 and out:
            at = min(at, len(out) - 1)
            out[at] ^= 1 << rng.randrange(8)
        elif op == 1 and out:
            out[min(at, len(out) - 1)] = rng.choice(SPECIAL)
        elif op == 2:  # a length-like field: 2 or 4 big-endian bytes set to a boundary value
            width = rng.choice((2, 4))
            value = rng.choice(BOUNDARY) & ((1 << (8 * width)) - 1)
            out[at : at + width] = value.to_bytes(width, "big")
        elif op == 3:
            del out[at : at + rng.randint(1, 64)]
        elif op == 4:
            out[at:at] = out[max(0, at - rng.randint(1, 64)) : at]
        elif op == 5:
            out[at:at] = rng.randbytes(rng.randint(1, 16))
        elif op == 6:
            del out[at:]
        else:
            donor = rng.choice(seeds)
            out[at:] = donor[rng.randrange(len(donor) + 1) :]
    return bytes(out)


def fuzz(seeds: list[bytes], cases: int, seed: int, check: Callable[[bytes, random.Random], None]):
    rng = random.Random(seed)
    for _ in range(cases):
        check(mutate(rng, rng.choice(seeds), seeds), rng)


# -- the GO19 codec -----------------------------------------------------------------------


def random_position(rng: random.Random, size: int, moves: int) -> Board:
    board = Board(size)
    player = RandomChooser(rng.randrange(1 << 30))
    color = BLACK
    for _ in range(moves):
        point = player.choose(board, color)
        if point != PASS:
            board.play(color, point)
        color = 3 - color
    return board


def codec_seeds() -> tuple[list[bytes], list[bytes]]:
    """Streams as a client sends them and as a server sends them."""
    rng = random.Random(1)
    client = Connection(CLIENT, LIMITS)
    requests: list[bytes] = []
    for size in (9, 13, 19):
        for moves in (0, 7, 40):
            board = random_position(rng, size, moves).to_array()
            png = render_png(board, None, size_px=rng.choice((128, 160)))
            frame = client.send(Request(size, rng.choice((BLACK, WHITE)), png, board.tobytes()))
            client = Connection(CLIENT, LIMITS)  # one outstanding request per connection
            requests.append(frame)
    to_server = [*requests, b"PING", requests[0] + b"PING" + requests[1], b"PING" * 3]
    to_client = [
        b"RPLY\x01\x03\x04", b"RPLY\x01\xff\xff", b"RPLY\x01\x00\x00" + b"RPLY\x01\x08\x08",
        error_frame("model not ready"), error_frame("é€ñ 五"), b"PONG",
    ]
    return to_server, to_client


def error_frame(message: str) -> bytes:
    data = message.encode()
    return b"RPLY\x00" + len(data).to_bytes(2, "big") + data


def drive(conn: Connection, chunks: list[bytes], answer) -> tuple[list, str | None]:
    """Events and the RemoteProtocolError message; anything else propagates (a bug)."""
    events: list = []
    try:
        for chunk in chunks:
            conn.receive_data(chunk)
            while (event := conn.next_event()) is not NEED_DATA:
                if isinstance(event, ConnectionClosed):
                    return events, None
                events.append(event)
                answer(conn, event)
    except RemoteProtocolError as exc:
        return events, str(exc)
    return events, None


def chunked(data: bytes, rng: random.Random) -> list[bytes]:
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 12))))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)] + [b""]


def server_answer(conn: Connection, event) -> None:
    conn.send(Pong() if isinstance(event, Ping) else MoveReply.pass_())


def check_server(data: bytes, rng: random.Random) -> None:
    whole = drive(Connection(SERVER, LIMITS), [data, b""], server_answer)
    if len(data) > 1:
        assert drive(Connection(SERVER, LIMITS), chunked(data, rng), server_answer) == whole
    for event in whole[0]:
        assert isinstance(event, Request | Ping)


def client_waiting(ping: bool = False) -> Connection:
    conn = Connection(CLIENT, LIMITS)
    conn.send(Ping() if ping else Request(9, BLACK, b"", bytes(81)))
    return conn


def client_answer(conn: Connection, event) -> None:
    assert isinstance(event, MoveReply | ErrorReply | Pong)
    conn.send(Request(9, BLACK, b"", bytes(81)))


def check_client(data: bytes, rng: random.Random) -> None:
    ping = rng.random() < 0.2
    whole = drive(client_waiting(ping), [data, b""], client_answer)
    if len(data) > 1:
        assert drive(client_waiting(ping), chunked(data, rng), client_answer) == whole
    for event in whole[0]:
        if isinstance(event, MoveReply):
            assert event.is_pass or (event.row < 9 and event.col < 9)


slow = pytest.mark.slow


@pytest.mark.parametrize("cases", [3000, pytest.param(100_000, marks=slow)])
def test_codec_takes_mutated_frames_with_only_protocol_errors(cases: int) -> None:
    to_server, to_client = codec_seeds()
    fuzz(to_server, cases, seed=cases, check=check_server)
    fuzz(to_client, cases, seed=cases + 1, check=check_client)


# -- the SGF reader -------------------------------------------------------------------------


def written_seeds() -> list[bytes]:
    """SGFs as go19 writes them: fallback marks, comments, passes, odd komi, 9 to 19."""
    rng = random.Random(2)
    out = []
    for size in (9, 13, 19):
        board, color, moves = Board(size), BLACK, []
        player = RandomChooser(size)
        for i in range(60):
            point = player.choose(board, color)
            if point != PASS:
                board.play(color, point)
            source = rng.choice((None, None, "opening", "fallback:timeout", "fallback:error"))
            comment = "a [bracketed] \\ comment" if i % 7 else None
            moves.append(SgfMove(color, point, source, comment))
            color = 3 - color
        game = SgfGame(size=size, komi=rng.choice((0.0, 6.5, 7.5, -3.0)), rules="Chinese",
                       result="B+3.5", black_name="r5 \u4e94", white_name="r4",
                       date="2026-11-29", root_props={"GN": "fuzz"}, moves=tuple(moves))
        out.append(write_sgf(game, {"GOXIXRUN": "run-1", "GOXIXREC": '{"a": [1, "]"]}'}))
    return out


def corpus_seeds() -> list[bytes]:
    paths = sorted(p for p in REAL_SGF.rglob("*") if p.suffix.lower() == ".sgf")
    return [p.read_bytes() for p in paths]


def check_sgf(data: bytes, rng: random.Random) -> None:
    try:
        games = read_games(data)
    except SgfError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    for game in games:
        assert 2 <= game.size <= MAX_SIZE  # FF[4]: up to 52x52; replay stops at 25
        area = game.size * game.size
        assert all(m.point == PASS or 0 <= m.point < area for m in game.moves)
        if rng.random() < 0.05:  # replaying costs ten reads: a sample is enough
            try:
                for _ in replay_positions(game):
                    pass
            except SgfError:
                pass


@pytest.mark.parametrize("cases", [2000, pytest.param(100_000, marks=slow)])
def test_sgf_reader_takes_mutated_go19_files_with_only_sgf_errors(cases: int) -> None:
    fuzz(written_seeds(), cases, seed=cases, check=check_sgf)


@requires_real_sgf
@pytest.mark.parametrize("cases", [2000, pytest.param(100_000, marks=slow)])
def test_sgf_reader_takes_the_mutated_real_corpus_with_only_sgf_errors(cases: int) -> None:
    seeds = corpus_seeds()
    assert len(seeds) > 500
    fuzz(seeds, cases, seed=cases + 7, check=check_sgf)


def test_mutation_keeps_most_inputs_parseable_enough_to_matter() -> None:
    """A fuzzer whose mutants all die at the first byte tests nothing: most mutated
    go19 files must still read as games, and most mutated frames must still yield events."""
    rng = random.Random(3)
    seeds = written_seeds()
    read = 0
    for _ in range(300):
        try:
            read += bool(read_games(mutate(rng, rng.choice(seeds), seeds)))
        except SgfError:
            pass
    to_server, _ = codec_seeds()
    parsed = sum(
        bool(drive(Connection(SERVER, LIMITS), [mutate(rng, f, to_server), b""], server_answer)[0])
        for f in (rng.choice(to_server) for _ in range(300))
    )
    assert read > 100 and parsed > 45, (read, parsed)


def test_seeds_are_valid_before_mutation() -> None:
    to_server, to_client = codec_seeds()
    for data in to_server:
        events, error = drive(Connection(SERVER, LIMITS), [data, b""], server_answer)
        assert error is None and events
    for data in to_client:
        events, error = drive(client_waiting(data == b"PONG"), [data, b""], client_answer)
        assert error is None and events
    for data in written_seeds():
        (game,) = read_games(data)
        assert len(game.moves) == 60 and sum(m.source is not None for m in game.moves) > 0
