"""A page's WebSocket on a plain socket, byte by byte, for clients that misbehave on
purpose (tests/web/test_page_faults.py, bench/page_faults.py)."""

from __future__ import annotations

import base64
import os
import socket
import struct


def handshake(port: int, rcvbuf: int | None = None) -> socket.socket:
    """The page's /ws opened as a browser opens it (its Origin is the page's), read up to
    the end of the server's answer and no further."""
    sock = socket.socket()
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                  f"Sec-WebSocket-Version: 13\r\nOrigin: http://127.0.0.1:{port}\r\n\r\n"
                  ).encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = sock.recv(1)  # byte by byte: nothing past the answer is read
        if not chunk:
            raise ConnectionError(f"closed during the handshake: {answer!r}")
        answer += chunk
    if not answer.startswith(b"HTTP/1.1 101"):
        raise ConnectionError(answer.split(b"\r\n")[0].decode())
    return sock


def frame_head(opcode: int, length: int) -> bytes:
    """A client frame's head saying it is ``length`` long (masked with the zero mask: the
    payload goes as it is). Opcode 1: text, 8: close."""
    if length < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
    elif length < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
    return head + b"\0\0\0\0"
