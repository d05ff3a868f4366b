"""The report's move-quality section: the runs' games joined with their KataGo labels
(:mod:`orchestrator.review.games`), the numbers of :mod:`orchestrator.quality.summary` per
player and per head-to-head, as JSON-ready values (``report["quality"]``).

Label folders: the ones given (``--labels``), else each run's own ``RUN_DIR/labels`` (where
``go19 review`` writes them). Without any, the section says how to get one. A game counts
when it has labels; the players' numbers are over their counted moves (own moves labelled
before and after; opening-book and fallback moves counted apart).

Per head-to-head it also says after how many games each verdict's interval first excluded 0:
the quality verdict's over the labelled games, the Elo verdict's over every rated game of the
pair (in the order the report counts them, and as it counts them: pentanomial pairs once both
games are in), so the two can be compared on the same run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS, from_index, to_gtp
from orchestrator.label.store import LabelError, LabelSet
from orchestrator.positions.samples import read_file
from orchestrator.quality import summary
from orchestrator.quality.summary import Interval
from orchestrator.ratings import estimate
from orchestrator.recordings import rated_game
from orchestrator.report import series
from orchestrator.report.load import GameData, RunData, Warn
from orchestrator.report.stats import checked_pairs, chronological
from orchestrator.review import verdict
from orchestrator.review.games import ReviewedGame, review_game
from orchestrator.words import plural

LABELS_DIR = "labels"  # RUN_DIR/labels: where go19 review labels a run
WORST = 10
HISTOGRAM_EDGES = tuple(float(e) for e in range(0, 21))  # points lost; the last bin: 19 and up
CURVE_BUCKET = 10  # moves per point of the loss-over-move-number curve
_STONES = {0: ".", BLACK: "X", WHITE: "O"}

HINT = ("No KataGo labels for these runs, so no move quality: `go19 review RUN_DIR` labels "
        "a run's games into RUN_DIR/labels (`make katago` first; slow on a CPU: "
        "--max-games, --max-moves) and writes this report with the section; `go19 report "
        "--labels DIR` uses a label folder made otherwise (`go19 label --review`).")


@dataclass(frozen=True, slots=True)
class _Seat:
    """One player's side of one reviewed game."""

    game: ReviewedGame
    data: GameData
    color: int


def label_folders(runs: Sequence[RunData], given: Sequence[Path] | None) -> list[Path]:
    """The label folders a report uses: the given ones, else the runs' own."""
    if given:
        return [Path(p) for p in given]
    return [run.path / LABELS_DIR for run in runs if (run.path / LABELS_DIR).is_dir()]


