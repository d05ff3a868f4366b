"""The OpenAI-compatible API over the same batch queue, in the shape vLLM serves it, so
that a client written for vLLM (go19's ``kind = "openai"`` player among them) plays this
server unchanged.

- ``GET /v1/models``: OpenAI's list shape; ``base`` and every adapter (``parent`` = base).
- ``POST /v1/chat/completions``: ``model`` names the adapter; ``messages`` in OpenAI's
  form, with at most one picture, as a ``data:`` URL (nothing is fetched); ``max_tokens``
  (or ``max_completion_tokens``), ``temperature``, ``top_p``, ``seed``, and vLLM's
  ``structured_outputs: {"choice": [...]}`` are honoured; absent ones take the server's
  defaults (``--max-new-tokens``, ``--temperature``). Streaming, ``n`` > 1, logprobs and
  the other structured outputs are refused (400), and so are vLLM's old ``guided_*``
  fields, which vLLM >= 0.12 ignores without a word.
- Errors are ``{"error": {"message", "type", "param", "code"}}`` with ``code`` the HTTP
  status, as vLLM writes them.

A request whose client disconnects leaves the queue (its handler is cancelled).
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import trio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from orchestrator.serve.hf.batcher import Batcher
from orchestrator.serve.hf.jobs import Completion, Job, RequestError, Sampling

MAX_BODY = 16 * 1024 * 1024  # a 512 px board PNG is ~30 KiB; base64 adds a third
MAX_TOKENS = 1024
MAX_CHOICES = 4096
_ROLES = {"system", "user", "assistant"}
_ERROR_TYPES = {400: "BadRequestError", 404: "NotFoundError", 405: "MethodNotAllowed",
                413: "RequestEntityTooLarge", 500: "InternalServerError"}


class ApiError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.param = param


def error_body(status: int, message: str, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": _ERROR_TYPES.get(status, "Error"),
                      "param": param, "code": status}}


def _error(status: int, message: str, param: str | None = None) -> JSONResponse:
    return JSONResponse(error_body(status, message, param), status_code=status)


@dataclass(frozen=True)
class ServedModel:
    name: str
    root: str  # the folder it was loaded from
    parent: str | None


@dataclass(frozen=True)
class Defaults:
    max_tokens: int
    temperature: float


def _ensure(ok: bool, message: str, param: str | None = None) -> None:
    if not ok:
        raise ApiError(400, message, param)


def _number(body: dict, name: str, low: float, high: float, default: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    _ensure(isinstance(value, (int, float)) and not isinstance(value, bool)
            and low <= value <= high, f"{name} must be a number in {low:g}..{high:g}", name)
    return float(value)


def _integer(body: dict, name: str, low: int, high: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    _ensure(isinstance(value, int) and not isinstance(value, bool) and low <= value <= high,
            f"{name} must be an integer in {low}..{high}", name)
    return int(value)


def _picture(part: dict) -> bytes:
    image_url = part.get("image_url")
    url = image_url.get("url") if isinstance(image_url, dict) else image_url
    if not isinstance(url, str):
        raise ApiError(400, "image_url needs a url", "messages")
    head, comma, data = url.partition(",")
    _ensure(head.startswith("data:image/") and head.endswith(";base64") and bool(comma),
            "image_url must be a data:image/...;base64, URL: this server fetches nothing",
            "messages")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(400, "image_url: the base64 data does not decode", "messages") from None


def parse_messages(messages: Any) -> tuple[list[dict], bytes | None]:
    """OpenAI's messages as the processor's chat (``{"type": "image"}`` where the picture
    goes) and the picture's bytes."""
    _ensure(isinstance(messages, list) and bool(messages), "messages must be a non-empty list",
            "messages")
    chat: list[dict] = []
    pictures: list[bytes] = []
    for message in messages:
        _ensure(isinstance(message, dict) and message.get("role") in _ROLES,
                f"each message needs a role ({', '.join(sorted(_ROLES))})", "messages")
        content = message.get("content")
        if isinstance(content, str):
            chat.append({"role": message["role"], "content": content})
            continue
        _ensure(isinstance(content, list), "content must be a string or a list of parts",
                "messages")
        parts: list[dict] = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text" and isinstance(part.get("text"), str):
                parts.append({"type": "text", "text": part["text"]})
            elif kind == "image_url":
                pictures.append(_picture(part))
                parts.append({"type": "image"})
            else:
                raise ApiError(400, "content parts must be text or image_url", "messages")
        chat.append({"role": message["role"], "content": parts})
    _ensure(len(pictures) <= 1, "at most one picture per request", "messages")
    return chat, pictures[0] if pictures else None


