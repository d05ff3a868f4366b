"""Everything a run says, as values (a shared contract).

The referee, the collector, the players' endpoints and the web pages announce what
happens through one ``on_event(event)`` callback; :class:`~orchestrator.collect.state.RunState`
keeps the facts it needs and fans each event out to its subscribers (the dashboard, the
plain log, the watch page). Nothing parses an event back from text: a subscriber looks at
its type and fields, and :mod:`orchestrator.collect.standings` is the one place events
become words.

Adding an event is a subclass of :class:`Event` here (every subclass is made a frozen
dataclass), plus its wording in ``standings.words`` (a test checks that every event has
one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, dataclass_transform

from orchestrator.move_record import MoveRecord
from orchestrator.quality.running import QualityStatus
from orchestrator.ratings import Counts, Wdl
from orchestrator.recordings import JournalRecord


@dataclass_transform(frozen_default=True)
class Event:
    """The base of everything a run says: each subclass is a frozen dataclass of the
    facts, compared, printed and pickled as one."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclass(frozen=True)(cls)


OnEvent = Callable[[Event], None]


# -- one game ----------------------------------------------------------------------


class GameStarted(Event):
    game: int
    slot: int
    black: str
    white: str


class MovePlayed(Event):
    """A move on the board, ``number`` (1-based) of ``game``, as its record keeps it (who
    chose it, with the fallback's reason; how long ``player`` took to answer)."""

    game: int
    number: int
    player: str
    move: MoveRecord


class Fallback(Event):
    """The heuristic AI plays ``move`` for ``player``, whose answer could not be used:
    ``reason`` is the fallback reason of the SGF mark and the journal (``timeout``,
    ``cancelled``, ``connection``, ``illegal:superko`` …)."""

    game: int
    move: int  # 1-based
    player: str
    reason: str


class PlayerRaised(Event):
    """A player failed in a way it does not report (a bug): the move falls back as
    ``error``; ``error`` is the exception's repr."""

    game: int
    player: str
    error: str


class GameRecorded(Event):
    """A finished game (void ones too) is in the recordings: its journal record."""

    record: JournalRecord


# -- the players -------------------------------------------------------------------


class ReplicaChanged(Event):
    """A replica's health changed (a GO19 server's, or an OpenAI-compatible one's base URL).
    ``status``: ``backoff`` (a connect failed; the next attempt in ``retry_in`` s),
    ``throttled`` (the server answered HTTP 429 or 503 asking for no requests for
    ``retry_in`` s: ``error`` is its reply; others take the replica's load), ``down``
    (given up after ``failures`` connects; probed in the background) or ``ok`` (working
    again: after ``failures`` failed attempts, or after ``probes`` background probes when it
    had been down, ``probe`` saying what the last one saw)."""

    address: str
    status: Literal["backoff", "throttled", "down", "ok"]
    retry_in: float | None = None
    error: str | None = None
    failures: int = 0
    probes: int = 0
    player: str | None = None  # the matchup's name for the endpoint, when it has one
    probe: str | None = None  # GO19: "answered PING"; OpenAI: "lists MODEL"


class PlayerDown(Event):
    """Every replica of ``player`` is down: its games wait up to ``pause_s``."""

    player: str
    where: str
    pause_s: float


class PlayerBack(Event):
    player: str


# -- the run -----------------------------------------------------------------------


class JournalRepaired(Event):
    """What resuming a run found and fixed in its folder."""

    repair: Literal["rebuilt", "dropped", "quarantined", "temp-removed"]
    what: str  # the SGF's name, the dropped line's game, or how many temporary files


class RunContinued(Event):
    """``--resume`` without a folder chose ``run_dir``: the latest unfinished run of the
    matchup ``name`` in ``recordings`` with a game recorded (void ones count), passing over
    ``skipped`` newer folders that have none."""

    run_dir: str
    recorded: int
    name: str
    recordings: str
    skipped: int


