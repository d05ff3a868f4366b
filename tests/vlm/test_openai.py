"""The OpenAI-compatible port in this process (``serve_vlm`` with ``openai``, Hypercorn on
loopback, stdlib HTTP clients): vLLM's shapes, model = adapter name, structured outputs,
errors as vLLM writes them, and a client that disconnects leaving the queue."""

from __future__ import annotations

import base64
import http.client
import json
from contextlib import asynccontextmanager
from functools import partial
from urllib.parse import urlsplit

import numpy as np
import pytest
import trio

from orchestrator.color import BLACK
from orchestrator.coords import from_gtp
from orchestrator.prompt import fill, read_template
from orchestrator.render import render_png
from tests.vlm.conftest import EPS_LOOP, Gate
from tests.vlm.tiny import ANSWERS

pytest.importorskip("torch", reason="the vlm extra is not installed")

from orchestrator.serve.hf.generation import BatchRunner  # noqa: E402
from orchestrator.serve.hf.openai_app import MAX_BODY, ServedModel  # noqa: E402
from orchestrator.serve.hf.server import ServeOptions, serve_vlm  # noqa: E402

MODELS = [ServedModel("base", "/models/tiny", None), ServedModel("a", "/loras/a", "base"),
          ServedModel("b", "/loras/b", "base"), ServedModel("v", "/loras/v", "base")]


@asynccontextmanager
async def api(loaded, run_batch=None, log=lambda line: None, **options):
    served = ServeOptions([], read_template(None), openai=("127.0.0.1", 0), summary_s=0,
                          **options)
    async with trio.open_nursery() as nursery:
        runner = BatchRunner(loaded)
        bound = await nursery.start(partial(serve_vlm, served, run_batch or runner.run, MODELS,
                                            log, runner.prepare_many))
        yield bound
        nursery.cancel_scope.cancel()


def _call(url: str, method: str, path: str, body: bytes | None,
          extra: dict[str, str] | None = None) -> tuple[int, dict]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        headers.update(extra or {})
        connection.request(method, parts.path + path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


async def call(url: str, method: str, path: str, body: object = None,
               raw: bytes | None = None, headers: dict[str, str] | None = None
               ) -> tuple[int, dict]:
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    return await trio.to_thread.run_sync(_call, url, method, path, data, headers)


async def declared_too_long(url: str) -> bytes:
    """The reply to a request whose Content-Length is over the limit (the body is never
    sent: the server must answer from the header)."""
    parts = urlsplit(url)
    stream = await trio.open_tcp_stream(parts.hostname, parts.port)
    async with stream:
        await stream.send_all((f"POST {parts.path}/chat/completions HTTP/1.1\r\nHost: x\r\n"
                               f"Content-Length: {MAX_BODY + 1}\r\n\r\n").encode())
        reply = b""
        with trio.fail_after(30):
            while b"}}" not in reply and (chunk := await stream.receive_some(65536)):
                reply += chunk
        return reply


def data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


@pytest.fixture(scope="module")
def position() -> tuple[bytes, str]:
    """A position's picture and its prompt as the export fills it (the text an OpenAI
    client such as go19's openai player sends)."""
    board = np.zeros((19, 19), np.uint8)
    board.flat[from_gtp("C4", 19)] = BLACK
    return (render_png(board, from_gtp("C4", 19), 512),
            fill(read_template(None), 2, 2, 6.5, "gtp"))


def chat(model: str, position: tuple[bytes, str], **fields) -> dict:
    png, text = position
    return {"model": model, "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": data_url(png)}},
        {"type": "text", "text": text}]}], "max_tokens": 8, "temperature": 0, **fields}


async def test_models_lists_base_and_every_adapter_in_openais_shape(loaded) -> None:
    async with api(loaded) as bound:
        status, listing = await call(bound.openai_url, "GET", "/models")
    assert status == 200 and listing["object"] == "list"
    assert [m["id"] for m in listing["data"]] == ["base", "a", "b", "v"]
    assert all(m["object"] == "model" and m["owned_by"] for m in listing["data"])
    assert [m["parent"] for m in listing["data"]] == [None, "base", "base", "base"]


