"""What the OpenAI player sends and reads, without I/O: the chat-completions request for a
position, the completion read back, and what the record keeps of each reply (its bounded
:class:`~orchestrator.move_record.ReplyDetails`).

The request is one user message, the picture then the text, so that the model is asked
exactly what it was trained on: the PNG that the GO19 client sends
(:func:`orchestrator.players.go19.board_png`) as a ``data:image/png;base64,`` URL, and
the prompt template filled by the export's own code (:func:`orchestrator.prompt.fill`
with the arguments ``go19 dataset export`` gives it for that position). Sampling is
``temperature``, ``max_tokens`` and a ``seed`` derived from (player seed, run, game,
move), so a rerun asks the same. ``constrain`` restricts the answer to the referee's legal
moves (superko included) in the answer's spelling: ``choice`` as vLLM >= 0.12's
``structured_outputs: {"choice": [...]}``, ``regex`` as SGLang's ``regex`` field. The
pre-0.12 ``guided_choice``/``guided_regex`` are never sent: vLLM >= 0.12 ignores them
with HTTP 200 and an unconstrained answer.

The answer is ``choices[0].message.content``; a reasoning model's reasoning text
(``reasoning`` in vLLM, ``reasoning_content`` in SGLang and older vLLM) is kept beside it
but never read as the move.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from orchestrator.coords import MOVE_TEXTS, PASS, move_to_text
from orchestrator.move_record import ReplyDetails
from orchestrator.prompt import fill, uses_board
from orchestrator.render import RenderSettings
from orchestrator.rules.board import Board
from orchestrator.rules.game import Game
from orchestrator.untrusted import BadJson, read_json

CONSTRAINTS = ("none", "choice", "regex")
KEEP_REPLY = ("none", "fallbacks", "all")  # which moves' raw replies the record keeps
SHOWN_CHARS = 200  # of a server's error message, in a fault's one line


class BadCompletion(ValueError):
    """A 2xx body that is not a chat completion (not JSON, no ``choices``, no message)."""


@dataclass(frozen=True, slots=True)
class AskSettings:
    """How one player asks: plain values, validated where the configuration is read."""

    model: str
    template: str  # the prompt template's text, as read_template() returns it
    answer: str = "gtp"  # the answer's spelling, one of coords.MOVE_TEXTS
    render: RenderSettings = RenderSettings()  # how the picture is drawn (the record keeps it)
    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 16
    constrain: str = "none"  # one of CONSTRAINTS

    def __post_init__(self) -> None:
        if self.answer not in MOVE_TEXTS:
            raise ValueError(f"answer must be one of {', '.join(MOVE_TEXTS)}, not "
                             f"{self.answer!r}")
        if self.constrain not in CONSTRAINTS:
            raise ValueError(f"constrain must be one of {', '.join(CONSTRAINTS)}, not "
                             f"{self.constrain!r}")

    @property
    def template_sha256(self) -> str:
        """The template's identity, for the record of what the model was asked."""
        return hashlib.sha256(self.template.encode("utf-8")).hexdigest()


