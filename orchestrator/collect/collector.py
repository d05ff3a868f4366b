"""The games of one run: which game starts next, in which slot, and when to stop.

Slots: game ``k`` of the schedule is slot ``k``; a slot is done once a non-void
game for it is in the journal. Starting a game takes the lowest slot neither
done nor in flight, so a void game's slot is replayed and a resumed run replays
exactly the slots that were in flight when it died. A player whose every replica
is down pauses the games that need it (an :class:`Outage`), up to ``down_pause_s``;
a streak of ``MAX_VOID_STREAK`` void games stops the run, naming why; so does a stop rule
(``[stop] sprt``, ``[stop] gate``) deciding over the games it counts in schedule order
(:mod:`.stopping`: a resumed run's records are counted before any game starts).

The collector is built whole, from the run's parts: the matchup, its schedule, the run
state (already holding a resumed run's records), the live players and the recorder.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import trio

from orchestrator.collect.adjudicator import Adjudicator
from orchestrator.collect.matchup import Matchup
from orchestrator.collect.players import PlayerHandle
from orchestrator.collect.recorder import Recorder, RecordingError
from orchestrator.collect.referee import GameSpec, LiveGame, RefereeSettings, play_game
from orchestrator.collect.schedule import Schedule
from orchestrator.collect.state import RunState
from orchestrator.collect.stopping import StopRules
from orchestrator.events import (
    GameRecorded,
    GameStarted,
    GateDecided,
    Interrupted,
    PlayerBack,
    PlayerDown,
    PlayerDownTooLong,
    RunStop,
    VoidStreak,
)
from orchestrator.recordings import JournalRecord
from orchestrator.rules.game import Game

# A player so broken that every game is void would otherwise be replayed forever.
MAX_VOID_STREAK = 10


@dataclass
class Outage:
    """A player whose every replica is down: its games wait for ``up`` until ``deadline``."""

    deadline: float
    up: trio.Event = field(default_factory=trio.Event)


def referee_settings(matchup: Matchup) -> RefereeSettings:
    """The matchup's rules and clock (every player has the same time per move)."""
    return RefereeSettings(
        size=matchup.game.size,
        komi=matchup.game.komi,
        move_cap=matchup.game.move_cap,
        move_timeout_s=matchup.game.move_timeout_s,
        void_after=matchup.fallback.void_after,
        fallback_level=matchup.fallback.level,
    )


