"""What watching costs (issue 26), not a test: `.venv/bin/python bench/watchers.py [a] [b]
[--tree DIR] [--rounds N] [--games N]`.

Everything measured runs in its own process from the source tree ``--tree`` (default:
this checkout), so the same bench measures main and a branch; the clients are this
process (trio-websocket), kept cheap so that they do not eat the cores they measure.

(a) watchers, same run: one real collection (`collect --web`, two `go19 serve`
    heuristic processes as the players, concurrency 8) whose pages come and go: windows
    of ``--window`` seconds with no page open alternate with windows where 20 watchers
    are on it (8 follow the newest live game, and the next one when it ends; 11 click a
    random finished game once a second; 1 opens the socket and never reads). Per window:
    games/min (the log's "game N: … by …" lines, timestamped as they come) and the
    collect process's CPU seconds per game (/proc/PID/stat); the first two windows are
    warm-up. Adjacent windows share the machine's load, so their ratio is what watching
    costs. Target: with watchers >= 95 % of the games/min without.
(c) watchers, separate runs: the same collection played whole with no page and with the
    20 watchers, alternating (without, with, with, without, …); games/min between the
    first and the last recorded game and the collect CPU per game (getrusage of the
    reaped child); a collect that records every game but does not exit is killed and
    said so.
(b) tabs: `go19 play` with 100 tabs open (human vs human), one of them sending 1,000
    clicks as fast as it can (legal and illegal points: every click changes what the
    page shows), then one settings change, which every tab must see. Measured: the
    server process's CPU seconds (/proc/PID/stat) from the first click until the last
    tab has the change, and the wall time of a plain HTTP GET of the page repeated
    every 0.1 s meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio
from trio_websocket import ConnectionClosed, HandshakeError, open_websocket_url

HERE = Path(__file__).resolve().parents[1]
FINISHED = re.compile(r"game \d+: .* by \S+, \d+ moves$|game \d+ void")
FOLLOWERS, CLICKERS, SILENT = 8, 11, 1
EXIT_GRACE_S = 30.0
TABS, CLICKS = int(os.environ.get("TABS", 100)), int(os.environ.get("CLICKS", 1000))

MATCHUP = """
[run]
name = "watchers"
seed = 26

[players.strong]
kind = "go19"
replicas = ["127.0.0.1:{strong}"]
slots = 4

[players.weak]
kind = "go19"
replicas = ["127.0.0.1:{weak}"]
slots = 4

[pairing]
black = "strong"
white = "weak"

[game]
komi = 2.5
move_timeout_s = 60
concurrency = 8
"""


def env(tree: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(tree)}


def go19(*args: str) -> list[str]:
    return [sys.executable, "-m", "orchestrator.cli", *args]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(tree: Path, level: int, seed: int) -> tuple[subprocess.Popen, int]:
    server = subprocess.Popen(
        go19("serve", "--engine", "heuristic", "--level", str(level), "--seed",
             str(seed), "--slots", "4", "--port", "0", "--quiet"),
        stdout=subprocess.PIPE, text=True, env=env(tree), cwd=tree)
    line = server.stdout.readline()  # "serving GO19 on 127.0.0.1:PORT (…)"
    return server, int(line.split()[3].rsplit(":", 1)[1])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the clients ---------------------------------------------------------------------

def origin(url: str) -> list[tuple[bytes, bytes]]:
    """The page's own Origin, as a browser sends it (a socket without one is refused)."""
    host = url.split("://", 1)[1].split("/", 1)[0]
    return [(b"Origin", f"http://{host}".encode())]


class Games:
    """The game numbers a watch page lists, from whichever message carries them (the
    seed's one "watch" message, or the separate run/finished messages)."""

    def __init__(self) -> None:
        self.live: list[int] = []
        self.finished: list[int] = []

    def read(self, text: str) -> None:
        if '"live"' not in text and '"finished"' not in text:
            return
        data = json.loads(text)
        for message in data if isinstance(data, list) else [data]:  # one or a batch
            if isinstance(message.get("live"), list):
                self.live = [g["number"] for g in message["live"]]
            if isinstance(message.get("finished"), list):
                self.finished = [g["number"] for g in message["finished"]]


