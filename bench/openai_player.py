"""The OpenAI player's benchmarks (not tests): `.venv/bin/python bench/openai_player.py [a|b]`.

Both servers run in processes of their own, so this process's CPU time
(``time.process_time``) is the orchestrator's alone; the GO19 player is measured the same
way in the same run, as the reference.

(a) orchestrator CPU per move. Self-play games through the referee (``play_game``: rules,
    fallback bookkeeping, the player), 16 at once, against an instant server:
    GO19 against ``go19 serve --engine random``; OpenAI against
    ``tests/players/openai_server.py`` answering a random one of the legal moves it is
    offered (``constrain = "choice"``, so that every answer is legal). The legal-move
    list is that mode's own cost, metered apart; ``constrain = "none"`` asks without it,
    measured per request on one mid-game position for both players (a1). Rounds alternate
    between the players and medians are reported, so that a shared machine's load falls
    on both alike. Target <= 1 ms.
(b) endpoint utilisation: 32 slots, a server answering after 50 ms, 256 self-play games;
    requests/s over the nominal 32 / 0.050 s = 640/s, target >= 95 %; GO19 the same way.
    Beside it, what the client controls: the share of the slots holding a request
    (sampled every 10 ms), the server's actual round trip, and both processes' CPU, which
    tell a busy machine's scheduling delays (a round trip far above 50 ms while neither
    process uses its core) from a client that cannot keep up.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import trio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.cpu_meter import CpuMeter  # noqa: E402
from orchestrator import render as render_module  # noqa: E402
from orchestrator.collect.referee import GameSpec, RefereeSettings, play_game  # noqa: E402
from orchestrator.players import openai_wire  # noqa: E402
from orchestrator.players.base import Player  # noqa: E402
from orchestrator.players.endpoint import ReplicaPool  # noqa: E402
from orchestrator.players.go19 import Go19Endpoint, Go19Player  # noqa: E402
from orchestrator.players.openai import AskSettings, OpenAIEndpoint, OpenAIPlayer  # noqa: E402
from orchestrator.prompt import read_template  # noqa: E402
from orchestrator.rules.game import Game  # noqa: E402

GAME_CAP = 300  # moves per self-play game


class Server:
    """A server in its own process: its port (from its first line) and its CPU time."""

    def __init__(self, process: trio.Process, port: int) -> None:
        self.process = process
        self.port = port

    def cpu(self) -> float:
        """User + system CPU seconds so far (``/proc/PID/stat``)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@asynccontextmanager
async def server_process(argv: list[str]) -> AsyncIterator[Server]:
    process = await trio.lowlevel.open_process(argv, stdout=subprocess.PIPE, cwd=REPO)
    try:
        assert process.stdout is not None
        line = b""
        while not line.endswith(b"\n"):
            line += await process.stdout.receive_some(1)
        match = re.search(rb":(\d+)", line)
        assert match, line
        yield Server(process, int(match.group(1)))
    finally:
        process.kill()
        await process.wait()


def go19_server(slots: int, delay_ms: float) -> list[str]:
    return [sys.executable, "-m", "orchestrator.cli", "serve", "--engine", "random", "--port",
            "0", "--slots", str(slots), "--delay-ms", str(delay_ms), "--quiet"]


def openai_server(delay_ms: float) -> list[str]:
    return [sys.executable, "-m", "tests.players.openai_server", "--delay-ms", str(delay_ms)]


def openai_player(endpoint: OpenAIEndpoint, constrain: str) -> OpenAIPlayer:
    settings = AskSettings("r5", read_template(None), constrain=constrain)
    return OpenAIPlayer(endpoint, settings, "p")


