"""The run in words, the one place events become text: :func:`words` (the log line of an
event), :func:`panel_line` (how the dashboard's recent events show and collapse it),
:func:`stop_reason` (why the run stops); the head-to-head line the dashboard and the
watch page show (W–L–D, Elo with its interval, the statistic's kind, LOS, LLR), and,
without a terminal, :class:`PlainLog`: one timestamped line per event and, every N
finished games, a standings block like fastchess's ``Results of … vs …``.

A new event (:mod:`orchestrator.events`) gets its wording here: ``@words.register``.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from functools import singledispatch
from typing import TYPE_CHECKING

from rich.text import Text

from orchestrator.collect.stopping import HeadToHead, head_to_head_live
from orchestrator.events import (
    AdjudicationOff,
    Event,
    Fallback,
    GameNotReviewed,
    GameRecorded,
    GameReviewed,
    GameStarted,
    GateDecided,
    Interrupted,
    JournalRepaired,
    MovePlayed,
    PlayerBack,
    PlayerDown,
    PlayerDownTooLong,
    PlayerRaised,
    ReplicaChanged,
    ReviewEngineDied,
    ReviewFinishing,
    ReviewLagging,
    ReviewQueueFull,
    ReviewStarted,
    ReviewStopped,
    RunContinued,
    RunResumed,
    RunStop,
    SprtAccepted,
    SprtStatus,
    VoidStreak,
    WatchPage,
)
from orchestrator.quality.running import QualityStatus
from orchestrator.quality.verdict import quality_line
from orchestrator.ratings import Pentanomial, estimate
from orchestrator.words import plural, some

if TYPE_CHECKING:
    from orchestrator.collect.collector import Collector
    from orchestrator.collect.state import RunState


# -- events ------------------------------------------------------------------------


# Events whose words are their fields put in a line (None: not logged, like each move).
_LINES: dict[type[Event], str | None] = {
    GameStarted: "game {game} started: {black} (B) vs {white} (W), slot {slot}",
    MovePlayed: None,
    Fallback: "game {game} move {move}: {player} {reason}, fallback",
    PlayerRaised: "game {game}: {player} raised {error}",
    PlayerDown: "player {player} is down ({where}): its games wait up to {pause_s:g} s for a "
                "replica to come back",
    PlayerBack: "player {player} is back: its games go on",
    RunResumed: "resuming {run_dir}: {done} of {target} games already done",
    GameNotReviewed: "review: game {game} not labelled ({reason}); the review goes on",
    ReviewQueueFull: "review: its queue holds {size} games, game {game} is left unlabelled "
                     "(`collect --resume RUN_DIR --review` labels it)",
    AdjudicationOff: "game {game}: no adjudication ({reason}); it is played out",
    ReviewEngineDied: "review: KataGo {engine} died ({error}); restarting "
                      "({deaths}/{max_restarts})",
}


@singledispatch
def words(event: Event) -> str | None:
    """The line the plain log prints for ``event``; None for what is not logged (each
    move). An event with neither a line in ``_LINES`` nor wording of its own reads as
    its fields."""
    if type(event) in _LINES:
        line = _LINES[type(event)]
        return None if line is None else line.format_map(vars(event))
    return repr(event)


def has_words(kind: type[Event]) -> bool:
    """Whether events of ``kind`` have a wording of their own (a test checks them all)."""
    return kind in _LINES or words.dispatch(kind) is not words.dispatch(Event)


@words.register
def _(event: GameRecorded) -> str:
    r = event.record
    if r.void:
        return f"game {r.game} void (too many fallbacks), slot replayed"
    return (f"game {r.game}: {r.black} (B) vs {r.white} (W) {r.result} by {r.reason}, "
            f"{r.moves} moves")


@words.register
def _(event: ReplicaChanged) -> str:
    who = f"{event.player}: " if event.player else ""
    where = f"{who}{event.address}"
    if event.status == "backoff":
        return f"{where}: connect failed ({event.error}); retry in {event.retry_in:g} s"
    if event.status == "throttled":
        return f"{where}: throttled ({event.error}); no request for {event.retry_in:g} s"
    if event.status == "down":
        return f"{where}: down after {event.failures} failed connects ({event.error})"
    if event.probes:
        return (f"{where}: back up, {event.probe or 'answered'} after "
                f"{plural(event.probes, 'probe')}; in use again")
    return f"{where}: reconnected after {plural(event.failures, 'failed attempt')}"


@words.register
def _(event: RunContinued) -> str:
    line = (f"resume: continuing {event.run_dir} ({plural(event.recorded, 'game')} recorded), "
            f"the latest unfinished run of {event.name} in {event.recordings}")
    if event.skipped:
        line += f"; skipped {plural(event.skipped, 'newer run folder')} with no recorded game"
    return line


_REPAIRS = {
    "rebuilt": "journal line rebuilt from {}",
    "dropped": "journal line dropped, no SGF: {}",
    "quarantined": "unreadable SGF moved to corrupt/: {}",
    "temp-removed": "removed {} unfinished temporary file(s)",
}


@words.register
def _(event: JournalRepaired) -> str:
    return "resume: " + _REPAIRS[event.repair].format(event.what)


@words.register
def _(event: RunStop) -> str:
    reason = stop_reason(event)
    return reason if isinstance(event, Interrupted) else f"stopping: {reason}"


@words.register
def _(event: ReviewStarted) -> str:
    waiting = f", {plural(event.behind, 'recorded game')} to label first" if event.behind else ""
    return (f"review: {plural(event.engines, 'KataGo engine')} ({plural(event.visits, 'visit')})"
            f" labelling each recorded game into {event.folder}{waiting}")


@words.register
def _(event: GameReviewed) -> str:
    return (f"game {event.game} reviewed ({event.positions} positions, "
            f"{_behind(event.behind)}): {quality_line(event.quality)}")


@words.register
def _(event: ReviewLagging) -> str:
    return (f"review {plural(event.behind, 'game')} behind: KataGo labels slower than the "
            "games are played (the games never wait for it)")


@words.register
def _(event: ReviewFinishing) -> str:
    return (f"games over: waiting for the review of {plural(event.behind, 'more game')} "
            "(Ctrl-C stops it; the labels so far are kept, --resume --review labels the rest)")


@words.register
def _(event: ReviewStopped) -> str:
    left = (f"; {plural(len(event.left), 'recorded game')} left unlabelled "
            f"({games_named(event.left)})" if event.left else "")
    return (f"review stopped: {event.reason}{left}; the games go on (`collect --resume "
            "RUN_DIR --review` labels the rest)")


def games_named(games: tuple[int, ...]) -> str:
    """``game 3``, ``games 3, 4, 7 and 6 more``."""
    return f"game {games[0]}" if len(games) == 1 else f"games {some([str(g) for g in games])}"


def _behind(behind: int) -> str:
    return f"review {plural(behind, 'game')} behind" if behind else "review up to date"


@words.register
def _(event: WatchPage) -> str:
    return f"watch page: {event.url}"


def fallback_status(event: Fallback) -> str:
    """The play page's status line for a fallback (a cancelled response was asked for)."""
    if event.reason == "cancelled":
        return f"{event.player}'s response cancelled — the local AI played move {event.move}"
    return (f"fallback: {event.player} {event.reason} — the local AI played move "
            f"{event.move}")


