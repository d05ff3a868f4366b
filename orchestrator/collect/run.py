"""The collect job: one nursery per run, one task per game, until N finished
non-void games are recorded (or SPRT decides, or Ctrl-C).

Slots: game ``k`` of the schedule is slot ``k``; a slot is done once a non-void
game for it is in the journal. Starting a game takes the lowest slot neither
done nor in flight, so a void game's slot is replayed and a resumed run replays
exactly the slots that were in flight when it died.
"""

from __future__ import annotations

import json
import platform
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import trio

from orchestrator import __version__
from orchestrator.collect.matchup import Matchup, load_matchup, run_name
from orchestrator.collect.players import PlayerHandle, open_players
from orchestrator.collect.recorder import JOURNAL, RUN_FILE, Recorder, RecordingError, utc_stamp
from orchestrator.collect.referee import GameSpec, LiveGame, RefereeSettings, play_game
from orchestrator.collect.schedule import Schedule
from orchestrator.collect.state import RunState
from orchestrator.collect.stopping import sprt_check
from orchestrator.recordings import read_journal, read_run_file
from orchestrator.rules.game import Game

# A player so broken that every game is void would otherwise be replayed forever.
MAX_VOID_STREAK = 10


class CollectError(RuntimeError):
    """The run cannot start or continue; the message is one line."""


@dataclass(frozen=True)
class CollectOptions:
    matchup_path: Path
    games: int | None = None
    resume: bool | Path = False
    recordings: Path = Path("recordings")
    dashboard: bool = True


@dataclass
class RunSummary:
    run_dir: Path
    state: RunState
    interrupted: bool
    dropped_in_flight: int


def find_run_dir(options: CollectOptions, name: str) -> tuple[Path, bool]:
    """The folder to record into, and whether it is a resumed one."""
    if isinstance(options.resume, Path):
        run_dir = options.resume
        if not (run_dir / RUN_FILE).is_file():
            raise CollectError(f"{run_dir}: not a go19 run folder (no {RUN_FILE})")
        return run_dir, True
    if options.resume:
        candidates = sorted(
            p for p in options.recordings.glob(f"{name}-*") if (p / RUN_FILE).is_file()
        )
        for run_dir in reversed(candidates):
            info = read_run_file(run_dir)
            done = _count_done(run_dir)
            if done < info.get("games_target", 0) or options.games and done < options.games:
                return run_dir, True
        raise CollectError(
            f"no unfinished run of {name} in {options.recordings} to resume; drop --resume"
        )
    stamp = utc_stamp(time.time())
    run_dir = options.recordings / f"{name}-{stamp}"
    suffix = 1
    while run_dir.exists():
        suffix += 1
        run_dir = options.recordings / f"{name}-{stamp}-{suffix}"
    return run_dir, False


def _count_done(run_dir: Path) -> int:
    return sum(not record.void for record in read_journal(run_dir / JOURNAL).records)


