"""A real OpenAI-compatible HTTP server on loopback (trio + h11) that answers like vLLM's
``/v1/chat/completions`` and ``/v1/models`` when told to, and misbehaves on purpose.

Each chat request takes the next *fault* from :attr:`OpenAIServer.script` (``answer``
once the script is used up) and does it:

=============== ======================================================= ==============
fault           what the server does                                    player's reason
=============== ======================================================= ==============
answer          a vLLM completion whose content is :attr:`reply`        (none)
error-500       HTTP 500, vLLM's nested error body                      error
error-404       HTTP 404, vLLM's older flat error body (model unknown)  error
garbage-json    HTTP 200 with a body that is not JSON                   protocol
no-choices      HTTP 200, a completion without ``choices``              protocol
huge-reply      HTTP 200, 3 MiB of valid JSON, chunked (no length)      protocol
huge-declared   HTTP 200 declaring a 3 MiB body (Content-Length)        protocol
not-http        a reply that is not HTTP (a GO19 frame)                 protocol
endless-body    HTTP 200, chunked, one byte now and then, never ending  timeout
slow-header     reads the request, never sends a status line            timeout
reset           reads the request, then resets the connection (RST)     connection
close           reads the request, then closes without a byte (FIN)     connection
short-length    an answer whose Content-Length is one byte short        (none)
deep-json       HTTP 200, a body of 200 KB of ``[``                     protocol
throttle        HTTP 429 with ``Retry-After:`` :attr:`retry_after`      error
unavailable     HTTP 503 with ``Retry-After:`` :attr:`retry_after`      error
=============== ======================================================= ==============

Misbehaviours that last, beside the script (the hostile modes of docs/reliability.md):
:attr:`stray_every` sends an unrequested completion after every N-th answer (its
``reasoning_content`` says ``unrequested``), in the same write as the answer or
:attr:`stray_delay_s` later; :attr:`close_reused` closes, without a byte, every request that
is not the first on its connection (a keep-alive timeout that fires as a request arrives);
:attr:`models_body` replaces the ``/v1/models`` reply. With :attr:`tag_replies` every
answer says in its ``reasoning_content`` which request it answers (``answers seed N``, the
request's ``seed``), so a client's record tells a reply given to the wrong move.

:attr:`reply` is the content of an ``answer`` (a string, or a function of the request's
JSON; None sends ``"content": null``); :attr:`reasoning` is sent beside it as
:attr:`reasoning_field` (``reasoning_content``: SGLang, older vLLM; ``reasoning``: vLLM).
With :attr:`api_key` set, a request without ``Authorization: Bearer <key>`` gets vLLM's
401.
Every request is kept in :attr:`seen` (headers and body as received); the misbehaviours
that wait (``endless-body``, ``slow-header``) wait until the client goes away, and
:attr:`left` counts the connections the client closed, so a test waits for that state
instead of for time. :attr:`delay_s` holds each answer back (the benchmark's 50 ms), and
:attr:`gate`, when given, until it is set (:attr:`running` counts the answers held).

Run alone (the benchmark does, so that its CPU is not the orchestrator's):
``python -m tests.players.openai_server [--delay-ms N] [--seed S]`` prints
``serving OpenAI-compatible API on 127.0.0.1:PORT`` and answers a random one of the
offered choices (``pass`` when none are offered).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import random
import socket
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import h11
import trio
import trio.testing

LOCALHOST = "127.0.0.1"
FAULTS = (
    "answer", "error-500", "error-404", "garbage-json", "no-choices", "huge-reply",
    "huge-declared", "not-http", "endless-body", "slow-header", "reset", "close",
    "short-length", "deep-json", "throttle", "unavailable",
)
HUGE_BYTES = 3 << 20
DEEP_JSON = b"[" * 200_000
UNREQUESTED = "unrequested"
_RECEIVE = 65536


@dataclass(frozen=True, slots=True)
class Seen:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict:
        return json.loads(self.body)


def choose_first(request: dict) -> str:
    """The default reply: the first of the request's ``structured_outputs`` choices, else
    a fixed vertex, so that a game against it goes on (the referee plays a fallback for
    an occupied point)."""
    choices = request.get("structured_outputs", {}).get("choice")
    return choices[0] if choices else "Q16"


def choose_by_seed(request: dict) -> str:
    """One of the request's choices picked by its ``seed``: a reply of its own request."""
    choices = request.get("structured_outputs", {}).get("choice") or ["Q16"]
    return choices[int(request.get("seed") or 0) % len(choices)]


