"""`go19 serve --engine hf` benchmark (not a test): run `.venv/bin/python bench/serve_hf.py`.

The tiny Qwen2.5-VL of tests/vlm (built and cached on first use) with adapters a and b,
served by real `go19 serve --engine hf` processes on the CPU (``--threads 1``: on this
shared 2-core machine more torch threads only contend), one per configuration, all
up during the same run: batching on (``--max-batch 64``), ``--max-batch 1``, and batching
with ``--batch-adapters split``. For each concurrency (1, 4, 16, 64) closed-loop GO19
clients, half on adapter a's port and half on b's, send the same request (a 512 px PNG
of a position) again and again; each configuration is measured in turn at that
concurrency, so machine load drifts alike for all.

Reported per configuration and concurrency:
- requests/s (wall) and the server's CPU milliseconds per request (/proc/PID/stat, the
  measure that a busy shared machine disturbs least);
- the mean batch size, and where a request's time went, from the server's
  ``--log-requests`` file (JSON lines) and the client's round trip: generate (its batch's generate
  calls), prepare (its own picture decoding, chat template and processor, and the wait for
  a prepare thread), queue (prepared, waiting for a batch to start), and the rest (GO19
  framing, the trio loop, threads handing over, the socket, the client);
  "outside generate" is everything but generate.
The batching gain is requests/s with batching over ``--max-batch 1`` (target >= 3x at 16);
mixed over split is the gain of one generate call per batch over one per adapter.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import trio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from orchestrator.color import BLACK, WHITE  # noqa: E402
from orchestrator.coords import from_gtp  # noqa: E402
from orchestrator.protocol import go19 as wire  # noqa: E402
from orchestrator.render import render_png  # noqa: E402
from tests.vlm.tiny import tiny_model  # noqa: E402

CONCURRENCY = (1, 4, 16, 64)
SECONDS = float(os.environ.get("BENCH_SECONDS", "8"))  # measured per configuration and level
CONFIGS = {"batching": ["--max-batch", "64"], "max-batch 1": ["--max-batch", "1"],
           "split": ["--max-batch", "64", "--batch-adapters", "split"]}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Server:
    name: str
    process: subprocess.Popen
    ports: dict[str, int]
    log: list[tuple[str, int, float, float, float, float]] = field(default_factory=list)

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime

    def read_log(self, path: Path) -> None:
        """Follow the request log as the server appends to it."""
        with open(path, encoding="utf-8") as fh:
            while self.process.poll() is None:
                line = fh.readline()
                if not line.endswith("\n"):
                    fh.seek(fh.tell() - len(line))
                    time.sleep(0.05)
                    continue
                r = json.loads(line)
                if "batch" in r:
                    self.log.append((r["adapter"], r["batch"], r["queued_ms"] / 1000,
                                     r["prepare_ms"] / 1000, r["thread_wait_ms"] / 1000,
                                     r["generate_ms"] / 1000))


def start(name: str, args: list[str], tiny, log: Path) -> Server:
    log.write_text("")
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "serve", "--engine", "hf",
         "--model", str(tiny.model), "--adapter", f"a={tiny.adapter('a')}",
         "--adapter", f"b={tiny.adapter('b')}", "--listen", "a=:0", "--listen", "b=:0",
         "--device", "cpu", "--threads", "1", "--log-requests", str(log), "--summary-s", "0",
         "--quiet",
         "--max-connections", "512", *args],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    threading.Thread(target=process.stderr.read, daemon=True).start()  # never fills
    while not (line := process.stdout.readline()).startswith("serving"):
        if not line:
            raise SystemExit(f"{name}: the server did not start")
    ports = {adapter: int(port) for port, adapter in re.findall(r":(\d+) \((\w+)\)", line)}
    server = Server(name, process, ports)
    threading.Thread(target=server.read_log, args=(log,), daemon=True).start()
    return server


def request() -> wire.Request:
    board = np.zeros((19, 19), np.uint8)
    for vertex, color in (("D4", BLACK), ("Q16", WHITE), ("C16", BLACK), ("R4", WHITE)):
        board.flat[from_gtp(vertex, 19)] = color
    return wire.Request(19, BLACK, render_png(board, from_gtp("R4", 19), 512), board.tobytes())


async def client(port: int, the_request: wire.Request, stop: float,
                 latencies: list[float]) -> None:
    codec = wire.Connection(wire.CLIENT)
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        while trio.current_time() < stop:
            sent = trio.current_time()
            await stream.send_all(codec.send(the_request))
            while (event := codec.next_event()) is wire.NEED_DATA:
                codec.receive_data(await stream.receive_some(65536))
            assert isinstance(event, wire.MoveReply), event
            latencies.append(trio.current_time() - sent)


@dataclass
class Result:
    rate: float
    cpu_ms: float
    mean_batch: float
    shares: dict[str, float]


async def measure(server: Server, concurrency: int, the_request: wire.Request) -> Result:
    latencies: list[float] = []
    # Warm-up: a short burst at this concurrency, not counted.
    async with trio.open_nursery() as nursery:
        for k in range(concurrency):
            nursery.start_soon(client, server.ports["ab"[k % 2]], the_request,
                               trio.current_time() + 1.0, [])
    logged, cpu, started = len(server.log), server.cpu_s(), time.perf_counter()
    async with trio.open_nursery() as nursery:
        stop = trio.current_time() + SECONDS
        for k in range(concurrency):
            nursery.start_soon(client, server.ports["ab"[k % 2]], the_request, stop, latencies)
    elapsed = time.perf_counter() - started
    cpu = server.cpu_s() - cpu
    await trio.sleep(0.5)  # the last log lines cross the pipe
    lines = server.log[logged:logged + len(latencies)]
    total = sum(latencies)
    queue = sum(line[2] for line in lines)
    prepare = sum(line[3] for line in lines)
    waited = sum(line[4] for line in lines)
    generate = sum(line[5] for line in lines)
    shares = {"generate": generate / total, "prepare": prepare / total,
              "prepare wait": waited / total, "queue": queue / total,
              "rest": 1 - (generate + prepare + waited + queue) / total}
    return Result(len(latencies) / elapsed, 1000 * cpu / len(latencies),
                  sum(line[1] for line in lines) / max(len(lines), 1), shares)


async def main() -> None:
    tiny = tiny_model()
    logs = Path(tempfile.mkdtemp(prefix="go19-bench-"))
    servers = [start(name, args, tiny, logs / f"{k}.jsonl")
               for k, (name, args) in enumerate(CONFIGS.items())]
    the_request = request()
    results: dict[tuple[str, int], Result] = {}
    try:
        for concurrency in CONCURRENCY:
            for server in servers:
                result = await measure(server, concurrency, the_request)
                results[server.name, concurrency] = result
                s = result.shares
                print(f"{server.name:>12} c={concurrency:<3} {result.rate:7.1f} req/s  "
                      f"{result.cpu_ms:6.1f} CPU ms/req  batch {result.mean_batch:5.1f}  "
                      f"generate {100 * s['generate']:4.1f} %  prepare {100 * s['prepare']:4.1f} "
                      f"(+{100 * s['prepare wait']:4.1f}) %  queue {100 * s['queue']:4.1f} %  "
                      f"rest {100 * s['rest']:4.1f} %",
                      flush=True)
    finally:
        for server in servers:
            server.process.terminate()
            server.process.wait(30)
    print()
    for concurrency in CONCURRENCY:
        batched, single, split = (results[name, concurrency] for name in CONFIGS)
        print(f"c={concurrency:<3} batching gain {batched.rate / single.rate:5.2f}x req/s, "
              f"{single.cpu_ms / batched.cpu_ms:5.2f}x CPU/req; mixed over split "
              f"{batched.rate / split.rate:5.2f}x req/s, {split.cpu_ms / batched.cpu_ms:5.2f}x "
              f"CPU/req; outside generate {100 * (1 - batched.shares['generate']):4.1f} % "
              f"(prepare {100 * batched.shares['prepare']:4.1f} %)")


if __name__ == "__main__":
    trio.run(main)
