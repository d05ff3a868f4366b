"""The live state of a run: what the dashboard and the plain log read.

Only the collector writes it; it is rebuilt from the journal on resume, so it
never holds a fact the recordings do not. Events that repeat (a burst of the same
fallback, a replica failing to connect again and again) are collapsed into one entry
with a count, so a burst does not push everything else out."""

from __future__ import annotations

import re
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from orchestrator.collect.referee import LiveGame
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
from orchestrator.recordings import JournalRecord, rated_games

EVENTS_KEPT = 50
# The referee's fallback event: "game 12 move 40: r4 illegal:superko, fallback".
_FALLBACK = re.compile(r"^game \d+ move \d+: (?P<name>\S+) (?P<reason>\S+), fallback$")


@dataclass
class Event:
    stamp: str  # when it last happened
    text: str
    count: int = 1
    key: str = ""


def event_key(text: str) -> tuple[str, str]:
    """What makes two events "the same" and how a collapsed one reads: fallbacks by
    player and reason; other lines not about one game by their text with numbers
    blanked (a replica's retries differ only in their delays)."""
    match = _FALLBACK.match(text)
    if match:
        return (f"fallback {match['name']} {match['reason']}",
                f"{match['reason']} fallback ({match['name']})")
    if text.startswith("game "):
        return text, text
    return re.sub(r"\d+(\.\d+)?", "#", text), text


@dataclass(frozen=True)
class HeadToHead:
    """The running two-player numbers: trinomial while no colour-swapped pair is
    complete, pentanomial once one is (``kind`` says which)."""

    player: str
    opponent: str
    results: Wdl  # every rated game, from ``player``'s side
    counts: Counts
    kind: str  # "trinomial" | "pentanomial"
    estimate: EloEstimate
    sprt: SprtResult | None
    sprt_config: object | None

    @property
    def samples(self) -> str:
        n = self.estimate.samples
        unit = "pair" if self.kind == "pentanomial" else "game"
        return f"{n} {unit}{'s' if n != 1 else ''}"


def _between(records: list[dict], player: str, opponent: str) -> list[GameOutcome]:
    """Rated games of the two (the run state keeps journal records as dicts)."""
    games = rated_games(JournalRecord.model_validate(r) for r in records)
    return [g for g in games if {g.black, g.white} == {player, opponent}]


def head_to_head_live(records: list[dict], player: str, opponent: str,
                      sprt_config=None) -> HeadToHead:
    games = _between(records, player, opponent)
    results = split_by_color(games, player, opponent).overall
    counts: Counts = results
    kind = "trinomial"
    if any(g.pair is not None for g in games):
        try:
            penta = pentanomial_from_games(games, player, opponent)
        except RatingsError:  # pair keys that are not colour-swapped twins: count games
            penta = None
        if penta is not None and penta.pairs:
            counts, kind = penta, "pentanomial"
    result = None
    if sprt_config is not None:
        result = sprt(counts, sprt_config.elo0, sprt_config.elo1, sprt_config.alpha,
                      sprt_config.beta, sprt_config.model)
    return HeadToHead(player, opponent, results, counts, kind, estimate(counts), result,
                      sprt_config)


@dataclass
class PlayerTally:
    wins: int = 0
    losses: int = 0
    draws: int = 0
    as_black: Counter = field(default_factory=Counter)  # "W"/"L"/"D"
    as_white: Counter = field(default_factory=Counter)
    fallbacks: Counter = field(default_factory=Counter)
    moves_asked: int = 0

    @property
    def games(self) -> int:
        return self.wins + self.losses + self.draws


@dataclass
class RunState:
    run_id: str
    target: int
    players: list[str]
    done: int = 0
    void: int = 0
    done_at_start: int = 0
    started_at: float = field(default_factory=time.monotonic)
    live: dict[int, LiveGame] = field(default_factory=dict)
    events: deque = field(default_factory=lambda: deque(maxlen=EVENTS_KEPT))
    tally: dict[str, PlayerTally] = field(default_factory=dict)
    records: list[dict] = field(default_factory=list)
    reasons: Counter = field(default_factory=Counter)
    latency: dict[str, deque] = field(default_factory=dict)
    stop_reason: str | None = None
    on_event: Callable[[str], None] | None = None
    sprt_line: str | None = None

    def __post_init__(self) -> None:
        for name in self.players:
            self.tally.setdefault(name, PlayerTally())

    def event(self, text: str) -> None:
        key, shown = event_key(text)
        stamp = time.strftime("%H:%M:%S")
        for old in self.events:
            if old.key == key:
                self.events.remove(old)
                self.events.append(Event(stamp, shown, old.count + 1, key))
                break
        else:
            self.events.append(Event(stamp, shown, 1, key))
        if self.on_event is not None:
            self.on_event(text)

    def add_record(self, record: dict) -> None:
        """Count one journal record (new or read back on resume)."""
        self.records.append(record)
        if record["void"]:
            self.void += 1
            return
        self.done += 1
        self.reasons[record["reason"]] += 1
        black, white = record["black"], record["white"]
        for name, counts in record["fallbacks"].items():
            self.tally.setdefault(name, PlayerTally()).fallbacks.update(counts)
        # Moves asked of each colour: those it played past the opening book.
        book = (record.get("opening") or {}).get("plies", 0)
        for name, first in ((black, 1), (white, 0)):
            asked = (record["moves"] + first) // 2 - (book + first) // 2
            self.tally.setdefault(name, PlayerTally()).moves_asked += max(asked, 0)
        if black == white:
            return  # self-play says nothing about strength
        outcome = {"black": ("W", "L"), "white": ("L", "W"), "draw": ("D", "D")}.get(
            record["winner"]
        )
        if outcome is None:
            return
        for name, letter, color in ((black, outcome[0], "b"), (white, outcome[1], "w")):
            tally = self.tally.setdefault(name, PlayerTally())
            if letter == "W":
                tally.wins += 1
            elif letter == "L":
                tally.losses += 1
            else:
                tally.draws += 1
            (tally.as_black if color == "b" else tally.as_white)[letter] += 1

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started_at

    @property
    def games_per_hour(self) -> float:
        elapsed = time.monotonic() - self.started_at
        new = self.done - self.done_at_start
        return new / elapsed * 3600 if elapsed > 0 and new else 0.0

    @property
    def eta_s(self) -> float | None:
        rate = self.games_per_hour
        if rate <= 0:
            return None
        return (self.target - self.done) / rate * 3600