def sprt_line(status: SprtStatus) -> str:
    """``r5 vs r4 [0, 30]: LLR +1.23 (-2.94, +2.94) over 40 games``"""
    return (f"{status.player} vs {status.opponent} [{status.elo0:g}, {status.elo1:g}]: "
            f"LLR {status.llr:+.2f} ({status.lower:+.2f}, {status.upper:+.2f}) over "
            f"{plural(status.games, 'game')}")


def _elo(value: float) -> str:
    return f"{value:+.0f}" if math.isfinite(value) else ("+inf" if value > 0 else "-inf")


GATE_WORDS = {"H1": "accept {0} over {1}", "H0": "reject {0}, keep {1}",
              None: "undecided, {0} against {1}"}


def gate_line(status: SprtStatus) -> str:
    """The gate's one line (``go19 gate``, and collect's stop): ``gate: accept r5 over r4 —
    LLR 2.96 (-2.94, 2.94) [0, 35], 212 games, 121–91, Elo +49 [+6, +93]``."""
    verdict = GATE_WORDS[status.decision].format(status.player, status.opponent)
    games = plural(status.games, "game")
    if status.games < status.min_games:
        games += f" (min {status.min_games})"
    r = status.results
    score = f"{r.wins}–{r.losses}" + (f"–{r.draws}" if r.draws else "")
    line = (f"gate: {verdict} — LLR {status.llr:.2f} ({status.lower:.2f}, {status.upper:.2f}) "
            f"[{status.elo0:g}, {status.elo1:g}], {games}, {score}")
    est = estimate(status.counts) if status.counts is not None else None
    if est is not None and est.elo is not None:
        line += f", Elo {_elo(est.elo)}"
        if est.elo_low is not None and est.elo_high is not None:
            line += f" [{_elo(est.elo_low)}, {_elo(est.elo_high)}]"
    return line


