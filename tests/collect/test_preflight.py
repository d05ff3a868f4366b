"""Endpoint preflight: before a run folder exists, every GO19 replica is pinged and every
GTP engine started once; a player with nothing reachable stops the run with exit 3 and
one line, or `--wait-endpoints` waits for it. Real loopback servers, real processes."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
import trio.testing

from orchestrator.collect.matchup import load_matchup
from orchestrator.collect.preflight import EndpointsUnreachable, check_endpoints
from orchestrator.players.random_player import RandomPlayer
from orchestrator.serve import serve_go19
from tests.conftest import GNUGO, REPO, go19_here, requires_gnugo

ENV = dict(os.environ, PYTHONPATH=str(REPO))

MATCHUP = """
[run]
name = "pre"
[players.a]
{a}
[players.b]
kind = "heuristic"
level = 0
[pairing]
black = "a"
white = "b"
[game]
size = 9
move_cap = 6
concurrency = {concurrency}
connect_timeout_s = 5
move_timeout_s = {move_timeout}
"""


def go19_player(*ports: int) -> str:
    replicas = ", ".join(f'"127.0.0.1:{p}"' for p in ports)
    return f'kind = "go19"\nreplicas = [{replicas}]\nimage_px = 64'


def write(tmp_path: Path, a: str, concurrency: int = 2, move_timeout: float = 30) -> Path:
    path = tmp_path / "pre.toml"
    path.write_text(MATCHUP.format(a=a, concurrency=concurrency, move_timeout=move_timeout))
    return path


@contextlib.contextmanager
def reserved_port() -> Iterator[tuple[socket.socket, int]]:
    """A loopback port bound but not listening: connects are refused, and no other
    process can take the port until the socket is closed."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock, sock.getsockname()[1]
    finally:
        sock.close()