def request_seed(seed: int, run: int, game: int, move: int) -> int:
    """The sampling seed of one request: the same (seed, run, game, move) asks the same,
    and neighbouring games or moves get unrelated seeds (31 bits: every server takes it)."""
    digest = hashlib.blake2b(f"{seed}:{run}:{game}:{move}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & 0x7FFF_FFFF


def prompt_text(settings: AskSettings, game: Game) -> str:
    """The export's prompt for the position to play: ``fill`` as ``export/chunk.py`` calls it
    (the move to play, 1-based; the game's komi; the board only when the template shows it)."""
    template = settings.template
    board = game.board.to_array() if uses_board(template) else None
    return fill(template, game.to_play, game.move_number + 1, game.komi, settings.answer, board)


@cache
def _spellings(size: int, spelling: str) -> tuple[tuple[str, ...], str]:
    """Every point of the board spelt, and the pass: spelt once, not on every request."""
    return (tuple(move_to_text(point, size, spelling) for point in range(size * size)),
            move_to_text(PASS, size, spelling))


def legal_texts(board: Board, color: int, spelling: str) -> list[str]:
    """``color``'s legal moves on ``board`` and ``pass``, spelt: the one spelling of the
    legal moves, for the OpenAI player's ``constrain`` (a game's board: positional superko
    excluded) and the VLM server's ``--constrain legal`` (a GO19 request's board, which has
    no history)."""
    points, passing = _spellings(board.size, spelling)
    return [points[point] for point in board.legal_moves(color)] + [passing]


def moves_regex(texts: Sequence[str]) -> str:
    return "(" + "|".join(re.escape(text) for text in texts) + ")"


_IMAGE = "@image@"
_CHOICES = "@choices@"
# In the JSON text these fields are the only places these characters appear unescaped:
# quotes inside any string (the prompt, the model's name) are written \".
_IMAGE_FIELD = f'"url":"{_IMAGE}"'
_CHOICE_FIELD = f'"choice":"{_CHOICES}"'


@cache
def _quoted(size: int, spelling: str) -> tuple[tuple[bytes, ...], bytes]:
    """Every point's spelling and the pass's as JSON strings, encoded once."""
    points, passing = _spellings(size, spelling)
    return (tuple(json.dumps(text).encode() for text in points),
            json.dumps(passing).encode())


def legal_json(board: Board, color: int, spelling: str) -> bytes:
    """:func:`legal_texts` as a JSON array, joined from spellings encoded once (the JSON
    encoder took as long as finding the moves)."""
    points, passing = _quoted(board.size, spelling)
    return b"[" + b",".join([points[point] for point in board.legal_moves(color)]
                            + [passing]) + b"]"


def chat_request(settings: AskSettings, game: Game, png: bytes, seed: int) -> bytes:
    """The JSON body of ``POST /v1/chat/completions`` for ``game``'s position."""
    body: dict = {
        "model": settings.model,
        "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": _IMAGE}},
            {"type": "text", "text": prompt_text(settings, game)},
        ]}],
        "max_tokens": settings.max_tokens,
        "temperature": settings.temperature,
        "seed": seed,
    }
    if settings.constrain == "choice":
        body["structured_outputs"] = {"choice": _CHOICES}
    elif settings.constrain == "regex":
        body["regex"] = moves_regex(legal_texts(game.board, game.to_play, settings.answer))
    # The picture's base64 needs no escaping: joined in as bytes rather than scanned by
    # the JSON encoder (which made this function six times slower).
    head, tail = json.dumps(body, ensure_ascii=False, separators=(",", ":")).split(_IMAGE_FIELD)
    parts = [head.encode("utf-8"), b'"url":"data:image/png;base64,', base64.b64encode(png),
             b'"']
    if settings.constrain == "choice":
        before, after = tail.split(_CHOICE_FIELD)
        parts += [before.encode("utf-8"), b'"choice":',
                  legal_json(game.board, game.to_play, settings.answer), after.encode("utf-8")]
    else:
        parts.append(tail.encode("utf-8"))
    return b"".join(parts)


@dataclass(frozen=True, slots=True)
class Completion:
    """What a chat completion says: its text, its token counts, why it ended and its
    reasoning text. The player reads one from a reply (a server may leave any of it out);
    the VLM server's batch makes one per request and always knows all but the reasoning."""

    text: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None  # "stop" (end of answer), "length" (max_tokens reached) ...
    reasoning: str | None = None


def _object(body: bytes) -> dict:
    try:
        value = read_json(body, None)  # the HTTP reader bounds its bytes
    except BadJson as exc:
        raise BadCompletion(f"not JSON ({exc}): {_excerpt(body)}") from None
    if not isinstance(value, dict):
        raise BadCompletion(f"not a JSON object: {_excerpt(body)}")
    return value


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_completion(body: bytes) -> Completion:
    """The first choice of a chat completion body; BadCompletion when there is none."""
    reply = _object(body)
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices:
        raise BadCompletion(f"no choices in the reply: {_excerpt(body)}")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise BadCompletion(f"no message in the reply's first choice: {_excerpt(body)}")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise BadCompletion(f"the reply's content is not a string: {_excerpt(body)}")
    usage = reply.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return Completion(
        text=content,
        reasoning=_text(message.get("reasoning_content")) or _text(message.get("reasoning")),
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        finish_reason=_text(choice.get("finish_reason")),
    )


def model_names(body: bytes) -> list[str]:
    """The ids of ``GET /v1/models`` (OpenAI's list shape); BadCompletion otherwise."""
    data = _object(body).get("data")
    if not isinstance(data, list):
        raise BadCompletion(f"not a model list: {_excerpt(body)}")
    return [item["id"] for item in data if isinstance(item, dict) and isinstance(
        item.get("id"), str)]


def error_message(body: bytes) -> str:
    """The server's own words in an error body: vLLM's ``{"error": {"message"}}``, its
    older flat ``{"message"}``, Starlette's ``{"detail"}``, else the body itself."""
    try:
        value = read_json(body, None)
    except BadJson:
        value = None
    if isinstance(value, dict):
        nested = value.get("error")
        for candidate in (nested.get("message") if isinstance(nested, dict) else nested,
                          value.get("message"), value.get("detail")):
            if isinstance(candidate, str) and candidate.strip():
                return shorten(candidate, SHOWN_CHARS)
    return _excerpt(body) or "(empty body)"


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


def _excerpt(body: bytes) -> str:
    return shorten(body[:4 * SHOWN_CHARS].decode("utf-8", "replace"), SHOWN_CHARS)


def reply_details(replica: str, latency_ms: float, completion: Completion) -> ReplyDetails:
    """What the record keeps of a completion ``replica`` answered in ``latency_ms``."""
    return ReplyDetails.cut(
        replica, latency_ms, text=completion.text, reasoning=completion.reasoning,
        prompt_tokens=completion.prompt_tokens, completion_tokens=completion.completion_tokens,
        finish_reason=completion.finish_reason)
