"""The GO19 wire protocol as a sans-IO state machine, shaped like h11.

A :class:`Connection` never touches a socket: :meth:`Connection.receive_data`
buffers bytes (``b""`` means EOF), :meth:`Connection.next_event` turns them into
one event or :data:`NEED_DATA`, and :meth:`Connection.send` turns an event into
bytes. The client role sends :class:`Request`/:class:`Ping` and reads
:class:`MoveReply`/:class:`ErrorReply`/:class:`Pong`; the server role mirrors it.

Frames (all integers big-endian)::

    request   "GO19" | body_len u32 | size u8 | ai_side u8 | png_len u32 | png | board
    reply     "RPLY" | 1 | row u8 | col u8            (pass: 255, 255)
    error     "RPLY" | 0 | err_len u16 | utf-8 message
    ping      "PING"          pong  "PONG"

``board`` is ``size*size`` bytes (0 empty, 1 black, 2 white), row-major, row 0 at
the top, and ``body_len`` must equal ``6 + png_len + size*size``. There is no
request id, so one request is in flight per connection at a time.

Every declared length is checked against :class:`Limits` as soon as its bytes
arrive, before waiting for the payload it announces, so an oversize frame is
refused without being read. A peer that breaks the protocol gets
:class:`RemoteProtocolError`; using this API out of turn raises
:class:`LocalProtocolError`. Both are sticky: once raised, every later call
raises the same error again, except that a server may still send one
:class:`ErrorReply` to tell the peer why it is being dropped. Any other
exception escaping this module is a bug.
"""

from __future__ import annotations

import copy
import enum
import struct
from dataclasses import dataclass, field
from typing import NoReturn

MiB = 1 << 20
PASS_BYTE = 255
_REQUEST_MAGIC = b"GO19"
_REPLY_MAGIC = b"RPLY"
_PING = b"PING"
_PONG = b"PONG"
_BODY_HEAD = struct.Struct(">BBI")  # size, ai_side, png_len
_BODY_HEAD_LEN = _BODY_HEAD.size  # 6
_WIRE_MAX_ERR_LEN = 0xFFFF


class ProtocolError(Exception):
    """Base of both protocol errors; the message says what was wrong and where."""


class LocalProtocolError(ProtocolError):
    """We used the API wrongly (sent out of turn, built an invalid event)."""


class RemoteProtocolError(ProtocolError):
    """The peer sent bytes that are not valid GO19 at this point."""


class NeedData(enum.Enum):
    """The type of :data:`NEED_DATA` (an enum of one, so that ``is NEED_DATA`` narrows)."""

    NEED_DATA = "NEED_DATA"

    def __repr__(self) -> str:
        return self.value


NEED_DATA = NeedData.NEED_DATA


class Role(enum.Enum):
    CLIENT = "client"
    SERVER = "server"


CLIENT = Role.CLIENT
SERVER = Role.SERVER


@dataclass(frozen=True, slots=True)
class Request:
    size: int
    ai_side: int  # 1 black, 2 white: the colour the server must play
    png: bytes = field(repr=False)
    board: bytes = field(repr=False)  # size*size bytes, row-major, row 0 at the top


@dataclass(frozen=True, slots=True)
class MoveReply:
    row: int
    col: int

    @classmethod
    def pass_(cls) -> MoveReply:
        return cls(PASS_BYTE, PASS_BYTE)

    @property
    def is_pass(self) -> bool:
        return self.row == PASS_BYTE and self.col == PASS_BYTE


@dataclass(frozen=True, slots=True)
class ErrorReply:
    message: str


@dataclass(frozen=True, slots=True)
class Ping:
    pass


@dataclass(frozen=True, slots=True)
class Pong:
    pass


@dataclass(frozen=True, slots=True)
class ConnectionClosed:
    """The peer closed its side cleanly, between frames."""


