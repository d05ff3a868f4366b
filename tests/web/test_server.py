"""`go19 play` and `collect --web` at the edge: addresses, the warning for a page
reachable from other hosts, and a port that cannot be bound (one line, exit 2)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import trio

pytest.importorskip("hypercorn", reason="the web extra is not installed (pip install -e '.[web]')")

from orchestrator.web.server import is_loopback, parse_bind, serve_play  # noqa: E402

DEMO = Path(__file__).resolve().parents[2] / "matchups" / "demo.toml"


def go19(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("0.0.0.0", False), ("192.168.1.5", False), ("example.org", False),
])
def test_loopback_hosts(host, loopback):
    assert is_loopback(host) is loopback


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
