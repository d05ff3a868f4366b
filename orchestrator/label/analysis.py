"""KataGo's analysis protocol without the process: the JSON query for a game, and each
JSON answer parsed into an :class:`AnalysisResponse` (sans-IO, like the GO19 codec).

Coordinates and perspective, as this module reports them:

- moves go out as GTP vertices (``coords.to_gtp``) or ``"pass"``; moves that come back
  (``MoveInfo.move``, ``pv``) are go19 points, ``PASS`` for a pass;
- ``policy`` has ``size * size + 1`` values, one per ``coords`` index (the point itself,
  row-major from A19, row 0 at the top, and the pass last);
  ``-1`` marks an illegal point; the legal values sum to 1;
- ``ownership`` has ``size * size`` values, +1 Black's, -1 White's;
- winrate and scoreLead are Black's (the config says ``reportAnalysisWinratesAs = BLACK``),
  whoever is to move;
- at ``maxVisits = 1`` KataGo evaluates the position only: ``move_infos`` is empty and
  ``best_move`` is the policy's top point.

An answer that is not what KataGo sends (a missing field, a value that is not a finite
number: NaN, infinite, or the ``null`` KataGo's JSON writer makes of a NaN; a policy or
ownership of the wrong length) raises :class:`KataGoBadAnswer`: never a label.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import from_gtp, from_index, to_gtp, to_index
from orchestrator.rules.game import Move

# go19's referee rules: area scoring, positional superko, no suicide, komi taken as given.
# (KataGo's "tromp-taylor" shorthand would allow multi-stone suicide.)
GO19_RULES: Mapping[str, Any] = {
    "ko": "POSITIONAL",
    "scoring": "AREA",
    "tax": "NONE",
    "suicide": False,
    "hasButton": False,
    "whiteHandicapBonus": "0",
}
_COLOR_LETTERS = {BLACK: "B", WHITE: "W"}


class KataGoError(Exception):
    """Anything that went wrong talking to KataGo."""


class KataGoDied(KataGoError):
    """The engine is gone: the process exited, or was stopped after unreadable output."""


class KataGoBadAnswer(KataGoError):
    """An answer that cannot be a label (``str()`` says which query, turn and value)."""


class KataGoQueryError(KataGoError):
    """KataGo rejected one query (``{"error": ..., "id": ...}``); the engine goes on."""

    def __init__(self, message: str, field: str | None, query_id: str) -> None:
        where = f" (field {field})" if field else ""
        super().__init__(f"KataGo rejected query {query_id}{where}: {message}")
        self.message = message
        self.field = field
        self.query_id = query_id


@dataclass(frozen=True, slots=True)
class MoveInfo:
    move: int  # go19 point, PASS for a pass
    order: int  # KataGo's ranking, 0 = best
    visits: int
    winrate: float  # Black's
    score_lead: float  # Black's lead in points
    prior: float
    pv: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AnalysisResponse:
    id: str
    turn: int
    size: int
    move_infos: tuple[MoveInfo, ...]  # sorted by order: move_infos[0] is the best move
    winrate: float | None  # root (the position itself), Black's
    score_lead: float | None
    visits: int
    policy: np.ndarray | None  # size*size+1 floats, index = go19 point, last = pass, -1 illegal
    ownership: np.ndarray | None  # size*size floats in [-1, 1], +1 = Black's
    warnings: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)  # less policy/ownership

    @property
    def best_move(self) -> int:
        """KataGo's choice: ``moveInfos`` order 0 or, at one visit (KataGo then searches no
        move and reports none), the raw policy's top point."""
        if self.move_infos:
            return self.move_infos[0].move
        if self.policy is None:
            raise ValueError(f"query {self.id} turn {self.turn}: no moves and no policy")
        return from_index(int(np.argmax(self.policy)), self.size)

    def policy_of(self, point: int) -> float:
        """The raw policy of a point (or PASS); -1 for an illegal point."""
        if self.policy is None:
            raise ValueError(f"query {self.id} was sent without includePolicy")
        return float(self.policy[to_index(point, self.size)])


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} is {json.dumps(value)}, not a number")
    if not math.isfinite(value):
        raise ValueError(f"{what} is {value}")
    return float(value)


