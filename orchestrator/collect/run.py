"""The collect job: one nursery per run, one task per game, until N finished
non-void games are recorded (or a stop rule decides: the SPRT, the gate; or Ctrl-C).

Before the run folder exists, every endpoint is checked (``preflight``). The first
Ctrl-C (or SIGTERM) stops starting games and lets the games in flight finish and be
recorded; a second one drops them. A player whose every replica is down pauses the
games that need it, up to ``down_pause_s``, then the run stops.

The games themselves (slots, outages, stop rules) are :mod:`.collector`'s
:class:`Collector`; this module sets the run up around it and reports how it ended.
"""

from __future__ import annotations

import json
import platform
import shutil
import signal
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import trio

from orchestrator import __version__
from orchestrator.collect.adjudicator import Adjudicator
from orchestrator.collect.audit import ServingAuditFailed, audit_servers
from orchestrator.collect.collector import Collector
from orchestrator.collect.matchup import Matchup, load_matchup, run_name
from orchestrator.collect.players import open_players
from orchestrator.collect.preflight import (
    EndpointsUnreachable,
    PreflightInputError,
    check_endpoints,
)
from orchestrator.collect.recorder import (
    JOURNAL,
    RUN_FILE,
    Recorder,
    prepare_run_dir,
    resume_run,
    utc_stamp,
    write_run_file,
)
from orchestrator.collect.review import LiveReview, ReviewError
from orchestrator.collect.schedule import OpeningError, Schedule
from orchestrator.collect.state import RunState
from orchestrator.events import AdjudicationOff, OnEvent, RunContinued, RunResumed
from orchestrator.label.engine import KataGoDied
from orchestrator.label.run import EngineFiles
from orchestrator.recordings import SGF_GLOB, VOID_DIR, JournalRecord, read_journal, read_run_file

# What runs beside the games and shows them (the dashboard, the plain log's standings,
# the watch page): started with the collector once the players are up.
ViewTask = Callable[[Collector], Awaitable[None]]

# Exit statuses of `collect` (documented in its --help and the README).
EXIT_OK = 0  # every game asked for is recorded, or the SPRT or the gate decided
EXIT_INPUT = 2  # bad matchup or options, or the recordings cannot be written
EXIT_DOWN = 3  # a player cannot be reached (at start, for down_pause_s, or void games)
EXIT_STOPPED = 4  # stopped before the games asked for: a streak of void games
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM


class CollectError(RuntimeError):
    """The run cannot start or continue; the message is one line."""

    exit_code = EXIT_INPUT


class PlayersUnreachable(CollectError):
    exit_code = EXIT_DOWN


@dataclass(frozen=True)
class CollectOptions:
    matchup_path: Path
    games: int | None = None
    resume: bool | Path = False
    recordings: Path = Path("recordings")
    dashboard: bool = True
    wait_endpoints_s: float = 0.0
    strict_audit: bool = False  # a serving audit finding stops the run (exit 3)
    # KataGo for [adjudicate] (--katago/--model/--config or `make katago`'s), or why none.
    katago: EngineFiles | str | None = None


@dataclass
class RunSummary:
    run_dir: Path
    state: RunState
    interrupted: bool
    dropped_in_flight: int
    finished_after_interrupt: int = 0
    stop_kind: str | None = None  # sprt | gate | void | down, when the run stopped itself
    removed: bool = False  # interrupted before any game was recorded: no folder left

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return EXIT_INTERRUPTED
        if self.stop_kind == "down":
            return EXIT_DOWN
        if self.stop_kind in ("sprt", "gate") or self.state.done >= self.state.target:
            return EXIT_OK
        return EXIT_STOPPED


