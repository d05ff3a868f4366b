"""What hostile or stalled pages cost the web server (issue 30), not a test:
`.venv/bin/python bench/page_faults.py fds-play|fds-watch|ws-memory [--tree DIR]`.

Everything measured runs in its own process from the source tree ``--tree`` (default:
this checkout), so the same bench measures main and a branch; the clients are this
process, on raw sockets.

fds-play   `go19 play` with ``--tabs`` (10) tabs that never read: each sends clicks on a
           point that is no point (the status line, and so every snapshot, repeats it:
           a few KiB) until its socket is full and the server gives it up. The server's
           descriptors (/proc/PID/fd) every 0.5 s for ``--seconds``, then whether a new
           page still gets its first message.
fds-watch  `collect --web` (two embedded heuristic players, concurrency 8) with ``--tabs``
           (9) tabs that never read, each asking for a finished game over and over (the
           replay is sent in full each time); the collect process's descriptors as above.
ws-memory  `go19 play` with ``--clients`` (30) clients each sending ``--mib`` (15) MiB of
           a text frame that says it is 16 MiB long and never finishes it; the server's
           RSS before, once every client has sent all it could (or was cut off), and 2 s
           after they left; and whether a new page still gets its first message.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from tests.web.raw_page import frame_head, handshake  # noqa: E402

MATCHUP = """
[run]
name = "page-faults"
games = 400
seed = 30

[players.strong]
kind = "go19"
embedded = { engine = "heuristic", level = 2, seed = 1 }
slots = 4

[players.weak]
kind = "go19"
embedded = { engine = "heuristic", level = 1, seed = 2 }
slots = 4

[pairing]
black = "strong"
white = "weak"

[game]
move_cap = 120
concurrency = 8
"""


def go19(tree: Path, *args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "orchestrator.cli", *args],
                            env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            **kwargs)


def stop(process: subprocess.Popen) -> None:
    """SIGTERM, and SIGKILL for a server that no longer stops (it ran out of descriptors)."""
    process.terminate()
    try:
        process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        print("  (the server did not stop within 30 s of SIGTERM: killed)")
        process.kill()
        process.communicate()


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def frame(payload: bytes, length: int | None = None) -> bytes:
    """A text frame of ``payload``, saying it is ``length`` long (default: its own)."""
    return frame_head(0x1, len(payload) if length is None else length) + payload


def first_message(port: int) -> str:
    """Whether a new page is served: its first frame's first bytes, or why not."""
    try:
        sock = handshake(port)
    except OSError as exc:
        return f"refused: {exc}"
    sock.settimeout(10)
    try:
        data = sock.recv(64)
        return "served" if data[:1] == b"\x81" else f"got {data[:16]!r}"
    except OSError as exc:
        return f"no message: {exc}"
    finally:
        sock.close()


def started(process: subprocess.Popen, marker: str) -> str:
    for line in process.stdout:
        if marker in line:
            return line.split(marker, 1)[1].split()[0]
    raise SystemExit(f"the server exited before saying {marker!r}")


def stalled_tabs_on(process: subprocess.Popen, url: str, name: str, message: bytes,
                    tabs: int, seconds: float) -> None:
    """``tabs`` tabs that never read, each sending ``message`` while it can; the server's
    descriptors meanwhile."""
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    before = fds(process.pid)
    clients = []
    for _ in range(tabs):
        sock = handshake(port, rcvbuf=4096)
        sock.setblocking(False)
        clients.append(sock)
    samples = []
    start = time.monotonic()
    while (now := time.monotonic() - start) < seconds:
        for sock in clients:
            try:
                sock.send(message)
            except OSError:
                pass  # full, or cut: either is what a page that never reads gets
        samples.append((round(now, 1), fds(process.pid)))
        time.sleep(0.5)
    print(f"{name}, {tabs} tabs that never read: descriptors before {before}, peak "
          f"{max(n for _, n in samples)}, last {samples[-1][1]}")
    print("  t/s:fds " + " ".join(f"{t}:{n}" for t, n in samples))
    print(f"  a new page: {first_message(port)}")


def fds_play(tree: Path, tabs: int, seconds: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        play = go19(tree, "play", "--port", "0", "--recordings", tmp)
        try:
            url = started(play, "go19 play: ")
            time.sleep(1)
            click = frame(b'{"type":"click","point":"' + b"x" * 3000 + b'"}')
            stalled_tabs_on(play, url, "go19 play", click, tabs, seconds)
        finally:
            stop(play)


def fds_watch(tree: Path, tabs: int, seconds: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        matchup = Path(tmp) / "m.toml"
        matchup.write_text(MATCHUP)
        collect = go19(tree, "collect", "--matchup", str(matchup), "--recordings", tmp,
                       "--no-dashboard", "--no-report", "--standings-every", "0",
                       "--web", f"127.0.0.1:{free_port()}")
        try:
            url = started(collect, "watch page: ")
            while not list(Path(tmp).glob("*/*.sgf")):  # a finished game to ask for
                time.sleep(0.2)
            stalled_tabs_on(collect, url, "collect --web", frame(b'{"type":"watch","game":1}'),
                            tabs, seconds)
        finally:
            stop(collect)


def ws_memory(tree: Path, clients: int, mib: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        play = go19(tree, "play", "--port", "0", "--recordings", tmp)
        try:
            port = int(started(play, "go19 play: ").rstrip("/").rsplit(":", 1)[1])
            time.sleep(1)
            before = rss_mib(play.pid)
            chunk = b"a" * (1 << 20)
            socks, cut = [], 0
            for _ in range(clients):
                try:
                    sock = handshake(port)
                except OSError as exc:
                    print(f"  a client was refused: {exc}")
                    continue
                socks.append(sock)
                try:
                    sock.sendall(frame(b"", 16 << 20))
                    for _ in range(mib):
                        sock.sendall(chunk)
                except OSError:
                    cut += 1
            time.sleep(1)
            held = rss_mib(play.pid)
            for sock in socks:
                sock.close()
            time.sleep(2)
            after = rss_mib(play.pid)
            print(f"go19 play, {clients} clients x {mib} MiB of an unfinished frame: RSS "
                  f"{before:.0f} MiB before, {held:.0f} MiB with them open ({cut} cut off "
                  f"before sending it all), {after:.0f} MiB 2 s after they left")
            print(f"  a new page: {first_message(port)}")
        finally:
            stop(play)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("probe", choices=("fds-play", "fds-watch", "ws-memory"))
    parser.add_argument("--tree", type=Path, default=HERE)
    parser.add_argument("--tabs", type=int)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--clients", type=int, default=30)
    parser.add_argument("--mib", type=int, default=15)
    args = parser.parse_args()
    tree = args.tree.resolve()
    if args.probe == "fds-play":
        fds_play(tree, args.tabs or 10, args.seconds)
    elif args.probe == "fds-watch":
        fds_watch(tree, args.tabs or 9, args.seconds)
    else:
        ws_memory(tree, args.clients, args.mib)


if __name__ == "__main__":
    main()