CONNECTIONS = {"follow": 0, "click": 0}


async def watcher(url: str, kind: str, stop: trio.Event, seed: int) -> None:
    """A page that reconnects when dropped, as the real one does."""
    rng = random.Random(seed)
    while not stop.is_set():
        CONNECTIONS[kind] += 1
        try:
            async with open_websocket_url(url.replace("http", "ws", 1) + "ws",
                                          extra_headers=origin(url)) as ws:
                games = Games()
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_pick, ws, games, kind, rng)
                    while True:
                        games.read(await ws.get_message())
        except* (ConnectionClosed, HandshakeError, OSError):
            pass
        if not stop.is_set():
            await trio.sleep(1.0)  # the page's own retry delay


async def _pick(ws, games: Games, kind: str, rng: random.Random) -> None:
    watched = None
    while True:
        if kind == "follow":
            if games.live and watched not in games.live:
                watched = max(games.live)
                await ws.send_message(json.dumps({"type": "watch", "game": watched}))
            await trio.sleep(0.2)
        else:
            if games.finished:
                watched = rng.choice(games.finished)
                await ws.send_message(json.dumps({"type": "watch", "game": watched}))
            await trio.sleep(1.0)


async def silent_page(url: str, stop: trio.Event) -> None:
    """Opens the WebSocket, asks for game 1, and never reads a byte."""
    import wsproto
    from wsproto.events import AcceptConnection, Request, TextMessage

    host = url.removeprefix("http://").rstrip("/")
    hostname, port = host.rsplit(":", 1)
    client = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    stream = await trio.open_tcp_stream(hostname, int(port))
    await stream.send_all(client.send(Request(host=host, target="/ws",
                                              extra_headers=origin(url))))
    accepted = False
    while not accepted:  # the handshake's answer is all it ever reads
        client.receive_data(await stream.receive_some(4096))
        accepted = any(isinstance(e, AcceptConnection) for e in client.events())
    await stream.send_all(client.send(TextMessage(data='{"type":"watch","game":1}')))
    await stop.wait()
    await stream.aclose()


# -- (a) watchers ------------------------------------------------------------------------

