"""Every number in a report, from loaded runs to one typed :class:`~.model.Report`
(``report.json``, less its move-quality section, time stamp and warnings).

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

Non-finite numbers (a clean sweep has Elo +inf) stay floats here; ``report.json`` writes
them as the strings ``"+inf"`` and ``"-inf"`` (:func:`.model.to_json`).
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from orchestrator.ratings import (
    Counts,
    GameOutcome,
    Pentanomial,
    RatingsError,
    aggregate,
    bradley_terry,
    connected_groups,
    estimate,
    pentanomial_from_games,
    split_by_color,
    sprt,
)
from orchestrator.recordings import head_to_head, rated_game
from orchestrator.report import adjudication, series
from orchestrator.report.load import GameData, RunData, Warn
from orchestrator.report.model import (
    EloPoint,
    HeadToHead,
    Lengths,
    LlrPoint,
    Pairing,
    RatingGroup,
    RatingRow,
    Ratings,
    RatingsFailed,
    Report,
    RunSummary,
    Sprt,
    Totals,
)
from orchestrator.report.names import label
from orchestrator.report.player_stats import (
    LATENCY_METHOD_APPROX,
    moves_asked,
    player_sections,
    results,
)
from orchestrator.report.verdict import verdict

SCHEMA = 1
REASONS = ("two-passes", "resign", "move-cap", "void")


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


def _totals(runs: Sequence[RunData], games: Sequence[GameData]) -> Totals:
    finished = [g for g in games if not g.line.void]
    rated = [g for g in finished if _outcome(g) is not None]
    return Totals(
        runs=len(runs),
        games=len(games),
        finished=len(finished),
        void=len(games) - len(finished),
        rated=len(rated),
        draws=sum(g.line.winner == "draw" for g in rated),
        no_result=sum(g.line.winner is None for g in finished),
        self_play=sum(g.line.black == g.line.white for g in finished),
        moves=sum(g.line.moves for g in games),
    )


def _termination(games: Iterable[GameData]) -> dict[str, int]:
    counts = Counter("void" if g.line.void else g.line.reason for g in games)
    return {**{r: counts.pop(r, 0) for r in REASONS}, **dict(sorted(counts.items()))}


def nice_step(span: float, bins: int) -> float:
    """A 1, 2 or 5 times a power of ten close to ``span / bins`` (at least 1)."""
    raw = max(span / max(bins, 1), 1.0)
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _lengths(games: Iterable[GameData]) -> Lengths:
    moves = sorted(g.line.moves for g in games if not g.line.void)
    if not moves:
        return Lengths(games=0, min=None, max=None, mean=None, median=None, bin_edges=[],
                       counts=[])
    step = int(nice_step(moves[-1] - moves[0] + 1, 20))
    low = moves[0] // step * step
    edges = list(range(low, moves[-1] + step + 1, step))
    counts, _ = np.histogram(moves, bins=edges)
    return Lengths(games=len(moves), min=moves[0], max=moves[-1], mean=float(np.mean(moves)),
                   median=float(np.median(moves)), bin_edges=edges,
                   counts=[int(c) for c in counts])


# -- per player --------------------------------------------------------------------


def _orientation(runs: Sequence[RunData], a: str, b: str) -> tuple[str, str]:
    """The matchup's Black first (the candidate, e.g. r5 against r4), else by name."""
    for run in runs:
        pairing = run.matchup.get("pairing") or {}
        if {pairing.get("black"), pairing.get("white")} == {a, b}:
            return pairing["black"], pairing["white"]
    return a, b


def _curve(games: Sequence[GameOutcome], player: str, opponent: str) -> list[EloPoint]:
    """Elo and interval after the k-th game, as :func:`head_to_head_counts` would count
    the first k games (pairs count once both games are in), at most CURVE_POINTS times."""
    sampled = series.marks(len(games))
    points = []
    for k, counts in series.running_counts(games, player):
        if k not in sampled:
            continue
        est = estimate(counts)
        if est.elo is not None:
            points.append(EloPoint(k, est.elo, est.elo_low, est.elo_high))
    return points


