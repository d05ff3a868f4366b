"""Every number in a report, from loaded runs to one JSON-ready dict (``report.json``).

The Elo maths is :mod:`orchestrator.ratings`; this module only decides which games go
where:

- *recorded* games are every journal line; *void* ones count in the totals, the
  termination reasons and the fallback rates, never in results or ratings;
- *rated* games are finished, have a winner (or a jigo) and two distinct players;
- head to head, paired openings (``opening.pair``) make pentanomial counts, as
  collect's SPRT and dashboard do, so the numbers agree with what collect printed;
  the per-game (trinomial) estimate is given beside them;
- a move is *asked* of a player when its own policy was consulted: every move it
  played except opening-book moves, plus a resignation, plus fallbacks that were
  never played (the one that made a game void).

Non-finite numbers (a clean sweep has Elo +inf) are written as the strings ``"+inf"``
and ``"-inf"``, which ``float()`` reads back.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from orchestrator.ratings import (
    Counts,
    EloEstimate,
    GameOutcome,
    Pentanomial,
    RatingsError,
    Wdl,
    aggregate,
    bradley_terry,
    estimate,
    pentanomial_from_games,
    split_by_colour,
    sprt,
)
from orchestrator.recordings import head_to_head, rated_game
from orchestrator.report.load import GameData, RunData, Warn

SCHEMA = 1
REASONS = ("two-passes", "resign", "move-cap", "void")
CURVE_POINTS = 200  # the Elo-over-games line is sampled at most this often
LATENCY_METHOD_APPROX = (
    "pooled from each game's (n, p50, p95, max) in games.jsonl: a game's quantile "
    "function is taken as linear from p50 to p95 to max and flat at p50 below the "
    "median; n and max are exact, p95/p99 are interpolations and p50 leans high"
)


def num(value: float | None) -> float | str | None:
    if value is None or math.isfinite(value):
        return value
    return "+inf" if value > 0 else "-inf"


def _wdl(wdl: Wdl) -> dict:
    return {"games": wdl.games, "wins": wdl.wins, "losses": wdl.losses, "draws": wdl.draws}


def _estimate(est: EloEstimate) -> dict:
    return {
        "samples": est.samples, "score": est.score, "elo": num(est.elo),
        "elo_low": num(est.elo_low), "elo_high": num(est.elo_high), "error": num(est.error),
        "los": est.los, "nelo": num(est.nelo), "nelo_error": num(est.nelo_error),
    }


def _outcome(game: GameData) -> GameOutcome | None:
    return rated_game(game.line)


def chronological(runs: Sequence[RunData]) -> list[GameData]:
    games = [g for run in runs for g in run.games]
    return sorted(games, key=lambda g: (g.line.finished, g.line.run, g.line.game))


def head_to_head_counts(games: Sequence[GameOutcome], player: str, opponent: str) -> Counts:
    """Pentanomial counts when any game came from a paired opening, else W/L/D."""
    return head_to_head(games, player, opponent)


def checked_pairs(games: Sequence[GameOutcome], player: str, opponent: str, where: str,
                  warn: Warn) -> list[GameOutcome]:
    """``games``, or the same games unpaired (one warning) when their pair keys do not
    form colour-swapped twins, so the counts fall back to W/L/D instead of failing."""
    try:
        pentanomial_from_games(games, player, opponent)
    except RatingsError as exc:
        warn(f"{where}: {exc}; counted as single games")
        return [GameOutcome(g.black, g.white, g.winner) for g in games]
    return list(games)


# -- totals and termination --------------------------------------------------------


def _totals(runs: Sequence[RunData], games: Sequence[GameData]) -> dict:
    finished = [g for g in games if not g.line.void]
    rated = [g for g in finished if _outcome(g) is not None]
    return {
        "runs": len(runs),
        "games": len(games),
        "finished": len(finished),
        "void": len(games) - len(finished),
        "rated": len(rated),
        "draws": sum(g.line.winner == "draw" for g in rated),
        "no_result": sum(g.line.winner is None for g in finished),
        "self_play": sum(g.line.black == g.line.white for g in finished),
        "moves": sum(g.line.moves for g in games),
    }


def _termination(games: Iterable[GameData]) -> dict[str, int]:
    counts = Counter("void" if g.line.void else g.line.reason for g in games)
    return {**{r: counts.pop(r, 0) for r in REASONS}, **dict(sorted(counts.items()))}


def nice_step(span: float, bins: int) -> float:
    """A 1, 2 or 5 times a power of ten close to ``span / bins`` (at least 1)."""
    raw = max(span / max(bins, 1), 1.0)
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _lengths(games: Iterable[GameData]) -> dict:
    moves = sorted(g.line.moves for g in games if not g.line.void)
    if not moves:
        return {"games": 0, "min": None, "max": None, "mean": None, "median": None,
                "bin_edges": [], "counts": []}
    step = int(nice_step(moves[-1] - moves[0] + 1, 20))
    low = moves[0] // step * step
    edges = list(range(low, moves[-1] + step + 1, step))
    counts, _ = np.histogram(moves, bins=edges)
    return {
        "games": len(moves), "min": moves[0], "max": moves[-1],
        "mean": float(np.mean(moves)), "median": float(np.median(moves)),
        "bin_edges": edges, "counts": [int(c) for c in counts],
    }


# -- per player --------------------------------------------------------------------


def _asked(game: GameData) -> Counter:
    """Moves asked of each player in one game (see the module docstring)."""
    line = game.line
    asked: Counter = Counter()
    for colour, name in (("black", line.black), ("white", line.white)):
        if game.moves is not None:
            asked[name] += game.moves[colour].own
        else:  # no SGF: every played move of that colour past the opening book
            first = colour == "black"
            book = line.opening.plies if line.opening is not None else 0
            asked[name] += (line.moves + first) // 2 - (book + first) // 2
    if game.moves is not None:
        for name in {line.black, line.white}:
            asked[name] += sum(line.fallbacks.get(name, {}).values())
    if line.reason == "resign" and line.winner in ("black", "white"):
        asked[line.white if line.winner == "black" else line.black] += 1
    return asked


def pooled_latency(summaries: Iterable[tuple[int, float, float, float]]) -> dict:
    """p50/p95/p99 over every move of several games known only by (n, p50, p95, max)."""
    pooled = []
    top = -math.inf
    for n, p50, p95, peak in summaries:
        u = (np.arange(n) + 0.5) / n
        pooled.append(np.interp(u, [0.0, 0.5, 0.95, 1.0], [p50, p50, p95, peak]))
        top = max(top, peak)
    if not pooled:
        return {"n": 0, "p50": None, "p95": None, "p99": None, "max": None}
    samples = np.concatenate(pooled)
    p50, p95, p99 = (round(float(v), 2) for v in np.percentile(samples, [50, 95, 99]))
    return {"n": int(samples.size), "p50": p50, "p95": p95, "p99": p99, "max": round(top, 2)}


def exact_latency(samples: list[float]) -> dict:
    """p50/p95/p99 over every recorded per-move answer time (GOXIXMS)."""
    arr = np.asarray(samples)
    p50, p95, p99 = (round(float(v), 2) for v in np.percentile(arr, [50, 95, 99]))
    return {"n": int(arr.size), "p50": p50, "p95": p95, "p99": p99,
            "max": round(float(arr.max()), 2), "method": "exact"}


def _players(games: Sequence[GameData], outcomes: Sequence[GameOutcome]) -> dict[str, dict]:
    names = sorted({n for g in games for n in (g.line.black, g.line.white)})
    meta: dict[str, dict] = {n: {} for n in names}
    endpoints: dict[str, set[str]] = {n: set() for n in names}
    asked: Counter = Counter()
    fallbacks: dict[str, Counter] = {n: Counter() for n in names}
    latency: dict[str, list] = {n: [] for n in names}
    # Exact samples from the SGFs; usable only if every game's journal count matches.
    samples: dict[str, list[float]] = {n: [] for n in names}
    exact: dict[str, bool] = {n: True for n in names}
    games_played: Counter = Counter()
    estimated = Counter()
    for game in games:
        line = game.line
        asked.update(_asked(game))
        for name in {line.black, line.white}:
            games_played[name] += 1
            estimated[name] += game.moves is None
            info = line.players.get(name) or {}
            meta[name] = {**meta[name], **{k: v for k, v in info.items() if v is not None}}
            if info.get("endpoint"):
                endpoints[name].add(str(info["endpoint"]))
            fallbacks[name].update(line.fallbacks.get(name, {}))
            lat = line.latency_ms.get(name)
            if lat is not None and lat.n and None not in (lat.p50, lat.p95, lat.max):
                latency[name].append((lat.n, lat.p50, lat.p95, lat.max))
            recorded = [] if game.moves is None else [
                ms for colour in ("black", "white")
                if getattr(line, colour) == name
                for ms in game.moves[colour].latency_ms
            ]
            if lat is not None and lat.n:
                exact[name] = exact[name] and len(recorded) == lat.n
            samples[name].extend(recorded)
    out = {}
    for name in names:
        split = split_by_colour(outcomes, name)
        n_asked = asked[name]
        fb = fallbacks[name]
        illegal = sum(c for r, c in fb.items() if r.startswith("illegal:"))
        total_fb = sum(fb.values())
        out[name] = {
            "kind": meta[name].get("kind"),
            "meta": meta[name],
            "endpoints": sorted(endpoints[name]),
            "games": games_played[name],
            "results": _wdl(split.overall),
            "as_black": _wdl(split.as_black),
            "as_white": _wdl(split.as_white),
            "moves_asked": n_asked,
            "moves_asked_estimated_games": estimated[name],
            "fallbacks": dict(sorted(fb.items())),
            "fallback_total": total_fb,
            "fallback_rate": total_fb / n_asked if n_asked else None,
            "fallback_rate_by_reason": {
                r: c / n_asked if n_asked else None for r, c in sorted(fb.items())
            },
            "illegal": illegal,
            "illegal_rate": illegal / n_asked if n_asked else None,
            "latency_ms": (
                exact_latency(samples[name]) if exact[name] and samples[name]
                else {**pooled_latency(latency[name]), "method": "approx-per-game"}
            ),
        }
    return out


# -- head to head, SPRT, ratings --------------------------------------------------


def _orientation(runs: Sequence[RunData], a: str, b: str) -> tuple[str, str]:
    """The matchup's Black first (the candidate, e.g. r5 against r4), else by name."""
    for run in runs:
        pairing = run.matchup.get("pairing") or {}
        if {pairing.get("black"), pairing.get("white")} == {a, b}:
            return pairing["black"], pairing["white"]
    return a, b