async def test_each_model_answers_as_its_adapter_in_vllms_shape(loaded, position) -> None:
    async with api(loaded) as bound:
        async with trio.open_nursery() as nursery:
            results: dict[str, tuple[int, dict]] = {}

            async def one(model: str) -> None:
                results[model] = await call(bound.openai_url, "POST", "/chat/completions",
                                            chat(model, position))

            for model in ("a", "b", "v"):
                nursery.start_soon(one, model)
    for model, (status, reply) in results.items():
        assert status == 200, reply
        assert reply["object"] == "chat.completion" and reply["model"] == model
        choice = reply["choices"][0]
        assert choice["message"]["role"] == "assistant"
        assert choice["message"]["content"] == ANSWERS[model]
        assert choice["finish_reason"] == "stop"
        usage = reply["usage"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        assert usage["completion_tokens"] == len(ANSWERS[model]) + 1  # bytes and the end


async def test_structured_outputs_choice_is_honoured(loaded, position) -> None:
    allowed = ["D16", "R4", "pass"]
    async with api(loaded) as bound:
        free = await call(bound.openai_url, "POST", "/chat/completions", chat("a", position))
        held = await call(bound.openai_url, "POST", "/chat/completions",
                          chat("a", position, structured_outputs={"choice": allowed}))
    assert free[1]["choices"][0]["message"]["content"] == "Q16"
    assert held[0] == 200 and held[1]["choices"][0]["message"]["content"] in allowed


async def test_bad_requests_are_errors_in_vllms_shape(loaded, position) -> None:
    png, _ = position
    two_pictures = chat("a", position)
    two_pictures["messages"][0]["content"].append(
        {"type": "image_url", "image_url": {"url": data_url(png)}})
    fetched = chat("a", position)
    fetched["messages"][0]["content"][0]["image_url"]["url"] = "http://example.invalid/x.png"
    not_png = chat("a", position)
    not_png["messages"][0]["content"][0]["image_url"]["url"] = data_url(b"GIF89a" + b"\0" * 40)
    jpeg = chat("a", position)
    jpeg["messages"][0]["content"][0]["image_url"]["url"] = "data:image/jpeg;base64,AAAA"
    cases = [
        (chat("r9", position), 404, "The model `r9` does not exist."),
        ({"messages": []}, 400, "model: Field required"),
        (chat("a", position, max_tokens=True), 400, "max_tokens: Input should be a valid "
         "integer"),
        (chat("a", position, seed="7"), 400, "seed: Input should be a valid integer"),
        (chat("a", position, stream=True), 400, "streaming"),
        (chat("a", position, n=2), 400, "n: Input should be 1"),
        (chat("a", position, guided_choice=["Q16"]), 400, "structured_outputs"),
        (chat("a", position, structured_outputs={"regex": "[A-T][0-9]+"}), 400, "only choice"),
        (chat("a", position, max_tokens=0), 400, "max_tokens"),
        (chat("a", position, temperature=-1), 400, "temperature"),
        (two_pictures, 400, "at most one picture"),
        (fetched, 400, "fetches nothing"),
        (not_png, 400, "the picture cannot be decoded: not a PNG"),
        (jpeg, 400, "this server decodes PNG only"),
    ]
    async with api(loaded) as bound:
        for body, status, words in cases:
            got, reply = await call(bound.openai_url, "POST", "/chat/completions", body)
            assert got == status, (body.get("model"), reply)
            error = reply["error"]
            assert words in error["message"] and error["code"] == status
            assert error["type"] in ("BadRequestError", "NotFoundError")
        garbage = await call(bound.openai_url, "POST", "/chat/completions", raw=b"{not json")
        deep = await call(bound.openai_url, "POST", "/chat/completions", raw=b"[" * 200_000)
        array = await call(bound.openai_url, "POST", "/chat/completions", raw=b"[1]")
        huge = await declared_too_long(bound.openai_url)
        wrong_route = await call(bound.openai_url, "GET", "/chat/completions")
        still_up = await call(bound.openai_url, "POST", "/chat/completions", chat("b", position))
    assert garbage[0] == 400 and "not JSON" in garbage[1]["error"]["message"]
    assert deep == (400, {"error": {  # was a 500: the standard library's RecursionError
        "message": "the request body is not JSON (recursion limit exceeded at line 1 "
                   "column 202)", "type": "BadRequestError", "param": None, "code": 400}})
    assert array[1]["error"]["message"] == "the request body must be a JSON object"
    assert huge.startswith(b"HTTP/1.1 413 ") and b'"code":413' in huge
    assert wrong_route[0] == 405 and "error" in wrong_route[1]
    assert still_up[1]["choices"][0]["message"]["content"] == "D4"


async def test_a_client_that_disconnects_leaves_the_queue(loaded, position) -> None:
    body = json.dumps(chat("a", position)).encode()
    gate = Gate(BatchRunner(loaded))
    async with api(loaded, run_batch=gate.run) as bound:
        first: list[tuple[int, dict]] = []

        async def holding() -> None:
            first.append(await call(bound.openai_url, "POST", "/chat/completions",
                                    chat("b", position)))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(holding)  # holds the model
            await trio.to_thread.run_sync(gate.entered.wait, 60)
            parts = urlsplit(bound.openai_url)
            stream = await trio.open_tcp_stream(parts.hostname, parts.port)
            head = (f"POST {parts.path}/chat/completions HTTP/1.1\r\nHost: x\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
            await stream.send_all(head.encode() + body)
            with trio.fail_after(60):  # a guard, not a wait: these are states polled for
                while bound.batcher.waiting < 1:
                    await trio.sleep(0.01)
                await stream.aclose()
                while bound.stats.dropped < 1:
                    await trio.sleep(0.01)
            gate.release.set()
        assert first[0][1]["choices"][0]["message"]["content"] == "D4"
        assert (bound.stats.requests, bound.stats.batches) == (1, 1)  # the left one never ran


async def test_a_picture_that_is_not_a_png_is_refused_and_ghostscript_never_starts(
        loaded, position, ghostscript) -> None:
    """The 150-byte EPS of ``{ } loop``, sent as a PNG data URL: Pillow's EPS decoder ran
    Ghostscript on it; now a 400, and the next request is answered."""
    eps = chat("a", position)
    eps["messages"][0]["content"][0]["image_url"]["url"] = data_url(EPS_LOOP)
    async with api(loaded) as bound:
        refused = await call(bound.openai_url, "POST", "/chat/completions", eps)
        answered = await call(bound.openai_url, "POST", "/chat/completions", chat("a", position))
    assert not ghostscript.exists(), f"gs was started: {ghostscript.read_text()}"
    assert refused == (400, {"error": {"message": "the picture cannot be decoded: not a PNG",
                                       "type": "BadRequestError", "param": None, "code": 400}})
    assert answered[1]["choices"][0]["message"]["content"] == ANSWERS["a"]


async def test_with_an_api_key_only_bearer_key_requests_are_served(loaded, position) -> None:
    unauthorized = {"error": {"message": "Unauthorized", "type": "Unauthorized",
                              "param": None, "code": 401}}
    logged: list[str] = []
    async with api(loaded, api_key="s3cret-key", log=logged.append, request_log=logged.append,
                   connection_log=logged.append) as bound:
        url = bound.openai_url
        keyless = await call(url, "POST", "/chat/completions", chat("a", position))
        wrong = await call(url, "GET", "/models", headers={"Authorization": "Bearer s3cret"})
        basic = await call(url, "GET", "/models", headers={"Authorization": "Basic s3cret-key"})
        listed = await call(url, "GET", "/models",
                            headers={"Authorization": "Bearer s3cret-key"})
        answered = await call(url, "POST", "/chat/completions", chat("a", position),
                              headers={"Authorization": "Bearer s3cret-key"})
        health = await trio.to_thread.run_sync(_health, url)
    assert keyless == wrong == basic == (401, unauthorized)
    assert listed[0] == 200 and [m["id"] for m in listed[1]["data"]][0] == "base"
    assert answered[1]["choices"][0]["message"]["content"] == ANSWERS["a"]
    assert health == 200  # a load balancer's probe needs no key, as in vLLM
    assert logged and not [line for line in logged if "s3cret" in line]  # never logged
    assert "s3cret" not in repr(bound) + repr(ServeOptions([], "", api_key="s3cret-key"))


def _health(url: str) -> int:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        connection.request("GET", "/health")
        return connection.getresponse().status
    finally:
        connection.close()