def _llr_curve(games: Sequence[GameOutcome], player: str,
               config: dict) -> tuple[list[LlrPoint], int | None]:
    """The LLR after the k-th game (sampled as the Elo curve) and the first game at which
    it reached a bound (None if it never did)."""
    args = (float(config["elo0"]), float(config["elo1"]), float(config["alpha"]),
            float(config["beta"]), config["model"])
    sampled = series.marks(len(games))
    points, decided_at, unsampled = [], None, []
    for k, counts in series.running_counts(games, player):
        if decided_at is not None:
            break
        if k not in sampled:
            unsampled.append((k, counts))
            continue
        result = sprt(counts, *args)
        if result.decision is not None:  # find the first game between the samples
            for j, c in unsampled:
                if sprt(c, *args).decision is not None:
                    decided_at = j
                    break
            decided_at = decided_at or k
        unsampled = []
        points.append(LlrPoint(k, result.llr))
    return points, decided_at


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


def _sprt(run: RunData, warn: Warn) -> Sprt | None:
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
    curve, decided_at = _llr_curve(games, black, config)
    return Sprt(
        run=run.run_id, player=black, opponent=white,
        # As run.json gives them (an int stays an int in report.json).
        elo0=config["elo0"], elo1=config["elo1"], alpha=config["alpha"],
        beta=config["beta"], model=config["model"],
        counts="pairs" if isinstance(counts, Pentanomial) else "games",
        samples=counts.pairs if isinstance(counts, Pentanomial) else counts.games,
        llr=result.llr, lower=result.lower, upper=result.upper,
        decision=result.decision, status=status, curve=curve, decided_at=decided_at,
    )


def _head_to_head(runs: Sequence[RunData], outcomes: Sequence[GameOutcome],
                  sprts: Sequence[Sprt], warn: Warn,
                  recorded: Sequence[GameData] = ()) -> list[HeadToHead]:
    pairs = sorted({tuple(sorted((g.black, g.white))) for g in outcomes})
    sections = []
    for a, b in pairs:
        player, opponent = _orientation(runs, a, b)
        games = [g for g in outcomes if {g.black, g.white} == {a, b}]
        games = checked_pairs(games, player, opponent, f"{player} vs {opponent}", warn)
        split = split_by_color(games, player, opponent)
        counts = head_to_head_counts(games, player, opponent)
        penta = counts if isinstance(counts, Pentanomial) else None
        sections.append(HeadToHead(
            player=player,
            opponent=opponent,
            games=len(games),
            results=results(split.overall),
            as_black=results(split.as_black),
            as_white=results(split.as_white),
            counts="pairs" if penta else "games",
            pentanomial=list(penta.counts) if penta else None,
            estimate=estimate(counts),
            estimate_games=estimate(split.overall),
            curve=_curve(games, player, opponent),
            sprt=[s for s in sprts if {s.player, s.opponent} == {a, b}],
            pairs=series.pair_rows(recorded, player, opponent) if penta else [],
        ))
    return sections


def _fit_group(table: dict, group: tuple[str, ...], anchor: dict[str, float]) -> RatingGroup:
    default = not anchor
    anchor = anchor or {group[0]: 0.0}
    fit = bradley_terry({k: v for k, v in table.items() if k[0] in group}, anchor=anchor)
    rows = []
    for upper, lower in zip(fit.rows, [*fit.rows[1:], None], strict=True):
        rows.append(RatingRow(
            upper, los_next=fit.los(upper.player, lower.player) if lower else None))
    return RatingGroup(players=list(group), anchor=anchor, anchor_default=default,
                       black_advantage=fit.black_advantage,
                       black_advantage_stderr=fit.black_advantage_stderr, rows=rows)


