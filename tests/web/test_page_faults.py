"""The pages' server against pages that misbehave (issue 30), over real sockets: pages that
never read, a message that never ends, a binary frame, no Origin, too many pages."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import trio
import trio.testing

pytest.importorskip("hypercorn", reason="the web extra is not installed (pip install -e '.[web]')")
trio_websocket = pytest.importorskip("trio_websocket", reason="comes with selenium")

from orchestrator.web import app  # noqa: E402
from orchestrator.web.server import serve_play  # noqa: E402
from tests.web.raw_page import frame_head, handshake  # noqa: E402

MIB = 1 << 20


def hostport(url: str) -> str:
    return url.removeprefix("http://").rstrip("/")


def descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def page_socket(url: str, origin: str | None = "own"):
    """The page's WebSocket as a browser opens it: its Origin is the page's own."""
    headers = [] if origin is None else [
        (b"Origin", (f"http://{hostport(url)}" if origin == "own" else origin).encode())]
    return trio_websocket.open_websocket_url(url.replace("http://", "ws://") + "ws",
                                             extra_headers=headers)


# -- item 5: cutting a page that never reads touches no other descriptor -------------------

async def stalled_page(host: str) -> trio.SocketStream:
    """A page that opens the socket, reads the handshake's answer and never reads again."""
    import wsproto
    from wsproto.events import AcceptConnection, Request

    client = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(raw))
    await stream.socket.connect(("127.0.0.1", int(host.rsplit(":", 1)[1])))
    await stream.send_all(client.send(Request(
        host=host, target="/ws", extra_headers=[(b"Origin", f"http://{host}".encode())])))
    while not any(isinstance(e, AcceptConnection) for e in client.events()):
        client.receive_data(await stream.receive_some(4096))
    return stream


async def test_pages_that_never_read_are_cut_and_no_other_descriptor_is_touched(
        tmp_path, idle_clock):
    """`_cut` used to duplicate every descriptor of the process and leak the duplicates of
    those that were no sockets: 10 such pages took `go19 play` from 22 descriptors to
    1,020 in 2 s, and then no page could connect."""
    files = [open(os.devnull) for _ in range(20)]  # noqa: SIM115 (a process's other files)
    try:
        async with trio.open_nursery() as nursery:
            url, session = await nursery.start(serve_play, "127.0.0.1", 0, tmp_path)
            before = descriptors()
            pages = [await stalled_page(hostport(url)) for _ in range(10)]
            assert descriptors() == before + 2 * len(pages)  # both ends of each
            with trio.fail_after(60):  # virtual seconds: each page is cut 5 to 6 s in
                n = 0
                # Until the server has let go of every page's end (and opened nothing).
                while descriptors() != before + len(pages):
                    n += 1
                    session.say(f"{n} " + "x" * 60_000, "info")  # more than a page can take
                    await trio.sleep(0.05)
            for page in pages:  # each was cut: what it was sent ends, then nothing more
                with trio.fail_after(60):
                    while await page.receive_some(1 << 16):
                        pass
                await page.aclose()
            assert descriptors() == before
            async with page_socket(url) as ws:  # a new page is served
                assert '"type":"play"' in await ws.get_message()
            nursery.cancel_scope.cancel()
    finally:
        for file in files:
            file.close()


# -- item 6: a page's messages and the number of pages are bounded -------------------------

def close_code(sock: socket.socket) -> int | None:
    """The code of the server's close frame, read through to the end of the connection."""
    data = b""
    while chunk := sock.recv(1 << 16):
        data += chunk
    code = None
    while len(data) >= 2:
        opcode, length = data[0] & 0x0F, data[1] & 0x7F
        start = 2
        if length == 126:
            length, start = struct.unpack("!H", data[2:4])[0], 4
        elif length == 127:
            length, start = struct.unpack("!Q", data[2:10])[0], 10
        if opcode == 0x8 and length >= 2:
            code = struct.unpack("!H", data[start:start + 2])[0]
        data = data[start + length:]
    return code


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def test_a_message_past_the_bound_is_refused_and_not_kept(tmp_path):
    """4 pages each send 8 MiB of one text frame, all at once, before finishing it:
    `go19 play` used to keep all of it (30 clients × 15 MiB: 100 → 554 MiB, 461 MiB still
    held after they left). Now each is closed as too big (1009) and nothing is kept."""
    play = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "play", "--port", "0",
                             "--recordings", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = int(play.stdout.readline().split()[2].rstrip("/").rsplit(":", 1)[1])
        pages = [handshake(port) for _ in range(4)]
        peak_before = peak_rss_mib(play.pid)
        for page in pages:  # every frame unfinished at once
            page.sendall(frame_head(0x1, 8 * MIB + 1) + b"a" * (8 * MIB))
        for page in pages:  # then finished, and the page closes: the end of its bytes
            page.sendall(b"a" + frame_head(0x8, 2) + struct.pack("!H", 1000))
        codes = [close_code(page) for page in pages]
        grown = peak_rss_mib(play.pid) - peak_before
    finally:
        play.send_signal(signal.SIGINT)
        play.communicate(timeout=30)
    assert codes == [1009] * 4
    assert grown < 12, f"the server's peak RSS grew by {grown:.0f} MiB for 32 MiB refused"


async def test_a_binary_frame_is_the_clients_error(tmp_path):
    async with trio.open_nursery() as nursery:
        url, _ = await nursery.start(serve_play, "127.0.0.1", 0, tmp_path)
        async with page_socket(url) as ws:
            await ws.get_message()
            await ws.send_message(b"\x00\x01")
            with pytest.raises(trio_websocket.ConnectionClosed) as closed:
                while True:
                    await ws.get_message()
        assert closed.value.reason.code == 1003  # unsupported data, not 1011 (our error)
        nursery.cancel_scope.cancel()


async def test_a_client_without_an_origin_is_refused(tmp_path):
    async with trio.open_nursery() as nursery:
        url, _ = await nursery.start(serve_play, "127.0.0.1", 0, tmp_path)
        with pytest.raises(trio_websocket.ConnectionRejected) as refused:
            async with page_socket(url, origin=None):
                pass
        assert refused.value.status_code == 403
        for other in ("null", f"https://{hostport(url)}.evil.example"):
            with pytest.raises(trio_websocket.ConnectionRejected):
                async with page_socket(url, origin=other):
                    pass
        async with page_socket(url, origin=f"http://{hostport(url).upper()}") as ws:
            assert '"type":"play"' in await ws.get_message()  # host names have no case
        nursery.cancel_scope.cancel()


async def test_pages_beyond_the_bound_are_told_so_and_let_in_once_one_goes(
        tmp_path, monkeypatch):
    monkeypatch.setattr(app, "MAX_PAGES", 3, raising=False)  # 256; 3 make the point
    async with trio.open_nursery() as nursery:
        url, _ = await nursery.start(serve_play, "127.0.0.1", 0, tmp_path)
        async with page_socket(url) as first, page_socket(url), page_socket(url):
            await first.get_message()
            async with page_socket(url) as extra:
                with pytest.raises(trio_websocket.ConnectionClosed) as closed:
                    await extra.get_message()
            assert closed.value.reason.code == 1013  # try again later
            assert "too many pages open (3)" in closed.value.reason.reason
        admitted = False
        while not admitted:  # the three have gone: one more is served as soon as it counts
            async with page_socket(url) as again:
                try:
                    admitted = '"type":"play"' in await again.get_message()
                except trio_websocket.ConnectionClosed:
                    await trio.sleep(0.05)
        nursery.cancel_scope.cancel()
