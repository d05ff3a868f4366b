"""A finished game as the SGF go19 records (docs/formats.md): standard FF[4]
properties, go19's private root properties, the journal record itself in
``GOXIXREC`` (so a lost journal line can be rebuilt from the SGF) and a mark on
every move that was not the player's own policy, and on a model's moves what its reply
said (``GOXIXREPLY``: round trip, tokens, and the texts ``keep_reply`` asks for)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from orchestrator.collect.referee import RefereedGame
from orchestrator.players.openai import ReplyDetails
from orchestrator.recordings import (
    RECORD_PROP,
    JournalRecord,
    fallback_reason,
    move_origin,
)
from orchestrator.sgf import (
    BLACK_PLAYER_PROP,
    END_PROP,
    GAME_PROP,
    RUN_PROP,
    VOID_PROP,
    WHITE_PLAYER_PROP,
    SgfGame,
    SgfMove,
    write_sgf,
)

RULES = "Chinese"  # area scoring, suicide forbidden; the referee adds positional superko


def _comment(source: str | None, name: str) -> str | None:
    """The human-readable ``C[]`` beside a move's source mark."""
    if source is None:
        return None
    if move_origin(source) == "opening":
        return "opening move (not the player's own)"
    return f"fallback: {name} {fallback_reason(source)}; the heuristic AI played this move"


def keeps_text(keep_reply: str | None, source: str | None) -> bool:
    """Whether a move's reply texts are kept: ``all``, or ``fallbacks`` on a fallback."""
    return keep_reply == "all" or (keep_reply == "fallbacks"
                                   and move_origin(source) == "fallback")


def reply_prop(details: ReplyDetails, with_text: bool) -> str:
    """The ``GOXIXREPLY`` JSON of one move (docs/formats.md), bounded by the texts' cut."""
    value: dict[str, object] = {"ms": round(details.latency_ms, 1),
                                "tokens": [details.prompt_tokens, details.completion_tokens]}
    if details.finish_reason is not None:
        value["finish"] = details.finish_reason
    if with_text:
        for key, text, chars in (("reply", details.reply, details.reply_chars),
                                 ("reasoning", details.reasoning, details.reasoning_chars)):
            if text is not None:
                value[key] = text
                if chars > len(text):
                    value[f"{key}_chars"] = chars
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def recorded_game_sgf(outcome: RefereedGame, record: JournalRecord, version: str) -> bytes:
    spec = outcome.spec
    names = {1: spec.black, 2: spec.white}
    keep = {name: record.players[name].keep_reply for name in (spec.black, spec.white)}
    moves = tuple(
        SgfMove(m.color, m.point, m.source, _comment(m.source, names[m.color]), m.ms,
                None if said is None else reply_prop(
                    said, keeps_text(keep[names[m.color]], m.source)))
        for m, said in zip(outcome.moves, outcome.move_details(), strict=True)
    )
    extra = {
        RUN_PROP: record.run,
        GAME_PROP: str(record.game),
        END_PROP: record.reason,
        BLACK_PLAYER_PROP: json.dumps(record.players[spec.black].as_dict(),
                                      separators=(",", ":")),
        WHITE_PLAYER_PROP: json.dumps(record.players[spec.white].as_dict(),
                                      separators=(",", ":")),
        RECORD_PROP: record.to_json(),
    }
    if outcome.void:
        extra[VOID_PROP] = "1"
    game = SgfGame(
        size=outcome.size,
        komi=outcome.komi,
        rules=RULES,
        result=outcome.result,
        black_name=spec.black,
        white_name=spec.white,
        date=datetime.fromtimestamp(outcome.started, UTC).strftime("%Y-%m-%d"),
        root_props={"AP": f"go19:{version}", "GN": f"{record.run} #{record.game}"},
        moves=moves,
    )
    return write_sgf(game, extra)
