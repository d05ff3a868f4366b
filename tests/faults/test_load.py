"""Load: 2,000 games at once against two instant `go19 serve` processes until a set
number of games is recorded (a state of the run, not an amount of time), then Ctrl-C:
the games in flight are finished and recorded. No fallback, no void game, a clean
interrupted exit; throughput, peak memory and move latency are printed (pytest -s)
for docs/reliability.md."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO

from .harness import two_go19_players

CONCURRENCY = 2000
# Recorded games to wait for: the slots have been refilled many times by then.
FINISHED = 3 * CONCURRENCY
FINISHED_LINE = re.compile(r" by (two-passes|move-cap|resign), \d+ moves$")

MATCHUP = two_go19_players("replicas = [{replicas}]", slots=1024, run='name = "load"',
                           game="size = 9\nmove_cap = 4\nmove_timeout_s = 60\n"
                           "concurrency = {concurrency}")


def start_server() -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "serve", "--engine", "random", "--size", "9",
         "--port", "0", "--slots", "64", "--quiet",
         # Both players pool up to 1,024 connections each over the two servers.
         "--max-connections", "4096"],
        cwd=REPO, stdout=subprocess.PIPE, text=True,
    )
    line = proc.stdout.readline()
    assert line.startswith("serving GO19 on 127.0.0.1:"), line
    return proc, int(line.split()[3].rsplit(":", 1)[1])


def kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    raise KeyError(key)


@pytest.mark.slow
def test_2000_concurrent_games_against_instant_servers(tmp_path: Path) -> None:
    servers = [start_server() for _ in range(2)]
    try:
        replicas = ", ".join(f'"127.0.0.1:{port}"' for _, port in servers)
        matchup = tmp_path / "load.toml"
        matchup.write_text(MATCHUP.format(replicas=replicas, concurrency=CONCURRENCY))
        out_path = tmp_path / "out.txt"
        with out_path.open("w") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "orchestrator.cli", "collect", "--matchup", str(matchup),
                 "--games", "1000000", "--recordings", str(tmp_path / "rec"),
                 "--no-dashboard", "--no-report"],
                cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
            )
        started = time.monotonic()
        peak_rss = 0
        finished = 0
        while finished < FINISHED:
            assert proc.poll() is None, out_path.read_text()[-2000:]
            assert time.monotonic() - started < 900, f"only {finished} games in 900 s"
            peak_rss = max(peak_rss, kib(proc.pid, "VmRSS"))
            time.sleep(0.5)  # the memory probe's sampling interval; waits on the log's lines,
            # no assertion depends on how long this takes
            finished = sum(bool(FINISHED_LINE.search(line))
                           for line in out_path.read_text().splitlines())
        elapsed = time.monotonic() - started
        peak_rss = max(peak_rss, kib(proc.pid, "VmHWM"))
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=300)
    finally:
        for server, _ in servers:
            server.terminate()
            server.wait(timeout=10)
    output = out_path.read_text()
    assert proc.returncode == 130, output[-2000:]
    assert "Traceback" not in output
    in_flight = int(re.search(r"interrupted: finishing (\d+) games?", output)[1])
    assert f"interrupted: {in_flight} game(s) in flight were finished and recorded" in output
    (run_dir,) = (tmp_path / "rec").glob("load-*")
    records = [json.loads(line) for line in (run_dir / "games.jsonl").read_text().splitlines()]
    started_games = [int(n) for n in re.findall(r"game (\d+) started", output)]
    # Every game started was recorded: the ones in flight at Ctrl-C too.
    assert sorted(r["game"] for r in records) == sorted(started_games)
    assert 0 < in_flight <= CONCURRENCY
    assert not any(r["void"] for r in records)
    fallbacks = [c for r in records for c in r["fallbacks"].values() if c]
    assert not fallbacks, fallbacks[:5]
    p50 = [r["latency_ms"][n]["p50"] for r in records for n in ("a", "b")]
    p95 = [r["latency_ms"][n]["p95"] for r in records for n in ("a", "b")]
    print(f"\nload: {CONCURRENCY} games at once: {finished} games finished in {elapsed:.0f} s "
          f"({finished * 4 / elapsed:.0f} moves/s), {in_flight} in flight at the interrupt, "
          f"all recorded; peak RSS {peak_rss / 1024:.0f} MiB; move latency p50 "
          f"{np.median(p50):.0f} ms (median of games), p95 {np.percentile(p95, 95):.0f} ms")


EMBEDDED = two_go19_players('embedded = { engine = "random", seed = 1 }',
                            'embedded = { engine = "random", seed = 2 }', slots=1024,
                            game="size = 9\nmove_cap = 2\nmove_timeout_s = 60\nconcurrency = 800")


async def test_embedded_servers_take_every_connection_of_their_client(tmp_path: Path) -> None:
    """800 games at once ask each embedded server ~400 moves at a time over as many
    connections: past `go19 serve`'s default of 256 open connections they were refused,
    and the run crawled on connection fallbacks and timeouts (486 fallbacks, 5 min for
    1,000 games; now none, 7 s)."""
    from orchestrator.collect.run import CollectOptions, collect

    matchup = tmp_path / "emb.toml"
    matchup.write_text(EMBEDDED)
    summary = await collect(CollectOptions(matchup, games=800, recordings=tmp_path / "rec",
                                           dashboard=False))
    assert summary.state.done == 800
    fallbacks = [c for r in summary.state.records for c in r.fallbacks.values() if c]
    assert not fallbacks, fallbacks[:5]
