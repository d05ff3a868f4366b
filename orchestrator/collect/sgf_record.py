"""A finished game's record as the SGF go19 records (docs/formats.md): standard FF[4]
properties, go19's private root properties, the journal record itself in
``GOXIXREC`` (so a lost journal line can be rebuilt from the SGF) and a mark on
every move that was not the player's own policy, and on a model's moves what its reply
said (``GOXIXREPLY``: round trip, tokens, and the texts ``keep_reply`` asks for)."""

from __future__ import annotations

import json

from orchestrator.color import BLACK, WHITE
from orchestrator.move_record import MoveRecord, Origin, ReplyDetails
from orchestrator.recordings import RECORD_PROP, GameRecord
from orchestrator.sgf import (
    ADJ_PROP,
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


def _comment(move: MoveRecord, name: str) -> str | None:
    """The human-readable ``C[]`` beside a move's source mark."""
    if move.origin is Origin.OWN:
        return None
    if move.origin is Origin.OPENING:
        return "opening move (not the player's own)"
    return f"fallback: {name} {move.reason}; the heuristic AI played this move"


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


def game_sgf(game: GameRecord, version: str) -> bytes:
    """The SGF of ``game``, written by go19 ``version``."""
    record = game.journal
    names = {BLACK: record.black, WHITE: record.white}
    keep = {color: record.players[name].keep_reply for color, name in names.items()}
    moves = tuple(
        SgfMove(m.color, m.point, m.source, _comment(m, names[m.color]), m.ms,
                None if m.reply is None else reply_prop(m.reply, m.keeps_text(keep[m.color])))
        for m in game.moves
    )
    extra = {
        RUN_PROP: record.run,
        GAME_PROP: str(record.game),
        END_PROP: record.reason,
        BLACK_PLAYER_PROP: json.dumps(record.players[record.black].as_dict(),
                                      separators=(",", ":")),
        WHITE_PLAYER_PROP: json.dumps(record.players[record.white].as_dict(),
                                      separators=(",", ":")),
        RECORD_PROP: record.to_json(),
    }
    if record.void:
        extra[VOID_PROP] = "1"
    if record.adjudication is not None:
        extra[ADJ_PROP] = json.dumps(record.adjudication.model_dump(mode="json",
                                                                    exclude_defaults=True),
                                     separators=(",", ":"))
    sgf = SgfGame(
        size=record.size,
        komi=record.komi,
        rules=RULES,
        result=record.result,
        black_name=record.black,
        white_name=record.white,
        date=record.started[:10],  # the start's UTC date, as the record's stamp has it
        root_props={"AP": f"go19:{version}", "GN": f"{record.run} #{record.game}"},
        moves=moves,
    )
    return write_sgf(sgf, extra)
