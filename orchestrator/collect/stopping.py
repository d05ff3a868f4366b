"""The run's numbers over its journal records: the running head-to-head the dashboard and
the plain log show (:func:`head_to_head_live`) and the SPRT stop rule
(:func:`sprt_check`). Paired openings are counted as pentanomial pairs, the rest as
single games."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from orchestrator.collect.matchup import Sprt
from orchestrator.events import SprtStatus
from orchestrator.ratings import (
    Counts,
    EloEstimate,
    GameOutcome,
    RatingsError,
    SprtResult,
    Wdl,
    estimate,
    pentanomial_from_games,
    split_by_color,
    sprt,
)
from orchestrator.recordings import JournalRecord, head_to_head, rated_games


@dataclass(frozen=True)
class HeadToHead:
    """The running two-player numbers: trinomial while no color-swapped pair is
    complete, pentanomial once one is (``kind`` says which)."""

    player: str
    opponent: str
    results: Wdl  # every rated game, from ``player``'s side
    counts: Counts
    kind: Literal["trinomial", "pentanomial"]
    estimate: EloEstimate
    sprt: SprtResult | None
    sprt_config: Sprt | None

    @property
    def samples(self) -> str:
        n = self.estimate.samples
        unit = "pair" if self.kind == "pentanomial" else "game"
        return f"{n} {unit}{'s' if n != 1 else ''}"


def _between(records: Sequence[JournalRecord], player: str, opponent: str
             ) -> list[GameOutcome]:
    return [g for g in rated_games(records) if {g.black, g.white} == {player, opponent}]


def head_to_head_live(records: Sequence[JournalRecord], player: str, opponent: str,
                      sprt_config: Sprt | None = None) -> HeadToHead:
    games = _between(records, player, opponent)
    results = split_by_color(games, player, opponent).overall
    counts: Counts = results
    kind: Literal["trinomial", "pentanomial"] = "trinomial"
    if any(g.pair is not None for g in games):
        try:
            penta = pentanomial_from_games(games, player, opponent)
        except RatingsError:  # pair keys that are not color-swapped twins: count games
            penta = None
        if penta is not None and penta.pairs:
            counts, kind = penta, "pentanomial"
    result = None
    if sprt_config is not None:
        result = sprt(counts, sprt_config.elo0, sprt_config.elo1, sprt_config.alpha,
                      sprt_config.beta, sprt_config.model)
    return HeadToHead(player, opponent, results, counts, kind, estimate(counts), result,
                      sprt_config)


def sprt_check(records: Sequence[JournalRecord], player: str, opponent: str,
               config: Sprt) -> SprtStatus:
    counts = head_to_head(rated_games(records), player, opponent)
    result = sprt(counts, config.elo0, config.elo1, config.alpha, config.beta, config.model)
    return SprtStatus(player, opponent, config.elo0, config.elo1, result.llr, result.lower,
                      result.upper, result.decision)
