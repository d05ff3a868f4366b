"""The GO19 side of the VLM server in this process (``serve_vlm`` over the real tiny model,
real loopback sockets): routing under mixed batches, faults beside real traffic, a client
that leaves while queued, PINGs while the model works, and legal-move decoding."""

from __future__ import annotations

import struct
from contextlib import asynccontextmanager
from functools import partial

import numpy as np
import pytest
import trio

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS, from_go19, from_gtp
from orchestrator.players.endpoint import Go19Endpoint
from orchestrator.players.ping import ping_once
from orchestrator.prompt import read_template
from orchestrator.protocol import go19 as wire
from orchestrator.render import render_png
from orchestrator.rules.board import Board
from tests.vlm.conftest import EPS_LOOP, Gate
from tests.vlm.tiny import ANSWERS

pytest.importorskip("torch", reason="the vlm extra is not installed")

from orchestrator.serve.hf.generation import BatchRunner  # noqa: E402
from orchestrator.serve.hf.server import Listen, ServeOptions, serve_vlm  # noqa: E402

LOCALHOST = "127.0.0.1"


def request_for(board: np.ndarray, color: int, last: int | None = None) -> wire.Request:
    return wire.Request(19, color, render_png(board, last, 512), board.tobytes())


def empty_board() -> np.ndarray:
    return np.zeros((19, 19), np.uint8)


@asynccontextmanager
async def server(loaded, run_batch=None, **options):
    adapters = options.pop("listen", ("a", "b"))
    served = ServeOptions([Listen(name, LOCALHOST, 0) for name in adapters],
                          read_template(None), summary_s=0, **options)
    runner = BatchRunner(loaded)
    run = run_batch or runner.run
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(partial(serve_vlm, served, run, [], lambda line: None,
                                            runner.prepare_many))
        yield bound
        nursery.cancel_scope.cancel()


async def ask(port: int, request: wire.Request) -> wire.MoveReply | wire.ErrorReply:
    async with Go19Endpoint([(LOCALHOST, port)]) as endpoint:
        return await endpoint.request(request)


