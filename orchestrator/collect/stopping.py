"""The run's numbers over its journal records: the running head-to-head the dashboard and
the plain log show (:func:`head_to_head_live`) and the stop rules that end a run early,
``[stop] sprt`` and ``[stop] gate`` (:class:`StopRules`).

A stop rule counts games in schedule order, never in the order they finish: a finished
game waits until every slot scheduled before it has its finished game
(:class:`ScheduleOrder`), so games that finish fast (quick wins, or one side's quick
losses) cannot decide a run on their own (Leela Zero #1730, #764). A rule decides at the
first game it counts that takes its LLR past a bound (the gate: with ``min_games``
counted) and counts nothing after, so what it is reported with are the games it decided
on, whatever arrives later. The decision is a function of the run's finished games alone:
``go19 gate`` makes the same one from the journal (:mod:`.gate`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from orchestrator.collect.matchup import Gate, Matchup, Sprt
from orchestrator.events import GateDecided, RunStop, SprtAccepted, SprtStatus, StopRuleKind
from orchestrator.ratings import (
    Counts,
    EloEstimate,
    GameOutcome,
    RatingsError,
    SequentialSprt,
    Wdl,
    estimate,
    pentanomial_from_games,
    split_by_color,
)
from orchestrator.recordings import JournalRecord, rated_game, rated_games


@dataclass(frozen=True)
class HeadToHead:
    """The running two-player numbers: trinomial while no color-swapped pair is
    complete, pentanomial once one is (``kind`` says which); ``stops`` are the stop rules'
    SPRTs as they stand (over the games they count, which may be fewer)."""

    player: str
    opponent: str
    results: Wdl  # every rated game, from ``player``'s side
    counts: Counts
    kind: Literal["trinomial", "pentanomial"]
    estimate: EloEstimate
    stops: tuple[SprtStatus, ...] = ()

    @property
    def samples(self) -> str:
        n = self.estimate.samples
        unit = "pair" if self.kind == "pentanomial" else "game"
        return f"{n} {unit}{'s' if n != 1 else ''}"


def _between(records: Sequence[JournalRecord], player: str, opponent: str
             ) -> list[GameOutcome]:
    return [g for g in rated_games(records) if {g.black, g.white} == {player, opponent}]


def head_to_head_live(records: Sequence[JournalRecord], player: str, opponent: str,
                      stops: Sequence[SprtStatus] = ()) -> HeadToHead:
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
    return HeadToHead(player, opponent, results, counts, kind, estimate(counts), tuple(stops))


# -- the stop rules ------------------------------------------------------------------


class ScheduleOrder:
    """One run's finished games in the order its schedule lists them. :meth:`add` takes
    journal records in any order and returns the units they complete (a slot, or the two
    slots ``2k, 2k+1`` of a colour-swapped pair) once every slot before them has its
    finished game; a void game finishes no slot (the slot is replayed). Records without
    a slot (an older go19) cannot be placed and are left out."""

    def __init__(self, unit: Literal[1, 2]) -> None:
        self.unit = unit
        self.next_slot = 0  # every slot before it is counted
        self._waiting: dict[int, JournalRecord] = {}

    def add(self, record: JournalRecord) -> list[tuple[JournalRecord, ...]]:
        slot = record.slot
        if record.void or slot is None or slot < self.next_slot or slot in self._waiting:
            return []
        self._waiting[slot] = record
        units = []
        while all(s in self._waiting for s in range(self.next_slot, self.next_slot + self.unit)):
            units.append(tuple(self._waiting.pop(self.next_slot + k) for k in range(self.unit)))
            self.next_slot += self.unit
        return units

    @property
    def waiting(self) -> int:
        """Finished games not counted yet: a slot scheduled before them has none."""
        return len(self._waiting)


@dataclass
class SideCounts:
    """What one player of the counted games did besides winning or losing."""

    illegal: int = 0
    fallbacks: Counter = field(default_factory=Counter)  # by reason


class RuleTally:
    """One stop rule's SPRT over units of games in the order they are given (from
    ``player``'s side), and the facts of the games it counts: results by colour, each
    side's illegal answers and fallbacks, the records themselves. A unit whose games are
    not all rated (a game without a result) is no sample and is left out."""

    def __init__(self, kind: StopRuleKind, player: str, opponent: str, config: Sprt) -> None:
        self.kind = kind
        self.player, self.opponent = player, opponent
        self.config = config
        self.min_games = config.min_games if isinstance(config, Gate) else 0
        self.test = SequentialSprt(config.elo0, config.elo1, config.alpha, config.beta,
                                   config.model, self.min_games)
        self.as_black, self.as_white = Wdl(), Wdl()
        self.sides = {player: SideCounts(), opponent: SideCounts()}
        self.counted: list[JournalRecord] = []
        self.after_decision = 0  # finished games in units that came after the decision

    def count(self, unit: Sequence[JournalRecord]) -> bool:
        """Count one unit; True when it decided the test."""
        if self.test.decided:
            self.after_decision += len(unit)
            return False
        games = [g for g in map(rated_game, unit)
                 if g is not None and {g.black, g.white} == {self.player, self.opponent}]
        if len(games) < len(unit):
            return False
        split = split_by_color(games, self.player, self.opponent)
        sample: Counts = split.overall
        if len(games) == 2:  # raises RatingsError for twins of the same colours
            sample = pentanomial_from_games([GameOutcome(g.black, g.white, g.winner, 0)
                                             for g in games], self.player, self.opponent)
        self.test.add(sample)
        self.as_black += split.as_black
        self.as_white += split.as_white
        for record in unit:
            self.counted.append(record)
            for name, side in self.sides.items():
                side.illegal += record.illegal.get(name, 0)
                side.fallbacks.update(record.fallbacks.get(name, {}))
        return self.test.decided

    @property
    def results(self) -> Wdl:
        return self.as_black + self.as_white

    def status(self) -> SprtStatus:
        config, result = self.config, self.test.result
        return SprtStatus(
            self.player, self.opponent, config.elo0, config.elo1, result.llr, result.lower,
            result.upper, result.decision, games=self.test.games, results=self.results,
            counts=self.test.counts, rule=self.kind, min_games=self.min_games,
        )

    def stop(self) -> RunStop:
        status = self.status()
        return GateDecided(status) if self.kind == "gate" else SprtAccepted(status)


class StopRule:
    """A stop rule of a live run: its tally fed in schedule order."""

    def __init__(self, tally: RuleTally, unit: Literal[1, 2]) -> None:
        self.tally = tally
        self.order = ScheduleOrder(unit)

    def add(self, record: JournalRecord) -> bool:
        """Take one finished game; True when a unit it completed decided the rule."""
        decided = False
        for unit in self.order.add(record):
            decided |= self.tally.count(unit)
        return decided


def gate_tally(gate: Gate, pairing: tuple[str, str]) -> RuleTally:
    """The gate's tally, from its candidate's side against the pairing's other player."""
    baseline = pairing[1] if gate.candidate == pairing[0] else pairing[0]
    return RuleTally("gate", gate.candidate, baseline, gate)


