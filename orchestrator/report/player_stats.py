"""The per-player part of a report: results by colour, fallbacks by reason and their
rate per move asked, latency (exact from each SGF's ``GOXIXMS`` when every game has
it, else pooled from the journal's per-game summaries), and for model players that
report ``usage`` their tokens per move and per game."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from orchestrator.ratings import GameOutcome, Wdl, split_by_color
from orchestrator.recordings import TokenCounts
from orchestrator.report.load import GameData
from orchestrator.report.model import Latency, PlayerSection, Results, Tokens

LATENCY_METHOD_APPROX = (
    "pooled from each game's (n, p50, p95, max) in games.jsonl: a game's quantile "
    "function is taken as linear from p50 to p95 to max and flat at p50 below the "
    "median; n and max are exact, p95/p99 are interpolations and p50 leans high"
)


def results(wdl: Wdl) -> Results:
    return Results(games=wdl.games, wins=wdl.wins, losses=wdl.losses, draws=wdl.draws)


def moves_asked(game: GameData) -> Counter:
    """Moves asked of each player in one game (what "asked" means:
    :mod:`orchestrator.report.stats`)."""
    line = game.line
    asked: Counter = Counter()
    for color, name in (("black", line.black), ("white", line.white)):
        if game.moves is not None:
            asked[name] += game.moves[color].own
        else:  # no SGF: every played move of that colour past the opening book
            first = color == "black"
            book = line.opening.plies if line.opening is not None else 0
            asked[name] += (line.moves + first) // 2 - (book + first) // 2
    if game.moves is not None:
        for name in {line.black, line.white}:
            asked[name] += sum(line.fallbacks.get(name, {}).values())
    if line.reason == "resign" and line.winner in ("black", "white"):
        asked[line.white if line.winner == "black" else line.black] += 1
    return asked


def pooled_latency(summaries: Iterable[tuple[int, float, float, float]]) -> Latency:
    """p50/p95/p99 over every move of several games known only by (n, p50, p95, max)."""
    pooled = []
    top = -math.inf
    for n, p50, p95, peak in summaries:
        u = (np.arange(n) + 0.5) / n
        pooled.append(np.interp(u, [0.0, 0.5, 0.95, 1.0], [p50, p50, p95, peak]))
        top = max(top, peak)
    if not pooled:
        return Latency(n=0, p50=None, p95=None, p99=None, max=None, box=None,
                       method="approx-per-game")
    samples = np.concatenate(pooled)
    p50, p95, p99 = (round(float(v), 2) for v in np.percentile(samples, [50, 95, 99]))
    return Latency(n=int(samples.size), p50=p50, p95=p95, p99=p99, max=round(top, 2),
                   box=_box(samples), method="approx-per-game")


def _box(samples: np.ndarray) -> list[float]:
    """min, p25, p50, p75, p95 and max: the latency distribution chart's box."""
    qs = np.percentile(samples, [0, 25, 50, 75, 95, 100])
    return [round(float(v), 2) for v in qs]


def exact_latency(samples: list[float]) -> Latency:
    """p50/p95/p99 over every recorded per-move answer time (GOXIXMS)."""
    arr = np.asarray(samples)
    p50, p95, p99 = (round(float(v), 2) for v in np.percentile(arr, [50, 95, 99]))
    return Latency(n=int(arr.size), p50=p50, p95=p95, p99=p99, max=round(float(arr.max()), 2),
                   box=_box(arr), method="exact")


def token_section(counts: Sequence[TokenCounts]) -> Tokens | None:
    """Tokens over the games whose replies gave them (None: the player's records have no
    ``tokens``, the key is left out); null counts where no reply gave any, as in the
    journal and the SGF, never 0."""
    if not counts:
        return None
    said = [c for c in counts if c.moves]  # older records wrote 0 tokens for "none given"
    moves, games = sum(c.moves for c in said), len(said)
    prompt = sum(c.prompt or 0 for c in said) if said else None
    completion = sum(c.completion or 0 for c in said) if said else None

    def per(total: int | None, n: int) -> float | None:
        return total / n if total is not None and n else None

    return Tokens(games=games, moves=moves, prompt=prompt, completion=completion,
                  prompt_per_move=per(prompt, moves), completion_per_move=per(completion, moves),
                  prompt_per_game=per(prompt, games), completion_per_game=per(completion, games))


def player_sections(games: Sequence[GameData],
                    outcomes: Sequence[GameOutcome]) -> dict[str, PlayerSection]:
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
    estimated: Counter[str] = Counter()
    tokens: dict[str, list[TokenCounts]] = {n: [] for n in names}
    for game in games:
        line = game.line
        asked.update(moves_asked(game))
        for name in {line.black, line.white}:
            games_played[name] += 1
            estimated[name] += game.moves is None
            info = line.players.get(name)
            if info is not None:
                given = info.as_dict()
                meta[name] = {**meta[name], **{k: v for k, v in given.items() if v is not None}}
                if info.endpoint:
                    endpoints[name].add(info.endpoint)
            fallbacks[name].update(line.fallbacks.get(name, {}))
            if name in line.tokens:
                tokens[name].append(line.tokens[name])
            lat = line.latency_ms.get(name)
            if lat is not None and lat.n and None not in (lat.p50, lat.p95, lat.max):
                latency[name].append((lat.n, lat.p50, lat.p95, lat.max))
            recorded = [] if game.moves is None else [
                ms for color in ("black", "white")
                if getattr(line, color) == name
                for ms in game.moves[color].latency_ms
            ]
            if lat is not None and lat.n:
                exact[name] = exact[name] and len(recorded) == lat.n
            samples[name].extend(recorded)
    out = {}
    for name in names:
        split = split_by_color(outcomes, name)
        n_asked = asked[name]
        fb = fallbacks[name]
        illegal = sum(c for r, c in fb.items() if r.startswith("illegal:"))
        total_fb = sum(fb.values())
        out[name] = PlayerSection(
            kind=meta[name].get("kind"),
            meta=meta[name],
            endpoints=sorted(endpoints[name]),
            games=games_played[name],
            results=results(split.overall),
            as_black=results(split.as_black),
            as_white=results(split.as_white),
            moves_asked=n_asked,
            moves_asked_estimated_games=estimated[name],
            fallbacks=dict(sorted(fb.items())),
            fallback_total=total_fb,
            fallback_rate=total_fb / n_asked if n_asked else None,
            fallback_rate_by_reason={
                r: c / n_asked if n_asked else None for r, c in sorted(fb.items())
            },
            illegal=illegal,
            illegal_rate=illegal / n_asked if n_asked else None,
            latency_ms=(exact_latency(samples[name]) if exact[name] and samples[name]
                        else pooled_latency(latency[name])),
            tokens=token_section(tokens[name]),
        )
    return out