@singledispatch
def stop_reason(stop: RunStop) -> str:
    """Why the run stops, as the dashboard, the watch page and the summary say it."""
    return repr(stop)


@stop_reason.register
def _(stop: SprtAccepted) -> str:
    return f"SPRT accepted {stop.sprt.decision}: {sprt_line(stop.sprt)}"


@stop_reason.register
def _(stop: GateDecided) -> str:
    return gate_line(stop.gate)


@stop_reason.register
def _(stop: PlayerDownTooLong) -> str:
    return (f"player {stop.player} is down ({stop.where}) for {stop.pause_s:g} s; "
            "resume with --resume once it is back")


def void_streak_text(stop: VoidStreak) -> str:
    """``10 void games in a row (fallbacks r5: connection 62, timeout 8)``: collect's
    stop line without its advice (``go19 play`` gives its own)."""
    parts = "; ".join(f"{name}: " + ", ".join(f"{reason} {n}" for reason, n in counts)
                      for name, counts in stop.fallbacks)
    return f"{stop.games} void games in a row (fallbacks {parts})"


@stop_reason.register
def _(stop: VoidStreak) -> str:
    reason = void_streak_text(stop)
    if stop.unreachable:
        where = ", ".join(f"{name} at {address}" for name, address in stop.unreachable)
        return f"{reason}: cannot connect to {where}; check it with `go19 ping`, then --resume"
    return f"{reason}; check the players' endpoints and logs, then --resume"


@stop_reason.register
def _(stop: Interrupted) -> str:
    n = stop.in_flight
    if not n:
        return "interrupted: no game in flight"
    return f"interrupted: finishing {plural(n, 'game')} — Ctrl-C again to drop them"


EVENTS_KEPT = 50


@dataclass
class RecentEvent:
    """One line of the dashboard's recent events: the latest of the events that read
    the same (``key``), how many there were, and when the latest came."""

    stamp: str
    text: str
    count: int = 1
    key: Hashable = ""


class RecentEvents:
    """The dashboard's recent events, a subscriber of the run state: the latest
    ``EVENTS_KEPT``, each burst of events that are the same (a player's same fallback, a
    replica failing to connect again and again; :func:`panel_line`) collapsed into one
    entry with a count, so that a burst does not push everything else out."""

    def __init__(self, kept: int = EVENTS_KEPT) -> None:
        self.entries: deque[RecentEvent] = deque(maxlen=kept)

    def on_event(self, event: Event) -> None:
        line = panel_line(event)
        if line is None:
            return
        key, text = line
        stamp = time.strftime("%H:%M:%S")
        for old in self.entries:
            if old.key == key:
                self.entries.remove(old)
                self.entries.append(RecentEvent(stamp, text, old.count + 1, key))
                return
        self.entries.append(RecentEvent(stamp, text, 1, key))


