"""Running two-player statistics over journal records: the dashboard's Elo line
and the SPRT stop rule. Paired openings are counted as pentanomial pairs, the
rest as single games."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.ratings import elo as elo_math
from orchestrator.ratings.outcomes import GameOutcome, pentanomial_from_games, split_by_colour
from orchestrator.ratings.sprt import sprt


@dataclass(frozen=True)
class SprtVerdict:
    decision: str | None
    line: str


def outcomes(records: list[dict]) -> list[GameOutcome]:
    """Rated games only: not void, two distinct players, a result."""
    games = []
    for r in records:
        if r["void"] or r["black"] == r["white"] or r["winner"] is None:
            continue
        pair = (r["run"], r["opening"]["pair"]) if r.get("opening") and r["opening"].get(
            "pair") is not None else None
        games.append(GameOutcome(r["black"], r["white"], r["winner"], pair))
    return games


def head_to_head(records: list[dict], player: str, opponent: str) -> elo_math.Counts:
    games = outcomes(records)
    if any(g.pair is not None for g in games):
        return pentanomial_from_games(games, player, opponent)
    return split_by_colour(games, player, opponent).overall


def elo_line(records: list[dict], player: str, opponent: str) -> str:
    counts = head_to_head(records, player, opponent)
    est = elo_math.estimate(counts)
    if est.elo is None:
        return f"{player} vs {opponent}: no rated games yet"
    text = f"{player} vs {opponent}: Elo {est.elo:+.0f}"
    if est.error is not None:
        text += f" ± {est.error:.0f} (95 %)  LOS {est.los * 100:.1f} %"
    kind = "pairs" if isinstance(counts, elo_math.Pentanomial) else "games"
    return f"{text}  [{est.samples} {kind}]"


def sprt_check(records: list[dict], player: str, opponent: str, config) -> SprtVerdict:
    counts = head_to_head(records, player, opponent)
    result = sprt(counts, config.elo0, config.elo1, config.alpha, config.beta, config.model)
    line = (
        f"{player} vs {opponent} [{config.elo0:g}, {config.elo1:g}]: "
        f"LLR {result.llr:+.2f} ({result.lower:+.2f}, {result.upper:+.2f})"
    )
    return SprtVerdict(result.decision, line)