async def one_run(tree: Path, matchup: Path, games: int, watchers: bool, rec: Path) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    CONNECTIONS.update(follow=0, click=0)
    process = await trio.lowlevel.open_process(
        go19("collect", "--matchup", str(matchup), "--games", str(games),
             "--recordings", str(rec), "--no-dashboard", "--no-report", "--standings-every",
             "0", "--web", f"127.0.0.1:{free_port()}"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env(tree), cwd=tree)
    stamps: list[float] = []
    stop = trio.Event()
    recorded = trio.Event()
    url: list[str] = []
    hung = False

    async def read_log() -> None:
        buffer = b""
        async for chunk in process.stdout:
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for raw in lines:
                line = raw.decode(errors="replace")
                if "watch page: " in line and not url:
                    url.append(line.split("watch page: ")[1].strip())
                    if watchers:
                        start_watchers(url[0])
                elif FINISHED.search(line):
                    stamps.append(time.monotonic())
                    if len(stamps) >= games:
                        recorded.set()
        stop.set()

    async def exit_or_kill() -> None:
        """A collect that has recorded every game but does not exit is killed (and said)."""
        nonlocal hung
        await recorded.wait()
        with trio.move_on_after(EXIT_GRACE_S) as waited:
            await process.wait()
        if waited.cancelled_caught:
            hung = True
            process.kill()

    async with trio.open_nursery() as nursery:
        def start_watchers(page: str) -> None:
            for i in range(FOLLOWERS):
                nursery.start_soon(watcher, page, "follow", stop, i)
            for i in range(CLICKERS):
                nursery.start_soon(watcher, page, "click", stop, 100 + i)
            for _ in range(SILENT):
                nursery.start_soon(silent_page, page, stop)

        nursery.start_soon(read_log)
        nursery.start_soon(exit_or_kill)
        await process.wait()
        await stop.wait()
        nursery.cancel_scope.cancel()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    rate = (len(stamps) - 1) / (stamps[-1] - stamps[0]) * 60 if len(stamps) > 1 else 0.0
    return {"games": len(stamps), "per_min": rate, "cpu_per_game": cpu / max(len(stamps), 1),
            "rc": f"hung at exit, killed after {EXIT_GRACE_S:g} s" if hung else process.returncode,
            "connections": sum(CONNECTIONS.values())}


async def windowed_run(tree: Path, matchup: Path, games: int, window: float,
                       rec: Path) -> list[dict]:
    """One collection, its watchers on in every second window; a row per window."""
    process = await trio.lowlevel.open_process(
        go19("collect", "--matchup", str(matchup), "--games", str(games),
             "--recordings", str(rec), "--no-dashboard", "--no-report", "--standings-every",
             "0", "--web", f"127.0.0.1:{free_port()}"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env(tree), cwd=tree)
    stamps: list[float] = []
    page = trio.Event()
    done = trio.Event()
    url: list[str] = []

    async def read_log() -> None:
        buffer = b""
        async for chunk in process.stdout:
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for raw in lines:
                line = raw.decode(errors="replace")
                if "watch page: " in line and not url:
                    url.append(line.split("watch page: ")[1].strip())
                    page.set()
                elif FINISHED.search(line):
                    stamps.append(time.monotonic())
        done.set()

    def cpu() -> float | None:
        try:
            return cpu_seconds(process.pid)
        except (FileNotFoundError, ProcessLookupError):
            return None

    rows = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(read_log)
        await page.wait()
        watching = False
        while not done.is_set():
            start, cpu0, mine0 = time.monotonic(), cpu(), time.process_time()
            with trio.move_on_after(window):
                async with trio.open_nursery() as pages:
                    if watching:
                        for i in range(FOLLOWERS):
                            pages.start_soon(watcher, url[0], "follow", done, i)
                        for i in range(CLICKERS):
                            pages.start_soon(watcher, url[0], "click", done, 100 + i)
                        for _ in range(SILENT):
                            pages.start_soon(silent_page, url[0], done)
                    await done.wait()
                    pages.cancel_scope.cancel()
            end, cpu1, mine1 = time.monotonic(), cpu(), time.process_time()
            finished = sum(start <= t < end for t in stamps)
            rows.append({"watched": watching, "seconds": end - start, "games": finished,
                         "per_min": finished / (end - start) * 60,
                         "cpu": None if cpu0 is None or cpu1 is None else cpu1 - cpu0,
                         "clients": (mine1 - mine0) / (end - start)})
            watching = not watching
        await process.wait()
    return rows


def bench_same_run(tree: Path, games: int, window: float) -> None:
    servers = [serve(tree, 2, 1), serve(tree, 1, 2)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            matchup = Path(tmp) / "watchers.toml"
            matchup.write_text(MATCHUP.format(strong=servers[0][1], weak=servers[1][1]))
            rows = trio.run(windowed_run, tree, matchup, games, window, Path(tmp) / "rec")
    finally:
        for server, _ in servers:
            server.kill()
            server.wait()
    # Whole windows after the warm-up, in (without, with) pairs.
    rows = [r for r in rows[2:] if r["seconds"] >= 0.9 * window and r["cpu"] is not None]
    for r in rows:
        print(f"    {'20 watchers' if r['watched'] else 'no watcher '}  {r['per_min']:6.1f} "
              f"games/min  collect CPU {r['cpu'] / max(r['games'], 1):.3f} s/game, the "
              f"pages' own {r['clients'] * 100:.0f} % of a core  ({r['games']} games in "
              f"{r['seconds']:.0f} s)", flush=True)
    pairs = [(a, b) for a, b in zip(rows, rows[1:], strict=False)
             if not a["watched"] and b["watched"]]
    ratios = [b["per_min"] / a["per_min"] for a, b in pairs if a["per_min"]]
    alone = [a["per_min"] for a, _ in pairs]
    watched = [b["per_min"] for _, b in pairs]
    print(f"(a) one {games}-game collection, {window:g} s windows without and with 20 watchers "
          f"({FOLLOWERS} following, {CLICKERS} clicking finished games once a second, "
          f"{SILENT} never reading):")
    print(f"    games/min without {statistics.mean(alone):.1f} [{min(alone):.1f}–"
          f"{max(alone):.1f}], with {statistics.mean(watched):.1f} [{min(watched):.1f}–"
          f"{max(watched):.1f}]: {statistics.mean(watched) / statistics.mean(alone) * 100:.1f} %"
          f" (per pair {', '.join(f'{r * 100:.0f} %' for r in ratios)}; target >= 95 %)")
    per_game = {w: sum(r["cpu"] for r in rows if r["watched"] is w)
                / max(sum(r["games"] for r in rows if r["watched"] is w), 1)
                for w in (False, True)}
    print(f"    collect CPU per game: {per_game[False]:.3f} s without, {per_game[True]:.3f} s "
          f"with (+{(per_game[True] - per_game[False]) * 1000:.0f} ms per game for the pages); "
          f"the 20 pages themselves (this process) "
          f"{statistics.mean(r['clients'] for r in rows if r['watched']) * 100:.0f} % of a core")


def bench_watchers(tree: Path, rounds: int, games: int) -> None:
    servers = [serve(tree, 2, 1), serve(tree, 1, 2)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            matchup = Path(tmp) / "watchers.toml"
            matchup.write_text(MATCHUP.format(strong=servers[0][1], weak=servers[1][1]))
            results: dict[bool, list[dict]] = {False: [], True: []}
            order = [False, True, True, False] * ((rounds + 1) // 2)
            for i, watched in enumerate(order[:2 * rounds]):
                result = trio.run(one_run, tree, matchup, games, watched, Path(tmp) / f"r{i}")
                results[watched].append(result)
                print(f"    run {i + 1}: {'20 watchers' if watched else 'no watcher '}  "
                      f"{result['per_min']:6.1f} games/min  collect CPU "
                      f"{result['cpu_per_game']:.3f} s/game  ({result['games']} games, "
                      f"exit {result['rc']}"
                      + (f", {result['connections']} page connections" if watched else "")
                      + ")", flush=True)
    finally:
        for server, _ in servers:
            server.kill()
            server.wait()
    alone = [r["per_min"] for r in results[False]]
    watched = [r["per_min"] for r in results[True]]
    ratio = statistics.mean(watched) / statistics.mean(alone)
    pairs = [w / a for w, a in zip(watched, alone, strict=True)]
    print(f"(c) {games}-game collections, 20 watchers ({FOLLOWERS} following, {CLICKERS} "
          f"clicking finished games once a second, {SILENT} never reading):")
    print(f"    games/min without {statistics.mean(alone):.1f} "
          f"[{min(alone):.1f}–{max(alone):.1f}], with {statistics.mean(watched):.1f} "
          f"[{min(watched):.1f}–{max(watched):.1f}]: {ratio * 100:.1f} % (per round "
          f"{', '.join(f'{p * 100:.0f} %' for p in pairs)}; target >= 95 %)")
    cpu_alone = statistics.mean(r["cpu_per_game"] for r in results[False])
    cpu_watched = statistics.mean(r["cpu_per_game"] for r in results[True])
    print(f"    collect CPU per game: {cpu_alone:.3f} s without, {cpu_watched:.3f} s with "
          f"(+{(cpu_watched - cpu_alone) * 1000:.0f} ms per game for the 20 pages)")


# -- (b) tabs ------------------------------------------------------------------------------

# A plain HTTP client in its own process (the tabs' messages keep this one busy): a GET
# of the page every 0.1 s, each one's wall time printed, until stdin closes.
PROBE = r"""
import re, select, socket, sys, time
port = int(sys.argv[1])
while not select.select([sys.stdin], [], [], 0.1)[0]:
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += sock.recv(65536)
        head, body = reply.split(b"\r\n\r\n", 1)
        length = int(re.search(rb"content-length: *(\d+)", head, re.I).group(1))
        while len(body) < length:
            body += sock.recv(65536)
    print(time.perf_counter() - start, flush=True)
"""


async def probing(port: int):
    """Start the GET prober; the returned function stops it and gives its wall times."""
    probe = await trio.lowlevel.open_process([sys.executable, "-c", PROBE, str(port)],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    async def stop() -> list[float]:
        await probe.stdin.aclose()
        out = b""
        async for chunk in probe.stdout:
            out += chunk
        await probe.wait()
        return [float(line) for line in out.split()]

    return stop


async def tabs_run(tree: Path) -> dict:
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        process = await trio.lowlevel.open_process(
            go19("play", "--port", str(port), "--recordings", tmp),
            stdout=subprocess.PIPE, env=env(tree), cwd=tree)
        first = b""
        while not first.endswith(b"\n"):
            first += await process.stdout.receive_some(1)
        url = f"ws://127.0.0.1:{port}/ws"
        flags = [trio.Event() for _ in range(TABS)]
        marker = '"komi":6.5'
        async with trio.open_nursery() as nursery:
            sockets = []

            dropped: list[int] = []

            async def tab(i: int, task_status=trio.TASK_STATUS_IGNORED) -> None:
                async with open_websocket_url(url, extra_headers=origin(url)) as ws:
                    sockets.append(ws)
                    task_status.started()
                    try:
                        while True:
                            text = await ws.get_message()
                            if marker in text:
                                flags[i].set()
                    except ConnectionClosed:  # the server dropped a tab it found too slow
                        dropped.append(i)
                        flags[i].set()

            for i in range(TABS):
                await nursery.start(tab, i)
            await sockets[0].send_message(json.dumps(
                {"type": "new", "settings": {"mode": "hh", "komi": 2.5}}))
            await trio.sleep(1.0)  # the new game is on every tab
            stop_probe = await probing(port)  # the same GET with the tabs open, idle
            await trio.sleep(0.6)
            idle = await stop_probe()
            rng = random.Random(26)
            stop_probe = await probing(port)
            cpu0, wall0 = cpu_seconds(process.pid), time.perf_counter()
            for _ in range(CLICKS):  # one tab: the server reads them, then the change, in order
                await sockets[0].send_message(json.dumps(
                    {"type": "click", "point": rng.randrange(361)}))
            await sockets[0].send_message(json.dumps(
                {"type": "settings", "settings": {"mode": "hh", "komi": 6.5}}))
            with trio.move_on_after(300) as waited:
                for flag in flags:
                    await flag.wait()
            if waited.cancelled_caught:
                print(f"    gave up after 300 s: {sum(f.is_set() for f in flags)} of {TABS} "
                      "tabs saw the change", flush=True)
            cpu, wall = cpu_seconds(process.pid) - cpu0, time.perf_counter() - wall0
            latencies = await stop_probe()  # the GET in flight counts too
            nursery.cancel_scope.cancel()
        process.kill()
        await process.wait()
    return {"cpu": cpu, "wall": wall, "get": latencies, "idle": idle, "dropped": len(dropped)}


def bench_tabs(tree: Path, rounds: int) -> None:
    results = [trio.run(tabs_run, tree) for _ in range(rounds)]
    for i, r in enumerate(results, 1):
        print(f"    run {i}: server CPU {r['cpu']:.2f} s, {r['wall']:.2f} s wall; GET / "
              f"median {statistics.median(r['get']) * 1000:.0f} ms, max "
              f"{max(r['get']) * 1000:.0f} ms ({len(r['get'])} GETs; idle median "
              f"{statistics.median(r['idle']) * 1000:.0f} ms); {r['dropped']} tabs dropped by "
              "the server", flush=True)
    cpus = [r["cpu"] for r in results]
    worst = [max(r["get"]) for r in results]
    print(f"(b) {TABS} tabs, {CLICKS} clicks: server CPU "
          f"{statistics.mean(cpus):.2f} s [{min(cpus):.2f}–{max(cpus):.2f}], slowest GET "
          f"{min(worst) * 1000:.0f}–{max(worst) * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", default=["a", "b"])
    parser.add_argument("--tree", type=Path, default=HERE, help="source tree to measure")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each kind (b, c)")
    parser.add_argument("--games", type=int, help="games per collection (a: 300, c: 48)")
    parser.add_argument("--window", type=float, default=20.0, help="(a)'s window, seconds")
    args = parser.parse_args()
    tree = args.tree.resolve()
    print(f"source tree {tree}", flush=True)
    if "a" in args.parts:
        bench_same_run(tree, args.games or 300, args.window)
    if "b" in args.parts:
        bench_tabs(tree, args.rounds)
    if "c" in args.parts:
        bench_watchers(tree, args.rounds, args.games or 48)


if __name__ == "__main__":
    main()