async def self_play(player: Player, games: int, concurrency: int,
                    stop: trio.Event | None = None) -> tuple[int, int]:
    """(moves, fallbacks) of ``games`` self-play games, ``concurrency`` at once (until
    ``stop`` is set, when given)."""
    rules = RefereeSettings(size=19, move_cap=GAME_CAP, move_timeout_s=60.0,
                            void_after=10**6)
    counts = [0, 0]
    numbers = iter(range(games))

    async def worker() -> None:
        for number in numbers:
            if stop is not None and stop.is_set():
                return
            game = await play_game(GameSpec(number, "p", "p"), number, {"p": player}, rules,
                                   seed=number)
            counts[0] += len(game.moves)
            counts[1] += sum(sum(c.values()) for c in game.fallbacks.values())

    async with trio.open_nursery() as nursery:
        for _ in range(concurrency):
            nursery.start_soon(worker)
    return counts[0], counts[1]


async def cpu_per_move(argv: list[str], make: Callable[[int], tuple[ReplicaPool, Player]],
                       games: int = 16) -> tuple[float, float, float, int]:
    """(CPU ms per move, of which PNG render, of which legal moves, fallbacks)."""
    render = CpuMeter(render_module, "render_png")
    legal = CpuMeter(openai_wire, "legal_json")
    try:
        async with server_process(argv) as server:
            endpoint, player = make(server.port)
            async with endpoint:
                await self_play(player, 2, 2)  # warm-up: connections open, caches filled
                render.cpu = legal.cpu = 0.0
                cpu0 = time.process_time()
                moves, fallbacks = await self_play(player, games, 16)
                cpu = time.process_time() - cpu0
    finally:
        render.close()
        legal.close()
    return cpu / moves * 1000, render.cpu / moves * 1000, legal.cpu / moves * 1000, fallbacks


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def mid_game() -> Game:
    """One position 120 random moves in (the same one for every player)."""
    from orchestrator.players.random_player import RandomChooser

    game = Game(19, 7.5)
    chooser = RandomChooser(seed=5)
    for _ in range(120):
        game.play(chooser.choose(game.board, game.to_play))
    return game


async def per_request(argv: list[str], make: Callable[[int], tuple[ReplicaPool, Player]],
                      n: int = 500) -> float:
    """CPU ms per genmove on one mid-game position, one request at a time, no referee."""
    game = mid_game()
    async with server_process(argv) as server:
        endpoint, player = make(server.port)
        async with endpoint:
            for _ in range(20):
                (await player.answer(game)).move()
            cpu0 = time.process_time()
            for _ in range(n):
                (await player.answer(game)).move()
            return (time.process_time() - cpu0) / n * 1000


def _go19(slots: int) -> Callable[[int], tuple[ReplicaPool, Player]]:
    def make(port: int) -> tuple[ReplicaPool, Player]:
        endpoint = Go19Endpoint([("127.0.0.1", port)], slots_per_replica=slots,
                                allowed_sizes=(19,))
        return endpoint, Go19Player(endpoint, "p")
    return make


def _openai(slots: int, constrain: str) -> Callable[[int], tuple[ReplicaPool, Player]]:
    def make(port: int) -> tuple[ReplicaPool, Player]:
        endpoint = OpenAIEndpoint([f"http://127.0.0.1:{port}/v1"], "r5",
                                  slots_per_replica=slots)
        return endpoint, openai_player(endpoint, constrain)
    return make