class RunResumed(Event):
    run_dir: str
    done: int
    target: int


StopRuleKind = Literal["sprt", "gate"]


@dataclass(frozen=True, slots=True)
class SprtStatus:
    """A stop rule's SPRT (``[stop] sprt``; ``[stop] gate``, ``player`` its candidate) over
    the games it counts, in schedule order (not an event: the run state keeps the latest,
    :class:`SprtAccepted` and :class:`GateDecided` carry the deciding one). ``games`` are
    those games, ``results`` the player's W/L/D in them, ``counts`` the samples of the LLR
    (games, or colour-swapped pairs); a gate decides only from ``min_games`` on."""

    player: str
    opponent: str
    elo0: float
    elo1: float
    llr: float
    lower: float
    upper: float
    decision: Literal["H0", "H1"] | None
    games: int = 0
    results: Wdl = Wdl()
    counts: Counts | None = None
    rule: StopRuleKind = "sprt"
    min_games: int = 0


class RunStop(Event):
    """The run stops starting games; why is the subclass."""


class SprtAccepted(RunStop):
    sprt: SprtStatus


class GateDecided(RunStop):
    """``[stop] gate`` decided: H1 accepts the candidate (``gate.player``), H0 rejects it."""

    gate: SprtStatus


class PlayerDownTooLong(RunStop):
    player: str
    where: str
    pause_s: float


class VoidStreak(RunStop):
    """``games`` void games in a row. ``fallbacks``: per player, its fallback reasons in
    the streak, most common first; ``unreachable``: (player, where) of the players whose
    fallbacks were mostly failed connections."""

    games: int
    fallbacks: tuple[tuple[str, tuple[tuple[str, int], ...]], ...]
    unreachable: tuple[tuple[str, str], ...] = ()


class Interrupted(RunStop):
    """The first Ctrl-C (or SIGTERM): ``in_flight`` games are let finish."""

    in_flight: int


class WatchPage(Event):
    """``collect --web``: the watch page is served at ``url`` (its port was bound before
    the run, so a busy port never gets this far)."""

    url: str


# -- the live review (collect --review) ----------------------------------------------


class ReviewStarted(Event):
    """``collect --review``: ``engines`` KataGo engines label the recorded games into
    ``folder``; ``behind`` recorded games wait for them (a resumed run's unlabelled ones)."""

    engines: int
    visits: int
    folder: str
    behind: int


class GameReviewed(Event):
    """Game ``game``'s labels are in the label folder; ``behind``: recorded games still
    waiting for the review; ``quality``: the running move quality with it."""

    game: int
    positions: int
    behind: int
    quality: QualityStatus


class GameNotReviewed(Event):
    """Game ``game`` could not be labelled (its SGF unreadable, KataGo refused a query)."""

    game: int
    reason: str


class ReviewLagging(Event):
    """The review is ``behind`` games behind the games (shown, never waited for)."""

    behind: int


class ReviewFinishing(Event):
    """The games are over and the run waits for the review's last ``behind`` games."""

    behind: int


class ReviewQueueFull(Event):
    """The review's queue holds ``size`` games: game ``game`` is left unlabelled, for
    ``collect --resume --review`` (or ``go19 review --resume``)."""

    game: int
    size: int


class AdjudicationOff(Event):
    """KataGo's adjudication stops for game ``game`` (it lags past the move deadline, or
    is gone): the game goes on and ends as played, said once."""

    game: int
    reason: str


class ReviewEngineDied(Event):
    """A KataGo of the review died (``error``) and is restarted: ``deaths`` in a row of
    ``max_restarts``."""

    engine: int
    error: str
    deaths: int
    max_restarts: int


class ReviewStopped(Event):
    """The review stops (``reason``), the collection goes on; ``left``: the numbers of the
    recorded games not labelled."""

    reason: str
    left: tuple[int, ...]
