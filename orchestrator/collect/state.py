"""The live state of a run: what the dashboard and the plain log read.

Only the scheduler writes it; it is rebuilt from the journal on resume, so it
never holds a fact the recordings do not."""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from orchestrator.collect.referee import LiveGame


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
    events: deque = field(default_factory=lambda: deque(maxlen=12))
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
        self.events.append((time.strftime("%H:%M:%S"), text))
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
        if black == white:
            return  # self-play says nothing about strength
        outcome = {"black": ("W", "L"), "white": ("L", "W"), "draw": ("D", "D")}.get(
            record["winner"]
        )
        if outcome is None:
            return
        for name, letter, colour in ((black, outcome[0], "b"), (white, outcome[1], "w")):
            tally = self.tally.setdefault(name, PlayerTally())
            if letter == "W":
                tally.wins += 1
            elif letter == "L":
                tally.losses += 1
            else:
                tally.draws += 1
            (tally.as_black if colour == "b" else tally.as_white)[letter] += 1

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