def _values(values: Any, length: int, what: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)  # null becomes NaN
    if array.shape != (length,):
        raise ValueError(f"{what} has shape {array.shape}, not ({length},)")
    if not np.isfinite(array).all():
        raise ValueError(f"{what} holds {array[~np.isfinite(array)][0]}")
    return array


def _parse_move_info(info: Mapping[str, Any], size: int) -> MoveInfo:
    return MoveInfo(
        move=from_gtp(info["move"], size),
        order=int(info["order"]),
        visits=int(info["visits"]),
        winrate=_number(info["winrate"], "moveInfos winrate"),
        score_lead=_number(info["scoreLead"], "moveInfos scoreLead"),
        prior=_number(info["prior"], "moveInfos prior"),
        pv=tuple(from_gtp(v, size) for v in info.get("pv", ())),
    )


def parse_response(
    msg: Mapping[str, Any], size: int, warnings: Sequence[str] = ()
) -> AnalysisResponse:
    """One analysis answer, with KataGo's GTP vertices turned into go19 points; raises
    :class:`KataGoBadAnswer` for one that cannot be a label."""
    try:
        return _parse(msg, size, warnings)
    except (KeyError, TypeError, ValueError) as exc:
        what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        where = f"query {msg.get('id')} turn {msg.get('turnNumber')}"
        raise KataGoBadAnswer(f"KataGo's answer to {where} is bad: {what}") from None


def _parse(msg: Mapping[str, Any], size: int, warnings: Sequence[str]) -> AnalysisResponse:
    root = msg.get("rootInfo", {})
    infos = sorted((_parse_move_info(i, size) for i in msg.get("moveInfos", ())),
                   key=lambda m: m.order)
    policy = msg.get("policy")
    ownership = msg.get("ownership")
    return AnalysisResponse(
        id=str(msg["id"]),
        turn=int(msg["turnNumber"]),
        size=size,
        move_infos=tuple(infos),
        winrate=_number(root["winrate"], "winrate") if "winrate" in root else None,
        score_lead=_number(root["scoreLead"], "scoreLead") if "scoreLead" in root else None,
        visits=int(root.get("visits", 0)),
        policy=None if policy is None else _values(policy, size * size + 1, "policy"),
        ownership=None if ownership is None else _values(ownership, size * size, "ownership"),
        warnings=tuple(warnings),
        raw={k: v for k, v in msg.items() if k not in ("policy", "ownership")},
    )


def _letter(color: int) -> str:
    if color not in _COLOR_LETTERS:
        raise ValueError(f"color {color!r} is neither BLACK ({BLACK}) nor WHITE ({WHITE})")
    return _COLOR_LETTERS[color]


def _gtp_moves(moves: Sequence[Move], size: int) -> list[list[str]]:
    """Moves (or stones) as KataGo's JSON pairs: ``[["B", "Q16"], ["W", "pass"]]``."""
    return [[_letter(m.color), to_gtp(m.point, size)] for m in moves]


def game_query(
    moves: Sequence[Move],
    *,
    komi: float,
    size: int = 19,
    initial_stones: Sequence[Move] = (),
    initial_player: int | None = None,
    rules: str | Mapping[str, Any] = GO19_RULES,
    analyze_turns: Sequence[int] | None = None,
    max_visits: int = 1,
    include_policy: bool = True,
    include_ownership: bool = False,
    priority: int = 0,
) -> dict[str, Any]:
    """The analysis query (without ``id``) for a game; ``analyze_turns=None`` means every
    turn, 0 (before the first move) to ``len(moves)`` (after the last)."""
    turns = range(len(moves) + 1) if analyze_turns is None else analyze_turns
    query: dict[str, Any] = {
        "moves": _gtp_moves(moves, size),
        "initialStones": _gtp_moves(initial_stones, size),
        "rules": rules if isinstance(rules, str) else dict(rules),
        "komi": komi,
        "boardXSize": size,
        "boardYSize": size,
        "analyzeTurns": list(turns),
        "maxVisits": max_visits,
        "includePolicy": include_policy,
        "includeOwnership": include_ownership,
        "priority": priority,
    }
    if initial_player is not None:
        query["initialPlayer"] = _letter(initial_player)
    return query
