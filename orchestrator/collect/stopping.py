"""The SPRT stop rule over journal records. Paired openings are counted as
pentanomial pairs, the rest as single games."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.ratings import elo as elo_math
from orchestrator.ratings.sprt import sprt
from orchestrator.recordings import JournalRecord, head_to_head, rated_games


@dataclass(frozen=True)
class SprtVerdict:
    decision: str | None
    line: str


def _counts(records: list[dict], player: str, opponent: str) -> elo_math.Counts:
    """The run state keeps journal records as dicts (what ``Recorder.save`` returns)."""
    games = rated_games(JournalRecord.model_validate(r) for r in records)
    return head_to_head(games, player, opponent)


def sprt_check(records: list[dict], player: str, opponent: str, config) -> SprtVerdict:
    counts = _counts(records, player, opponent)
    result = sprt(counts, config.elo0, config.elo1, config.alpha, config.beta, config.model)
    line = (
        f"{player} vs {opponent} [{config.elo0:g}, {config.elo1:g}]: "
        f"LLR {result.llr:+.2f} ({result.lower:+.2f}, {result.upper:+.2f})"
    )
    return SprtVerdict(result.decision, line)
