"""The sans-IO GO19 codec: byte-exact frames, refusals before payloads, sticky errors, fuzzing."""

from __future__ import annotations

import gc
import weakref

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.protocol.go19 import (
    CLIENT,
    NEED_DATA,
    SERVER,
    Connection,
    ConnectionClosed,
    ErrorReply,
    Limits,
    LocalProtocolError,
    MoveReply,
    Ping,
    Pong,
    RemoteProtocolError,
    Request,
)
from tests.protocol.frames import request_frame, request_head, request_prefix

PNG = b"\x89PNG\r\n\x1a\nfake"
EMPTY19 = bytes(361)


def board19(**stones: int) -> bytes:
    """A 19x19 board with stones named like r3c16=1."""
    cells = bytearray(361)
    for name, color in stones.items():
        row, col = name[1:].split("c")
        cells[int(row) * 19 + int(col)] = color
    return bytes(cells)


def server(limits: Limits | None = None) -> Connection:
    return Connection(SERVER, limits)


def client_awaiting(event: Request | Ping, limits: Limits | None = None) -> Connection:
    conn = Connection(CLIENT, limits)
    conn.send(event)
    return conn


def request19(ai_side: int = 1) -> Request:
    return Request(19, ai_side, PNG, EMPTY19)


# -- byte-exact frames -----------------------------------------------------------------------


def test_request_bytes_match_the_wire_format() -> None:
    board = board19(r0c0=1, r18c18=2, r3c15=1)
    wire = Connection(CLIENT).send(Request(19, 2, PNG, board))
    body_len = 1 + 1 + 4 + len(PNG) + 361
    assert wire[:4] == b"GO19"
    assert wire[4:8] == body_len.to_bytes(4, "big")
    assert wire[8:14] == bytes([19, 2]) + len(PNG).to_bytes(4, "big")
    assert wire[14 : 14 + len(PNG)] == PNG
    assert wire[14 + len(PNG) :] == board
    assert wire[14 + len(PNG) + 3 * 19 + 15] == 1
    assert len(wire) == 8 + body_len


def test_server_parses_a_hand_built_request() -> None:
    board = board19(r0c18=2, r18c0=1)
    wire = request_frame(board, b"PNG")
    conn = server()
    conn.receive_data(wire)
    assert conn.next_event() == Request(19, 1, b"PNG", board)


def test_replies_are_byte_exact() -> None:
    conn = server()
    conn.receive_data(Connection(CLIENT).send(request19()))
    assert isinstance(conn.next_event(), Request)
    assert conn.send(MoveReply(3, 16)) == b"RPLY\x01\x03\x10"
    conn.receive_data(Connection(CLIENT).send(request19()))
    conn.next_event()
    assert conn.send(MoveReply.pass_()) == b"RPLY\x01\xff\xff"
    conn.receive_data(Connection(CLIENT).send(request19()))
    conn.next_event()
    assert conn.send(ErrorReply("dé")) == b"RPLY\x00\x00\x03d\xc3\xa9"


def test_ping_pong() -> None:
    client = Connection(CLIENT)
    assert client.send(Ping()) == b"PING"
    conn = server()
    conn.receive_data(b"PING")
    assert conn.next_event() == Ping()
    assert conn.send(Pong()) == b"PONG"
    client.receive_data(b"PONG")
    assert client.next_event() == Pong()
    assert client.awaiting is None


def test_client_parses_move_pass_and_error_replies() -> None:
    conn = client_awaiting(request19())
    conn.receive_data(b"RPLY\x01\x12\x00")
    assert conn.next_event() == MoveReply(18, 0)
    conn.send(request19())
    conn.receive_data(b"RPLY\x01\xff\xff")
    reply = conn.next_event()
    assert reply.is_pass
    conn.send(request19())
    conn.receive_data(b"RPLY\x00\x00\x0bno adapter!")
    assert conn.next_event() == ErrorReply("no adapter!")


def test_partial_frames_need_data() -> None:
    conn = client_awaiting(request19())
    conn.receive_data(b"RPL")
    assert conn.next_event() is NEED_DATA
    conn.receive_data(b"Y\x01\x04")
    assert conn.next_event() is NEED_DATA
    conn.receive_data(b"\x05")
    assert conn.next_event() == MoveReply(4, 5)


def test_clean_eof_between_frames_is_connection_closed() -> None:
    conn = server()
    conn.receive_data(b"")
    assert conn.next_event() == ConnectionClosed()
    waiting = client_awaiting(request19())
    waiting.receive_data(b"")
    assert waiting.next_event() == ConnectionClosed()


