"""`go19 serve` and `go19 ping` as subprocesses, and GNU Go served over GO19."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from contextlib import asynccontextmanager

import numpy as np
import trio

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import from_gtp
from orchestrator.players.go19 import Go19Endpoint
from orchestrator.players.gtp import GtpPlayer
from orchestrator.players.player_pool import PlayerPool
from orchestrator.protocol import go19 as wire

from ..conftest import GNUGO, REPO, requires_gnugo
from .conftest import LOCALHOST, RecordingEngine, closed_port, start_server

CLI = [sys.executable, "-m", "orchestrator.cli"]
SERVING = re.compile(r"serving GO19 on 127\.0\.0\.1:(\d+) ")


@asynccontextmanager
async def cli_server(*args: str):
    """`go19 serve --port 0 ARGS` in a subprocess; yields its port from the first stdout line."""
    process = await trio.lowlevel.open_process(
        [*CLI, "serve", "--port", "0", "--quiet", *args],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    try:
        line = b""
        with trio.fail_after(60):
            while not line.endswith(b"\n"):
                chunk = await process.stdout.receive_some(1)
                assert chunk, f"serve exited before announcing its port: {line!r}"
                line += chunk
        match = SERVING.match(line.decode())
        assert match, line
        yield int(match.group(1))
    finally:
        process.terminate()
        await process.wait()
        await process.stdout.aclose()


async def ping(*endpoints: str) -> subprocess.CompletedProcess:
    return await trio.run_process(
        [*CLI, "ping", *endpoints, "--timeout", "10"], cwd=REPO,
        capture_stdout=True, capture_stderr=True, check=False,
    )


def capture_position() -> np.ndarray:
    """A capturing race in the top-left corner: Black's 16-stone ring and the 8 White
    stones inside it have one liberty each; White to move captures the ring at A19."""
    board = np.zeros((19, 19), dtype=np.uint8)
    black = "B19 C19 D19 E19 A18 E18 A17 E17 A16 E16 A15 B15 C15 D15 E15 D4 Q16"
    white = ("F19 F18 F17 F16 F15 F14 A14 B14 C14 D14 E14 B18 C18 D18 B17 D17 B16 C16 D16 Q4")
    for vertices, color in ((black, BLACK), (white, WHITE)):
        for vertex in vertices.split():
            board.flat[from_gtp(vertex, 19)] = color
    return board


async def test_ping_ok_and_failed_lines_and_exit_status() -> None:
    dead = closed_port()
    async with cli_server("--engine", "random", "--seed", "1") as port:
        good = await ping(f"127.0.0.1:{port}")
        mixed = await ping(f"127.0.0.1:{port}", f"127.0.0.1:{dead}")
    assert good.returncode == 0, good.stderr
    assert re.fullmatch(rf"● OK 127\.0\.0\.1:{port} \(\d+\.\d ms\)\n", good.stdout.decode())
    assert mixed.returncode == 1
    ok, failed = mixed.stdout.decode().splitlines()
    assert re.fullmatch(rf"● OK 127\.0\.0\.1:{port} \(\d+\.\d ms\)", ok)
    assert re.fullmatch(rf"● FAILED 127\.0\.0\.1:{dead}: connection refused \(\d+\.\d ms\)", failed)


async def test_ping_rejects_a_bad_address_in_one_line() -> None:
    result = await ping("localhost")
    assert result.returncode == 2
    assert result.stderr.decode() == (
        "ping: bad endpoint 'localhost': expected HOST:PORT with a port in 1..65535 "
        "([V6]:PORT for IPv6)\n"
    )


async def test_serve_rejects_an_unknown_engine_in_one_line() -> None:
    result = await trio.run_process(
        [*CLI, "serve", "--engine", "gtp:/nonexistent/gnugo --mode gtp"], cwd=REPO,
        capture_stdout=True, capture_stderr=True, check=False,
    )
    assert result.returncode == 2
    assert result.stderr.decode() == (
        "serve: GTP engine '/nonexistent/gnugo' not found or not executable\n"
    )


async def test_serve_reports_a_busy_port_in_one_line(nursery) -> None:
    port = await start_server(nursery, RecordingEngine())
    result = await trio.run_process(
        [*CLI, "serve", "--port", str(port)], cwd=REPO,
        capture_stdout=True, capture_stderr=True, check=False,
    )
    assert result.returncode == 2  # as go19 play and collect --web
    assert result.stderr.decode() == (
        f"serve: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    )


def test_serve_started_in_the_background_by_a_script_stops_on_sigint() -> None:
    """Issue 30, item 11: a background job of a non-interactive shell starts with SIGINT
    ignored, and `go19 serve &` in a script then ignored `kill -INT` (SIGTERM worked)."""
    command = " ".join(shlex.quote(word) for word in [*CLI, "serve", "--port", "0", "--quiet"])
    script = subprocess.Popen(["sh", "-c", f"{command} & echo $!; wait $!"], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert script.stdout is not None
        pid = int(script.stdout.readline())
        assert SERVING.match(script.stdout.readline())  # listening: its handlers are set
        os.kill(pid, signal.SIGINT)
        assert script.wait(timeout=60) == 130, script.stderr.read() if script.stderr else ""
    finally:
        if script.poll() is None:
            os.kill(pid, signal.SIGKILL)
            script.kill()
            script.wait()


def hf(*args: object, python: tuple[str, ...] = tuple(CLI)) -> subprocess.CompletedProcess:
    return subprocess.run([*python, "serve", "--engine", "hf", *map(str, args)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_serve_hf_names_base_when_no_adapter_is_given(tmp_path) -> None:
    """Issue 30, item 11: `--listen a=:P` without adapters said "(adapters: base)"; it now
    says that no --adapter was given and that `base` is the bare model's name."""
    result = hf("--model", tmp_path, "--listen", "a=:0")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("serve: --listen 'a=:0': no adapter named 'a' (no --adapter "
                             "given; 'base' is the model without adapter)\n")