def _ratings(outcomes: Sequence[GameOutcome], anchor: Mapping[str, float] | None,
             warn: Warn) -> Ratings | RatingsFailed | None:
    """Bradley–Terry ratings, one fit per group of players connected by games: players
    who never met, even through a chain of opponents, share no scale."""
    table = aggregate(outcomes)
    groups = [g for g in connected_groups(table) if len(g) >= 2]
    if not groups:
        return None
    anchor = dict(anchor or {})
    default = not anchor
    try:
        missing = next((a for a in anchor if not any(a in g for g in groups)), None)
        if missing is not None:
            raise RatingsError(f"anchor {missing!r} played no games")
        fits = [_fit_group(table, g, {a: v for a, v in anchor.items() if a in g})
                for g in groups]
    except RatingsError as exc:
        warn(f"ratings not computed: {exc}")
        return RatingsFailed(error=str(exc), anchor=anchor or {groups[0][0]: 0.0},
                             anchor_default=default)
    if len(fits) > 1:
        warn(f"the players form {len(fits)} groups that never met (directly or through "
             "common opponents); each group is rated on its own scale")
    rows = [dataclasses.replace(row, group=k) for k, fit in enumerate(fits) for row in fit.rows]
    return Ratings(
        method="Bradley-Terry maximum likelihood with a Black-advantage term "
               "(2 virtual draws per player as prior)",
        anchor={a: v for fit in fits for a, v in fit.anchor.items()},
        anchor_default=default,
        black_advantage=fits[0].black_advantage,
        black_advantage_stderr=fits[0].black_advantage_stderr,
        groups=fits,
        rows=rows,
    )


def _run_summary(run: RunData, sprt_result: Sprt | None) -> RunSummary:
    finished = sum(not g.line.void for g in run.games)
    pairing = run.matchup.get("pairing") or {}
    return RunSummary(
        run_id=run.run_id, path=str(run.path), started=run.info.get("started"),
        games_target=run.info.get("games_target"), games=len(run.games),
        finished=finished, void=len(run.games) - finished,
        pairing=Pairing(pairing.get("black"), pairing.get("white")) if pairing else None,
        size=(run.matchup.get("game") or {}).get("size"),
        komi=(run.matchup.get("game") or {}).get("komi"),
        sprt=sprt_result,
    )


def _main_section(runs: Sequence[RunData], sections: Sequence[HeadToHead]) -> HeadToHead | None:
    """The head-to-head the runs were set up for (the first run's pairing), else the one
    with the most games."""
    for run in runs:
        pairing = run.matchup.get("pairing") or {}
        for section in sections:
            if (section.player, section.opponent) == (pairing.get("black"),
                                                      pairing.get("white")):
                return section
    return max(sections, key=lambda s: s.games, default=None)


def compute(runs: Sequence[RunData], anchor: Mapping[str, float] | None, warn: Warn) -> Report:
    """The whole report but its move-quality section (``quality`` None), time stamp (empty)
    and warnings (see the module docstring)."""
    games = chronological(runs)
    outcomes = [o for o in map(_outcome, games) if o is not None]
    sprts = {run.run_id: _sprt(run, warn) for run in runs}
    ratings = _ratings(outcomes, anchor, warn)
    players = player_sections(games, outcomes)
    head = _head_to_head(runs, outcomes, [s for s in sprts.values() if s], warn, games)
    main = _main_section(runs, head)
    notes = []
    if any(p.latency_ms.n and p.latency_ms.method != "exact" for p in players.values()):
        notes.append(f"latency percentiles are {LATENCY_METHOD_APPROX}")
    if any(g.line.black == g.line.white for g in games):
        notes.append("self-play games count in totals and fallback rates, not in results")
    if isinstance(ratings, Ratings) and len(ratings.groups) > 1:
        notes.append(f"the players form {len(ratings.groups)} groups that never met, "
                     "directly or through common opponents: each group is rated on its own "
                     "scale, and ratings in different groups cannot be compared")
    return Report(
        generated="",
        schema=SCHEMA,
        runs=[_run_summary(run, sprts[run.run_id]) for run in runs],
        labels={name: label(name, p.meta) for name, p in players.items()},
        verdict=verdict(main) if main else None,
        totals=_totals(runs, games),
        pace=series.pace(runs),
        termination=_termination(games),
        lengths=_lengths(games),
        margins=series.margins(games, main.player if main else None),
        players=players,
        fallback_curves=series.fallback_curves(games, [moves_asked(g) for g in games]),
        head_to_head=head,
        ratings=ratings,
        games=series.game_rows(games, runs),
        notes=notes,
        quality=None,
        warnings=[],
        adjudication=adjudication.section(games),
    )