# -- refusals, checked before the payload arrives ------------------------------------------


def refused(conn: Connection, data: bytes, match: str) -> None:
    conn.receive_data(data)
    with pytest.raises(RemoteProtocolError, match=match):
        conn.next_event()


def test_oversize_body_len_refused_from_the_header_alone() -> None:
    refused(server(), request_prefix(2**31), "body_len 2147483648 exceeds the limit of 8388608")


def test_body_len_cap_is_configurable() -> None:
    header = request_prefix(6 + 4 + 361)
    refused(server(Limits(max_body_len=100)), header, "body_len 371 exceeds the limit of 100")


def test_oversize_png_len_refused_before_the_png() -> None:
    head = request_head(png_len=5000)
    refused(server(Limits(max_png_len=4096)), head, "png_len 5000 exceeds the limit of 4096")


def test_body_len_must_match_png_and_board() -> None:
    head = request_head(png_len=4, body_len=6 + 4 + 360)
    refused(server(), head, r"body_len 370 != 6 \+ png_len 4 \+ 19\*19 = 371")


def test_body_len_shorter_than_header() -> None:
    refused(server(), request_prefix(5), "shorter than its header")


def test_board_size_must_be_allowed() -> None:
    head = request_head(9)
    refused(server(), head, "board size 9 not allowed")
    nine = server(Limits(allowed_sizes=frozenset({9, 19})))
    nine.receive_data(head + bytes(81))
    assert nine.next_event() == Request(9, 1, b"", bytes(81))


def test_ai_side_must_be_black_or_white() -> None:
    head = request_head(side=3)
    refused(server(), head, "ai_side 3 is neither 1 nor 2")


def test_board_bytes_must_be_stones() -> None:
    board = bytearray(361)
    board[2 * 19 + 7] = 3
    frame = request_frame(bytes(board))
    refused(server(), frame, "board byte 3 at row 2, col 7")


def test_bad_magic_refused_at_the_first_wrong_byte() -> None:
    refused(server(), b"GX", "expected request or PING, got bytes b'GX'")
    refused(client_awaiting(request19()), b"HTTP", "expected RPLY")


def test_reply_coordinates_must_be_on_the_board_or_a_pass() -> None:
    refused(client_awaiting(request19()), b"RPLY\x01\x13\x00", r"\(19, 0\) is off a 19x19 board")
    refused(client_awaiting(request19()), b"RPLY\x01\xff\x00", r"\(255, 0\)")


def test_reply_status_must_be_0_or_1() -> None:
    refused(client_awaiting(request19()), b"RPLY\x02", "status byte 2")


def test_oversize_error_reply_refused_before_the_message() -> None:
    refused(client_awaiting(request19()), b"RPLY\x00\x10\x01", "err_len 4097 exceeds")


def test_error_reply_must_be_utf8() -> None:
    refused(client_awaiting(request19()), b"RPLY\x00\x00\x02\xff\xfe", "not UTF-8")


def test_pong_where_a_reply_is_due_and_vice_versa() -> None:
    refused(client_awaiting(request19()), b"PONG", "expected RPLY")
    refused(client_awaiting(Ping()), b"RPLY\x01\x00\x00", "expected PONG")


def test_unsolicited_data_from_server() -> None:
    refused(Connection(CLIENT), b"R", "no request outstanding")


def test_eof_inside_a_frame() -> None:
    conn = server()
    conn.receive_data(b"GO19\x00\x00")
    conn.receive_data(b"")
    with pytest.raises(RemoteProtocolError, match="closed inside the request header"):
        conn.next_event()
    late = client_awaiting(request19())
    late.receive_data(b"RPLY\x00\x00\x05abc")
    late.receive_data(b"")
    with pytest.raises(RemoteProtocolError, match="closed inside the error reply message"):
        late.next_event()


# -- sticky errors and the one error frame a server may still send -------------------------


def test_remote_errors_are_sticky() -> None:
    conn = server()
    conn.receive_data(b"XXXX")
    with pytest.raises(RemoteProtocolError) as first:
        conn.next_event()
    conn.receive_data(b"PING")
    with pytest.raises(RemoteProtocolError) as again:
        conn.next_event()
    assert type(again.value) is type(first.value) and again.value.args == first.value.args
    assert conn.errored


def _failed_connection() -> weakref.ref[Connection]:
    conn = server()
    body = 1 << 20
    conn.receive_data(request_head(png_len=body - 6 - 361) + bytes(64 * 1024))
    assert conn.next_event() is NEED_DATA
    conn.receive_data(b"")  # the peer went away mid-frame
    raised = 0
    for step in (conn.next_event, conn.next_event, lambda: conn.send(Pong())):
        try:
            step()  # the first error, then the sticky one twice
        except RemoteProtocolError:
            raised += 1
    assert raised == 3
    return weakref.ref(conn)


