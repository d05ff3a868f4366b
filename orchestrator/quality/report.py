"""The move-quality section of a report as typed values (``report.json``'s ``"quality"``),
built from games already joined with their labels (pure: no I/O).

Each labelled game (:class:`JudgedGame`) gives a seat to each of its two players; a player's
numbers are :mod:`.summary`'s over its seats, in the order the games are given (the
report's: by finishing time), and a head-to-head's over the games the two played against
each other. Numbers are rounded here, as ``report.json`` shows them (NaN where undefined,
written as ``null``), so that every page reads the same values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS, from_index, to_gtp
from orchestrator.quality import summary, verdict
from orchestrator.quality.moves import GameMoves
from orchestrator.quality.summary import Interval

WORST = 10
HISTOGRAM_EDGES = tuple(float(e) for e in range(0, 21))  # points lost; the last bin: 19 and up
CURVE_BUCKET = 10  # moves per point of the loss-over-move-number curve
_STONES = {0: ".", BLACK: "X", WHITE: "O"}

METHOD = {
    "point_loss": "player_sign × (scoreLead before − scoreLead after), Black +1, "
                  "White −1 (KaTrain, katrain/core/game_node.py points_lost)",
    "mean_loss": "mean of max(0, point loss) over counted moves (KaTrain game_report)",
    "accuracy": f"go19's: 100 × {summary.ACCURACY_BASE} ** mean point loss, every move "
                "weighted 1 (KaTrain's formula with a uniform weight, not KaTrain's number)",
    "katrain_accuracy": f"KaTrain game_report (katrain/core/ai.py): 100 × "
                        f"{summary.ACCURACY_BASE} ** weighted point loss, each move weighted "
                        f"max({summary.KATRAIN_MIN_WEIGHT:g}, min(1, max(complexity, "
                        f"loss / {summary.KATRAIN_LOSS_SCALE:g}))) with complexity 0, as "
                        "KaTrain computes it at one visit (the labels keep no candidate "
                        "moves, so also at more visits)",
    "top5": f"policy rank ≤ {summary.TOP_N}",
    "blunders": "moves losing ≥ 3, 6, 12 points per 100 moves (KaTrain eval_thresholds)",
    "interval": f"{100 * summary.CONFIDENCE:g} % percentile bootstrap over games, "
                f"{summary.RESAMPLES} resamples, seed {summary.SEED}",
}


@dataclass(frozen=True, slots=True)
class JudgedGame:
    """One finished game joined with its labels, and where it is."""

    run: str
    game: int
    black: str
    white: str
    sgf: str  # the SGF's path, as the report links it
    moves: GameMoves
    boards: np.ndarray  # uint8 (n, 19, 19): the position before each move


@dataclass(frozen=True, slots=True)
class LabelSettings:
    """The label folders and how their labels were made (the first folder's manifest)."""

    folders: list[str]
    katago: str | None
    models: list[str] | None
    visits: int | None
    max_moves: int | None
    review: bool


@dataclass(frozen=True, slots=True)
class Counts:
    games: int = 0  # finished games of the runs
    labelled: int = 0
    unlabelled: int = 0
    unreadable: int = 0
    key_mismatch: int = 0  # labels made for another position than the game's, left out


@dataclass(frozen=True, slots=True)
class Excluded:
    """A player's moves not counted: opening-book, fallback, without labels."""

    opening: int
    fallback: int
    unlabelled: int


@dataclass(frozen=True, slots=True)
class CurvePoint:
    move: float  # the middle move number of a bucket of CURVE_BUCKET
    loss: float  # mean point loss there
    moves: int


@dataclass(frozen=True, slots=True)
class WorstMove:
    run: str
    game: int
    move: int
    color: str  # "black" / "white"
    loss: float
    played: str  # GTP vertex or "pass"
    katago: str
    played_index: int
    katago_index: int
    lead: float  # Black's, before the move
    policy_rank: int
    sgf: str
    board: str  # 361 of ".XO", row 0 at the top: the position before the move
    # Its board picture beside the report, relative to it (set when the pictures are drawn).
    picture: str | None = field(default=None, metadata={"json": "omit-none"})


@dataclass(frozen=True, slots=True)
class PlayerQuality:
    games: int
    moves: int  # counted moves
    phase_moves: dict[str, int]
    excluded: Excluded
    fallback_mean_loss: float | None
    phases: dict[str, dict[str, Interval]]  # [phase][statistic]
    curve: list[CurvePoint]
    histogram: list[int]  # counted moves per HISTOGRAM_EDGES bin
    worst: list[WorstMove]


@dataclass(frozen=True, slots=True)
class Decided:
    """After how many games a verdict's interval first excluded 0 (``first``) and from
    which game on it always did (``steady``), over ``games``; None where it never did."""

    games: int
    first: int | None
    steady: int | None


@dataclass(frozen=True, slots=True)
class PairQuality:
    player: str
    opponent: str
    games: int
    difference: Interval  # the opponent's mean point loss minus the player's
    by_phase: dict[str, Interval]
    better: str | None
    sentence: str
    quality_decided: Decided
    elo_decided: Decided


@dataclass(frozen=True, slots=True)
class QualityReport:
    available: bool  # True
    labels: LabelSettings
    counts: Counts
    method: dict[str, str]
    phases: list[str]
    histogram_edges: list[float]
    players: dict[str, PlayerQuality]
    head_to_head: list[PairQuality]


@dataclass(frozen=True, slots=True)
class QualityUnavailable:
    """No label folder: the section says how to get one."""

    available: bool  # False
    hint: str


def _rounded(value: float, digits: int) -> float:
    return round(float(value), digits) if math.isfinite(value) else math.nan


def _interval(i: Interval, digits: int = 3) -> Interval:
    return Interval(*(_rounded(x, digits) for x in (i.value, i.low, i.high)))


@dataclass(frozen=True, slots=True)
class _Seat:
    """One player's side of one judged game."""

    game: JudgedGame
    key: int  # the game's place among the judged games
    color: int


def _seats(games: Sequence[JudgedGame]) -> dict[str, list[_Seat]]:
    seats: dict[str, list[_Seat]] = {}
    for k, game in enumerate(games):
        seats.setdefault(game.black, []).append(_Seat(game, k, BLACK))
        seats.setdefault(game.white, []).append(_Seat(game, k, WHITE))
    return dict(sorted(seats.items()))


def _pairs(seats: Sequence[_Seat]) -> list[tuple[GameMoves, int]]:
    return [(s.game.moves, s.color) for s in seats]


def _point_text(index: int) -> str:
    point = from_index(int(index), 19)
    return "pass" if point == PASS else to_gtp(point, 19)


def _worst_move(seat: _Seat, i: int) -> WorstMove:
    m = seat.game.moves
    board = seat.game.boards[i]
    return WorstMove(
        run=seat.game.run, game=seat.game.game, move=int(m.number[i]),
        color="black" if seat.color == BLACK else "white",
        loss=round(float(m.loss[i]), 2), played=_point_text(m.played[i]),
        katago=_point_text(m.best[i]), played_index=int(m.played[i]),
        katago_index=int(m.best[i]), lead=round(float(m.lead[i]), 2),
        policy_rank=int(m.rank[i]), sgf=seat.game.sgf,
        board="".join(_STONES[int(s)] for s in board.reshape(-1)),
    )


def _player(seats: Sequence[_Seat]) -> PlayerQuality:
    t = summary.tally(_pairs(seats))
    return PlayerQuality(
        games=t.games,
        moves=t.moves,
        phase_moves={phase: int(t.sums[:, p, 0].sum())
                     for p, (phase, _, _) in enumerate(summary.PHASES)},
        excluded=Excluded(t.opening, t.fallback, t.unlabelled),
        fallback_mean_loss=round(t.fallback_loss / t.fallback_labelled, 3)
        if t.fallback_labelled else None,
        phases={phase: {name: _interval(i) for name, i in stats.items()}
                for phase, stats in summary.estimates(t).items()},
        curve=[CurvePoint(m, round(loss, 3), n)
               for m, loss, n in summary.loss_by_move(_pairs(seats), CURVE_BUCKET)],
        histogram=summary.loss_histogram(_pairs(seats), HISTOGRAM_EDGES),
        worst=[_worst_move(seats[g], i) for g, i in summary.worst(_pairs(seats), WORST)],
    )


def _head_to_head(seats: dict[str, list[_Seat]], player: str, opponent: str,
                  elo_decided: Decided) -> PairQuality:
    mine = {s.key: s for s in seats.get(player, ())}
    theirs = {s.key: s for s in seats.get(opponent, ())}
    shared = [k for k in mine if k in theirs and mine[k].color != theirs[k].color]
    a = summary.tally([(mine[k].game.moves, mine[k].color) for k in shared])
    b = summary.tally([(theirs[k].game.moves, theirs[k].color) for k in shared])
    difference = summary.loss_difference(a, b)
    first, steady = summary.first_decided(a, b)
    return PairQuality(
        player=player, opponent=opponent, games=len(shared),
        difference=_interval(difference),
        by_phase={phase: _interval(summary.loss_difference(a, b, phase=p))
                  for p, (phase, _, _) in enumerate(summary.PHASES)},
        better=verdict.better(player, opponent, difference),
        sentence=verdict.sentence(player, opponent, difference, len(shared)),
        quality_decided=Decided(len(shared), first, steady),
        elo_decided=elo_decided,
    )


def quality_report(games: Sequence[JudgedGame], pairs: Sequence[tuple[str, str]],
                   elo_decided: Callable[[str, str], Decided], labels: LabelSettings,
                   counts: Counts) -> QualityReport:
    """The section over ``games`` (in the report's order): every player's numbers, and
    those of each head-to-head in ``pairs`` (player, opponent) whose players both have
    judged games, with the Elo verdict's ``elo_decided(player, opponent)`` beside."""
    seats = _seats(games)
    return QualityReport(
        available=True,
        labels=labels,
        counts=counts,
        method=dict(METHOD),
        phases=[name for name, _, _ in summary.PHASES],
        histogram_edges=list(HISTOGRAM_EDGES),
        players={name: _player(s) for name, s in seats.items()},
        head_to_head=[_head_to_head(seats, player, opponent, elo_decided(player, opponent))
                      for player, opponent in pairs if player in seats and opponent in seats],
    )
