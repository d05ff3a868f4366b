"""`go19 play` and `collect --web` at the edge: addresses, the warning for a page
reachable from other hosts, and a port that cannot be bound (one line, exit 2)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import trio
import trio.testing

pytest.importorskip("hypercorn", reason="the web extra is not installed (pip install -e '.[web]')")

from orchestrator.web.server import parse_bind, serve_play  # noqa: E402

DEMO = Path(__file__).resolve().parents[2] / "matchups" / "demo.toml"


def go19(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args],
                          capture_output=True, text=True, timeout=60)


def test_bind_addresses():
    assert parse_bind("8020") == ("127.0.0.1", 8020)
    assert parse_bind("0.0.0.0:80") == ("0.0.0.0", 80)
    assert parse_bind("[::1]:0") == ("::1", 0)
    for bad in ("", "host:", "host:99999", "x:y"):
        with pytest.raises(ValueError, match="expected \\[HOST:\\]PORT"):
            parse_bind(bad)


def test_play_on_a_busy_port_says_so_in_one_line():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = go19("play", "--port", str(port))
    assert result.returncode == 2
    assert result.stderr == f"play: cannot listen on 127.0.0.1:{port}: Address already in use\n"


def test_play_on_another_host_warns_that_the_page_has_no_authentication():
    result = go19("play", "--host", "192.0.2.1", "--port", "0")  # TEST-NET: never ours
    lines = result.stderr.splitlines()
    assert lines[0].startswith("warning: 192.0.2.1 is not a loopback address")
    assert "no authentication" in lines[0]
    assert result.returncode == 2 and lines[1].startswith("play: cannot listen on 192.0.2.1:0")


def test_collect_web_with_a_bad_address_stops_before_the_run(tmp_path):
    result = go19("collect", "--matchup", str(DEMO), "--games", "1",
                  "--recordings", str(tmp_path), "--web", "nowhere:")
    assert result.returncode == 2
    assert result.stderr.startswith("collect: --web: bad address 'nowhere:'")
    assert not any(tmp_path.iterdir())


async def test_only_the_page_itself_may_open_the_websocket(tmp_path):
    trio_websocket = pytest.importorskip("trio_websocket", reason="comes with selenium")
    async with trio.open_nursery() as nursery:
        url, _ = await nursery.start(serve_play, "127.0.0.1", 0, tmp_path)
        ws_url = url.replace("http://", "ws://") + "ws"
        host = url.removeprefix("http://").rstrip("/")
        with pytest.raises(trio_websocket.ConnectionRejected):
            async with trio_websocket.open_websocket_url(
                    ws_url, extra_headers=[(b"Origin", b"http://evil.example")]):
                pass
        async with trio_websocket.open_websocket_url(
                ws_url, extra_headers=[(b"Origin", f"http://{host}".encode())]) as ws:
            first = json.loads(await ws.get_message())
        assert first["type"] == "play" and first["game"]["move"] == 0
        nursery.cancel_scope.cancel()


def test_ctrl_c_stops_go19_play_cleanly(tmp_path):
    play = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "play", "--port", "0",
                             "--recordings", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert play.stdout.readline().startswith("go19 play: http://127.0.0.1:")
    play.send_signal(signal.SIGINT)
    _, err = play.communicate(timeout=30)
    assert (play.returncode, err) == (0, "")


# -- issue 26: a busy port stops collect --web before any game (bug 7) ----------------------

def test_collect_web_on_a_busy_port_exits_2_before_any_game(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = go19("collect", "--matchup", str(DEMO), "--games", "1",
                      "--recordings", str(tmp_path), "--no-dashboard", "--no-report",
                      "--web", f"127.0.0.1:{port}")
    assert result.returncode == 2, result.stdout
    assert result.stderr == (f"collect: --web: cannot listen on 127.0.0.1:{port}: "
                             "Address already in use\n")
    assert "started" not in result.stdout and not any(tmp_path.iterdir())


# -- issue 21: the host is checked where it enters -------------------------------------------

def test_play_refuses_an_empty_host_in_one_line():
    result = go19("play", "--host", "", "--port", "0")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("play: --host: ")
    assert "empty" in result.stderr


def test_play_on_a_short_loopback_address_gives_no_warning(tmp_path):
    play = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "play", "--host", "127.1",
                             "--port", "0", "--recordings", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert play.stdout.readline().startswith("go19 play: http://127.0.0.1:")
    play.send_signal(signal.SIGINT)
    _, err = play.communicate(timeout=30)
    assert (play.returncode, err) == (0, "")


# -- issue 26: DNS rebinding: only our own names are served ------------------------------------

async def _status(host: str, port: int, request: str) -> bytes:
    """The status code of the server's answer to a raw HTTP/1.1 request."""
    stream = await trio.open_tcp_stream(host, port)
    await stream.send_all(request.encode())
    reply = b""
    while b"\r\n" not in reply:
        reply += await stream.receive_some(65536)
    await stream.aclose()
    return reply.split()[1]


