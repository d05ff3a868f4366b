"""collect benchmarks (not tests): run `.venv/bin/python bench/collect.py [a|b|c ...]`.

(a) orchestrator CPU per move: an instant GO19 server (random legal mover) in a
    separate process, so this process's CPU per move played is the orchestrator's
    alone (rules, PNG render, GO19 framing, referee, SGF and journal writes).
    Target <= 1 ms.
(b) endpoint utilisation: one server (own process) answering after a fixed 50 ms
    with 8 slots, 256 concurrent self-play games; achieved moves/s over the ideal
    slots/latency (8 / 0.050 s = 160 moves/s), target >= 97 %; and the share of
    time the client keeps the 8 slots busy, from the round trips it observes.
(c) concurrent games with flat memory: 2,000 (and 4,000) games in flight against
    a server answering after 100 ms, games capped at 20 moves so they finish and are
    replaced during the run; RSS sampled every second. Target >= 2,000 games.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from contextlib import asynccontextmanager
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cpu_meter import CpuMeter  # noqa: E402
from orchestrator.collect.run import CollectOptions, collect  # noqa: E402


def matchup_text(port: int, slots: int, concurrency: int, move_cap: int = 722) -> str:
    return f"""
[players.p]
kind = "go19"
replicas = ["127.0.0.1:{port}"]
slots = {slots}
[pairing]
black = "p"
white = "p"
[game]
move_cap = {move_cap}
move_timeout_s = 60
concurrency = {concurrency}
[fallback]
void_after = 100000
"""


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _options(tmp: Path, port: int, slots: int, concurrency: int, games: int,
             move_cap: int = 722) -> CollectOptions:
    path = tmp / "bench.toml"
    path.write_text(matchup_text(port, slots, concurrency, move_cap))
    return CollectOptions(matchup_path=path, games=games, recordings=tmp / "rec",
                          dashboard=False)


@asynccontextmanager
async def _server_process(slots: int, delay_ms: float = 0.0):
    """`go19 serve --engine random` in its own process; yields its port."""
    server = await trio.lowlevel.open_process(
        [sys.executable, "-m", "orchestrator.cli", "serve", "--engine", "random", "--port", "0",
         "--slots", str(slots), "--delay-ms", str(delay_ms), "--quiet"],
        stdout=subprocess.PIPE,
    )
    try:
        first_line = b""
        while not first_line.endswith(b"\n"):
            first_line += await server.stdout.receive_some(1)
        yield int(first_line.split()[3].rsplit(b":", 1)[1])
    finally:
        server.kill()
        await server.wait()


async def bench_cpu_per_move() -> None:
    """The endpoint runs in its own process (`go19 serve --engine random`), so this
    process's CPU time is the orchestrator's alone."""
    import orchestrator.render as render_module

    render = CpuMeter(render_module, "render_png")
    async with _server_process(16) as port:
        with tempfile.TemporaryDirectory() as tmp:
            options = _options(Path(tmp), port, slots=16, concurrency=16, games=8)
            cpu0, wall0 = time.process_time(), time.perf_counter()
            summary = await collect(options)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    moves = sum(r.moves for r in summary.state.records)
    print(f"(a) {moves} moves in {wall:.1f} s wall; orchestrator CPU {cpu:.2f} s "
          f"(endpoint in its own process)")
    print(f"    orchestrator CPU per move: {cpu / moves * 1000:.3f} ms  (target <= 1 ms), "
          f"of which PNG render {render.cpu / render.calls * 1000:.3f} ms")


async def bench_utilisation(seconds: float = 30.0) -> None:
    """The endpoint runs in its own process, as a model server would: in-process, its
    engine and the orchestrator would share one event loop and delay each other."""
    slots, latency = 8, 0.050
    async with _server_process(slots, delay_ms=latency * 1000) as port:
        with tempfile.TemporaryDirectory() as tmp:
            options = _options(Path(tmp), port, slots=slots, concurrency=256, games=100_000)
            probe: dict = {}

            async def grab(collector) -> None:
                probe["collector"] = collector

            async with trio.open_nursery() as nursery:
                nursery.start_soon(collect, options, lambda line: None, grab)
                await trio.sleep(5.0)  # warm-up: connections open, queues full
                endpoint = probe["collector"].players["p"].endpoint
                (before,) = endpoint.replica_stats()
                start = trio.current_time()
                await trio.sleep(seconds)
                (after,) = endpoint.replica_stats()
                elapsed = trio.current_time() - start
                nursery.cancel_scope.cancel()
    rate = (after.requests - before.requests) / elapsed
    observed = sum(after.latency_ms) / len(after.latency_ms) / 1000
    ideal = slots / latency
    print(f"(b) {rate:.1f} moves/s, 256 games, 8 slots answering after 50 ms: "
          f"{rate / ideal * 100:.1f} % of the nominal {ideal:.0f} moves/s  (target >= 97 %)")
    print(f"    request round trip seen by the client {observed * 1000:.1f} ms (50 ms + loopback "
          f"+ timer slack); slots kept busy {rate * observed / slots * 100:.1f} % of the time")


async def bench_memory(games: int, seconds: float = 120.0) -> None:
    """Games capped at 20 moves so that, within the run, every game finishes, is
    recorded and is replaced a few times over: memory must level off, not grow."""
    async with _server_process(1024, delay_ms=100) as port:
        with tempfile.TemporaryDirectory() as tmp:
            options = _options(Path(tmp), port, slots=1024, concurrency=games,
                               games=100 * games, move_cap=20)
            samples = []
            probe: dict = {}

            async def grab(collector) -> None:
                probe["collector"] = collector

            async with trio.open_nursery() as nursery:
                nursery.start_soon(collect, options, lambda line: None, grab)
                while "collector" not in probe:
                    await trio.sleep(0.1)
                start = trio.current_time()
                while trio.current_time() - start < seconds:
                    await trio.sleep(1.0)
                    state = probe["collector"].state
                    samples.append((trio.current_time() - start, rss_mb(), state.done,
                                    len(state.live)))
                nursery.cancel_scope.cancel()
    quarter, half, last = samples[len(samples) // 4], samples[len(samples) // 2], samples[-1]
    in_flight = min(s[3] for s in samples[len(samples) // 4:])
    print(f"(c) {games} games in flight (never fewer than {in_flight} after warm-up), "
          f"{last[2]} games finished in {last[0]:.0f} s: RSS {quarter[1]:.0f} MB at "
          f"{quarter[0]:.0f} s, {half[1]:.0f} MB at {half[0]:.0f} s, {last[1]:.0f} MB at "
          f"{last[0]:.0f} s (max {max(s[1] for s in samples):.0f} MB)")


def main() -> None:
    parts = sys.argv[1:] or ["a", "b", "c"]
    if "a" in parts:
        trio.run(bench_cpu_per_move)
    if "b" in parts:
        trio.run(bench_utilisation)
    if "c" in parts:
        for games in (2000, 4000):
            trio.run(bench_memory, games)


if __name__ == "__main__":
    main()