def test_a_failed_connection_is_freed_without_the_garbage_collector() -> None:
    """The sticky error must not tie the connection (and the peer's partial frame, up to
    8 MiB) into a reference cycle: `go19 serve` held 1.2 GiB after 150 aborted frames."""
    gc.disable()
    try:
        assert _failed_connection()() is None
    finally:
        gc.enable()


def test_server_may_send_one_error_reply_after_a_remote_error() -> None:
    conn = server()
    conn.receive_data(b"GO19\xff\xff\xff\xff")
    with pytest.raises(RemoteProtocolError):
        conn.next_event()
    assert conn.send(ErrorReply("bad frame")) == b"RPLY\x00\x00\x09bad frame"
    with pytest.raises(RemoteProtocolError):
        conn.send(ErrorReply("again"))
    with pytest.raises(RemoteProtocolError):
        conn.send(Pong())


def test_client_cannot_send_error_reply_after_remote_error() -> None:
    conn = client_awaiting(request19())
    conn.receive_data(b"JUNK")
    with pytest.raises(RemoteProtocolError):
        conn.next_event()
    with pytest.raises(RemoteProtocolError):
        conn.send(ErrorReply("x"))


# -- local misuse -----------------------------------------------------------------------------


def test_client_cannot_send_a_second_request_while_one_is_outstanding() -> None:
    conn = client_awaiting(request19())
    with pytest.raises(LocalProtocolError, match="Request still unanswered"):
        conn.send(Ping())
    with pytest.raises(LocalProtocolError):  # sticky
        conn.next_event()


def test_server_must_answer_before_reading_on() -> None:
    conn = server()
    conn.receive_data(b"PINGPING")
    assert conn.next_event() == Ping()
    with pytest.raises(LocalProtocolError, match="before answering Ping"):
        conn.next_event()


@pytest.mark.parametrize(
    "event, match",
    [
        (MoveReply(1, 1), "no request to answer"),
        (Pong(), "no PING to answer"),
        (Request(19, 1, b"", EMPTY19), "a server cannot send Request"),
    ],
)
def test_server_sending_out_of_turn(event, match: str) -> None:
    with pytest.raises(LocalProtocolError, match=match):
        server().send(event)


def test_server_cannot_answer_a_ping_with_a_move() -> None:
    conn = server()
    conn.receive_data(b"PING")
    conn.next_event()
    with pytest.raises(LocalProtocolError):
        conn.send(MoveReply(0, 0))


def test_server_cannot_send_off_board_move() -> None:
    conn = server()
    conn.receive_data(Connection(CLIENT).send(request19()))
    conn.next_event()
    with pytest.raises(LocalProtocolError, match=r"\(19, 3\) is off"):
        conn.send(MoveReply(19, 3))


@pytest.mark.parametrize(
    "request_, match",
    [
        (Request(9, 1, b"", bytes(81)), "board size 9 not allowed"),
        (Request(19, 0, b"", EMPTY19), "ai_side 0"),
        (Request(19, 1, b"", bytes(360)), "360 bytes, not 361"),
        (Request(19, 1, b"", b"\x03" * 361), "0, 1 or 2"),
        (Request(19, 1, bytes(5000), EMPTY19), "max_png_len"),
    ],
)
def test_client_refuses_to_encode_invalid_requests(request_: Request, match: str) -> None:
    conn = Connection(CLIENT, Limits(max_png_len=4096))
    with pytest.raises(LocalProtocolError, match=match):
        conn.send(request_)


def test_long_error_messages_are_cut_at_a_character_boundary() -> None:
    conn = server(Limits(max_err_len=10))
    conn.receive_data(Connection(CLIENT).send(request19()))
    conn.next_event()
    assert conn.send(ErrorReply("abcdefghi€€")) == b"RPLY\x00\x00\x09abcdefghi"


# -- fuzzing ------------------------------------------------------------------------------------

FUZZ_LIMITS = Limits(max_body_len=200, max_png_len=40, max_err_len=30,
                     allowed_sizes=frozenset({2, 3, 5}))


