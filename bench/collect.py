"""collect benchmarks (not tests): run `.venv/bin/python bench/collect.py [a|b|c ...]`.

(a) orchestrator CPU per move: instant in-process GO19 servers; the process CPU
    minus the CPU the engines themselves spent choosing moves, per move played
    (rules, PNG render, GO19 framing both ways, referee, SGF and journal writes).
    Target <= 1 ms.
(b) endpoint utilisation: one server answering after a fixed 50 ms with 8 slots,
    256 concurrent self-play games; achieved moves/s over the ideal slots/latency
    (8 / 0.050 s = 160 moves/s). Target >= 97 %.
(c) concurrent games with flat memory: 2,000 (and 4,000) games in flight against
    servers answering after 100 ms; RSS sampled every second, reported after
    warm-up and at the end. Target >= 2,000 games.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.collect.run import CollectOptions, collect  # noqa: E402
from orchestrator.serve import RandomEngine, ServerStats, position, serve_go19  # noqa: E402


class TimedEngine(RandomEngine):
    """A random legal mover that keeps count of the CPU it spends choosing."""

    cpu = 0.0

    async def genmove(self, board, color):
        await trio.lowlevel.checkpoint()
        start = time.process_time()
        try:
            return self._chooser.choose(position(board), color, None)
        finally:
            TimedEngine.cpu += time.process_time() - start


class CpuMeter:
    """Wraps a synchronous function and adds up the CPU spent inside it."""

    def __init__(self, module, name: str) -> None:
        self.cpu = 0.0
        self.calls = 0
        inner = getattr(module, name)

        def timed(*args, **kwargs):
            start = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                self.cpu += time.process_time() - start
                self.calls += 1

        setattr(module, name, timed)


def matchup_text(port: int, slots: int, concurrency: int, size: int = 19) -> str:
    return f"""
[players.p]
kind = "go19"
replicas = ["127.0.0.1:{port}"]
slots = {slots}
[pairing]
black = "p"
white = "p"
[game]
size = {size}
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


async def _with_server(delay_ms: float, slots: int, body, engine=None):
    stats = ServerStats()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            lambda task_status: serve_go19(
                engine or RandomEngine(seed=1), "127.0.0.1", 0, slots=slots,
                delay_ms=delay_ms, stats=stats, task_status=task_status,
            )
        )
        result = await body(port, stats)
        nursery.cancel_scope.cancel()
    return result


def _options(tmp: Path, port: int, slots: int, concurrency: int, games: int) -> CollectOptions:
    path = tmp / "bench.toml"
    path.write_text(matchup_text(port, slots, concurrency))
    return CollectOptions(matchup_path=path, games=games, recordings=tmp / "rec",
                          dashboard=False)


async def bench_cpu_per_move() -> None:
    import orchestrator.players.go19 as client

    render = CpuMeter(client, "render_png")
    with tempfile.TemporaryDirectory() as tmp:
        async def body(port, stats):
            options = _options(Path(tmp), port, slots=16, concurrency=16, games=8)
            cpu0, wall0 = time.process_time(), time.perf_counter()
            summary = await collect(options, log=lambda line: None)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            moves = sum(r["moves"] for r in summary.state.records)
            return moves, cpu, wall, stats.requests

        moves, cpu, wall, requests = await _with_server(0, 16, body, TimedEngine(seed=1))
    own = cpu - TimedEngine.cpu
    print(f"(a) {moves} moves in {wall:.1f} s wall; process CPU {cpu:.2f} s, "
          f"engine CPU {TimedEngine.cpu:.2f} s ({requests} requests)")
    print(f"    orchestrator CPU per move: {own / moves * 1000:.3f} ms  (target <= 1 ms), "
          f"of which PNG render {render.cpu / render.calls * 1000:.3f} ms")


async def bench_utilisation(seconds: float = 30.0) -> None:
    slots, latency = 8, 0.050
    with tempfile.TemporaryDirectory() as tmp:
        async def body(port, stats):
            options = _options(Path(tmp), port, slots=slots, concurrency=256, games=100_000)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(collect, options, lambda line: None)
                await trio.sleep(5.0)  # warm-up: connections open, queues full
                start_requests, start = stats.requests, trio.current_time()
                await trio.sleep(seconds)
                done, elapsed = stats.requests - start_requests, trio.current_time() - start
                nursery.cancel_scope.cancel()
            return done / elapsed

        rate = await _with_server(latency * 1000, slots, body)
    ideal = slots / latency
    print(f"(b) {rate:.1f} moves/s against an ideal {ideal:.0f} moves/s "
          f"(8 slots, 50 ms, 256 games): {rate / ideal * 100:.1f} %  (target >= 97 %)")


async def bench_memory(games: int, seconds: float = 40.0) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async def body(port, stats):
            options = _options(Path(tmp), port, slots=games, concurrency=games,
                               games=10 * games)
            samples = []
            async with trio.open_nursery() as nursery:
                nursery.start_soon(collect, options, lambda line: None)
                start = trio.current_time()
                while trio.current_time() - start < seconds:
                    await trio.sleep(1.0)
                    samples.append((trio.current_time() - start, rss_mb(), stats.requests))
                nursery.cancel_scope.cancel()
            return samples

        samples = await _with_server(100, games, body)
    warm = samples[len(samples) // 4]
    last = samples[-1]
    rate = (last[2] - warm[2]) / (last[0] - warm[0])
    print(f"(c) {games} games in flight: RSS {warm[1]:.0f} MB at {warm[0]:.0f} s, "
          f"{last[1]:.0f} MB at {last[0]:.0f} s ({(last[1] - warm[1]):+.0f} MB); "
          f"{rate:.0f} moves/s; max RSS {max(s[1] for s in samples):.0f} MB")


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