def _curve(games: Sequence[GameOutcome], player: str, opponent: str) -> list[dict]:
    """Elo and interval after the k-th game, as :func:`head_to_head_counts` would count
    the first k games (pairs count once both games are in), at most CURVE_POINTS times.
    Counted in one pass: the pair keys were checked by :func:`checked_pairs`."""
    n = len(games)
    marks = {max(1, round(n * k / CURVE_POINTS)) for k in range(1, CURVE_POINTS + 1)}
    paired = any(g.pair is not None for g in games)
    results = [0, 0, 0]  # games by points taken: loss, draw, win
    penta = [0] * 5
    pending: dict = {}
    points = []
    for k, game in enumerate(games, 1):
        got = game.points_for(player)
        if not paired:
            results[round(2 * got)] += 1
        elif game.pair is not None:
            if game.pair in pending:
                penta[round(2 * (pending.pop(game.pair) + got))] += 1
            else:
                pending[game.pair] = got
        if k not in marks:
            continue
        counts = Pentanomial(*penta) if paired else Wdl(results[2], results[0], results[1])
        est = estimate(counts)
        if est.elo is not None:
            points.append({"games": k, "elo": num(est.elo), "low": num(est.elo_low),
                           "high": num(est.elo_high)})
    return points


def _sprt_config(run: RunData, warn: Warn) -> dict | None:
    stop = run.matchup.get("stop") or {}
    config = stop.get("sprt") if isinstance(stop, dict) else None
    if not config:
        return None
    if not isinstance(config, dict):
        warn(f"{run.path}: run.json matchup.stop.sprt is not a table; SPRT left out")
        return None
    return {"elo0": 0.0, "elo1": 30.0, "alpha": 0.05, "beta": 0.05, "model": "logistic",
            **config}


