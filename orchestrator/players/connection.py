"""One GO19 client connection over the sans-IO codec, and where socket failures
become go19's player errors.

:class:`Go19Connection` carries one request at a time. A request that is
cancelled (the referee's deadline) or fails closes the connection: GO19 has no
request id, so a late reply must never be read as the answer to the next request.
Socket, timeout and protocol failures become :class:`PlayerError` types in one
place, :func:`wire_errors`. Nothing here takes a timeout: callers bound a connect
or a request with ``trio.fail_after``/``trio.move_on_after``.
"""

from __future__ import annotations

import os
import select
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import trio

from orchestrator.players.address import format_address
from orchestrator.players.base import ConnectionFailed, ProtocolViolation
from orchestrator.protocol import go19 as wire

Address = tuple[str, int]
_RECEIVE_CHUNK = 65536


def describe(exc: BaseException) -> str:
    """A short reason for a socket failure, digging under trio's wrappers."""
    seen = exc
    while seen.__cause__ is not None and not isinstance(seen, ExceptionGroup):
        seen = seen.__cause__
    if isinstance(seen, ExceptionGroup) and seen.exceptions:
        seen = seen.exceptions[0]
    if isinstance(seen, OSError) and seen.errno:
        return os.strerror(seen.errno).lower()
    return str(seen) or type(seen).__name__


@contextmanager
def wire_errors(where: str) -> Iterator[None]:
    """The one place where lower-level failures become go19 player errors."""
    try:
        yield
    except wire.RemoteProtocolError as exc:
        raise ProtocolViolation(f"{where}: {exc}") from exc
    except trio.TooSlowError as exc:
        raise ConnectionFailed(f"{where}: connect timed out") from exc
    except (UnicodeError, socket.gaierror) as exc:
        # The resolver's errors (IDNA's UnicodeError for 'a..b' or a label over 63
        # characters is not even an OSError): the name, not the network, is wrong.
        said = exc.strerror if isinstance(exc, socket.gaierror) else None
        detail = f": {said.lower()}" if said else ""
        raise ConnectionFailed(f"{where}: bad host name{detail}") from exc
    except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
        raise ConnectionFailed(f"{where}: {describe(exc)}") from exc


class ClosedBeforeReply(ConnectionFailed):
    """The peer hung up before sending a byte of the reply."""


class Go19Connection:
    """One client connection; one request or ping at a time."""

    def __init__(self, stream: trio.abc.Stream, where: str, limits: wire.Limits | None = None):
        self.where = where
        self._stream = stream
        self._codec = wire.Connection(wire.CLIENT, limits)
        self._busy = False
        self.closed = False
        self.exchanges = 0  # completed request/reply or ping/pong cycles
        self.round = 0  # set by the pool: which of its replica's failure rounds opened it
        self.idle_since = trio.current_time()

    @classmethod
    async def connect(
        cls, host: str, port: int, limits: wire.Limits | None = None
    ) -> Go19Connection:
        """Open a connection; callers bound it with ``trio.fail_after``."""
        where = format_address((host, port))
        with wire_errors(where):
            stream = await trio.open_tcp_stream(host, port)
        return cls(stream, where, limits)

    async def request(self, request: wire.Request) -> wire.MoveReply | wire.ErrorReply:
        """Send one request and return its reply; an error reply closes the connection."""
        reply = await self._exchange(request)
        if isinstance(reply, wire.ErrorReply):
            await self.aclose()
        assert isinstance(reply, wire.MoveReply | wire.ErrorReply), "a request's answer"
        return reply

    async def ping(self) -> float:
        """Round-trip time of one PING/PONG in milliseconds."""
        start = trio.current_time()
        await self._exchange(wire.Ping())
        return (trio.current_time() - start) * 1000.0

    async def _exchange(self, event: wire.Request | wire.Ping) -> wire.Event:
        if self.closed:
            raise ConnectionFailed(f"{self.where}: connection already closed")
        if self._busy:
            raise trio.BusyResourceError(f"{self.where}: a request is already in flight")
        self._busy = True
        finished = False
        try:
            reply = await self._send_and_receive(event)
            finished = True
        finally:
            self._busy = False
            if not finished:
                # Cancelled or failed: whatever arrives later belongs to no one.
                await self.aclose()
        self.exchanges += 1
        self.idle_since = trio.current_time()
        if self._codec.trailing_data[0]:
            await self.aclose()  # the peer said more than one reply: trust nothing after it
        return reply

    async def _send_and_receive(self, event: wire.Request | wire.Ping) -> wire.Event:
        got_bytes = False
        try:
            with wire_errors(self.where):
                await self._stream.send_all(self._codec.send(event))
                eof = False
                while (reply := self._next_reply(eof)) is wire.NEED_DATA:
                    data = await self._stream.receive_some(_RECEIVE_CHUNK)
                    got_bytes = got_bytes or bool(data)
                    eof = not data
                    self._codec.receive_data(data)
        except ConnectionFailed as exc:
            if not got_bytes:
                raise ClosedBeforeReply(str(exc)) from exc
            raise
        if isinstance(reply, wire.ConnectionClosed):
            raise ClosedBeforeReply(f"{self.where}: server closed the connection before replying")
        return reply

    def quiet(self) -> bool:
        """Nothing arrived since the last reply. Bytes here are a stray or duplicate reply
        that the next request would read as its answer (GO19 has no request id); an EOF
        or reset means the server dropped us. Either way the connection must not be
        reused. A stray reply still in flight when the next request goes out cannot be
        told apart: this narrows that race, it cannot close it."""
        sock = getattr(self._stream, "socket", None)
        if sock is None:
            return True
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        return not poller.poll(0)

    def _next_reply(self, eof: bool) -> wire.Event | wire.NeedData:
        try:
            return self._codec.next_event()
        except wire.RemoteProtocolError as exc:
            if eof:
                # Every byte so far was a valid beginning: the peer went away mid-reply, as
                # when its process dies (FIN or RST alike); a broken connection, not garbage.
                raise ConnectionFailed(f"{self.where}: {exc}") from exc
            raise

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            await trio.aclose_forcefully(self._stream)
