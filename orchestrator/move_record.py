"""One move as the recordings keep it (docs/formats.md), typed from the referee to every
reader: the point, who chose it (:class:`Origin`, with the fallback's reason), how long
the player took, and what a model's reply said (:class:`ReplyDetails`).

The words a recording spells an origin with (``GOXIXSRC``: no mark, ``opening``,
``fallback:<reason>``) are made here and read back here, at the file's edge only: inside
a run a move's origin travels as the enum and its reason, never as the word.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from orchestrator.sgf import SgfMove

# Who chose a move (SGF GOXIXSRC, journal fallbacks): no mark is the player's own policy.
OPENING = "opening"
FALLBACK_PREFIX = "fallback:"
KEPT_CHARS = 1000  # of a reply's text and of its reasoning text, per move


class Origin(StrEnum):
    """Who chose a move: the player's own policy, the opening book, or the fallback policy
    (the heuristic AI, when the player's answer could not be played)."""

    OWN = "own"
    OPENING = "opening"
    FALLBACK = "fallback"


def move_origin(source: str | None) -> Origin:
    """Who chose a move, from its source mark as a file spells it (None: its own policy)."""
    if source is None:
        return Origin.OWN
    return Origin.OPENING if source == OPENING else Origin.FALLBACK


def fallback_reason(source: str) -> str:
    """``timeout`` for ``fallback:timeout``; any other mark as it is."""
    return source.removeprefix(FALLBACK_PREFIX)


@dataclass(frozen=True, slots=True)
class ReplyDetails:
    """What one answered request to a model leaves for the record (journal, ``GOXIXREPLY``,
    report), bounded: the texts are cut to :data:`KEPT_CHARS` characters each, their full
    lengths kept beside them."""

    replica: str  # the base URL that answered
    latency_ms: float  # request sent to reply read, on the trio clock; no queueing
    prompt_tokens: int | None  # from the reply's usage, when the server says
    completion_tokens: int | None
    finish_reason: str | None  # "stop", "length" ...
    reply: str | None  # the reply's text, cut; None when the reply had none
    reply_chars: int
    reasoning: str | None  # its reasoning text, cut; never read as the move
    reasoning_chars: int

    @classmethod
    def cut(cls, replica: str, latency_ms: float, *, text: str | None,
            reasoning: str | None, prompt_tokens: int | None, completion_tokens: int | None,
            finish_reason: str | None) -> ReplyDetails:
        """The details of a reply whose texts are ``text`` and ``reasoning``, cut."""
        return cls(
            replica=replica, latency_ms=latency_ms,
            prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            finish_reason=finish_reason,
            reply=None if text is None else text[:KEPT_CHARS],
            reply_chars=len(text or ""),
            reasoning=None if reasoning is None else reasoning[:KEPT_CHARS],
            reasoning_chars=len(reasoning or ""),
        )


@dataclass(frozen=True, slots=True)
class MoveRecord:
    """One move of a finished game. ``reason`` says why the fallback policy played it
    (``timeout``, ``cancelled``, ``connection``, ``illegal:superko`` …: the journal's and
    the SGF mark's words) and is None for any other origin; ``ms`` is how long the player
    took to answer, when it answered in time (an illegal answer too); ``reply`` what a
    model's reply said, for players that tell (None when read back from an SGF, whose
    ``GOXIXREPLY`` is for readers outside go19)."""

    color: int  # BLACK or WHITE
    point: int  # PASS for a pass
    origin: Origin = Origin.OWN
    reason: str | None = None
    ms: float | None = None
    reply: ReplyDetails | None = None

    def __post_init__(self) -> None:
        if (self.origin is Origin.FALLBACK) != (self.reason is not None):
            raise ValueError(f"a fallback move has a reason, no other move has one: "
                             f"{self.origin} with reason {self.reason!r}")

    @property
    def source(self) -> str | None:
        """The move's source mark as files spell it (``GOXIXSRC``; None: its own policy)."""
        if self.origin is Origin.OWN:
            return None
        return OPENING if self.origin is Origin.OPENING else FALLBACK_PREFIX + str(self.reason)

    def keeps_text(self, keep_reply: str | None) -> bool:
        """Whether the record keeps this move's reply texts under the player's
        ``keep_reply``: ``all``, or ``fallbacks`` on a fallback move."""
        return keep_reply == "all" or (keep_reply == "fallbacks"
                                       and self.origin is Origin.FALLBACK)

    @classmethod
    def from_sgf(cls, move: SgfMove) -> MoveRecord:
        """A move as an SGF node holds it (its mark read back; no reply details)."""
        origin = move_origin(move.source)
        reason = fallback_reason(move.source) if move.source is not None \
            and origin is Origin.FALLBACK else None
        return cls(move.color, move.point, origin, reason, move.ms)