def find_run_dir(options: CollectOptions, name: str) -> tuple[Path, bool, RunContinued | None]:
    """The folder to record into, whether it is a resumed one, and for ``--resume``
    without a folder which run it continues."""
    if isinstance(options.resume, Path):
        run_dir = options.resume
        if not (run_dir / RUN_FILE).is_file():
            raise CollectError(f"{run_dir}: not a go19 run folder (no {RUN_FILE})")
        return run_dir, True, None
    if options.resume:
        candidates = sorted(
            p for p in options.recordings.glob(f"{name}-*") if (p / RUN_FILE).is_file()
        )
        unfinished = []
        for run_dir in reversed(candidates):
            info = read_run_file(run_dir)
            done = _count_done(run_dir)
            if done < info.get("games_target", 0) or options.games and done < options.games:
                unfinished.append((run_dir, _recorded(run_dir)))
        # A folder with no game in it (a run killed before its first game ended) is not
        # the run to continue while an older one has games.
        with_games = [(run_dir, n) for run_dir, n in unfinished if n]
        if with_games or unfinished:
            run_dir, recorded = (with_games or unfinished)[0]
            skipped = next(i for i, (d, _) in enumerate(unfinished) if d == run_dir)
            return run_dir, True, RunContinued(str(run_dir), recorded, name,
                                               str(options.recordings), skipped)
        raise CollectError(
            f"no unfinished run of {name} in {options.recordings} to resume; drop --resume"
        )
    stamp = utc_stamp(time.time())
    run_dir = options.recordings / f"{name}-{stamp}"
    suffix = 1
    while run_dir.exists():
        suffix += 1
        run_dir = options.recordings / f"{name}-{stamp}-{suffix}"
    return run_dir, False, None


def _count_done(run_dir: Path) -> int:
    return sum(not record.void for record in read_journal(run_dir / JOURNAL).records)


def _recorded(run_dir: Path) -> int:
    """Games recorded in a run folder, void ones too: journal lines, or SGFs whose line
    was lost (resume rebuilds it)."""
    lines = len(read_journal(run_dir / JOURNAL).records)
    files = sum(1 for _ in run_dir.glob(SGF_GLOB)) + sum(1 for _ in (run_dir / VOID_DIR).glob(
        SGF_GLOB))
    return max(lines, files)


def _remove_new_run_dir(run_dir: Path) -> None:
    """A run that could not start leaves no folder behind (it was created just now)."""
    shutil.rmtree(run_dir, ignore_errors=True)


def _prepare_run_dir(options: CollectOptions, matchup: Matchup, run_dir: Path,
                     resumed: bool, state: RunState) -> None:
    """Create (or repair, on resume) the run folder and write run.json; a resumed run's
    records go into ``state``. A write error is one line, and a new run folder is not
    left behind."""
    target = state.target
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        prepare_run_dir(run_dir)
        if any(spec.kind == "gtp" for spec in matchup.players.values()):
            (run_dir / "logs").mkdir(exist_ok=True)
        if resumed:
            report = resume_run(run_dir)
            for repair in report.repairs():
                state.emit(repair)
            _restore(state, report.records)
            state.emit(RunResumed(str(run_dir), state.done, target))
        write_run_file(
            run_dir,
            {
                "run_id": run_dir.name,
                "matchup_path": str(options.matchup_path),
                "matchup": json.loads(matchup.model_dump_json()),
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "go19_version": __version__,
                "python": platform.python_version(),
                "games_target": target,
            },
        )
    except OSError as exc:
        if not resumed:
            _remove_new_run_dir(run_dir)
        raise CollectError(
            f"cannot write recordings in {run_dir}: {exc.strerror or exc}"
        ) from None


def _restore(state: RunState, records: list[JournalRecord]) -> None:
    for record in records:
        state.add_record(record)
    state.done_at_start = state.done


@asynccontextmanager
async def _adjudication(matchup: Matchup, options: CollectOptions, run_dir: Path,
                        state: RunState, resumed: bool,
                        say: Callable[[str], None]) -> AsyncIterator[Adjudicator | None]:
    """The run's adjudicating KataGo, started before any game (one that does not start is
    a preflight failure, exit 3), or None without ``[adjudicate]``."""
    settings = matchup.adjudicate
    if settings is None:
        yield None
        return
    files = options.katago
    if not isinstance(files, EngineFiles):
        if not resumed:
            _remove_new_run_dir(run_dir)
        raise CollectError(f"[adjudicate]: {files or 'no KataGo given'}")
    adjudicator = Adjudicator(settings, files.config, matchup.run.seed,
                              lambda game, why: state.emit(AdjudicationOff(game, why)))
    started = False
    try:
        async with adjudicator.open(files.binary, files.model, files.config,
                                    run_dir / "logs" / "adjudicate-katago.log"):
            started = True
            say(f"● OK      adjudicate: KataGo {adjudicator.version} ({files.model.name}), "
                f"{adjudicator.perspective.lower()} view")
            yield adjudicator
    except KataGoDied as exc:
        if started:  # the engine's own death never raises: this is not ours to turn
            raise
        say(f"● FAILED  adjudicate: KataGo did not start: {exc}")
        if not resumed:
            _remove_new_run_dir(run_dir)
        raise PlayersUnreachable(f"[adjudicate]: KataGo did not start: {exc}") from None


