"""The OpenAI-compatible API over the same batch queue, in the shape vLLM serves it, so
that a client written for vLLM (go19's ``kind = "openai"`` player among them) plays this
server unchanged.

- ``GET /v1/models``: OpenAI's list shape; ``base`` and every adapter (``parent`` = base).
- ``POST /v1/chat/completions`` (:class:`~.protocol.ChatCompletionRequest`): ``model``
  names the adapter; ``messages`` in OpenAI's form, with at most one picture, a PNG as a
  ``data:`` URL (nothing is fetched); ``max_tokens`` (or ``max_completion_tokens``),
  ``temperature``, ``top_p``, ``seed``, and vLLM's ``structured_outputs: {"choice":
  [...]}`` are honoured; absent ones take the server's defaults (``--max-new-tokens``,
  ``--temperature``). What :mod:`.protocol` refuses is a 400.
- Errors are ``{"error": {"message", "type", "param", "code"}}`` with ``code`` the HTTP
  status, as vLLM writes them.
- With an API key (``--api-key``), every ``/v1`` request needs ``Authorization: Bearer
  KEY`` (compared in constant time) or is a 401, as vLLM's ``--api-key`` does; ``/health``
  stays open. The key is never logged.

A request whose client disconnects leaves the queue (its handler is cancelled).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import trio
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from orchestrator.players.openai_wire import Completion
from orchestrator.serve.go19 import unless_gone
from orchestrator.serve.hf.batcher import Batcher
from orchestrator.serve.hf.jobs import Job, ModelFault, RequestError, Sampling
from orchestrator.serve.hf.protocol import (
    ChatCompletionRequest,
    ChatMessage,
    ErrorResponse,
    ImagePart,
    validation_message,
)

MAX_BODY = 16 * 1024 * 1024  # a 512 px board PNG is ~30 KiB; base64 adds a third
PNG_URL = "data:image/png;base64,"


class ApiError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.param = param


def _error(status: int, message: str, param: str | None = None,
           headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(ErrorResponse.of(status, message, param).model_dump(),
                        status_code=status, headers=headers)


@dataclass(frozen=True)
class ServedModel:
    name: str
    root: str  # the folder it was loaded from
    parent: str | None


@dataclass(frozen=True)
class Defaults:
    max_tokens: int
    temperature: float


def _picture(part: ImagePart) -> bytes:
    url = part.image_url if isinstance(part.image_url, str) else part.image_url.url
    if not url.startswith(PNG_URL):
        if url.startswith("data:image/"):
            raise ApiError(400, "image_url must be a PNG (data:image/png;base64,...): this "
                           "server decodes PNG only", "messages")
        raise ApiError(400, "image_url must be a data:image/png;base64, URL: this server "
                       "fetches nothing", "messages")
    try:
        return base64.b64decode(url[len(PNG_URL):], validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(400, "image_url: the base64 data does not decode", "messages") from None


def chat_of(messages: list[ChatMessage]) -> tuple[list[dict], bytes | None]:
    """OpenAI's messages as the processor's chat (``{"type": "image"}`` where the picture
    goes) and the picture's bytes."""
    chat: list[dict] = []
    pictures: list[bytes] = []
    for message in messages:
        if isinstance(message.content, str):
            chat.append({"role": message.role, "content": message.content})
            continue
        parts: list[dict] = []
        for part in message.content:
            if isinstance(part, ImagePart):
                pictures.append(_picture(part))
                parts.append({"type": "image"})
            else:
                parts.append({"type": "text", "text": part.text})
        chat.append({"role": message.role, "content": parts})
    if len(pictures) > 1:
        raise ApiError(400, "at most one picture per request", "messages")
    return chat, pictures[0] if pictures else None


def sampling_of(request: ChatCompletionRequest, defaults: Defaults) -> Sampling:
    structured = request.structured_outputs
    return Sampling(
        max_tokens=request.token_limit or defaults.max_tokens,
        temperature=(defaults.temperature if request.temperature is None
                     else request.temperature),
        top_p=1.0 if request.top_p is None else request.top_p,
        seed=request.seed,
        choices=tuple(structured.choice) if structured and structured.choice else None,
    )


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        raise ApiError(413, f"the request body is over {MAX_BODY} bytes")
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > MAX_BODY:
            raise ApiError(413, f"the request body is over {MAX_BODY} bytes")
    return bytes(data)


def read_request(data: bytes) -> ChatCompletionRequest:
    try:
        return ChatCompletionRequest.model_validate_json(data)
    except ValidationError as exc:
        message, param = validation_message(exc)
        raise ApiError(400, message, param) from None


async def _unless_disconnected(request: Request,
                               compute: Callable[[], Awaitable[Completion]]) -> Completion | None:
    """``compute()``, cancelled (None) if the client disconnects meanwhile."""

    async def watch(scope: trio.CancelScope) -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        scope.cancel()

    return await unless_gone(watch, compute)


class RequireKey:
    """ASGI middleware: ``/v1`` requests without ``Authorization: Bearer KEY`` get vLLM's
    401. The key's digest is compared in constant time (the digests have one length
    whatever was sent)."""

    def __init__(self, app: ASGIApp, key: str) -> None:
        self.app = app
        self._digest = hashlib.sha256(key.encode("utf-8")).digest()

    def allowed(self, authorization: str | None) -> bool:
        scheme, _, token = (authorization or "").partition(" ")
        given = hashlib.sha256(token.strip().encode("utf-8", "surrogateescape")).digest()
        return hmac.compare_digest(given, self._digest) and scheme.lower() == "bearer"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/v1") \
                and scope.get("method") != "OPTIONS":
            headers = {k.decode("latin-1"): v.decode("latin-1")
                       for k, v in scope.get("headers", [])}
            if not self.allowed(headers.get("authorization")):
                await _error(401, "Unauthorized", headers={"www-authenticate": "Bearer"})(
                    scope, receive, send)
                return
        await self.app(scope, receive, send)


def openai_app(batcher: Batcher, models: list[ServedModel], defaults: Defaults,
               api_key: str | None = None) -> ASGIApp:
    names = {model.name for model in models}
    created = int(time.time())

    async def list_models(_: Request) -> Response:
        return JSONResponse({"object": "list", "data": [
            {"id": m.name, "object": "model", "created": created, "owned_by": "go19",
             "root": m.root, "parent": m.parent} for m in models]})

    async def chat(request: Request) -> Response:
        try:
            asked = read_request(await _body(request))
            name = asked.model
            if name not in names:
                raise ApiError(404, f"The model `{name}` does not exist.", "model")
            messages, picture = chat_of(asked.messages)
            job = Job(name, messages, picture, sampling_of(asked, defaults))
            completion = await _unless_disconnected(request, lambda: batcher.submit(job))
        except ApiError as exc:
            return _error(exc.status, str(exc), exc.param)
        except RequestError as exc:
            return _error(500 if isinstance(exc, ModelFault) else 400, str(exc))
        if completion is None:
            return Response(status_code=499)  # nobody is there to read it
        prompt, generated = completion.prompt_tokens or 0, completion.completion_tokens or 0
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
            "usage": {"prompt_tokens": prompt, "completion_tokens": generated,
                      "total_tokens": prompt + generated},
        })

    async def health(_: Request) -> Response:
        return Response(status_code=200)

    async def http_error(_: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        return _error(status, str(detail))

    app = Starlette(
        routes=[
            Route("/v1/models", list_models, methods=["GET"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
        ],
        exception_handlers={HTTPException: http_error, Exception: http_error},
    )
    return app if api_key is None else RequireKey(app, api_key)