class StopRules:
    """The matchup's stop rules (``[stop] sprt``, ``[stop] gate``) over the run's games.

    ``sprt`` counts colour-swapped pairs when the openings are paired (as the report does),
    else games; the gate always counts pairs (slots ``2k, 2k+1``: colours swapped, and the
    same opening when openings are paired)."""

    def __init__(self, matchup: Matchup) -> None:
        self.rules: dict[StopRuleKind, StopRule] = {}
        pairing, stop, openings = matchup.pairing, matchup.stop, matchup.openings
        if matchup.self_play:
            return
        if stop.sprt is not None:
            has_openings = bool(openings.random_plies) or openings.sgf_dir is not None
            pairs = has_openings and openings.paired and pairing.alternate_colors
            self.rules["sprt"] = StopRule(
                RuleTally("sprt", pairing.black, pairing.white, stop.sprt), 2 if pairs else 1)
        if stop.gate is not None:
            self.rules["gate"] = StopRule(
                gate_tally(stop.gate, (pairing.black, pairing.white)), 2)

    def add(self, record: JournalRecord) -> RunStop | None:
        """Take one finished game (any order); the stop of a rule it decided, if any."""
        decided = [rule.tally.stop() for rule in self.rules.values() if rule.add(record)]
        return decided[0] if decided else None

    def decided(self) -> RunStop | None:
        """The stop of a rule already decided (a resumed run's), if any."""
        for rule in self.rules.values():
            if rule.tally.test.decided:
                return rule.tally.stop()
        return None

    def status(self, kind: StopRuleKind) -> SprtStatus | None:
        rule = self.rules.get(kind)
        return None if rule is None else rule.tally.status()
