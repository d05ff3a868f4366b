"""The stop rules' answer worked out apart from orchestrator/collect/stopping.py, for the tests
to check it against: a run's finished games put in slot order by hand, cut at the first
slot without one, counted unit by unit (a game, or the colour-swapped pair of slots
2k, 2k+1) with the ratings core's bare ``sprt``, stopping at the first unit that takes the
LLR past a bound with ``min_games`` counted. The arrival-order counting the rules must
not do is here too, to show that a test's orders would catch it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from orchestrator.ratings import Pentanomial, Wdl, sprt
from orchestrator.recordings import JournalRecord


@dataclass(frozen=True)
class Walked:
    llr: float
    decision: str | None
    games: int


def points(record: JournalRecord, player: str) -> float:
    if record.winner == "draw":
        return 0.5
    return 1.0 if (record.winner == "black") == (record.black == player) else 0.0


def _walk(units: Iterable[Sequence[JournalRecord]], player: str, elo0: float, elo1: float,
          alpha: float, beta: float, min_games: int) -> Walked:
    pairs, wdl = [0] * 5, [0, 0, 0]  # pentanomial 0..2 points; wins, losses, draws
    walked = Walked(0.0, None, 0)
    games = 0
    for unit in units:
        score = [points(r, player) for r in unit]
        if len(unit) == 2:
            pairs[round(2 * sum(score))] += 1
            counts: Wdl | Pentanomial = Pentanomial.from_counts(pairs)
        else:
            wdl[{1.0: 0, 0.0: 1, 0.5: 2}[score[0]]] += 1
            counts = Wdl(*wdl)
        games += len(unit)
        result = sprt(counts, elo0, elo1, alpha, beta)
        decision = result.decision if games >= min_games else None
        walked = Walked(result.llr, decision, games)
        if decision is not None:
            break
    return walked


def schedule_walk(records: Iterable[JournalRecord], player: str, elo0: float, elo1: float,
                  alpha: float = 0.05, beta: float = 0.05, unit: int = 2,
                  min_games: int = 0) -> Walked:
    """The decision over ``records`` counted in schedule order."""
    by_slot = {r.slot: r for r in records if not r.void}
    units = []
    slot = 0
    while all(s in by_slot for s in range(slot, slot + unit)):
        units.append([by_slot[s] for s in range(slot, slot + unit)])
        slot += unit
    return _walk(units, player, elo0, elo1, alpha, beta, min_games)


def arrival_walk(records: Iterable[JournalRecord], player: str, elo0: float, elo1: float,
                 alpha: float = 0.05, beta: float = 0.05, unit: int = 2,
                 min_games: int = 0) -> Walked:
    """The same test counting each unit when its last game arrives (the bias to avoid)."""
    arrived: dict[int, list[JournalRecord]] = {}
    units = []
    for record in records:
        assert record.slot is not None
        group = arrived.setdefault(record.slot // unit, [])
        group.append(record)
        if len(group) == unit:
            units.append(sorted(group, key=lambda r: r.slot or 0))
    return _walk(units, player, elo0, elo1, alpha, beta, min_games)
