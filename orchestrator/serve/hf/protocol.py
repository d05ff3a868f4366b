"""What the OpenAI-compatible port reads and writes, as pydantic models in the style of
vLLM's ``vllm/entrypoints/openai/protocol.py``: a request is validated once, at the edge,
straight from its bytes (``model_validate_json``: pydantic-core's parser, whose recursion
limit refuses JSON nested deeper than 200 levels with a ``ValueError`` instead of the
standard library's ``RecursionError``), and the app works with the typed request only.

As in vLLM, fields the model does not name are ignored (OpenAI clients send many), while a
field this server cannot honour is refused rather than ignored: streaming, ``n`` > 1,
logprobs, a response format other than text, structured outputs other than ``choice``,
and vLLM's pre-0.12 ``guided_*`` fields (vLLM >= 0.12 ignores those without a word, which
would answer a constrained request unconstrained).

A validation error becomes one line: ``field.path: what is wrong``
(:func:`validation_message`), in vLLM's error body (:class:`ErrorResponse`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

MAX_TOKENS = 1024
MAX_CHOICES = 4096
REFUSED = {  # fields that would change the answer, refused rather than ignored
    "stream": "streaming is not supported by this server",
    "logprobs": "not supported by this server",
    **{name: "not supported: write structured_outputs: {\"choice\": [...]} (vLLM >= 0.12 "
             "ignores the guided_* fields)"
       for name in ("guided_choice", "guided_regex", "guided_json", "guided_grammar")},
}
ERROR_TYPES = {400: "BadRequestError", 401: "Unauthorized", 404: "NotFoundError",
               405: "MethodNotAllowed", 413: "RequestEntityTooLarge",
               500: "InternalServerError"}


class OpenAIBaseModel(BaseModel):
    # Unknown fields are allowed and ignored, as OpenAI's API and vLLM do.
    model_config = ConfigDict(extra="allow")


class ErrorInfo(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: int


class ErrorResponse(BaseModel):
    """vLLM's error body: ``{"error": {"message", "type", "param", "code"}}``."""

    error: ErrorInfo

    @classmethod
    def of(cls, status: int, message: str, param: str | None = None) -> ErrorResponse:
        return cls(error=ErrorInfo(message=message, type=ERROR_TYPES.get(status, "Error"),
                                   param=param, code=status))


class ImageURL(OpenAIBaseModel):
    url: str


class TextPart(OpenAIBaseModel):
    type: Literal["text"]
    text: str


class ImagePart(OpenAIBaseModel):
    type: Literal["image_url"]
    image_url: ImageURL | str


ContentPart = Annotated[TextPart | ImagePart, Field(discriminator="type")]


class ChatMessage(OpenAIBaseModel):
    role: Literal["system", "user", "assistant"]
    content: str | list[ContentPart]


class StructuredOutputs(OpenAIBaseModel):
    choice: Annotated[list[Annotated[str, Field(min_length=1)]],
                      Field(min_length=1, max_length=MAX_CHOICES)] | None = None

    @model_validator(mode="after")
    def _only_choice(self) -> StructuredOutputs:
        others = sorted(k for k, v in (self.model_extra or {}).items() if v is not None)
        if others:
            raise ValueError(f"only choice is supported, not {', '.join(others)}")
        if self.choice is None:
            raise ValueError("choice is required")
        return self


class ResponseFormat(OpenAIBaseModel):
    type: Literal["text"]


Strict = Field(strict=True)  # no "5" for 5 and no true for 1: a client's mistake is said


class ChatCompletionRequest(OpenAIBaseModel):
    """``POST /v1/chat/completions``, the fields this server reads."""

    model: str
    messages: Annotated[list[ChatMessage], Field(min_length=1)]
    max_tokens: Annotated[int, Strict, Field(ge=1, le=MAX_TOKENS)] | None = None
    max_completion_tokens: Annotated[int, Strict, Field(ge=1, le=MAX_TOKENS)] | None = None
    temperature: Annotated[float, Strict, Field(ge=0.0, le=2.0)] | None = None
    top_p: Annotated[float, Strict, Field(gt=0.0, le=1.0)] | None = None
    seed: Annotated[int, Strict, Field(ge=-(2**63), le=2**63 - 1)] | None = None
    n: Literal[1] | None = None
    response_format: ResponseFormat | None = None
    structured_outputs: StructuredOutputs | None = None

    @model_validator(mode="before")
    @classmethod
    def _refused(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, why in REFUSED.items():
                if name in data and data[name] not in (None, False):
                    raise ValueError(f"{name}: {why}")
        return data

    @property
    def token_limit(self) -> int | None:
        """``max_completion_tokens`` (OpenAI's newer name), else ``max_tokens``."""
        return self.max_completion_tokens or self.max_tokens


def validation_message(error: ValidationError) -> tuple[str, str | None]:
    """The most specific error of ``error`` (the deepest field: of a union, the branch
    that got furthest) in one line, and the request field it is about."""
    errors = error.errors(include_url=False)
    first = max(errors, key=lambda e: len(e["loc"]))  # the first of the deepest
    location: list[str] = []
    for part in map(str, first["loc"]):
        # pydantic names a union's branches in the path ("str", "list[tagged-union[...]]",
        # "ImageURL") and a tagged one's tag beside its field ("text", "text"): the field
        # path the client wrote has neither.
        if "[" in part or part == "str" or part[:1].isupper() or location[-1:] == [part]:
            continue
        location.append(part)
    message = " ".join(str(first["msg"]).split()).removeprefix("Value error, ")
    if first["type"] == "json_invalid":
        return f"the request body is not JSON ({message.removeprefix('Invalid JSON: ')})", None
    if not location:
        if first["type"] == "model_type":
            return "the request body must be a JSON object", None
        return message, message.split(":", 1)[0] if ":" in message else None
    return f"{'.'.join(location)}: {message}", location[0]