def answers_seed(seed: object) -> str:
    """The ``reasoning_content`` of a tagged answer to the request of ``seed``."""
    return f"answers seed {seed}"


@dataclass
class OpenAIServer:
    models: list[str] = field(default_factory=lambda: ["base", "r5"])
    reply: str | Callable[[dict], str | None] = choose_first
    reasoning: str | None = None
    reasoning_field: str = "reasoning_content"  # SGLang's and older vLLM's; vLLM: reasoning
    usage: tuple[int, int] | None = (1234, 3)  # None: replies without a usage field
    api_key: str | None = None
    delay_s: float = 0.0
    gate: trio.Event | None = None  # answers wait for it when set
    running: int = 0  # answers held at the gate or in their delay now
    most_running: int = 0
    script: deque[str] = field(default_factory=deque)
    seen: list[Seen] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)  # what each chat request got
    left: int = 0  # connections the client closed while the server held them
    changed: trio.Event = field(default_factory=trio.Event)
    tag_replies: bool = False
    stray_every: int = 0  # an unrequested completion after every N-th answer (0: none)
    stray_delay_s: float = 0.0  # ... in the answer's write (0), or this much later
    strays: int = 0  # unrequested completions sent
    close_reused: bool = False
    retry_after: str = "1"
    models_body: bytes | None = None
    answered: int = 0  # answers sent

    def queue(self, *faults: str) -> None:
        for fault in faults:
            if fault not in FAULTS:
                raise ValueError(f"unknown fault {fault!r}")
        self.script.extend(faults)

    def _note(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    async def wait_for(self, ready: Callable[[], bool]) -> None:
        """Return once ``ready()`` holds (checked after every change of state)."""
        while not ready():
            await self.changed.wait()

    async def serve(self, port: int = 0, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(port, host=LOCALHOST)
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(self._connection, listeners)

    def transport(self, nursery: trio.Nursery) -> MemoryTransport:
        """Connections to this server in memory (no socket): for the client's
        ``Transport`` seam, so that a test runs on a virtual clock."""
        return MemoryTransport(self, nursery)

    async def _connection(self, stream: trio.abc.Stream) -> None:
        conn = h11.Connection(h11.SERVER)
        try:
            for number in itertools.count():
                request = await self._read_request(stream, conn)
                if request is None:
                    return
                if number and self.close_reused:
                    return
                keep_open = await self._respond(stream, conn, request)
                if not keep_open or conn.our_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            return
        finally:
            await trio.aclose_forcefully(stream)

    async def _read_request(self, stream: trio.abc.Stream, conn: h11.Connection) -> Seen | None:
        head: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(_RECEIVE)
                conn.receive_data(data)
                if not data and head is None:
                    return None
                continue
            if isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage) and head is not None:
                headers = {k.decode().lower(): v.decode() for k, v in head.headers}
                seen = Seen(head.method.decode(), head.target.decode(), headers, bytes(body))
                self.seen.append(seen)
                self._note()
                return seen
            elif isinstance(event, h11.ConnectionClosed):
                return None

    async def _respond(self, stream: trio.abc.Stream, conn: h11.Connection,
                       request: Seen) -> bool:
        if self.api_key is not None and \
                request.headers.get("authorization") != f"Bearer {self.api_key}":
            await _send(stream, conn, 401, {"error": {
                "message": "Unauthorized", "type": "Unauthorized", "param": None, "code": 401}})
            return True
        if request.method == "GET" and request.path.endswith("/models"):
            if self.models_body is not None:
                await _send_bytes(stream, conn, 200, self.models_body)
                return True
            await _send(stream, conn, 200, {"object": "list", "data": [
                {"id": name, "object": "model", "created": 0, "owned_by": "vllm"}
                for name in self.models]})
            return True
        if request.method != "POST" or not request.path.endswith("/chat/completions"):
            await _send(stream, conn, 404, {"detail": "Not Found"})
            return True
        fault = self.script.popleft() if self.script else "answer"
        self.faults.append(fault)
        self._note()
        return await getattr(self, "_" + fault.replace("-", "_"))(stream, conn, request)

    async def _answer(self, stream, conn, request: Seen) -> bool:
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        self._note()
        try:
            if self.gate is not None:
                await self.gate.wait()
            if self.delay_s:
                await trio.sleep(self.delay_s)
        finally:
            self.running -= 1
        asked = request.json
        content = self.reply if isinstance(self.reply, str) else self.reply(asked)
        reasoning = answers_seed(asked.get("seed")) if self.tag_replies else self.reasoning
        data = _message(conn, 200, json.dumps(self._completion(asked, content, reasoning)))
        self.answered += 1
        stray = b""
        if self.stray_every and self.answered % self.stray_every == 0:
            self.strays += 1
            choices = asked.get("structured_outputs", {}).get("choice") or ["D4"]
            body = json.dumps(self._completion(asked, choices[-1], UNREQUESTED)).encode()
            stray = _raw_head(200, len(body)) + body  # outside h11: it answers nothing
        if stray and not self.stray_delay_s:
            data += stray  # one write: the client reads both at once
        await stream.send_all(data)
        if stray and self.stray_delay_s:
            await trio.sleep(self.stray_delay_s)
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await stream.send_all(stray)
        return True

    def _completion(self, asked: dict, content: str | None, reasoning: str | None) -> dict:
        message: dict = {"role": "assistant", "content": content, "tool_calls": []}
        if reasoning is not None:
            message[self.reasoning_field] = reasoning
        body = {
            "id": "chatcmpl-test", "object": "chat.completion", "created": 0,
            "model": asked.get("model"),
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "stop", "stop_reason": None}],
        }
        if self.usage is not None:
            prompt, completion = self.usage
            body["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion}
        return body

    async def _short_length(self, stream, conn, request: Seen) -> bool:
        asked = request.json
        reasoning = answers_seed(asked.get("seed")) if self.tag_replies else None
        # A whole completion and one byte more, declared without it: the reply reads as
        # itself, and the byte is left on the connection, in front of what comes next.
        body = json.dumps(self._completion(asked, choose_by_seed(asked), reasoning)).encode()
        body += b" "
        declared = f"content-length: {len(body)}\r\n".encode()
        data = _message(conn, 200, body)  # h11 sees a whole reply and serves on
        assert declared in data
        await stream.send_all(data.replace(declared,
                                           f"content-length: {len(body) - 1}\r\n".encode()))
        return True

    async def _deep_json(self, stream, conn, request: Seen) -> bool:
        await _send_bytes(stream, conn, 200, DEEP_JSON)
        return True

    async def _throttle(self, stream, conn, request: Seen) -> bool:
        await self._busy(stream, conn, 429, "rate limit exceeded")
        return True

    async def _unavailable(self, stream, conn, request: Seen) -> bool:
        await self._busy(stream, conn, 503, "server is overloaded")
        return True

    async def _busy(self, stream, conn, status: int, message: str) -> None:
        body = json.dumps({"error": {"message": message, "type": "RateLimitError",
                                     "param": None, "code": status}}).encode()
        head = h11.Response(status_code=status, headers=[
            ("content-type", "application/json"), ("content-length", str(len(body))),
            ("retry-after", self.retry_after)])
        await stream.send_all(conn.send(head) + conn.send(h11.Data(data=body))
                              + conn.send(h11.EndOfMessage()))

    async def _error_500(self, stream, conn, request: Seen) -> bool:
        await _send(stream, conn, 500, {"error": {
            "message": "CUDA out of memory", "type": "InternalServerError", "param": None,
            "code": 500}})
        return True

    async def _error_404(self, stream, conn, request: Seen) -> bool:
        await _send(stream, conn, 404, {
            "object": "error", "message": f"The model `{request.json.get('model')}` does "
            "not exist.", "type": "NotFoundError", "param": None, "code": 404})
        return True

    async def _garbage_json(self, stream, conn, request: Seen) -> bool:
        await _send_bytes(stream, conn, 200, b'{"choices": [{"message": {"content": "Q1')
        return True

    async def _no_choices(self, stream, conn, request: Seen) -> bool:
        await _send(stream, conn, 200, {"object": "chat.completion", "model": "r5",
                                         "usage": {"prompt_tokens": 1}})
        return True

    async def _huge_reply(self, stream, conn, request: Seen) -> bool:
        await stream.send_all(conn.send(_head(200, chunked=True)))
        filler = " " * 65536
        await stream.send_all(conn.send(h11.Data(data=b'{"choices": [], "pad": "')))
        for _ in range(HUGE_BYTES // len(filler)):
            await stream.send_all(conn.send(h11.Data(data=filler.encode())))
        await stream.send_all(conn.send(h11.Data(data=b'"}')))
        await stream.send_all(conn.send(h11.EndOfMessage()))
        return True

    async def _huge_declared(self, stream, conn, request: Seen) -> bool:
        body = b'{"choices": [], "pad": "' + b" " * HUGE_BYTES + b'"}'
        await _send_bytes(stream, conn, 200, body)
        return True

    async def _not_http(self, stream, conn, request: Seen) -> bool:
        await stream.send_all(b"RPLY\x01\x03\x0f\r\n\r\n")  # a GO19 reply, then a blank line
        await self._until_client_leaves(stream)
        return False

    async def _endless_body(self, stream, conn, request: Seen) -> bool:
        await stream.send_all(conn.send(_head(200, chunked=True)))
        await stream.send_all(conn.send(h11.Data(data=b'{"choices": ')))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._trickle, stream)
            await self._until_client_leaves(stream)
            nursery.cancel_scope.cancel()
        return False

    async def _slow_header(self, stream, conn, request: Seen) -> bool:
        await self._until_client_leaves(stream)
        return False

    async def _trickle(self, stream: trio.abc.Stream) -> None:
        """One byte of body every 50 ms, for ever: a server slowly, endlessly busy."""
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while True:
                await trio.sleep(0.05)
                await stream.send_all(b"1\r\n \r\n")  # a one-byte chunk

    async def _until_client_leaves(self, stream: trio.abc.Stream) -> None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while await stream.receive_some(_RECEIVE):
                pass
        self.left += 1
        self._note()

    async def _reset(self, stream, conn, request: Seen) -> bool:
        # SO_LINGER with a zero timeout: close() sends RST instead of FIN (real sockets only).
        assert isinstance(stream, trio.SocketStream), "a reset needs a real socket"
        stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        stream.socket.close()
        return False

    async def _close(self, stream, conn, request: Seen) -> bool:
        return False


@dataclass
class MemoryTransport:
    """The client's ``Transport`` to an :class:`OpenAIServer` in memory: each connect is a
    ``trio.testing.memory_stream_pair`` whose other end the server serves in ``nursery``.
    ``refuse`` makes connects fail as a closed port does."""

    server: OpenAIServer
    nursery: trio.Nursery
    refuse: bool = False
    connects: int = 0

    async def connect(self, target, timeout: float, where: str) -> trio.abc.Stream:
        from orchestrator.players.openai_http import CannotConnect

        if self.refuse:
            raise CannotConnect(f"{where}: connection refused")
        self.connects += 1
        client, server = trio.testing.memory_stream_pair()
        self.nursery.start_soon(self.server._connection, server)
        return client


def _head(status: int, *, chunked: bool = False, length: int | None = None) -> h11.Response:
    headers = [("content-type", "application/json"), ("server", "openai-test")]
    if chunked:
        headers.append(("transfer-encoding", "chunked"))
    else:
        headers.append(("content-length", str(length)))
    return h11.Response(status_code=status, headers=headers)


def _message(conn: h11.Connection, status: int, body: bytes | str) -> bytes:
    data = body.encode() if isinstance(body, str) else body
    return (conn.send(_head(status, length=len(data))) + conn.send(h11.Data(data=data))
            + conn.send(h11.EndOfMessage()))


def _raw_head(status: int, length: int) -> bytes:
    """A response head written by hand, for replies h11 would refuse to send."""
    return (f"HTTP/1.1 {status} OK\r\ncontent-type: application/json\r\n"
            f"content-length: {length}\r\n\r\n").encode()


async def _send_bytes(stream: trio.abc.Stream, conn: h11.Connection, status: int,
                      body: bytes) -> None:
    await stream.send_all(_message(conn, status, body))


async def _send(stream: trio.abc.Stream, conn: h11.Connection, status: int,
                body: dict) -> None:
    await _send_bytes(stream, conn, status, json.dumps(body).encode())


def choose_at_random(seed: int) -> Callable[[dict], str]:
    """A reply drawn from the request's ``structured_outputs`` choices (``pass`` without
    them), as a model sampling among the legal moves would answer."""
    rng = random.Random(seed)

    def reply(request: dict) -> str:
        choices = request.get("structured_outputs", {}).get("choice")
        return rng.choice(choices) if choices else "pass"

    return reply


async def _main(port: int, delay_ms: float, seed: int) -> None:
    server = OpenAIServer(delay_s=delay_ms / 1000, reply=choose_at_random(seed))
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(server.serve, port)
        print(f"serving OpenAI-compatible API on {LOCALHOST}:{bound}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0, help="of the random legal replies")
    args = parser.parse_args()
    trio.run(_main, args.port, args.delay_ms, args.seed)