def drive(conn: Connection, chunks: list[bytes], answer) -> tuple[list, str | None]:
    """Feed chunks, drain events, answer each one so the next can be read.

    Returns the events and the RemoteProtocolError message, if any; any other
    exception propagates and fails the test.
    """
    events: list = []
    try:
        for chunk in chunks:
            conn.receive_data(chunk)
            while True:
                event = conn.next_event()
                if event is NEED_DATA or isinstance(event, ConnectionClosed):
                    break
                events.append(event)
                answer(conn, event)
    except RemoteProtocolError as exc:
        return events, str(exc)
    return events, None


def server_answer(conn: Connection, event) -> None:
    conn.send(MoveReply.pass_() if isinstance(event, Request) else Pong())


def client_answer(conn: Connection, event) -> None:
    conn.send(Request(3, 1, b"", bytes(9)))


@st.composite
def requests(draw, sizes=(2, 3, 5)) -> Request:
    size = draw(st.sampled_from(sizes))
    board = draw(st.binary(min_size=size * size, max_size=size * size))
    board = bytes(b % 3 for b in board)
    return Request(size, draw(st.sampled_from((1, 2))), draw(st.binary(max_size=40)), board)


def encode_request(request: Request) -> bytes:
    return Connection(CLIENT, FUZZ_LIMITS).send(request)


client_frames = st.one_of(requests().map(encode_request), st.just(b"PING"), st.binary(max_size=16))
server_frames = st.one_of(
    st.tuples(st.integers(0, 2), st.integers(0, 2)).map(lambda rc: b"RPLY\x01" + bytes(rc)),
    st.just(b"RPLY\x01\xff\xff"),
    st.text(max_size=12).map(lambda t: t.encode()).map(
        lambda m: b"RPLY\x00" + len(m).to_bytes(2, "big") + m
    ),
    st.binary(max_size=8),
)


@st.composite
def streams(draw, frames) -> bytes:
    data = bytearray(b"".join(draw(st.lists(frames, max_size=4))))
    if data and draw(st.booleans()):
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        data += draw(st.binary(max_size=8))
    return bytes(data)


def one_byte_at_a_time(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))] + [b""]


def check_server_stream(data: bytes) -> None:
    whole = drive(Connection(SERVER, FUZZ_LIMITS), [data, b""], server_answer)
    trickled = drive(Connection(SERVER, FUZZ_LIMITS), one_byte_at_a_time(data), server_answer)
    assert whole == trickled


def check_client_stream(data: bytes) -> None:
    def fresh() -> Connection:
        conn = Connection(CLIENT, FUZZ_LIMITS)
        conn.send(Request(3, 1, b"", bytes(9)))
        return conn

    assert drive(fresh(), [data, b""], client_answer) == drive(
        fresh(), one_byte_at_a_time(data), client_answer
    )


FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=100_000, deadline=None, suppress_health_check=list(HealthCheck))


@FAST
@given(streams(client_frames))
def test_server_fuzz_only_remote_errors_and_chunking_does_not_matter(data: bytes) -> None:
    check_server_stream(data)


@FAST
@given(streams(server_frames))
def test_client_fuzz_only_remote_errors_and_chunking_does_not_matter(data: bytes) -> None:
    check_client_stream(data)


@FAST
@given(st.binary(max_size=64))
def test_raw_bytes_fuzz_both_roles(data: bytes) -> None:
    check_server_stream(data)
    check_client_stream(data)


@pytest.mark.slow
@SLOW
@given(st.one_of(streams(client_frames), st.binary(max_size=300)))
def test_server_fuzz_heavy(data: bytes) -> None:
    check_server_stream(data)


@pytest.mark.slow
@SLOW
@given(st.one_of(streams(server_frames), st.binary(max_size=100)))
def test_client_fuzz_heavy(data: bytes) -> None:
    check_client_stream(data)


@FAST
@given(requests(sizes=(19,)) | requests(), st.data())
def test_round_trip_of_every_event_type(request_: Request, data) -> None:
    limits = Limits(allowed_sizes=frozenset({2, 3, 5, 19}))
    client = Connection(CLIENT, limits)
    srv = Connection(SERVER, limits)
    srv.receive_data(client.send(request_))
    assert srv.next_event() == request_
    size = request_.size
    reply = data.draw(
        st.one_of(
            st.builds(MoveReply, st.integers(0, size - 1), st.integers(0, size - 1)),
            st.just(MoveReply.pass_()),
            st.builds(ErrorReply, st.text(max_size=200)),
        )
    )
    client.receive_data(srv.send(reply))
    assert client.next_event() == reply
    srv.receive_data(client.send(Ping()))
    assert srv.next_event() == Ping()
    client.receive_data(srv.send(Pong()))
    assert client.next_event() == Pong()
    assert client.awaiting is None and srv.awaiting is None