async def raw_exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` on a fresh connection and read until the server closes it."""
    stream = await trio.open_tcp_stream(LOCALHOST, port)
    async with stream:
        await stream.send_all(data)
        received = b""
        with trio.fail_after(30):
            while chunk := await stream.receive_some(65536):
                received += chunk
        return received


async def test_64_requests_on_two_ports_each_get_their_adapters_move_beside_faults(
        loaded) -> None:
    board = empty_board()
    board.flat[from_gtp("K10", 19)] = BLACK
    request = request_for(board, WHITE, from_gtp("K10", 19))
    oversize = b"GO19" + struct.pack(">I", 64 * wire.MiB)
    async with server(loaded, max_batch=64, max_wait_ms=50) as bound:
        ports = {adapter: port for adapter, _, port in bound.go19}
        answers: list[tuple[str, object]] = []
        faults: list[bytes] = []

        async def one(adapter: str) -> None:
            answers.append((adapter, await ask(ports[adapter], request)))

        async def fault(data: bytes, port: int) -> None:
            faults.append(await raw_exchange(port, data))

        async with trio.open_nursery() as nursery:
            for k in range(64):
                nursery.start_soon(one, "ab"[k % 2])
            nursery.start_soon(fault, b"GARBAGE!" * 4, ports["a"])
            nursery.start_soon(fault, oversize, ports["b"])
        assert len(answers) == 64
        for adapter, reply in answers:
            assert isinstance(reply, wire.MoveReply), reply
            assert from_go19(reply.row, reply.col, 19) == from_gtp(ANSWERS[adapter], 19)
        assert all(reply.startswith(b"RPLY\x00") for reply in faults)  # an error frame each
        stats = bound.stats
        assert stats.requests == 64 and stats.batches < 64 / 4  # mixed batches did run
        ok, _, _ = await ping_once((LOCALHOST, ports["a"]), timeout=10)
        assert ok  # the server is still up


async def test_a_client_that_leaves_while_queued_is_dropped(loaded) -> None:
    gate = Gate(BatchRunner(loaded))
    async with server(loaded, run_batch=gate.run) as bound:
        port = bound.go19[0][2]
        replies: list[object] = []

        async def asking() -> None:
            replies.append(await ask(port, request_for(empty_board(), BLACK)))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(asking)  # holds the model
            await trio.to_thread.run_sync(gate.entered.wait, 60)
            codec = wire.Connection(wire.CLIENT)
            stream = await trio.open_tcp_stream(LOCALHOST, port)
            await stream.send_all(codec.send(request_for(empty_board(), WHITE)))
            with trio.fail_after(60):  # a guard, not a wait: these are states polled for
                while bound.batcher.waiting < 1:
                    await trio.sleep(0.01)
                await stream.aclose()
                while bound.stats.dropped < 1:
                    await trio.sleep(0.01)
            assert bound.batcher.waiting == 0
            gate.release.set()
        assert isinstance(replies[0], wire.MoveReply)
        await ask(port, request_for(empty_board(), BLACK))
        assert (bound.stats.requests, bound.stats.batches) == (2, 2)  # the left one never ran


async def test_pings_and_new_connections_are_served_while_the_model_works(loaded) -> None:
    gate = Gate(BatchRunner(loaded))
    async with server(loaded, run_batch=gate.run) as bound:
        port = bound.go19[0][2]
        replies: list[object] = []

        async def asking() -> None:
            replies.append(await ask(port, request_for(empty_board(), BLACK)))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(asking)
            await trio.to_thread.run_sync(gate.entered.wait, 60)
            ok, reason, _ = await ping_once((LOCALHOST, port), timeout=10)
            ok_other, _, _ = await ping_once((LOCALHOST, bound.go19[1][2]), timeout=10)
            assert replies == []  # the model is still held while both pings got a PONG
            gate.release.set()
        assert ok and ok_other, reason
        assert isinstance(replies[0], wire.MoveReply)


async def test_constrain_legal_answers_a_legal_point_when_its_move_is_taken(loaded) -> None:
    board = empty_board()
    for vertex, color in (("Q16", WHITE), ("D4", BLACK), ("R16", WHITE), ("Q17", WHITE),
                          ("P16", BLACK), ("Q15", BLACK)):
        board.flat[from_gtp(vertex, 19)] = color
    request = request_for(board, BLACK, from_gtp("Q15", 19))
    async with server(loaded) as free, server(loaded, constrain=True) as held:
        unconstrained = await ask(free.go19[0][2], request)
        constrained = await ask(held.go19[0][2], request)
    assert isinstance(unconstrained, wire.MoveReply)
    assert from_go19(unconstrained.row, unconstrained.col, 19) == from_gtp("Q16", 19)
    assert isinstance(constrained, wire.MoveReply)
    point = from_go19(constrained.row, constrained.col, 19)
    position = Board(19)
    flat = board.reshape(-1)
    position.setup(black=np.flatnonzero(flat == BLACK).tolist(),
                   white=np.flatnonzero(flat == WHITE).tolist())
    assert point == PASS or position.is_legal(BLACK, point)


async def test_an_unreadable_reply_is_an_error_frame_with_its_text(loaded) -> None:
    async with server(loaded, listen=("base",)) as bound:
        reply = await ask(bound.go19[0][2], request_for(empty_board(), BLACK))
    assert isinstance(reply, wire.ErrorReply)
    assert reply.message.startswith("unparsed: ")


async def test_a_request_without_a_picture_is_refused_in_one_frame(loaded) -> None:
    async with server(loaded) as bound:
        reply = await ask(bound.go19[0][2], wire.Request(19, BLACK, b"",
                                                         empty_board().tobytes()))
    assert isinstance(reply, wire.ErrorReply)
    assert "no picture" in reply.message


async def test_the_model_is_asked_what_the_export_wrote_for_the_position(loaded, tiny) -> None:
    """Train/serve consistency: for exported samples of the real game, from its start and
    after its captures, the job the GO19 port hands the model carries the request's PNG
    bytes as they came and the export's prompt, byte for byte (tests/vlm/test_request_log.py
    checks a whole run through the request log)."""
    import json

    from orchestrator.dataset import load

    export = tiny.root / "export"
    boards = load(export / "dataset")["board"]
    records = [json.loads(line) for line in
               (export / "jsonl" / "data" / "train-00000.jsonl").read_text().splitlines()]
    asked = []
    runner = BatchRunner(loaded)

    def recording(jobs):
        asked.extend(jobs)
        return runner.run(jobs)

    checked = captured = 0
    async with server(loaded, run_batch=recording, max_wait_ms=0) as bound:
        port = bound.go19[0][2]
        for record, board in zip(records, boards, strict=True):
            captured += np.count_nonzero(board) + 1 != record["move_number"]
            png = (export / "jsonl" / record["images"][0]).read_bytes()
            await ask(port, wire.Request(19, record["to_play"], png, board.tobytes()))
            job = asked[-1]
            assert job.image == png
            assert job.messages == [{"role": "user", "content": [
                {"type": "image"},
                {"type": "text", "text": record["messages"][0]["content"].removeprefix("<image>")},
            ]}]
            checked += 1
    assert checked == len(records) and captured > 0


async def test_a_picture_that_is_not_a_png_is_refused_and_ghostscript_never_starts(
        loaded, ghostscript) -> None:
    """The 150-byte EPS of ``{ } loop`` as a GO19 request's picture: Pillow's EPS decoder
    ran Ghostscript on it (89 % of a core, for ever, and then no request was answered);
    now one error frame, and the next request is answered."""
    eps = wire.Request(19, BLACK, EPS_LOOP, empty_board().tobytes())
    async with server(loaded, listen=("a",)) as bound:
        ((_, _, port),) = bound.go19
        refused = await ask(port, eps)
        answered = await ask(port, request_for(empty_board(), BLACK))
    assert not ghostscript.exists(), f"gs was started: {ghostscript.read_text()}"
    assert isinstance(refused, wire.ErrorReply)
    assert refused.message == "the picture cannot be decoded: not a PNG"
    assert isinstance(answered, wire.MoveReply)
    assert from_go19(answered.row, answered.col, 19) == from_gtp(ANSWERS["a"], 19)