async def _refused_for_a_foreign_host(url: str) -> None:
    """A page that a rebinding name reached: HTTP 400 for the page and for the WebSocket
    upgrade, which carries the foreign name's own origin (so the Origin check cannot be
    what refuses it); the page's own name still gets both."""
    trio_websocket = pytest.importorskip("trio_websocket", reason="comes with selenium")
    hostport = url.removeprefix("http://").rstrip("/")
    host, port = hostport.rsplit(":", 1)
    for name, page, upgrade in (("evil.example", b"400", b"400"),
                                (hostport, b"200", b"101")):
        assert await _status(host, int(port), f"GET / HTTP/1.1\r\nHost: {name}\r\n\r\n") \
            == page, name
        assert await _status(host, int(port), (
            f"GET /ws HTTP/1.1\r\nHost: {name}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            f"Sec-WebSocket-Version: 13\r\nOrigin: http://{name}\r\n\r\n")) == upgrade, name
    async with trio_websocket.open_websocket_url(
            url.replace("http", "ws", 1) + "ws",
            extra_headers=[(b"Origin", f"http://{hostport}".encode())]) as ws:
        assert json.loads(await ws.get_message())["type"]


async def test_play_refuses_a_foreign_host_header(tmp_path):
    async with trio.open_nursery() as nursery:
        url, _ = await nursery.start(serve_play, "127.0.0.1", 0, tmp_path)
        await _refused_for_a_foreign_host(url)
        nursery.cancel_scope.cancel()


async def test_the_watch_page_refuses_a_foreign_host_header(tmp_path):
    from orchestrator.collect.matchup import load_matchup
    from orchestrator.collect.state import RunState
    from orchestrator.web.app import watch_app
    from orchestrator.web.feed import WatchFeed
    from orchestrator.web.server import bind_listener, serve_app, trusted_hosts
    from orchestrator.web.watch import WatchHub

    # What the watch page reads of a run: its matchup, folder and live state.
    collector = SimpleNamespace(matchup=load_matchup(DEMO), run_dir=tmp_path / "run",
                                state=RunState("run", 1, ["a", "b"]))
    app = watch_app(WatchFeed(WatchHub(collector)), trusted_hosts("127.0.0.1"))
    async with trio.open_nursery() as nursery:
        url = await nursery.start(serve_app, app, bind_listener("127.0.0.1", 0))
        await _refused_for_a_foreign_host(url)
        nursery.cancel_scope.cancel()


# -- a page that stopped reading cannot hold a game, or the server's end --------------------

async def test_a_page_that_never_reads_cannot_keep_the_server_from_stopping(tmp_path,
                                                                            idle_clock):
    """Hypercorn writes under a shielded cancel scope: a page that stopped reading used to
    keep its task, and with it the server's end (and collect's exit), waiting for ever."""
    import wsproto
    from wsproto.events import AcceptConnection, Request

    stopped = trio.Event()
    async with trio.open_nursery() as nursery:
        server = trio.CancelScope()

        async def play(task_status=trio.TASK_STATUS_IGNORED) -> None:
            with server:
                await serve_play("127.0.0.1", 0, tmp_path, task_status=task_status)
            stopped.set()

        url, session = await nursery.start(play)
        host = url.removeprefix("http://").rstrip("/")
        client = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
        raw = socket.socket()
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(raw))
        try:
            await stream.socket.connect(("127.0.0.1", int(host.rsplit(":", 1)[1])))
            await stream.send_all(client.send(Request(
                host=host, target="/ws", extra_headers=[(b"Origin", f"http://{host}".encode())])))
            while not any(isinstance(e, AcceptConnection) for e in client.events()):
                client.receive_data(await stream.receive_some(4096))
            # The page stops reading; the game changes more than it could ever take.
            for n in range(200):
                session.say(f"{n} " + "x" * 60_000, "info")
                await trio.sleep(0.05)
            server.cancel()
            with trio.move_on_after(60) as waited:  # virtual seconds
                await stopped.wait()
        finally:
            await stream.aclose()  # ends a send stuck for ever, so the test cannot hang
    assert not waited.cancelled_caught, "the server could not stop for a page that never reads"


# -- issue 32: the KataGo of the scoring phase ----------------------------------------------

def test_play_refuses_a_named_katago_that_is_not_there(tmp_path):
    result = go19("play", "--port", "0", "--katago", str(tmp_path / "nope"), "--model",
                  str(tmp_path / "net"), "--config", str(tmp_path / "cfg"))
    assert (result.returncode, result.stderr) == (2, f"play: --katago {tmp_path / 'nope'}: "
                                                     "no such file\n")
    result = go19("play", "--port", "0", "--no-katago", "--model", str(tmp_path / "net"))
    assert (result.returncode, result.stderr) == (
        2, "play: --no-katago with --katago/--model/--config: choose one\n")


@pytest.mark.parametrize("with_katago", [False, True])
def test_play_says_who_proposes_the_dead_stones(tmp_path, with_katago):
    """KataGo's files are checked, and it is not started until a game is scored: the
    stand-in of tests/label would log a query; none is made."""
    from tests.label.standin import standin

    katago = standin(tmp_path / "katago")
    options = katago.options() if with_katago else ["--no-katago"]
    play = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "play", "--port", "0",
                             "--recordings", str(tmp_path / "rec"), *options],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert play.stdout.readline().startswith("go19 play: http://127.0.0.1:")
    expected = (f"  dead stones at the end: KataGo's ({katago.binary}, 100 visits), the "
                "estimate's until it answers\n" if with_katago
                else "  dead stones at the end: the estimate's\n")
    assert play.stdout.readline() == expected
    play.send_signal(signal.SIGINT)
    _, err = play.communicate(timeout=30)
    assert (play.returncode, err) == (0, "")
    assert katago.queries() == [] and not (tmp_path / "rec").exists()