def _sprt(run: RunData, warn: Warn) -> dict | None:
    config = _sprt_config(run, warn)
    pairing = run.matchup.get("pairing") or {}
    black, white = pairing.get("black"), pairing.get("white")
    if config is None or not black or not white or black == white:
        return None
    games = [o for o in map(_outcome, run.games) if o is not None]
    games = checked_pairs(games, black, white, f"{run.path} (SPRT)", warn)
    counts = head_to_head_counts(games, black, white)
    try:
        result = sprt(counts, float(config["elo0"]), float(config["elo1"]),
                      float(config["alpha"]), float(config["beta"]), config["model"])
    except (RatingsError, TypeError, ValueError) as exc:
        warn(f"{run.path}: SPRT not computed: {exc}")
        return None
    status = {"H1": "accepted H1", "H0": "accepted H0", None: "continue"}[result.decision]
    return {
        "run": run.run_id, "player": black, "opponent": white,
        "elo0": config["elo0"], "elo1": config["elo1"], "alpha": config["alpha"],
        "beta": config["beta"], "model": config["model"],
        "counts": "pairs" if isinstance(counts, Pentanomial) else "games",
        "samples": counts.pairs if isinstance(counts, Pentanomial) else counts.games,
        "llr": result.llr, "lower": result.lower, "upper": result.upper,
        "decision": result.decision, "status": status,
    }