def test_serve_hf_without_the_extra_says_the_install_line_of_the_docs(tmp_path) -> None:
    """It said `pip install 'go19[vlm]'`, which fetches a package named go19 from an index;
    docs/vlm.md installs the extra into the repository's own venv."""
    blocked = (sys.executable, "-c", "import sys; sys.modules['torch'] = None; "
               "from orchestrator.cli import main; sys.exit(main(sys.argv[1:]))")
    result = hf("--model", tmp_path, "--listen", "base=:0", python=blocked)
    assert result.returncode == 2
    assert result.stderr.startswith("serve: --engine hf needs the vlm extra: .venv/bin/pip "
                                    "install -e '.[vlm]' (")
    assert ".venv/bin/pip install -e '.[vlm]'" in (REPO / "docs" / "vlm.md").read_text()


@requires_gnugo
async def test_serve_gnugo_answers_real_requests() -> None:
    board = capture_position()
    request = wire.Request(19, WHITE, b"", board.tobytes())
    command = f"gtp:{GNUGO} --mode gtp --level 0"
    async with cli_server("--engine", command, "--slots", "2") as port:
        async with Go19Endpoint([(LOCALHOST, port)], slots_per_replica=2) as endpoint:
            replies = []

            async def one() -> None:
                replies.append(await endpoint.request(request))

            with trio.fail_after(60):
                async with trio.open_nursery() as clients:
                    for _ in range(3):
                        clients.start_soon(one)
    assert replies == [wire.MoveReply(0, 0)] * 3  # A19 captures the ring


async def test_dead_gtp_engine_becomes_an_error_reply(nursery) -> None:
    engine = PlayerPool("gtp", [GtpPlayer("broken", ["/bin/false"])])
    port = await start_server(nursery, engine)
    request = wire.Request(19, BLACK, b"", bytes(361))
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        reply = await endpoint.request(request)
        assert isinstance(reply, wire.ErrorReply)
        assert "exited with status 1" in reply.message
        # The server is still there for the next request.
        assert isinstance(await endpoint.request(request), wire.ErrorReply)