def _num(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _interval(i: Interval, digits: int = 3) -> dict:
    return {k: None if (v := _num(x)) is None else round(v, digits)
            for k, x in (("value", i.value), ("low", i.low), ("high", i.high))}


def _find(sets: Sequence[LabelSet], sha1: str | None, game_index: int | None):
    for labels in sets:
        found = labels.game(sha1, game_index)
        if found is not None:
            return found
    return None


def _reviewed(runs: Sequence[RunData], sets: Sequence[LabelSet],
              warn: Warn) -> tuple[list[tuple[GameData, ReviewedGame]], dict]:
    """The runs' finished games with labels, in the report's order, and the counts."""
    out = []
    counts = {"games": 0, "labelled": 0, "unlabelled": 0, "unreadable": 0, "key_mismatch": 0}
    paths = {run.run_id: run.path for run in runs}
    for data in chronological(runs):
        line = data.line
        if line.void:
            continue
        counts["games"] += 1
        path = paths.get(line.run, Path(".")) / line.sgf
        reads = [r for r in read_file(path) if r.status == "ok"] if path.is_file() else []
        if not reads:
            counts["unreadable"] += 1
            continue
        labels = _find(sets, reads[0].sha1, reads[0].game_index)
        if labels is None:
            counts["unlabelled"] += 1
            continue
        game = review_game(reads[0], labels)
        counts["key_mismatch"] += game.key_mismatch
        counts["labelled"] += 1
        out.append((data, game))
    if counts["key_mismatch"]:
        warn(f"move quality: {plural(counts['key_mismatch'], 'label')} made for other "
             "positions than the games' (key mismatch) left out")
    return out, counts


def _seats(reviewed: Sequence[tuple[GameData, ReviewedGame]]) -> dict[str, list[_Seat]]:
    seats: dict[str, list[_Seat]] = {}
    for data, game in reviewed:
        seats.setdefault(data.line.black, []).append(_Seat(game, data, BLACK))
        seats.setdefault(data.line.white, []).append(_Seat(game, data, WHITE))
    return dict(sorted(seats.items()))


def _pairs(seats: Sequence[_Seat]) -> list[tuple]:
    return [(s.game.moves, s.color) for s in seats]


def _player(seats: Sequence[_Seat]) -> dict:
    t = summary.tally(_pairs(seats))
    phases = summary.estimates(t)
    return {
        "games": t.games,
        "moves": t.moves,
        "phase_moves": {phase: int(t.sums[:, p, 0].sum())
                        for p, (phase, _, _) in enumerate(summary.PHASES)},
        "excluded": {"opening": t.opening, "fallback": t.fallback, "unlabelled": t.unlabelled},
        "fallback_mean_loss": round(t.fallback_loss / t.fallback_labelled, 3)
        if t.fallback_labelled else None,
        "phases": {phase: {name: _interval(i) for name, i in stats.items()}
                   for phase, stats in phases.items()},
        "curve": [{"move": m, "loss": round(loss, 3), "moves": n}
                  for m, loss, n in summary.loss_by_move(_pairs(seats), CURVE_BUCKET)],
        "histogram": summary.loss_histogram(_pairs(seats), HISTOGRAM_EDGES),
        "worst": [_worst_move(seats[g], i) for g, i in summary.worst(_pairs(seats), WORST)],
    }


def _point_text(index: int) -> str:
    point = from_index(int(index), 19)
    return "pass" if point == PASS else to_gtp(point, 19)


def _worst_move(seat: _Seat, i: int) -> dict:
    m = seat.game.moves
    board = seat.game.board(i)
    return {
        "run": seat.data.line.run, "game": seat.data.line.game, "move": int(m.number[i]),
        "color": "black" if seat.color == BLACK else "white",
        "loss": round(float(m.loss[i]), 2), "played": _point_text(m.played[i]),
        "katago": _point_text(m.best[i]), "played_index": int(m.played[i]),
        "katago_index": int(m.best[i]),
        "lead": round(float(m.lead[i]), 2),  # Black's, before the move
        "policy_rank": int(m.rank[i]),
        "sgf": str(Path(seat.game.read.path)),
        "board": "".join(_STONES[int(s)] for s in board.reshape(-1)),
    }


def _elo_decided(runs: Sequence[RunData], player: str, opponent: str) -> dict:
    """After how many rated games of the pair the Elo interval first excluded 0, and from
    which game on it always did, counted as the report counts the head-to-head."""
    outcomes = [o for o in (rated_game(g.line) for g in chronological(runs)) if o is not None]
    games = [g for g in outcomes if {g.black, g.white} == {player, opponent}]
    games = checked_pairs(games, player, opponent, "", lambda _: None)
    first = steady = None
    for k, counts in series.running_counts(games, player):
        est = estimate(counts)
        low, high = est.elo_low, est.elo_high
        decided = low is not None and high is not None and (low > 0 or high < 0)
        if decided:
            first = k if first is None else first
            steady = k if steady is None else steady
        else:
            steady = None
    return {"games": len(games), "first": first, "steady": steady}


def _head_to_head(runs: Sequence[RunData], seats: dict[str, list[_Seat]],
                  player: str, opponent: str) -> dict:
    mine = {id(s.game): s for s in seats.get(player, ())}
    theirs = {id(s.game): s for s in seats.get(opponent, ())}
    shared = [k for k in mine if k in theirs and mine[k].color != theirs[k].color]
    a = summary.tally([(mine[k].game.moves, mine[k].color) for k in shared])
    b = summary.tally([(theirs[k].game.moves, theirs[k].color) for k in shared])
    difference = summary.loss_difference(a, b)
    first, steady = summary.first_decided(a, b)
    return {
        "player": player, "opponent": opponent, "games": len(shared),
        "difference": _interval(difference),
        "by_phase": {phase: _interval(summary.loss_difference(a, b, phase=p))
                     for p, (phase, _, _) in enumerate(summary.PHASES)},
        "better": verdict.better(player, opponent, difference),
        "sentence": verdict.sentence(player, opponent, difference, len(shared)),
        "quality_decided": {"games": len(shared), "first": first, "steady": steady},
        "elo_decided": _elo_decided(runs, player, opponent),
    }


def _settings(sets: Sequence[LabelSet]) -> dict:
    first = sets[0].manifest
    engine = first.get("engine") or {}
    settings = first.get("settings") or {}
    return {"folders": [str(s.folder) for s in sets], "katago": engine.get("version"),
            "models": engine.get("model_names"), "visits": settings.get("visits"),
            "max_moves": settings.get("max_moves"), "review": bool(settings.get("review"))}


def section(runs: Sequence[RunData], head_to_head: Sequence[dict],
            labels: Sequence[Path] | None, warn: Warn) -> dict:
    """``report["quality"]``: ``{"available": False, "hint": ...}`` without labels."""
    folders = label_folders(runs, labels)
    sets = []
    for folder in folders:
        try:
            sets.append(LabelSet(folder))
        except (LabelError, OSError) as exc:
            warn(f"move quality: {folder}: {exc}; left out")
    if not sets:
        return {"available": False, "hint": HINT}
    reviewed, counts = _reviewed(runs, sets, warn)
    seats = _seats(reviewed)
    pairs = [_head_to_head(runs, seats, h["player"], h["opponent"]) for h in head_to_head
             if h["player"] in seats and h["opponent"] in seats]
    return {
        "available": True,
        "labels": _settings(sets),
        "counts": counts,
        "method": {
            "point_loss": "player_sign × (scoreLead before − scoreLead after), Black +1, "
                          "White −1 (KaTrain, katrain/core/game_node.py points_lost)",
            "mean_loss": "mean of max(0, point loss) over counted moves (KaTrain game_report)",
            "accuracy": f"100 × {summary.ACCURACY_BASE} ** mean point loss (KaTrain "
                        "game_report, every move weighted 1)",
            "top5": f"policy rank ≤ {summary.TOP_N}",
            "blunders": "moves losing ≥ 3, 6, 12 points per 100 moves (KaTrain "
                        "eval_thresholds)",
            "interval": f"{100 * summary.CONFIDENCE:g} % percentile bootstrap over games, "
                        f"{summary.RESAMPLES} resamples, seed {summary.SEED}",
        },
        "phases": [name for name, _, _ in summary.PHASES],
        "histogram_edges": list(HISTOGRAM_EDGES),
        "players": {name: _player(s) for name, s in seats.items()},
        "head_to_head": pairs,
    }