def _head_to_head(runs: Sequence[RunData], outcomes: Sequence[GameOutcome],
                  sprts: Sequence[dict], warn: Warn) -> list[dict]:
    pairs = sorted({tuple(sorted((g.black, g.white))) for g in outcomes})
    sections = []
    for a, b in pairs:
        player, opponent = _orientation(runs, a, b)
        games = [g for g in outcomes if {g.black, g.white} == {a, b}]
        games = checked_pairs(games, player, opponent, f"{player} vs {opponent}", warn)
        split = split_by_colour(games, player, opponent)
        counts = head_to_head_counts(games, player, opponent)
        penta = counts if isinstance(counts, Pentanomial) else None
        sections.append({
            "player": player,
            "opponent": opponent,
            "games": len(games),
            "results": _wdl(split.overall),
            "as_black": _wdl(split.as_black),
            "as_white": _wdl(split.as_white),
            "counts": "pairs" if penta else "games",
            "pentanomial": list(penta.counts) if penta else None,
            "estimate": _estimate(estimate(counts)),
            "estimate_games": _estimate(estimate(split.overall)),
            "curve": _curve(games, player, opponent),
            "sprt": [s for s in sprts if {s["player"], s["opponent"]} == {a, b}],
        })
    return sections


def _ratings(outcomes: Sequence[GameOutcome], anchor: Mapping[str, float] | None,
             warn: Warn) -> dict | None:
    table = aggregate(outcomes)
    players = sorted({p for pair in table for p in pair})
    if len(players) < 2:
        return None
    default = not anchor
    anchor = dict(anchor) if anchor else {players[0]: 0.0}
    try:
        fit = bradley_terry(table, anchor=anchor)
    except RatingsError as exc:
        warn(f"ratings not computed: {exc}")
        return {"error": str(exc), "anchor": anchor, "anchor_default": default}
    rows = []
    for upper, lower in zip(fit.rows, [*fit.rows[1:], None], strict=True):
        rows.append({
            "player": upper.player, "elo": upper.elo, "stderr": upper.stderr,
            "games": upper.games, "wins": upper.wins, "losses": upper.losses,
            "draws": upper.draws,
            "los_next": fit.los(upper.player, lower.player) if lower else None,
        })
    return {
        "method": "Bradley-Terry maximum likelihood with a Black-advantage term "
                  "(2 virtual draws per player as prior)",
        "anchor": anchor, "anchor_default": default,
        "black_advantage": fit.black_advantage,
        "black_advantage_stderr": fit.black_advantage_stderr,
        "rows": rows,
    }


def _run_summary(run: RunData, sprt_result: dict | None) -> dict:
    finished = sum(not g.line.void for g in run.games)
    pairing = run.matchup.get("pairing") or {}
    return {
        "run_id": run.run_id, "path": str(run.path), "started": run.info.get("started"),
        "games_target": run.info.get("games_target"), "games": len(run.games),
        "finished": finished, "void": len(run.games) - finished,
        "pairing": {k: pairing.get(k) for k in ("black", "white")} if pairing else None,
        "size": (run.matchup.get("game") or {}).get("size"),
        "komi": (run.matchup.get("game") or {}).get("komi"),
        "sprt": sprt_result,
    }


def compute(runs: Sequence[RunData], anchor: Mapping[str, float] | None, warn: Warn) -> dict:
    """The whole report as plain JSON-ready values (see the module docstring)."""
    games = chronological(runs)
    outcomes = [o for o in map(_outcome, games) if o is not None]
    sprts = {run.run_id: _sprt(run, warn) for run in runs}
    ratings = _ratings(outcomes, anchor, warn)
    players = _players(games, outcomes)
    notes = []
    if any(p["latency_ms"]["n"] and p["latency_ms"]["method"] != "exact"
           for p in players.values()):
        notes.append(f"latency percentiles are {LATENCY_METHOD_APPROX}")
    if any(g.line.black == g.line.white for g in games):
        notes.append("self-play games count in totals and fallback rates, not in results")
    return {
        "schema": SCHEMA,
        "runs": [_run_summary(run, sprts[run.run_id]) for run in runs],
        "totals": _totals(runs, games),
        "termination": _termination(games),
        "lengths": _lengths(games),
        "players": players,
        "head_to_head": _head_to_head(runs, outcomes, [s for s in sprts.values() if s], warn),
        "ratings": ratings,
        "notes": notes,
    }
