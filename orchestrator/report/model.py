"""The report as typed values, from :func:`orchestrator.report.stats.compute` to the pages,
and :func:`to_json`, the one place they become ``report.json``'s JSON values.

Each section is a frozen dataclass whose fields are its JSON keys, in order. Numbers stay
numbers here: an infinite Elo (a clean sweep) is ``inf``, written ``"+inf"``/``"-inf"``
(which ``float()`` reads back); an undefined number (NaN) is written ``null``. A field whose
metadata says ``{"json": "omit-none"}`` (``"omit-empty"``) is left out of the JSON while it is
None (empty), so that a report without it reads as before it existed; one with ``{"json":
"inline"}`` (a dataclass) writes its fields in its place; ``{"drop": names}`` leaves those
fields of a dataclass value out (a value typed elsewhere, with a field the JSON never had).

A new section is a field of :class:`Report` (a dataclass of its own, usually with
``omit-none`` so that reports without it stay as they were), filled in
:func:`orchestrator.report.build.build_report` and shown by the pages that know it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from orchestrator.quality.report import QualityReport, QualityUnavailable
from orchestrator.ratings import EloEstimate
from orchestrator.ratings.bt import RatingRow as BtRow

OMIT_NONE = {"json": "omit-none"}
OMIT_EMPTY = {"json": "omit-empty"}
INLINE = {"json": "inline"}
_ESTIMATE = {"drop": ("games",)}


def to_json(value: Any, drop: tuple[str, ...] = ()) -> Any:
    """``value`` (dataclasses, dicts, lists, numbers, strings) as plain JSON values;
    ``drop``: fields of a dataclass ``value`` left out."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            how = f.metadata.get("json")
            if f.name in drop or how == "omit-none" and item is None or (
                    how == "omit-empty" and not item):
                continue
            written = to_json(item, f.metadata.get("drop", ()))
            if how == "inline":
                out.update(written)
            else:
                out[f.name] = written
        return out
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else "+inf" if value > 0 else "-inf"
    return value


@dataclass(frozen=True, slots=True)
class Results:
    """Games won, lost and drawn (for a player, or as one colour)."""

    games: int
    wins: int
    losses: int
    draws: int


@dataclass(frozen=True, slots=True)
class EloPoint:
    games: int
    elo: float
    low: float | None
    high: float | None


@dataclass(frozen=True, slots=True)
class LlrPoint:
    games: int
    llr: float


@dataclass(frozen=True, slots=True)
class Sprt:
    """A run's SPRT over its pairing (the matchup's ``stop.sprt``, defaults filled in)."""

    run: str
    player: str
    opponent: str
    elo0: float
    elo1: float
    alpha: float
    beta: float
    model: str
    counts: str  # "pairs" or "games"
    samples: int
    llr: float
    lower: float
    upper: float
    decision: str | None  # "H0", "H1"
    status: str
    curve: list[LlrPoint]
    decided_at: int | None


@dataclass(frozen=True, slots=True)
class PairRow:
    """One opening pair of a head-to-head: its games and, once both are in, the points
    ``player`` took (the pair's pentanomial outcome: 0, ½, 1, 1½ or 2)."""

    run: str
    pair: int
    opening: str
    games: list[int]
    results: list[str]
    points: float | None


@dataclass(frozen=True, slots=True)
class HeadToHead:
    player: str
    opponent: str
    games: int
    results: Results
    as_black: Results
    as_white: Results
    counts: str  # "pairs" (pentanomial) or "games"
    pentanomial: list[int] | None
    # ratings.estimate's, less its games (the section's own): samples, score, elo, ...
    estimate: EloEstimate = field(metadata=_ESTIMATE)
    estimate_games: EloEstimate = field(metadata=_ESTIMATE)  # per game, unpaired
    curve: list[EloPoint]
    sprt: list[Sprt]
    pairs: list[PairRow]


@dataclass(frozen=True, slots=True)
class VerdictSprt:
    status: str
    llr: float
    lower: float
    upper: float
    elo0: float
    elo1: float
    decision: str | None
    decided_at: int | None


@dataclass(frozen=True, slots=True)
class Verdict:
    player: str
    opponent: str
    stronger: str | None
    games: int
    results: Results
    counts: str
    kind: str  # "pentanomial" or "trinomial"
    samples: int
    elo: float | None
    elo_low: float | None
    elo_high: float | None
    los: float | None
    sprt: VerdictSprt | None
    sentence: str


@dataclass(frozen=True, slots=True)
class Totals:
    runs: int
    games: int
    finished: int
    void: int
    rated: int
    draws: int
    no_result: int
    self_play: int
    moves: int


@dataclass(frozen=True, slots=True)
class Pace:
    duration_s: float
    games_per_hour: float | None
    moves_per_s: float | None