class Collector:
    def __init__(self, matchup: Matchup, run_dir: Path, schedule: Schedule, state: RunState,
                 players: Mapping[str, PlayerHandle], recorder: Recorder,
                 adjudicator: Adjudicator | None = None) -> None:
        self.matchup = matchup
        self.adjudicator = adjudicator
        self.run_dir = run_dir
        self.schedule = schedule
        self.settings = referee_settings(matchup)
        self.state = state
        self.players = dict(players)
        self.recorder = recorder
        self.done_slots: set[int] = set()
        self.in_flight: dict[int, int] = {}  # slot -> game number
        self.next_number = 1
        self.stop_rules = StopRules(matchup)
        for record in state.records:  # a resumed run's
            if not record.void and record.slot is not None:
                self.done_slots.add(record.slot)
            self.next_number = max(self.next_number, record.game + 1)
            self.stop_rules.add(record)
        self._update_stop_status()
        self._changed = trio.Event()
        self.fatal: str | None = None
        self.dropped = 0
        # One writer thread at a time: journal appends must not interleave, and a line a
        # full disk cut short is truncated away, which must not take another line with it.
        self._writer = trio.CapacityLimiter(1)
        self.void_streak = 0
        self._streak_fallbacks: dict[str, Counter] = {}
        self.stop_kind: str | None = None
        # After the first Ctrl-C: no new game starts, those in flight finish.
        self.draining = False
        self.finished_after_interrupt = 0
        self.outages: dict[str, Outage] = {}
        self._games: trio.Nursery | None = None

    def _free_slot(self) -> int:
        slot = 0
        while slot in self.done_slots or slot in self.in_flight:
            slot += 1
        return slot

    def _down_player(self, spec: GameSpec) -> str | None:
        for name in (spec.black, spec.white):
            if self.players[name].is_down():
                return name
        return None

    def _stop(self, kind: str, stop: RunStop) -> None:
        self.stop_kind = kind
        self.state.emit(stop)
        self._changed.set()

    def drain(self) -> None:
        """The first Ctrl-C: start nothing more, let the games in flight finish."""
        self.draining = True
        self.state.emit(Interrupted(len(self.in_flight)))
        self._changed.set()

    async def run_games(self) -> None:
        state = self.state
        concurrency = self.matchup.game.concurrency
        decided = self.stop_rules.decided()  # a resumed run whose rule had decided
        if decided is not None:
            self._stop(_stop_kind(decided), decided)
        async with trio.open_nursery() as nursery:
            self._games = nursery
            while self.stop_kind is None and self.fatal is None and not self.draining:
                # Woken by a finished game just as the run was cancelled (Ctrl-C), this
                # loop would start games that die at once, counted as dropped.
                await trio.lowlevel.checkpoint_if_cancelled()
                if state.done >= state.target:
                    break
                busy = len(self.in_flight)
                if busy >= concurrency or state.done + busy >= state.target:
                    await self._wait_change()
                    continue
                spec = self.schedule.spec(self._free_slot())
                down = self._down_player(spec)
                if down is not None:
                    # No game starts for a player that is down: wait for it (or the stop).
                    self._outage(down)
                    await self._wait_change()
                    continue
                number = self.next_number
                self.next_number += 1
                self.in_flight[spec.slot] = number
                state.emit(GameStarted(number, spec.slot, spec.black, spec.white))
                nursery.start_soon(self._one_game, spec, number)
            if self.draining and self.fatal is None:
                while self.in_flight:  # finished (or dropped by a second Ctrl-C)
                    await self._wait_change()
            # Whatever is left (an outage watcher, games when the run stops) ends here.
            nursery.cancel_scope.cancel()

    async def _wait_change(self) -> None:
        await self._changed.wait()
        self._changed = trio.Event()

    # -- a player whose every replica is down ------------------------------------------

    def _outage(self, name: str) -> Outage:
        outage = self.outages.get(name)
        if outage is None:
            assert self._games is not None, "outages happen while games run"
            pause = self.matchup.game.down_pause_s
            outage = self.outages[name] = Outage(trio.current_time() + pause)
            self._games.start_soon(self._watch_outage, name, outage, pause)
        return outage

    async def _watch_outage(self, name: str, outage: Outage, pause: float) -> None:
        handle = self.players[name]
        assert handle.endpoint is not None and self._games is not None, \
            "only a GO19 endpoint goes down"
        self.state.emit(PlayerDown(name, handle.describe(), pause))
        with trio.move_on_at(outage.deadline):
            await handle.endpoint.wait_up()
            del self.outages[name]
            outage.up.set()
            self.state.emit(PlayerBack(name))
            self._changed.set()
            return
        self._stop("down", PlayerDownTooLong(name, handle.describe(), pause))
        # The games paused for it are dropped (their slots are replayed on --resume).
        self._games.cancel_scope.cancel()

    async def _ready(self, name: str, live: LiveGame) -> None:
        """Called by the referee before it asks ``name`` for a move (outside the move's
        deadline): a game waits here while that player is down."""
        if not self.players[name].is_down():
            return
        live.waiting_on = f"{name} (down)"
        try:
            await self._outage(name).up.wait()
        finally:
            live.waiting_on = None

    # -- one game ----------------------------------------------------------------------

    async def _one_game(self, spec: GameSpec, number: int) -> None:
        live = LiveGame(number=number, spec=spec,
                        game=Game(self.settings.size, self.settings.komi))
        self.state.live[number] = live
        try:
            try:
                outcome = await play_game(
                    spec,
                    number,
                    {name: handle.player for name, handle in self.players.items()},
                    self.settings,
                    seed=self.matchup.run.seed * 1_000_003 + number,
                    live=live,
                    ready=lambda name: self._ready(name, live),
                    on_event=self.state.emit,
                    judge=None if self.adjudicator is None else self.adjudicator.judge(
                        number, spec.slot, self.settings.size),
                )
            except BaseException:
                # Cancelled, or a group holding it (a connect in progress has a nursery).
                self.dropped += 1
                raise
            # A finished game is recorded even if the run is being cancelled.
            with trio.CancelScope(shield=True):
                try:
                    record = await trio.to_thread.run_sync(
                        self.recorder.save, outcome, limiter=self._writer
                    )
                except RecordingError as exc:
                    self.fatal = str(exc)
                    assert self._games is not None
                    self._games.cancel_scope.cancel()
                    return
            self.count(record)
            if self.draining:
                self.finished_after_interrupt += 1
        finally:
            del self.state.live[number]
            del self.in_flight[spec.slot]
            self._changed.set()

    def count(self, record: JournalRecord) -> None:
        """Take in one recorded game: the run state, the void streak, the stop rules."""
        state = self.state
        state.add_record(record)
        if record.void:
            self.void_streak += 1
            for name, counts in record.fallbacks.items():
                self._streak_fallbacks.setdefault(name, Counter()).update(counts)
        else:
            self.void_streak = 0
            self._streak_fallbacks = {}
            if record.slot is not None:
                self.done_slots.add(record.slot)
        state.emit(GameRecorded(record))
        if record.void and self.void_streak >= MAX_VOID_STREAK and self.stop_kind is None:
            self._void_streak_stop()
        # Fed even after another stop: a rule's status is its games', decided or not.
        decided = self.stop_rules.add(record)
        self._update_stop_status()
        if decided is not None and self.stop_kind is None:
            self._stop(_stop_kind(decided), decided)

    def _update_stop_status(self) -> None:
        self.state.sprt = self.stop_rules.status("sprt")
        self.state.gate = self.stop_rules.status("gate")

    def _void_streak_stop(self) -> None:
        """Name the players and the fallback reasons that voided the streak. A player
        whose fallbacks were mostly failed connections is unreachable; timeouts are left
        out of that count, since waiting out a reconnect backoff ends in them."""
        fallbacks = []
        unreachable = []
        for name, counts in sorted(self._streak_fallbacks.items()):
            if not counts:
                continue
            fallbacks.append((name, tuple(counts.most_common())))
            others = [n for reason, n in counts.items() if reason not in ("connection",
                                                                         "timeout")]
            if counts["connection"] > max(others, default=0):
                unreachable.append((name, self.players[name].describe()))
        stop = VoidStreak(self.void_streak, tuple(fallbacks), tuple(unreachable))
        self._stop("down" if unreachable else "void", stop)


def _stop_kind(stop: RunStop) -> str:
    return "gate" if isinstance(stop, GateDecided) else "sprt"
