"""The live state of a run: what the dashboard, the plain log and the watch page read.

Only the collector writes it; it is rebuilt from the journal on resume, so it never
holds a fact the recordings do not. Everything the run says reaches it as an event
(:mod:`orchestrator.events`, through :meth:`RunState.emit`): it keeps the facts it needs
(the players' recent answer times, why the run stops) and hands each event on to its
subscribers (the dashboard, the plain log, the watch page).
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field

from orchestrator.collect.referee import LiveGame
from orchestrator.events import Event, MovePlayed, OnEvent, RunStop, SprtStatus
from orchestrator.recordings import JournalRecord

LATENCIES_KEPT = 1000  # per player, for the dashboard's percentiles


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
    tally: dict[str, PlayerTally] = field(default_factory=dict)
    records: list[JournalRecord] = field(default_factory=list)
    reasons: Counter = field(default_factory=Counter)
    latency: dict[str, deque[float]] = field(default_factory=dict)
    stop: RunStop | None = None  # why the run stops starting games, once it does
    # The stop rules' SPRTs over the games they count (collect/stopping.py), latest first.
    sprt: SprtStatus | None = None
    gate: SprtStatus | None = None
    _subscribers: list[OnEvent] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        for name in self.players:
            self.tally.setdefault(name, PlayerTally())

    def subscribe(self, callback: OnEvent) -> None:
        """``callback`` hears every event from now on, after the state has taken it in."""
        self._subscribers.append(callback)

    def emit(self, event: Event) -> None:
        if isinstance(event, MovePlayed) and event.move.ms is not None:
            self.latency.setdefault(event.player, deque(maxlen=LATENCIES_KEPT)).append(
                event.move.ms)
        if isinstance(event, RunStop):
            self.stop = event
        for callback in self._subscribers:
            callback(event)

    def add_record(self, record: JournalRecord) -> None:
        """Count one journal record (new or read back on resume)."""
        self.records.append(record)
        if record.void:
            self.void += 1
            return
        self.done += 1
        self.reasons[record.reason] += 1
        black, white = record.black, record.white
        for name, counts in record.fallbacks.items():
            self.tally.setdefault(name, PlayerTally()).fallbacks.update(counts)
        # Moves asked of each color: those it played past the opening book.
        book = record.opening.plies if record.opening is not None else 0
        for name, first in ((black, 1), (white, 0)):
            asked = (record.moves + first) // 2 - (book + first) // 2
            self.tally.setdefault(name, PlayerTally()).moves_asked += max(asked, 0)
        if black == white:
            return  # self-play says nothing about strength
        outcome = {"black": ("W", "L"), "white": ("L", "W"), "draw": ("D", "D")}.get(
            record.winner or ""
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