@dataclass(frozen=True, slots=True)
class Lengths:
    games: int
    min: int | None
    max: int | None
    mean: float | None
    median: float | None
    bin_edges: list[int]
    counts: list[int]


@dataclass(frozen=True, slots=True)
class Margins:
    player: str
    games: int
    resign_won: int
    resign_lost: int
    bin_edges: list[float]
    counts: list[int]


@dataclass(frozen=True, slots=True)
class Latency:
    n: int
    p50: float | None
    p95: float | None
    p99: float | None
    max: float | None
    box: list[float] | None  # min, p25, p50, p75, p95, max
    method: str  # "exact" or "approx-per-game"


@dataclass(frozen=True, slots=True)
class Tokens:
    games: int
    moves: int
    prompt: int | None
    completion: int | None
    prompt_per_move: float | None
    completion_per_move: float | None
    prompt_per_game: float | None
    completion_per_game: float | None


@dataclass(frozen=True, slots=True)
class PlayerSection:
    kind: str | None
    meta: dict[str, Any]
    endpoints: list[str]
    games: int
    results: Results
    as_black: Results
    as_white: Results
    moves_asked: int
    moves_asked_estimated_games: int
    fallbacks: dict[str, int]
    fallback_total: int
    fallback_rate: float | None
    fallback_rate_by_reason: dict[str, float | None]
    illegal: int
    illegal_rate: float | None
    latency_ms: Latency
    tokens: Tokens | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, slots=True)
class RatePoint:
    games: int
    rate: float


@dataclass(frozen=True, slots=True)
class RatingRow:
    fit: BtRow = field(metadata=INLINE)  # player, elo, stderr, games, wins, losses, draws
    los_next: float | None
    group: int | None = field(default=None, metadata=OMIT_NONE)  # in Ratings.rows only


@dataclass(frozen=True, slots=True)
class RatingGroup:
    """One group of players connected by games, fitted on its own scale."""

    players: list[str]
    anchor: dict[str, float]
    anchor_default: bool
    black_advantage: float | None
    black_advantage_stderr: float | None
    rows: list[RatingRow]


@dataclass(frozen=True, slots=True)
class Ratings:
    method: str
    anchor: dict[str, float]
    anchor_default: bool
    black_advantage: float | None
    black_advantage_stderr: float | None
    groups: list[RatingGroup]
    rows: list[RatingRow]


@dataclass(frozen=True, slots=True)
class RatingsFailed:
    error: str
    anchor: dict[str, float]
    anchor_default: bool


@dataclass(frozen=True, slots=True)
class Pairing:
    black: Any  # as run.json's matchup says (names, unchecked)
    white: Any


@dataclass(frozen=True, slots=True)
class RunSummary:
    run_id: str
    path: str
    started: Any  # run.json's values, as they are
    games_target: Any
    games: int
    finished: int
    void: int
    pairing: Pairing | None
    size: Any
    komi: Any
    sprt: Sprt | None


@dataclass(frozen=True, slots=True)
class GameRow:
    """One recorded game of the per-game table."""

    run: str
    game: int
    pair: int | None
    black: str
    white: str
    result: str
    reason: str
    moves: int
    fallbacks: dict[str, int]  # per player with any: how many
    sgf: str
    # Per player, what a model said on its fallback moves (recordings that kept it).
    said: dict[str, list[dict[str, Any]]] = field(default_factory=dict, metadata=OMIT_EMPTY)


Quality = QualityReport | QualityUnavailable


@dataclass(frozen=True, slots=True)
class AdjudicationSection:
    """``[adjudicate]`` runs (report/adjudication.py says how each number is counted)."""

    games: int
    resigned: int
    resigned_moves: int
    played_out: int
    played_out_mean_moves: float | None
    moves_saved_pct: float | None
    holdout: int
    holdout_would_resign: int
    false_resigns: int
    false_resign_ci: list[float] | None
    dead_stones_scored: int
    dead_stone_flips: int
    off: int


@dataclass(frozen=True, slots=True)
class Report:
    """Everything ``report.json`` holds, in its order."""

    generated: str  # UTC, "2026-01-01T00:00:00Z"
    schema: int
    runs: list[RunSummary]
    labels: dict[str, str]  # player -> the name people know it by
    verdict: Verdict | None
    totals: Totals
    pace: Pace
    termination: dict[str, int]
    lengths: Lengths
    margins: Margins
    players: dict[str, PlayerSection]
    fallback_curves: dict[str, list[RatePoint]]
    head_to_head: list[HeadToHead]
    ratings: Ratings | RatingsFailed | None
    games: list[GameRow]
    notes: list[str]
    quality: Quality | None
    warnings: list[str]
    adjudication: AdjudicationSection | None = None  # null without [adjudicate]