async def bench_cpu(rounds: int = 3) -> None:
    """Rounds alternate between the players, so that the machine's load (shared) falls on
    both alike; medians over the rounds."""
    print("(a) orchestrator CPU per move, self-play through the referee, 16 games at once, "
          "instant server in its own process (target <= 1 ms)")
    go19: list[float] = []
    choice: list[float] = []
    for round_ in range(1, rounds + 1):
        g = await cpu_per_move(go19_server(16, 0), _go19(16))
        c = await cpu_per_move(openai_server(0), _openai(16, "choice"))
        go19.append(g[0])
        choice.append(c[0])
        print(f"    round {round_}: GO19 {g[0]:.3f} ms/move (render {g[1]:.3f}, {g[3]} "
              f"fallbacks); OpenAI constrain=choice {c[0]:.3f} (render {c[1]:.3f}, legal "
              f"moves {c[2]:.3f}, {c[3]} fallbacks)")
    print(f"    median: GO19 {median(go19):.3f}, OpenAI {median(choice):.3f} ms/move; "
          f"ratio {median(choice) / median(go19):.2f}")
    print("(a1) CPU per request on one mid-game position, one at a time, no referee")
    per: dict[str, list[float]] = {"GO19": [], "OpenAI none": [], "OpenAI choice": []}
    for _ in range(rounds):
        per["GO19"].append(await per_request(go19_server(1, 0), _go19(1)))
        per["OpenAI none"].append(await per_request(openai_server(0), _openai(1, "none")))
        per["OpenAI choice"].append(await per_request(openai_server(0),
                                                      _openai(1, "choice")))
    for name, values in per.items():
        print(f"    {name:14s} median {median(values):.3f} ms/request, min {min(values):.3f} "
              f"(ratio to GO19 {median(values) / median(per['GO19']):.2f})")


async def utilisation(name: str, argv: list[str],
                      make: Callable[[int], tuple[ReplicaPool, Player]],
                      slots: int, latency: float, seconds: float) -> None:
    """Requests/s over the nominal slots/latency; and, from the client's side, the share
    of the slots holding a request (in flight sampled every 10 ms), which a server slower
    than its nominal 50 ms (starved of CPU on a shared machine) does not lower."""
    async with server_process(argv) as server:
        endpoint, player = make(server.port)
        async with endpoint:
            stop = trio.Event()
            samples: list[int] = []

            async def sample() -> None:
                while not stop.is_set():
                    samples.append(sum(r.in_flight for r in endpoint.replica_stats()))
                    await trio.sleep(0.01)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(self_play, player, 10**6, 256, stop)
                await trio.sleep(5.0)  # warm-up: connections open, queues full
                (before,) = endpoint.replica_stats()
                cpu0, start, served0 = time.process_time(), trio.current_time(), server.cpu()
                nursery.start_soon(sample)
                await trio.sleep(seconds)
                (after,) = endpoint.replica_stats()
                elapsed, cpu = trio.current_time() - start, time.process_time() - cpu0
                served = server.cpu() - served0
                stop.set()
                nursery.cancel_scope.cancel()
    rate = (after.requests - before.requests) / elapsed
    ideal = slots / latency
    observed = sum(after.latency_ms) / len(after.latency_ms) / 1000
    occupied = sum(samples) / len(samples) / slots
    print(f"    {name:26s} {rate:.1f} requests/s = {rate / ideal * 100:.1f} % of the nominal "
          f"{ideal:.0f}/s; slots holding a request {occupied * 100:.1f} % of the time; "
          f"server round trip {observed * 1000:.1f} ms (nominal 50); CPU, % of a core: "
          f"orchestrator {cpu / elapsed * 100:.0f}, server {served / elapsed * 100:.0f}")


async def bench_utilisation(seconds: float = 20.0) -> None:
    slots, latency = 32, 0.050
    print(f"(b) endpoint utilisation: {slots} slots, server answering after 50 ms, 256 "
          "self-play games (target >= 95 %)")
    await utilisation("GO19 (reference)", go19_server(slots, latency * 1000), _go19(slots),
                      slots, latency, seconds)
    await utilisation("OpenAI, constrain=choice", openai_server(latency * 1000),
                      _openai(slots, "choice"), slots, latency, seconds)
    await utilisation("OpenAI, constrain=none", openai_server(latency * 1000),
                      _openai(slots, "none"), slots, latency, seconds)


def main() -> None:
    parts = sys.argv[1:] or ["a", "b"]
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
    if "a" in parts:
        trio.run(bench_cpu)
    if "b" in parts:
        trio.run(bench_utilisation)


if __name__ == "__main__":
    main()