def parse_sampling(body: dict, defaults: Defaults) -> Sampling:
    for name, why in (("stream", "streaming"), ("logprobs", "logprobs")):
        _ensure(not body.get(name), f"{why} is not supported by this server", name)
    _ensure(body.get("n") in (None, 1), "n must be 1", "n")
    for name in ("guided_choice", "guided_regex", "guided_json", "guided_grammar"):
        _ensure(name not in body, f"{name} is not supported: write structured_outputs: "
                '{"choice": [...]} (vLLM >= 0.12 ignores the guided_* fields)', name)
    response_format = body.get("response_format")
    _ensure(response_format in (None, {"type": "text"}), "response_format must be text",
            "response_format")
    max_tokens = _integer(body, "max_completion_tokens", 1, MAX_TOKENS)
    if max_tokens is None:
        max_tokens = _integer(body, "max_tokens", 1, MAX_TOKENS)
    return Sampling(
        max_tokens=max_tokens or defaults.max_tokens,
        temperature=_number(body, "temperature", 0.0, 2.0, defaults.temperature),
        top_p=_number(body, "top_p", 1e-6, 1.0, 1.0),
        seed=_integer(body, "seed", -(2**63), 2**63 - 1),
        choices=_choices(body.get("structured_outputs")),
    )


def _choices(structured: Any) -> tuple[str, ...] | None:
    if structured is None:
        return None
    _ensure(isinstance(structured, dict), "structured_outputs must be an object",
            "structured_outputs")
    others = sorted(k for k, v in structured.items() if k != "choice" and v is not None)
    _ensure(not others, f"structured_outputs: only choice is supported, not "
            f"{', '.join(others)}", "structured_outputs")
    choices = structured.get("choice")
    _ensure(isinstance(choices, list) and 0 < len(choices) <= MAX_CHOICES
            and all(isinstance(c, str) and c for c in choices),
            f"structured_outputs.choice must be 1..{MAX_CHOICES} non-empty strings",
            "structured_outputs")
    return tuple(choices)


async def _body(request: Request) -> dict:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        raise ApiError(413, f"the request body is over {MAX_BODY} bytes")
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > MAX_BODY:
            raise ApiError(413, f"the request body is over {MAX_BODY} bytes")
    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "the request body is not JSON") from None
    _ensure(isinstance(body, dict), "the request body must be a JSON object")
    return body


async def _unless_disconnected(request: Request,
                               compute: Callable[[], Awaitable[Completion]]) -> Completion | None:
    """``compute()``, cancelled (None) if the client disconnects meanwhile."""
    result: Completion | None = None
    failure: Exception | None = None
    async with trio.open_nursery() as nursery:

        async def watch() -> None:
            while (await request.receive())["type"] != "http.disconnect":
                pass
            nursery.cancel_scope.cancel()

        nursery.start_soon(watch)
        try:
            result = await compute()
        except Exception as exc:  # raised as itself, not inside the nursery's group
            failure = exc
        nursery.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result


def openai_app(batcher: Batcher, models: list[ServedModel], defaults: Defaults) -> Starlette:
    names = {model.name for model in models}
    created = int(time.time())

    async def list_models(_: Request) -> Response:
        return JSONResponse({"object": "list", "data": [
            {"id": m.name, "object": "model", "created": created, "owned_by": "go19",
             "root": m.root, "parent": m.parent} for m in models]})

    async def chat(request: Request) -> Response:
        try:
            body = await _body(request)
            name = body.get("model")
            _ensure(isinstance(name, str), "model is required: "
                    f"one of {', '.join(sorted(names))}", "model")
            if name not in names:
                raise ApiError(404, f"The model `{name}` does not exist.", "model")
            messages, picture = parse_messages(body.get("messages"))
            job = Job(name, messages, picture, parse_sampling(body, defaults))
            completion = await _unless_disconnected(request, lambda: batcher.submit(job))
        except ApiError as exc:
            return _error(exc.status, str(exc), exc.param)
        except RequestError as exc:
            return _error(400, str(exc))
        if completion is None:
            return Response(status_code=499)  # nobody is there to read it
        return JSONResponse({
            "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
            "created": int(time.time()), "model": name,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": completion.text,
                            "reasoning_content": None, "tool_calls": []},
                "logprobs": None, "finish_reason": completion.finish_reason,
                "stop_reason": None,
            }],
            "usage": {"prompt_tokens": completion.prompt_tokens,
                      "completion_tokens": completion.completion_tokens,
                      "total_tokens": completion.prompt_tokens + completion.completion_tokens},
        })

    async def health(_: Request) -> Response:
        return Response(status_code=200)

    async def http_error(_: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        return _error(status, str(detail))

    return Starlette(
        routes=[
            Route("/v1/models", list_models, methods=["GET"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
        ],
        exception_handlers={HTTPException: http_error, Exception: http_error},
    )