Event = Request | MoveReply | ErrorReply | Ping | Pong | ConnectionClosed


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps on what we accept; everything larger is refused before it is read."""

    max_body_len: int = 8 * MiB
    max_png_len: int = 8 * MiB
    max_err_len: int = 4096
    allowed_sizes: frozenset[int] = frozenset({19})


class Connection:
    """One side of one GO19 connection.

    The client may have one :class:`Request` or :class:`Ping` outstanding; the
    server must answer each incoming request (``MoveReply``/``ErrorReply``) or
    ping (``Pong``) before it asks for the next event.
    """

    def __init__(self, role: Role, limits: Limits | None = None) -> None:
        self.role = role
        self.limits = limits or Limits()
        self._buffer = bytearray()
        self._eof = False
        self._error: ProtocolError | None = None
        self._may_send_error_reply = False
        # What the side that must answer owes: None, a Request (its size bounds the
        # reply's coordinates) or a Ping.
        self._outstanding: Request | Ping | None = None

    # -- state -------------------------------------------------------------

    @property
    def awaiting(self) -> Request | Ping | None:
        """The request or ping that has not been answered yet, if any."""
        return self._outstanding

    @property
    def errored(self) -> bool:
        return self._error is not None

    @property
    def buffered(self) -> int:
        """How many received bytes wait to be parsed (a partial frame, mostly)."""
        return len(self._buffer)

    @property
    def trailing_data(self) -> tuple[bytes, bool]:
        """Bytes received but not yet parsed, and whether EOF was seen (as in h11)."""
        return bytes(self._buffer), self._eof

    # -- receiving ---------------------------------------------------------

    def receive_data(self, data: bytes | bytearray) -> None:
        """Buffer bytes from the peer; ``b""`` means the peer closed its side."""
        if data == b"":
            self._eof = True
            return
        if self._eof:
            self._fail(LocalProtocolError("received data after EOF"))
        self._buffer += data

    def next_event(self) -> Event | NeedData:
        if self._error is not None:
            raise copy.copy(self._error)
        try:
            if self.role is SERVER:
                if self._outstanding is not None:
                    raise LocalProtocolError(
                        f"next_event() before answering {type(self._outstanding).__name__}"
                    )
                event = self._parse_from_client()
            else:
                event = self._parse_from_server()
        except RemoteProtocolError as exc:
            self._may_send_error_reply = self.role is SERVER
            self._fail(exc)
        except LocalProtocolError as exc:
            self._fail(exc)
        if isinstance(event, Request | Ping) and self.role is SERVER:
            self._outstanding = event
        elif isinstance(event, MoveReply | ErrorReply | Pong):
            self._outstanding = None
        return event

    def _parse_from_client(self) -> Event | NeedData:
        magic = self._magic((_REQUEST_MAGIC, _PING), "request or PING")
        if magic is None:
            return self._closed_or_need_data()
        if magic == _PING:
            del self._buffer[:4]
            return Ping()
        return self._parse_request()

    def _parse_request(self) -> Request | NeedData:
        limits = self.limits
        buf = self._buffer
        if len(buf) < 8:
            return self._need_more("request header")
        (body_len,) = struct.unpack_from(">I", buf, 4)
        if body_len > limits.max_body_len:
            raise RemoteProtocolError(
                f"request body_len {body_len} exceeds the limit of {limits.max_body_len}"
            )
        if body_len < _BODY_HEAD_LEN:
            raise RemoteProtocolError(f"request body_len {body_len} is shorter than its header")
        if len(buf) < 8 + _BODY_HEAD_LEN:
            return self._need_more("request header")
        size, ai_side, png_len = _BODY_HEAD.unpack_from(buf, 8)
        if size not in limits.allowed_sizes:
            allowed = ", ".join(str(s) for s in sorted(limits.allowed_sizes))
            raise RemoteProtocolError(f"request board size {size} not allowed (allowed: {allowed})")
        if ai_side not in (1, 2):
            raise RemoteProtocolError(f"request ai_side {ai_side} is neither 1 nor 2")
        if png_len > limits.max_png_len:
            raise RemoteProtocolError(
                f"request png_len {png_len} exceeds the limit of {limits.max_png_len}"
            )
        expected = _BODY_HEAD_LEN + png_len + size * size
        if body_len != expected:
            raise RemoteProtocolError(
                f"request body_len {body_len} != 6 + png_len {png_len} + {size}*{size} = {expected}"
            )
        end = 8 + body_len
        if len(buf) < end:
            return self._need_more("request body")
        png_start = 8 + _BODY_HEAD_LEN
        board = bytes(buf[png_start + png_len : end])
        bad = _first_bad_stone(board)
        if bad is not None:
            row, col = divmod(bad, size)
            raise RemoteProtocolError(
                f"request board byte {board[bad]} at row {row}, col {col} is not 0, 1 or 2"
            )
        png = bytes(buf[png_start : png_start + png_len])
        del buf[:end]
        return Request(size, ai_side, png, board)

    def _parse_from_server(self) -> Event | NeedData:
        outstanding = self._outstanding
        if outstanding is None:
            if self._buffer:
                raise RemoteProtocolError("data from the server with no request outstanding")
            return self._closed_or_need_data()
        if isinstance(outstanding, Ping):
            if self._magic((_PONG,), "PONG") is None:
                return self._closed_or_need_data()
            del self._buffer[:4]
            return Pong()
        if self._magic((_REPLY_MAGIC,), "RPLY") is None:
            return self._closed_or_need_data()
        return self._parse_reply(outstanding.size)

    def _parse_reply(self, size: int) -> MoveReply | ErrorReply | NeedData:
        buf = self._buffer
        if len(buf) < 5:
            return self._need_more("reply header")
        status = buf[4]
        if status == 1:
            if len(buf) < 7:
                return self._need_more("move reply")
            row, col = buf[5], buf[6]
            if not ((row < size and col < size) or (row == col == PASS_BYTE)):
                raise RemoteProtocolError(
                    f"reply move ({row}, {col}) is off a {size}x{size} board and not a pass"
                )
            del buf[:7]
            return MoveReply(row, col)
        if status != 0:
            raise RemoteProtocolError(f"reply status byte {status} is neither 0 nor 1")
        if len(buf) < 7:
            return self._need_more("error reply header")
        (err_len,) = struct.unpack_from(">H", buf, 5)
        if err_len > self.limits.max_err_len:
            raise RemoteProtocolError(
                f"error reply err_len {err_len} exceeds the limit of {self.limits.max_err_len}"
            )
        if len(buf) < 7 + err_len:
            return self._need_more("error reply message")
        try:
            message = bytes(buf[7 : 7 + err_len]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RemoteProtocolError(f"error reply message is not UTF-8 ({exc.reason})") from None
        del buf[: 7 + err_len]
        return ErrorReply(message)

    def _magic(self, allowed: tuple[bytes, ...], what: str) -> bytes | None:
        """The frame's magic once all 4 bytes are in; refuse a bad prefix as soon as it shows."""
        head = bytes(self._buffer[:4])
        if not any(m.startswith(head) for m in allowed):
            # Quote up to the first wrong byte only, so the message does not depend on chunking.
            bad = next(i for i in range(1, 5) if not any(m.startswith(head[:i]) for m in allowed))
            raise RemoteProtocolError(f"expected {what}, got bytes {head[:bad]!r}")
        return head if len(head) == 4 else None

    def _closed_or_need_data(self) -> ConnectionClosed | NeedData:
        if not self._eof:
            return NEED_DATA
        if self._buffer:
            raise RemoteProtocolError(
                f"connection closed inside a frame ({len(self._buffer)} bytes)"
            )
        if self._outstanding is not None and self.role is CLIENT:
            # The peer hung up on us: report it as an event; the caller decides what it means.
            self._outstanding = None
        return ConnectionClosed()

    def _need_more(self, what: str) -> NeedData:
        if self._eof:
            raise RemoteProtocolError(f"connection closed inside the {what}")
        return NEED_DATA

    # -- sending -----------------------------------------------------------

    def send(self, event: Event) -> bytes:
        if self._error is not None:
            if not (self._may_send_error_reply and isinstance(event, ErrorReply)):
                raise copy.copy(self._error)
            self._may_send_error_reply = False
            return self._encode_error_reply(event)
        try:
            if self.role is CLIENT:
                return self._send_as_client(event)
            return self._send_as_server(event)
        except LocalProtocolError as exc:
            self._fail(exc)

    def _send_as_client(self, event: Event) -> bytes:
        if isinstance(event, Request | Ping) and self._outstanding is not None:
            raise LocalProtocolError(
                f"cannot send {type(event).__name__}: "
                f"{type(self._outstanding).__name__} still unanswered"
            )
        if isinstance(event, Ping):
            self._outstanding = event
            return _PING
        if isinstance(event, Request):
            data = self._encode_request(event)
            self._outstanding = event
            return data
        raise LocalProtocolError(f"a client cannot send {type(event).__name__}")

    def _send_as_server(self, event: Event) -> bytes:
        outstanding = self._outstanding
        if isinstance(event, Pong):
            if not isinstance(outstanding, Ping):
                raise LocalProtocolError("cannot send Pong: no PING to answer")
            self._outstanding = None
            return _PONG
        if isinstance(event, MoveReply | ErrorReply):
            if not isinstance(outstanding, Request):
                raise LocalProtocolError(
                    f"cannot send {type(event).__name__}: no request to answer"
                )
            if isinstance(event, MoveReply):
                data = _encode_move_reply(event, outstanding.size)
            else:
                data = self._encode_error_reply(event)
            self._outstanding = None
            return data
        raise LocalProtocolError(f"a server cannot send {type(event).__name__}")

    def _encode_request(self, request: Request) -> bytes:
        size = request.size
        if size not in self.limits.allowed_sizes:
            raise LocalProtocolError(f"board size {size} not allowed")
        if request.ai_side not in (1, 2):
            raise LocalProtocolError(f"ai_side {request.ai_side} is neither 1 nor 2")
        if len(request.png) > self.limits.max_png_len:
            raise LocalProtocolError(f"png of {len(request.png)} bytes exceeds max_png_len")
        if len(request.board) != size * size:
            raise LocalProtocolError(f"board has {len(request.board)} bytes, not {size * size}")
        if _first_bad_stone(request.board) is not None:
            raise LocalProtocolError("board bytes must be 0, 1 or 2")
        body_len = _BODY_HEAD_LEN + len(request.png) + size * size
        if body_len > self.limits.max_body_len:
            raise LocalProtocolError(f"request body of {body_len} bytes exceeds max_body_len")
        return b"".join((
            _REQUEST_MAGIC,
            struct.pack(">I", body_len),
            _BODY_HEAD.pack(size, request.ai_side, len(request.png)),
            request.png,
            request.board,
        ))

    def _encode_error_reply(self, event: ErrorReply) -> bytes:
        # Our own peer refuses longer messages, so cut at a character boundary rather than fail.
        cap = min(self.limits.max_err_len, _WIRE_MAX_ERR_LEN)
        data = event.message.encode("utf-8")[:cap].decode("utf-8", "ignore").encode("utf-8")
        return _REPLY_MAGIC + b"\x00" + struct.pack(">H", len(data)) + data

    def _fail(self, exc: ProtocolError) -> NoReturn:
        # No reference cycles through the raised exception: its traceback holds the
        # frames that hold this connection (and a peer's partial frame, up to
        # max_body_len), which then lived until a full garbage collection. So keep a
        # copy without a traceback, and drop this frame's own reference to ``exc``.
        self._error = copy.copy(exc)
        try:
            raise exc
        finally:
            del exc


def _encode_move_reply(event: MoveReply, size: int) -> bytes:
    row, col = event.row, event.col
    if not (event.is_pass or (0 <= row < size and 0 <= col < size)):
        raise LocalProtocolError(f"move ({row}, {col}) is off a {size}x{size} board")
    return _REPLY_MAGIC + bytes((1, row, col))


_STONE_BYTES = bytes((0, 1, 2))


def _first_bad_stone(board: bytes) -> int | None:
    # translate() deletes the valid bytes in C; anything left is invalid.
    if not board.translate(None, _STONE_BYTES):
        return None
    return next(i for i, b in enumerate(board) if b > 2)