def panel_line(event: Event) -> tuple[Hashable, str] | None:
    """How ``event`` shows among the dashboard's recent events: the key of the events it
    collapses with (a burst of one player's same fallback, one replica's retries) and
    the text of the entry; None for what the panel leaves out (moves, game starts)."""
    if isinstance(event, MovePlayed | GameStarted):
        return None
    if isinstance(event, Fallback):
        return ("fallback", event.player, event.reason), f"{event.reason} fallback ({event.player})"
    text = words(event) or ""
    if isinstance(event, ReplicaChanged):
        return ("replica", event.player, event.address, event.status, event.error), text
    if isinstance(event, GameReviewed):  # the quality line itself sits in the verdict area
        return "reviewed", f"game {event.game} reviewed, {_behind(event.behind)}"
    return text, text


class ReviewLine:
    """The live review as the dashboard's verdict area and the watch page show it (a
    subscriber): the running quality line and how far behind the games the review is."""

    def __init__(self) -> None:
        self.started = False
        self.quality: QualityStatus | None = None
        self.behind = 0
        self.stopped: str | None = None

    def on_event(self, event: Event) -> None:
        if isinstance(event, ReviewStarted):
            self.started, self.behind = True, event.behind
        elif isinstance(event, GameRecorded) and self.started and not event.record.void:
            self.behind += 1
        elif isinstance(event, GameReviewed):  # a page that subscribed late starts here
            self.started, self.quality, self.behind = True, event.quality, event.behind
        elif isinstance(event, GameNotReviewed | ReviewQueueFull):
            self.behind = max(self.behind - 1, 0)
        elif isinstance(event, ReviewStopped):
            self.stopped = event.reason

    def text(self) -> str | None:
        """``move quality over 12 reviewed games: … (review 3 games behind)``; None without
        a review."""
        if not self.started and self.stopped is None:
            return None
        line = (quality_line(self.quality) if self.quality is not None
                else "move quality: no game reviewed yet")
        if self.stopped is not None:
            return f"{line} (review stopped: {self.stopped})"
        return f"{line} ({_behind(self.behind)})"


# -- the head-to-head --------------------------------------------------------------