class Collector:
    def __init__(self, matchup: Matchup, run_dir: Path, target: int, log) -> None:
        self.matchup = matchup
        self.run_dir = run_dir
        self.schedule = Schedule(matchup)
        self.settings = RefereeSettings(
            size=matchup.game.size,
            komi=matchup.game.komi,
            move_cap=matchup.game.move_cap,
            move_timeout_s=matchup.game.move_timeout_s,
            void_after=matchup.fallback.void_after,
            fallback_level=matchup.fallback.level,
        )
        names = sorted(matchup.players)
        self.state = RunState(run_id=run_dir.name, target=target, players=names, on_event=log)
        self.log = log
        self.done_slots: set[int] = set()
        self.in_flight: dict[int, int] = {}  # slot -> game number
        self.next_number = 1
        self._changed = trio.Event()
        self.players: dict[str, PlayerHandle] = {}
        self.recorder: Recorder | None = None
        self.fatal: str | None = None
        self.dropped = 0
        # One writer thread at a time: journal appends must not interleave, and a line a
        # full disk cut short is truncated away, which must not take another line with it.
        self._writer = trio.CapacityLimiter(1)
        self.void_streak = 0

    def restore(self, records: list[dict]) -> None:
        for record in records:
            self.state.add_record(record)
            if not record["void"]:
                self.done_slots.add(record["slot"])
            self.next_number = max(self.next_number, record["game"] + 1)
        self.state.done_at_start = self.state.done

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

    async def run_games(self) -> None:
        state = self.state
        concurrency = self.matchup.game.concurrency
        async with trio.open_nursery() as nursery:
            while state.stop_reason is None and self.fatal is None:
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
                    if not self.in_flight:
                        state.stop_reason = (
                            f"player {down} is down ({self.players[down].describe()}); "
                            "resume with --resume once it is back"
                        )
                        break
                    await self._wait_change()
                    continue
                number = self.next_number
                self.next_number += 1
                self.in_flight[spec.slot] = number
                nursery.start_soon(self._one_game, spec, number)
            nursery.cancel_scope.cancel()

    async def _wait_change(self) -> None:
        await self._changed.wait()
        self._changed = trio.Event()

    async def _one_game(self, spec: GameSpec, number: int) -> None:
        live = LiveGame(
            number=number,
            spec=spec,
            game=Game(self.settings.size, self.settings.komi),
            latency_sink=self.state.latency,
            event_sink=self.state.event,
        )
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
                )
            except trio.Cancelled:
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
                    return
            self._count(record)
        finally:
            del self.state.live[number]
            del self.in_flight[spec.slot]
            self._changed.set()

    def _count(self, record: dict) -> None:
        state = self.state
        state.add_record(record)
        if record["void"]:
            self.void_streak += 1
            state.event(f"game {record['game']} void (too many fallbacks), slot replayed")
            if self.void_streak >= MAX_VOID_STREAK:
                culprits = sorted(n for n, c in record["fallbacks"].items() if c)
                state.stop_reason = (
                    f"{self.void_streak} void games in a row (too many fallbacks for "
                    f"{', '.join(culprits)}); check the endpoint with `go19 ping`"
                )
        else:
            self.void_streak = 0
            self.done_slots.add(record["slot"])
            state.event(
                f"game {record['game']}: {record['black']} (B) vs {record['white']} (W) "
                f"{record['result']} by {record['reason']}, {record['moves']} moves"
            )
        sprt = self.matchup.stop.sprt
        if sprt is not None and self.matchup.pairing.black != self.matchup.pairing.white:
            verdict = sprt_check(state.records, self.matchup.pairing.black,
                                 self.matchup.pairing.white, sprt)
            state.sprt_line = verdict.line
            if verdict.decision is not None:
                state.stop_reason = f"SPRT accepted {verdict.decision}: {verdict.line}"
                self._changed.set()


async def collect(options: CollectOptions, log=print, dashboard_factory=None) -> RunSummary:
    matchup = load_matchup(options.matchup_path)
    name = run_name(matchup, options.matchup_path)
    run_dir, resumed = find_run_dir(options, name)
    target = options.games or matchup.run.games or 0
    if resumed and not target:
        target = read_run_file(run_dir).get("games_target", 0)
    if target <= 0:
        raise CollectError("how many games? give --games N (or [run] games = N in the matchup)")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CollectError(f"cannot create {run_dir}: {exc.strerror}") from None

    collector = Collector(matchup, run_dir, target, log)
    interrupted = False
    async with trio.open_nursery() as outer:
        collector.players = await open_players(
            matchup, outer, run_dir / "logs", on_event=collector.state.event
        )
        meta = {n: h.meta for n, h in collector.players.items()}
        recorder = Recorder(run_dir, run_dir.name, meta)
        collector.recorder = recorder
        try:
            recorder.prepare()
            if resumed:
                report = recorder.resume()
                for line in report.lines():
                    log(f"resume: {line}")
                collector.restore(report.records)
                log(f"resuming {run_dir}: {collector.state.done} of {target} games already done")
            recorder.write_run_file(
                {
                    "run_id": run_dir.name,
                    "matchup_path": str(options.matchup_path),
                    "matchup": json.loads(matchup.model_dump_json()),
                    "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "go19_version": __version__,
                    "python": platform.python_version(),
                    "games_target": target,
                }
            )
        except OSError as exc:
            raise CollectError(f"cannot write recordings in {run_dir}: {exc.strerror}") from None

        if dashboard_factory is not None:
            outer.start_soon(dashboard_factory, collector)
        with trio.CancelScope() as games_scope:
            async def watch_signals() -> None:
                nonlocal interrupted
                with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for _ in signals:
                        interrupted = True
                        games_scope.cancel()
                        return

            if threading.current_thread() is threading.main_thread():
                outer.start_soon(watch_signals)
            await collector.run_games()
        for handle in collector.players.values():
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                await handle.aclose()
        outer.cancel_scope.cancel()
    if collector.fatal:
        raise CollectError(collector.fatal)
    return RunSummary(run_dir, collector.state, interrupted, collector.dropped)