def collect_args(matchup: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["collect", "--matchup", str(matchup), "--games", "2", "--recordings",
            str(tmp_path / "rec"), "--no-dashboard", "--no-report", *extra]


def collect_cmd(matchup: Path, tmp_path: Path, *extra: str) -> list[str]:
    """The collect process, for the tests that talk to it while it runs."""
    return [sys.executable, "-m", "orchestrator.cli", *collect_args(matchup, tmp_path, *extra)]


def test_no_reachable_replica_exits_3_before_any_folder(tmp_path: Path) -> None:
    """The probe's case: nothing listens on either replica of one player, concurrency 16.
    It used to play fallback games, void them and exit 0; now nothing is created."""
    with reserved_port() as (_, p1), reserved_port() as (_, p2):
        matchup = write(tmp_path, go19_player(p1, p2), concurrency=16)
        done = go19_here(*collect_args(matchup, tmp_path))
    assert done.returncode == 3, done.stdout + done.stderr
    dots = [line for line in done.stdout.splitlines() if "●" in line]
    assert len(dots) == 2
    for line, port in zip(dots, (p1, p2), strict=True):
        # The plain log's time stamp, then the line `go19 ping` would print.
        assert re.fullmatch(rf"\d\d:\d\d:\d\d ● FAILED a 127\.0\.0\.1:{port}: connection "
                            r"refused \(\d+\.\d ms\)", line), line
    assert done.stderr.splitlines() == [
        f"collect: no usable endpoint for a (127.0.0.1:{p1}: connection refused, "
        f"127.0.0.1:{p2}: connection refused): unreachable; start it, or give "
        "--wait-endpoints SECONDS; nothing recorded"
    ]
    assert not (tmp_path / "rec").exists()
    assert "Traceback" not in done.stdout + done.stderr


def test_a_gtp_engine_that_dies_shows_its_stderr(tmp_path: Path) -> None:
    """Like KataGo with a config missing a key: it prints why on stderr and exits."""
    script = tmp_path / "engine.sh"
    script.write_text("#!/bin/sh\necho 'loading config' >&2\n"
                      "echo \"Could not find key 'logAllGTPCommunication'\" >&2\nexit 1\n")
    script.chmod(0o755)
    matchup = write(tmp_path, f'kind = "gtp"\ncommand = "{script} gtp"')
    done = go19_here(*collect_args(matchup, tmp_path))
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"● FAILED a {script} gtp: exited with status 1 before answering 'name'" \
        in done.stdout
    assert "    a stderr: loading config\n" in done.stdout
    assert "    a stderr: Could not find key 'logAllGTPCommunication'\n" in done.stdout
    assert not (tmp_path / "rec").exists()
    (line,) = done.stderr.splitlines()
    assert line.startswith("collect: no usable endpoint for a (")
    assert "its stderr ends: Could not find key 'logAllGTPCommunication'" in line
    assert not (tmp_path / "rec").exists()


async def test_a_gtp_engine_that_does_not_answer_shows_its_stderr(tmp_path: Path) -> None:
    """An engine stuck loading: after move_timeout_s (real time, 3 s here) it is killed,
    and what it said on stderr is shown."""
    script = tmp_path / "stuck.sh"
    script.write_text("#!/bin/sh\necho 'loading model weights' >&2\nexec sleep 600\n")
    script.chmod(0o755)
    said: list[str] = []
    matchup = load_matchup(write(tmp_path, f'kind = "gtp"\ncommand = "{script}"',
                                 move_timeout=3))
    with pytest.raises(EndpointsUnreachable) as caught:
        await check_endpoints(matchup, 0, said.append)
    assert said[0].startswith(f"● FAILED a {script}: no answer to 'name' within 3 s (")
    assert said[1:] == ["    a stderr: loading model weights"]
    assert "its stderr ends: loading model weights" in str(caught.value)


@requires_gnugo
async def test_every_endpoint_gets_one_line_and_one_live_replica_is_enough(
    tmp_path: Path,
) -> None:
    """A real GNU Go answers name and version; of two replicas one answers, one refuses:
    the player is usable, and each endpoint says how it went."""
    said: list[str] = []
    async with trio.open_nursery() as nursery:
        port = await nursery.start(lambda task_status: serve_go19(
            RandomPlayer("engine", seed=1), "127.0.0.1", 0, allowed_sizes=(9,),
            task_status=task_status))
        with reserved_port() as (_, dead):
            path = write(tmp_path, go19_player(port, dead))
            path.write_text(path.read_text().replace(
                'kind = "heuristic"\nlevel = 0',
                f'kind = "gtp"\ncommand = "{GNUGO} --mode gtp --level 0"'))
            await check_endpoints(load_matchup(path), 0, said.append)
        nursery.cancel_scope.cancel()
    assert len(said) == 3, said
    assert any(re.fullmatch(rf"● OK a 127\.0\.0\.1:{port} \(\d+\.\d ms\)", line)
               for line in said), said
    assert any(line.startswith(f"● FAILED a 127.0.0.1:{dead}: connection refused")
               for line in said)
    gnugo = next(line for line in said if line.startswith("● OK b "))
    assert "GNU Go" in gnugo


@pytest.fixture
def jump_clock() -> trio.testing.MockClock:
    """Virtual time that jumps only once nothing has happened for 10 ms of wall time, so
    a loopback connect is never overtaken by its own timeout."""
    return trio.testing.MockClock(autojump_threshold=0.01)


async def test_wait_endpoints_gives_up_after_the_wait_with_exit_3(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """Virtual time: a replica that never comes up is retried for the whole wait, with a
    countdown, then the run stops."""
    said: list[str] = []
    with reserved_port() as (_, dead):
        matchup = load_matchup(write(tmp_path, go19_player(dead)))
        start = trio.current_time()
        with pytest.raises(EndpointsUnreachable) as caught:
            await check_endpoints(matchup, 30, said.append)
    assert trio.current_time() - start >= 30
    assert str(caught.value).endswith("still unreachable after waiting 0:30; nothing recorded")
    countdown = [line for line in said if line.startswith("waiting for endpoints: a (")]
    assert countdown[0] == "waiting for endpoints: a (0:30 left)"
    assert len(countdown) == 3  # every 10 s
    assert sum(line.startswith("● FAILED") for line in said) == 1  # said once, not per retry


def test_wait_endpoints_waits_for_a_server_started_late(tmp_path: Path) -> None:
    """`go19 serve` is started only once collect says it is waiting; the run then plays."""
    with reserved_port() as (sock, port):
        matchup = write(tmp_path, go19_player(port))
        collect = subprocess.Popen(collect_cmd(matchup, tmp_path, "--wait-endpoints", "300"),
                                   cwd=REPO, env=ENV, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
        seen = []
        for line in collect.stdout:
            seen.append(line)
            if "waiting for endpoints: a (" in line:
                break
        else:
            pytest.fail("".join(seen))
        assert not (tmp_path / "rec").exists()  # nothing is created while waiting
        sock.close()
    server = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "serve", "--engine", "random", "--size", "9",
         "--port", str(port), "--quiet"], cwd=REPO, env=ENV, stdout=subprocess.DEVNULL)
    try:
        out, _ = collect.communicate(timeout=300)
    finally:
        server.terminate()
        server.wait(timeout=30)
    output = "".join(seen) + out
    assert collect.returncode == 0, output
    assert f"● FAILED a 127.0.0.1:{port}: connection refused" in output
    assert re.search(rf"● OK a 127\.0\.0\.1:{port} \(", out), output
    (run_dir,) = (tmp_path / "rec").glob("pre-*")
    assert len((run_dir / "games.jsonl").read_text().splitlines()) == 2


def test_help_documents_the_exit_codes_and_the_wait() -> None:
    done = go19_here("collect", "--help")
    assert done.returncode == 0
    codes = re.findall(r"^  (\d+) +\S", done.stdout.split("exit status:")[1], re.M)
    assert codes == ["0", "2", "3", "4", "130"]
    assert "--wait-endpoints SECONDS" in done.stdout
    assert "(default 0: exit 3 at once)" in " ".join(done.stdout.split())


async def test_a_model_list_of_deep_json_is_one_line_and_exit_3(nursery, tmp_path: Path) -> None:
    """An OpenAI-compatible server answering ``GET /v1/models`` with 200 KB of ``[``: the
    standard library's reader raised RecursionError (an 86-line traceback, exit 1)."""
    from tests.players.openai_server import DEEP_JSON, LOCALHOST, OpenAIServer

    port = await nursery.start(OpenAIServer(models_body=DEEP_JSON).serve)
    url = f"http://{LOCALHOST}:{port}/v1"
    matchup = write(tmp_path, f'kind = "openai"\nbase_urls = ["{url}"]\nmodel = "r5"')
    done = await trio.run_process(collect_cmd(matchup, tmp_path), cwd=REPO, env=ENV,
                                  capture_stdout=True, capture_stderr=True, check=False)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 3, out + err
    assert "Traceback" not in out + err
    (line,) = [line for line in out.splitlines() if "●" in line]
    assert f"● FAILED a {url}: not JSON (nested deeper than 200 levels)" in line
    assert len(err.splitlines()) == 1 and not (tmp_path / "rec").exists()