def plain_log(line: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {line}", flush=True)


def _signed(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "n/a"
    if math.isinf(value):
        return "+∞" if value > 0 else "−∞"
    return f"{value:+.{digits}f}".replace("-", "−")


def pairing_stats(collector: Collector, cache: dict | None = None) -> HeadToHead | None:
    """The matchup's head-to-head, recomputed only when a game was recorded, with the
    stop rules' SPRTs as the collector keeps them."""
    pairing = collector.matchup.pairing
    if pairing.black == pairing.white:
        return None
    state = collector.state
    records = state.records
    if cache is not None and cache.get("n") == len(records):
        return cache["stats"]
    stops = [s for s in (state.sprt, state.gate) if s is not None]
    stats = head_to_head_live(records, pairing.black, pairing.white, stops)
    if cache is not None:
        cache.update(n=len(records), stats=stats)
    return stats


def _stop_mark(status: SprtStatus) -> str:
    if status.decision is None:
        return ""
    if status.rule == "gate":
        return " accept ✓" if status.decision == "H1" else " reject ✓"
    return f" {status.decision} ✓"


def verdict_text(h: HeadToHead | None, state: RunState) -> Text:
    """``r5 vs r4: 212–188–0 (53.0 %)  Elo +20.9 [−13.1, +55.0] …  LOS 88 %  LLR …``"""
    if h is None:
        return Text(f"self-play: {state.done} games", style="bold")
    r = h.results
    est = h.estimate
    text = Text()
    text.append(f"{h.player} vs {h.opponent}: ", style="bold")
    if not r.games:
        text.append("no rated games yet")
        return text
    text.append(f"{r.wins}–{r.losses}–{r.draws} ({100 * r.points / r.games:.1f} %)")
    if est.elo is not None:
        style = "green" if est.los and est.los >= 0.95 else (
            "red" if est.los is not None and est.los <= 0.05 else "bold")
        text.append("  Elo ")
        text.append(_signed(est.elo), style=style)
        if est.elo_low is not None:
            text.append(f" [{_signed(est.elo_low)}, {_signed(est.elo_high)}]")
        text.append(f" {h.kind} {h.samples}", style="dim")
    if est.los is not None:
        text.append(f"  LOS {100 * est.los:.1f} %")
    for stop in h.stops:
        name = f"gate {stop.player} " if stop.rule == "gate" else ""
        text.append(f"  {name}LLR {_signed(stop.llr, 2)} ({_signed(stop.lower, 2)}, "
                    f"{_signed(stop.upper, 2)}) [{stop.elo0:g}, {stop.elo1:g}]"
                    f"{_stop_mark(stop)}")
    return text


def standings_block(collector: Collector, h: HeadToHead | None = None) -> str:
    """fastchess's ``Results of A vs B`` block for the plain log."""
    state = collector.state
    h = h or pairing_stats(collector)
    rule = "-" * 50
    if h is None:
        return f"{rule}\nSelf-play: {state.done} of {state.target} games\n{rule}"
    r, est = h.results, h.estimate
    lines = [rule, f"Results of {h.player} vs {h.opponent} ({state.done}/{state.target} "
             f"games, {state.void} void):"]
    if est.elo is None:
        lines.append("Elo: no rated games yet")
    else:
        err = f" +/- {est.error:.1f}" if est.error is not None else ""
        nelo = (f", nElo: {est.nelo:.1f} +/- {est.nelo_error:.1f}"
                if est.nelo is not None else "")
        lines.append(f"Elo: {est.elo:.1f}{err}{nelo} ({h.kind}, {h.samples})")
        if est.los is not None:
            draws = 100 * r.draws / r.games if r.games else 0.0
            lines.append(f"LOS: {100 * est.los:.1f} %, DrawRatio: {draws:.1f} %")
    points = r.points
    share = f" ({100 * points / r.games:.1f} %)" if r.games else ""
    lines.append(f"Games: {r.games}, Wins: {r.wins}, Losses: {r.losses}, Draws: {r.draws}, "
                 f"Points: {points:.1f}{share}")
    if isinstance(h.counts, Pentanomial):
        lines.append(f"Ptnml(0-2): [{', '.join(map(str, h.counts.counts))}]")
    for stop in h.stops:
        name = f"Gate ({stop.player}) " if stop.rule == "gate" else ""
        lines.append(f"{name}LLR: {stop.llr:.2f} ({stop.lower:.2f}, {stop.upper:.2f}) "
                     f"[{stop.elo0:.2f}, {stop.elo1:.2f}] over {plural(stop.games, 'game')}"
                     f"{_stop_mark(stop)}")
    lines.append(rule)
    return "\n".join(lines)


class PlainLog:
    """The dashboard's stand-in without a terminal: a timestamped line per event, and a
    standings block whenever ``every`` more games have finished (0: never)."""

    def __init__(self, every: int = 10, out: Callable[[str], None] = plain_log) -> None:
        self.every = every
        self.out = out
        self._collector: Collector | None = None
        self._shown_at = 0

    def on_event(self, event: Event) -> None:
        line = words(event)
        if line is None:
            return
        self.out(line)
        collector = self._collector
        if collector is None or self.every <= 0:
            return
        done = collector.state.done
        if done // self.every > self._shown_at // self.every:
            self._shown_at = done
            for text in standings_block(collector).splitlines():
                self.out(text)

    async def run(self, collector: Collector) -> None:
        self._collector = collector
        self._shown_at = collector.state.done  # a resumed run's old games were shown before
