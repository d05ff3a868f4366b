"""What the report shows over games and per game: running counts (for the Elo and LLR
curves), fallback rates over the run, margins of victory, the per-game and per-pair
tables, and the run's pace. Inputs are loaded runs and rated games; outputs are the
report's typed values (:mod:`.model`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np

from orchestrator.ratings import Counts, GameOutcome, Pentanomial, Wdl
from orchestrator.recordings import VOID_DIR
from orchestrator.report.load import GameData, RunData
from orchestrator.report.model import GameRow, Margins, Pace, PairRow, RatePoint

CURVE_POINTS = 200  # a curve over games is sampled at most this often
RATE_BUCKETS = 25  # the fallback-rate curve averages games in at most this many buckets
RATE_MIN_GAMES = 5  # … of at least this many games each, so one game's burst is not a spike


def marks(n: int, points: int = CURVE_POINTS) -> set[int]:
    """Which of games 1..n a curve samples: all of them up to ``points``, then evenly."""
    return {max(1, round(n * k / points)) for k in range(1, points + 1)} if n else set()


def running_counts(games: Sequence[GameOutcome], player: str) -> Iterator[tuple[int, Counts]]:
    """After each game k: the counts of the first k games as the report counts them
    (pentanomial pairs once both games are in when any game is paired, else W/L/D).
    The pair keys must already be checked (:func:`stats.checked_pairs`)."""
    paired = any(g.pair is not None for g in games)
    results = [0, 0, 0]  # games by points taken: loss, draw, win
    penta = [0] * 5
    pending: dict = {}
    for k, game in enumerate(games, 1):
        got = game.points_for(player)
        if not paired:
            results[round(2 * got)] += 1
        elif game.pair is not None:
            if game.pair in pending:
                penta[round(2 * (pending.pop(game.pair) + got))] += 1
            else:
                pending[game.pair] = got
        yield k, Pentanomial(*penta) if paired else Wdl(results[2], results[0], results[1])


def pair_rows(games: Sequence[GameData], player: str, opponent: str) -> list[PairRow]:
    """Each opening pair of ``player`` against ``opponent``: its games and, once both are
    in, the points ``player`` took (the pair's pentanomial outcome: 0, ½, 1, 1½ or 2)."""
    pairs: dict[tuple[str, int], list[GameData]] = {}
    for g in games:
        line = g.line
        if line.void or line.opening is None or line.opening.pair is None:
            continue
        if {line.black, line.white} != {player, opponent}:
            continue
        pairs.setdefault((line.run, line.opening.pair), []).append(g)
    rows = []
    for (run, pair), members in sorted(pairs.items()):
        points = None
        if len(members) == 2 and all(m.line.winner is not None for m in members):
            points = sum(_points(m, player) for m in members)
        opening = members[0].line.opening
        rows.append(PairRow(
            run=run, pair=pair, opening=opening.id if opening is not None else "",
            games=[m.line.game for m in members],
            results=[m.line.result for m in members],
            points=points,
        ))
    return rows


def _points(game: GameData, player: str) -> float:
    winner = game.line.winner
    if winner == "draw":
        return 0.5
    return float((game.line.black if winner == "black" else game.line.white) == player)


def game_rows(games: Sequence[GameData], runs: Sequence[RunData]) -> list[GameRow]:
    """One row per recorded game, void included, with where its SGF is."""
    paths = {run.run_id: run.path for run in runs}
    rows = []
    for g in games:
        line = g.line
        folder = paths.get(line.run, Path("."))
        sgf = folder / VOID_DIR / line.sgf if line.void else folder / line.sgf
        rows.append(GameRow(
            run=line.run, game=line.game,
            pair=line.opening.pair if line.opening is not None else None,
            black=line.black, white=line.white, result=line.result or "?",
            reason="void" if line.void else line.reason, moves=line.moves,
            fallbacks={n: sum(c.values()) for n, c in line.fallbacks.items()
                       if sum(c.values())},
            sgf=str(sgf),
            said={n: [note.model_dump(mode="json", exclude_none=True) for note in notes]
                  for n, notes in sorted(line.replies.items()) if notes},
        ))
    return rows


def fallback_curves(games: Sequence[GameData],
                    asked: Sequence[Counter]) -> dict[str, list[RatePoint]]:
    """Per player, its fallbacks per move asked over the run, in at most RATE_BUCKETS
    buckets of consecutive games it played: an adapter that degrades shows as a rise."""
    per_player: dict[str, list[tuple[int, int, int]]] = {}
    for k, (g, ask) in enumerate(zip(games, asked, strict=True), 1):
        for name in {g.line.black, g.line.white}:
            fb = sum(g.line.fallbacks.get(name, {}).values())
            per_player.setdefault(name, []).append((k, fb, ask[name]))
    curves = {}
    for name, rows in sorted(per_player.items()):
        size = max(RATE_MIN_GAMES, math.ceil(len(rows) / RATE_BUCKETS))
        points = []
        for i in range(0, len(rows), size):
            chunk = rows[i:i + size]
            n_asked = sum(r[2] for r in chunk)
            if n_asked:
                points.append(RatePoint(chunk[-1][0], sum(r[1] for r in chunk) / n_asked))
        curves[name] = points
    return curves


def margins(games: Sequence[GameData], player: str | None) -> Margins:
    """How much games were won by, in points from ``player``'s side (Black's when None);
    resignations counted apart since they have no margin."""
    values = []
    resign: Counter[str] = Counter()
    for g in games:
        line = g.line
        if line.void or line.winner is None:
            continue
        if player is not None and player not in (line.black, line.white):
            continue
        sign = -1.0 if player is not None and line.white == player else 1.0
        if line.score is not None:
            values.append(sign * line.score)
        elif line.reason == "resign":
            won = _points(g, player) if player is not None else float(line.winner == "black")
            resign["won" if won == 1.0 else "lost"] += 1
    bin_edges: list[float] = []
    bin_counts: list[int] = []
    if values:
        top = max(abs(v) for v in values)
        step = max(1.0, _nice(top / 8))
        edge = math.ceil(top / step + 1e-9) * step
        edges = list(np.arange(-edge, edge + step / 2, step))
        counts, _ = np.histogram(values, bins=edges)
        bin_edges = [float(e) for e in edges]
        bin_counts = [int(c) for c in counts]
    return Margins(player=player or "Black", games=len(values), resign_won=resign["won"],
                   resign_lost=resign["lost"], bin_edges=bin_edges, counts=bin_counts)


def _nice(raw: float) -> float:
    if raw <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _stamp(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def pace(runs: Sequence[RunData]) -> Pace:
    """Run duration (first game started to last finished, summed over runs), games per
    hour and moves per second over that time."""
    duration = 0.0
    finished = moves = 0
    for run in runs:
        starts = [s for s in (_stamp(g.line.started) for g in run.games) if s]
        ends = [s for s in (_stamp(g.line.finished) for g in run.games) if s]
        if starts and ends:
            duration += max((max(ends) - min(starts)).total_seconds(), 0.0)
        finished += sum(not g.line.void for g in run.games)
        moves += sum(g.line.moves for g in run.games)
    return Pace(
        duration_s=duration,
        games_per_hour=finished / duration * 3600 if duration > 0 else None,
        moves_per_s=moves / duration if duration > 0 else None,
    )