async def collect(
    options: CollectOptions,
    on_event: OnEvent | None = None,
    view: ViewTask | None = None,
    preflight_log: Callable[[str], None] = print,
    review: LiveReview | None = None,
) -> RunSummary:
    """Play and record one run. ``on_event`` hears everything the run says
    (:mod:`orchestrator.events`), ``view`` runs beside the games (a dashboard),
    ``preflight_log`` gets the lines of the endpoint checks made before anything is
    written; ``review`` labels the recorded games beside them (``--review``), its KataGo
    checked with the players."""
    matchup = load_matchup(options.matchup_path)
    name = run_name(matchup, options.matchup_path)
    run_dir, resumed, continuing = find_run_dir(options, name)
    if continuing is not None and on_event is not None:
        on_event(continuing)  # now, before the endpoint checks (which may wait)
    target = options.games or matchup.run.games or 0
    if resumed and not target:
        target = read_run_file(run_dir).get("games_target", 0)
    if target <= 0:
        raise CollectError("how many games? give --games N (or [run] games = N in the matchup)")
    try:
        await check_endpoints(matchup, options.wait_endpoints_s, preflight_log)
    except EndpointsUnreachable as exc:
        raise PlayersUnreachable(str(exc)) from None
    except PreflightInputError as exc:
        raise CollectError(str(exc)) from None
    try:
        await audit_servers(matchup, preflight_log, options.strict_audit)
    except ServingAuditFailed as exc:
        raise PlayersUnreachable(str(exc)) from None

    try:
        schedule = Schedule(matchup)  # before the run folder: a bad openings folder
    except OpeningError as exc:
        raise CollectError(str(exc)) from None
    state = RunState(run_id=run_dir.name, target=target, players=sorted(matchup.players))
    if on_event is not None:
        state.subscribe(on_event)
    _prepare_run_dir(options, matchup, run_dir, resumed, state)
    if review is not None:
        pairing = matchup.pairing
        try:
            review.open(run_dir, state, None if pairing.black == pairing.white
                        else (pairing.black, pairing.white))
        except ReviewError as exc:
            if not resumed:
                _remove_new_run_dir(run_dir)
            raise CollectError(str(exc)) from None

    interrupted = False
    review_failed: str | None = None
    # The wait for the review once the games are over; any Ctrl-C ends it (or skips it).
    review_wait = trio.CancelScope()
    async with _adjudication(matchup, options, run_dir, state, resumed,
                             preflight_log) as adjudicator, trio.open_nursery() as outer:
        try:  # KataGo before any game: one that does not start is a preflight failure
            if review is not None:
                await outer.start(review.run, preflight_log)
        except ReviewError as exc:
            review_failed = str(exc)
        else:
            players = await open_players(matchup, outer, run_dir / "logs", on_event=state.emit)
            # The players' metadata names the embedded servers' ports: known only now.
            recorder = Recorder(run_dir, {name: h.meta for name, h in players.items()})
            collector = Collector(matchup, run_dir, schedule, state, players, recorder,
                                  adjudicator)
            if view is not None:
                outer.start_soon(view, collector)
            with trio.CancelScope() as games_scope:
                async def watch_signals() -> None:
                    nonlocal interrupted
                    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                        async for _ in signals:
                            review_wait.cancel()
                            if not interrupted:
                                interrupted = True
                                collector.drain()
                            else:
                                games_scope.cancel()
                                return

                if threading.current_thread() is threading.main_thread():
                    outer.start_soon(watch_signals)
                await collector.run_games()
            for handle in collector.players.values():
                with trio.CancelScope(shield=True), trio.move_on_after(5):
                    await handle.aclose()
            if review is not None and collector.fatal is None:
                with review_wait:
                    await review.finish()
        outer.cancel_scope.cancel()
    if review_failed is not None:
        if not resumed:
            _remove_new_run_dir(run_dir)
        raise PlayersUnreachable(f"--review: {review_failed}")
    if collector.fatal:
        raise CollectError(collector.fatal)
    removed = interrupted and not resumed and not _recorded(run_dir)
    if removed:  # nothing to continue: an empty folder would only be what --resume picks
        _remove_new_run_dir(run_dir)
    return RunSummary(
        run_dir, collector.state, interrupted, collector.dropped,
        finished_after_interrupt=collector.finished_after_interrupt,
        stop_kind=collector.stop_kind, removed=removed,
    )
