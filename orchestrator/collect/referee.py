"""One refereed game: ask each side for a move under its clock (:func:`ask`), replace
what cannot be played with the heuristic chooser's move and say why (the fallback),
end on two passes, resignation, the move cap or too many fallbacks (void), and score
it (the outcome, :class:`RefereedGame`, whose moves are the record's own
:class:`~orchestrator.move_record.MoveRecord` and which becomes the game's
:class:`~orchestrator.recordings.GameRecord`).

The referee owns every seat's clock: ``RefereeSettings`` gives each player its time per
move, or none (a human at the play page). It also owns the one way to give up on a
request before its time is up (:meth:`LiveGame.cancel_request`, the play page's "cancel
VLM response"): both end as fallbacks, ``timeout`` and ``cancelled``. What happens is
announced as events (:mod:`orchestrator.events`) to ``on_event``.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import trio

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS
from orchestrator.events import Event, Fallback, MovePlayed, OnEvent, PlayerRaised
from orchestrator.move_record import MoveRecord, Origin, ReplyDetails
from orchestrator.players.base import RESIGN, Player, PlayerError
from orchestrator.players.heuristic import HeuristicChooser
from orchestrator.recordings import (
    WINNER_NAMES,
    Adjudication,
    GameRecord,
    JournalRecord,
    LatencySummary,
    OpeningInfo,
    PlayerMeta,
    ReplyNote,
    TokenCounts,
    iso,
    sgf_name,
    utc_stamp,
)
from orchestrator.rules.board import IllegalMove
from orchestrator.rules.game import Game
from orchestrator.rules.scoring import result_string

if TYPE_CHECKING:
    from orchestrator.collect.adjudicator import GameJudge


@dataclass(frozen=True, slots=True)
class Opening:
    id: str
    moves: tuple[int, ...]
    pair: int | None = None


@dataclass(frozen=True, slots=True)
class GameSpec:
    """What to play; ``slot`` is its place in the run's schedule (the resume key)."""

    slot: int
    black: str
    white: str
    opening: Opening | None = None


# Fallback reasons the referee itself gives (a player's own faults carry theirs).
TIMEOUT = "timeout"
CANCELLED = "cancelled"
ERROR = "error"


@dataclass(frozen=True, slots=True)
class RefereeSettings:
    """The game's rules and clocks. Each player has ``move_timeout_s`` seconds per move
    unless ``clocks`` names it: its own seconds, or None for no clock (a human seat)."""

    size: int = 19
    komi: float = 2.5
    move_cap: int = 722
    move_timeout_s: float | None = 30.0
    void_after: int = 20
    fallback_level: int = 2
    clocks: Mapping[str, float | None] = field(default_factory=dict)

    def move_timeout(self, name: str) -> float | None:
        return self.clocks.get(name, self.move_timeout_s)


@dataclass
class LiveGame:
    """What the dashboard and the pages read about a game in flight; the referee updates
    it. :meth:`cancel_request` gives up on the request in flight (a ``cancelled``
    fallback)."""

    number: int
    spec: GameSpec
    game: Game
    waiting_on: str | None = None
    _request: trio.CancelScope | None = field(default=None, repr=False)

    def cancel_request(self) -> bool:
        """Give up on the player's answer now; False when no request is in flight."""
        if self._request is None:
            return False
        self._request.cancel()
        return True


@dataclass
class RefereedGame:
    """A game as the referee ended it; :meth:`record` is the game's record, what the
    recorder and the play page's training save write (SGF and journal line)."""

    spec: GameSpec
    number: int
    size: int
    komi: float
    moves: list[MoveRecord]
    reason: str  # two-passes | resign | move-cap | void
    result: str  # SGF RE: B+3.5, W+R, 0, Void
    winner: int | None  # BLACK, WHITE, 0 for a draw, None when void
    score: float | None  # Black's area margin after komi; None on resign/void
    # Per player: its fallbacks by reason (the one that made a game void too, which has no
    # move), and every answer's time (a resignation's too).
    fallbacks: dict[str, Counter] = field(default_factory=dict)
    latencies_ms: dict[str, list[float]] = field(default_factory=dict)
    started: float = 0.0
    finished: float = 0.0
    adjudication: Adjudication | None = None  # with [adjudicate]

    @property
    def void(self) -> bool:
        return self.reason == "void"

    def record(self, run: str, players: Mapping[str, PlayerMeta],
               sgf: str | None = None) -> GameRecord:
        """The game's record in run ``run``, its players described by ``players``, its SGF
        named ``sgf`` (default: as collect names it, from the finish stamp and number)."""
        spec = self.spec
        names = sorted({spec.black, spec.white})
        illegal = {n: sum(c for r, c in self.fallbacks.get(n, {}).items()
                          if r.startswith("illegal:")) for n in names}
        tokens, replies = self._replies(players)
        opening = None
        if spec.opening is not None:
            opening = OpeningInfo(id=spec.opening.id, plies=len(spec.opening.moves),
                                  pair=spec.opening.pair)
        journal = JournalRecord(
            run=run,
            game=self.number,
            slot=spec.slot,
            sgf=sgf or sgf_name(utc_stamp(self.finished), self.number),
            void=self.void,
            black=spec.black,
            white=spec.white,
            players={n: players.get(n, PlayerMeta()) for n in names},
            size=self.size,
            komi=self.komi,
            handicap=0,
            result=self.result,
            winner=WINNER_NAMES[self.winner],
            reason=self.reason,
            score=self.score,
            moves=len(self.moves),
            opening=opening,
            fallbacks={n: dict(self.fallbacks.get(n, {})) for n in names},
            illegal=illegal,
            latency_ms={n: latency_summary(self.latencies_ms.get(n, [])) for n in names},
            tokens=tokens,
            replies=replies,
            adjudication=self.adjudication,
            started=iso(self.started),
            finished=iso(self.finished),
        )
        return GameRecord(journal, tuple(self.moves))

    def _replies(self, players: Mapping[str, PlayerMeta]
                 ) -> tuple[dict[str, TokenCounts], dict[str, list[ReplyNote]]]:
        """Per player, the tokens its replies reported, and what it said on its fallback
        moves (when its ``keep_reply`` keeps texts)."""
        names = {BLACK: self.spec.black, WHITE: self.spec.white}
        counts: dict[str, list[int]] = {}
        notes: dict[str, list[ReplyNote]] = {}
        for number, move in enumerate(self.moves, 1):
            said = move.reply
            if said is None:
                continue
            name = names[move.color]
            total = counts.setdefault(name, [0, 0, 0])
            if said.prompt_tokens is not None and said.completion_tokens is not None:
                total[0] += 1  # a reply whose usage gave both counts: a missing one is no 0
                total[1] += said.prompt_tokens
                total[2] += said.completion_tokens
            if move.origin is Origin.FALLBACK and move.keeps_text(
                    players.get(name, PlayerMeta()).keep_reply):
                assert move.reason is not None
                notes.setdefault(name, []).append(ReplyNote(
                    move=number, reason=move.reason, reply=said.reply,
                    reasoning=said.reasoning))
        tokens = {name: TokenCounts(moves=n, prompt=p if n else None,
                                    completion=c if n else None)
                  for name, (n, p, c) in sorted(counts.items())}
        return tokens, notes


def latency_summary(samples: list[float]) -> LatencySummary:
    if not samples:
        return LatencySummary(n=0, p50=None, p95=None, max=None)
    arr = np.asarray(samples)
    return LatencySummary(
        n=len(samples),
        p50=round(float(np.percentile(arr, 50)), 2),
        p95=round(float(np.percentile(arr, 95)), 2),
        max=round(float(arr.max()), 2),
    )


@dataclass(frozen=True, slots=True)
class Asked:
    """What asking a player gave: a point (or RESIGN) it chose in time, or the fallback
    reason, how long it took when it answered in time, and what its reply said."""

    point: int | None
    failure: str | None
    latency_ms: float | None = None
    details: ReplyDetails | None = None


async def ask(
    player: Player, game: Game, timeout_s: float | None,
    on_error: Callable[[Exception], None], live: LiveGame | None = None,
    number: int = 0,
) -> Asked:
    """Ask ``player`` for ``game.to_play``'s move in game ``number``, timed on the trio
    clock (None: no clock); with ``live``, :meth:`LiveGame.cancel_request` ends the
    request early.

    The deadline is one clock reading: a reply that completes at or after it is a
    ``timeout``, even when it came back before trio delivered the cancellation (a
    loaded event loop runs the reply's task and the expired deadline in the same tick).
    """
    asked = trio.current_time()
    deadline = math.inf if timeout_s is None else asked + timeout_s
    point: int | None = None
    failure: str | None = None
    details: ReplyDetails | None = None
    with trio.move_on_at(deadline), trio.CancelScope() as request:
        if live is not None:
            live._request = request
        try:
            said = await player.answer(game, number)
            point, details = said.point, said.details
            if said.fault is not None:
                failure = said.fault.reason
        except PlayerError as exc:  # raised rather than answered: the same fault
            failure = exc.reason
        except Exception as exc:  # noqa: BLE001 - one broken reply must not end the run
            failure = ERROR
            on_error(exc)
        finally:
            if live is not None:
                live._request = None
    answered = trio.current_time()
    if failure is not None:
        return Asked(None, failure, details=details)
    if request.cancelled_caught:
        return Asked(None, CANCELLED)
    if point is None or answered >= deadline:
        return Asked(None, TIMEOUT)
    return Asked(point, None, (answered - asked) * 1000.0, details)


def _result(game: Game, reason: str, winner: int | None) -> tuple[str, int | None, float | None]:
    """SGF result, winner and Black's margin of a game that ended for ``reason``."""
    if reason == "void":
        return "Void", None, None
    if reason == "resign":
        return ("B" if winner == BLACK else "W") + "+R", winner, None
    area = game.score()
    return result_string(area.margin), area.winner, area.margin


def _end_of_play(game: Game, settings: RefereeSettings) -> str | None:
    if game.over_by_passes:
        return "two-passes"
    if game.move_number >= settings.move_cap:
        return "move-cap"
    return None


class _Referee:
    """The state of one game in play: what each side did, and its fallback counts."""

    def __init__(self, spec: GameSpec, number: int, players: Mapping[str, Player],
                 settings: RefereeSettings, seed: int, live: LiveGame | None,
                 ready: Callable[[str], Awaitable[None]] | None = None,
                 on_event: OnEvent | None = None, judge: GameJudge | None = None) -> None:
        self.spec, self.number, self.players, self.settings = spec, number, players, settings
        self.judge = judge
        self.live = live
        self.ready = ready
        self.on_event = on_event
        self.game = Game(settings.size, settings.komi)
        if live is not None:
            live.game = self.game
        self.chooser = HeuristicChooser(seed=seed, level=settings.fallback_level)
        self.names = {BLACK: spec.black, WHITE: spec.white}
        self.fallbacks: dict[str, Counter] = {n: Counter() for n in set(self.names.values())}
        self.latencies: dict[str, list[float]] = {n: [] for n in set(self.names.values())}
        self.fallback_count = {BLACK: 0, WHITE: 0}
        self.moves: list[MoveRecord] = []
        self.opening = spec.opening.moves if spec.opening else ()
        self.last_move: int | None = None

    def _emit(self, event: Event) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def opening_move(self) -> int | None:
        """The opening's next point while it still applies (it stops at its first illegal one)."""
        ply = self.game.move_number
        if ply < len(self.opening) and self.game.board.is_legal(self.game.to_play,
                                                                  self.opening[ply]):
            return self.opening[ply]
        self.opening = ()
        return None

    async def ask(self, name: str) -> Asked:
        if self.ready is not None:
            await self.ready(name)  # outside the move's deadline
        live = self.live
        if live is not None:
            live.waiting_on = name
        answer = await ask(self.players[name], self.game, self.settings.move_timeout(name),
                           lambda exc: self._emit(PlayerRaised(self.number, name, repr(exc))),
                           live, self.number)
        if live is not None:
            live.waiting_on = None
        if answer.latency_ms is not None:
            self.latencies[name].append(answer.latency_ms)
        return answer

    def fallback(self, color: int, failure: str) -> int | None:
        """Count the fallback and return the chooser's point, or None once the side has
        had more fallbacks than ``void_after`` (the game is void)."""
        name = self.names[color]
        self.fallbacks[name][failure] += 1
        self._emit(Fallback(self.number, self.game.move_number + 1, name, failure))
        self.fallback_count[color] += 1
        if self.fallback_count[color] > self.settings.void_after:
            return None
        return self.chooser.choose(self.game.board, color, self.last_move)

    async def next_move(self) -> MoveRecord | str:
        """Play the side to move's next move (with what the player's reply said, when it
        tells); a string is the reason the game ended."""
        game, color = self.game, self.game.to_play
        point = self.opening_move()
        if point is not None:
            game.play(point)
            return MoveRecord(color, point, Origin.OPENING)
        answer = await self.ask(self.names[color])
        details = answer.details
        failure = answer.failure
        if failure is None:
            assert answer.point is not None, "an answer is a point or a failure"
            if answer.point == RESIGN:
                return "resign"
            try:
                game.play(answer.point)  # checks legality before changing anything
                return MoveRecord(color, answer.point, ms=answer.latency_ms, reply=details)
            except IllegalMove as exc:
                failure = f"illegal:{exc.reason}"
        point = self.fallback(color, failure)
        if point is None:
            return "void"
        game.play(point)
        # An illegal answer was still an answer: its latency stays on the node.
        return MoveRecord(color, point, Origin.FALLBACK, failure, answer.latency_ms, details)

    async def play(self) -> RefereedGame:
        started = time.time()
        winner: int | None = None
        while (reason := _end_of_play(self.game, self.settings)) is None:
            color = self.game.to_play
            move = await self.next_move()
            if isinstance(move, str):
                reason, winner = move, (3 - color if move == "resign" else None)
                break
            self.moves.append(move)
            self._emit(MovePlayed(self.number, len(self.moves), self.names[color], move))
            self.last_move = None if move.point == PASS else move.point
            if self.judge is not None and _end_of_play(self.game, self.settings) is None:
                resigned = await self.judge.after_move(self.game, self.settings.move_timeout_s)
                if resigned is not None:
                    reason = "resign"
                    winner = WHITE if resigned.color == "B" else BLACK
                    self.judge.record = self.judge.record.model_copy(
                        update={"resign": resigned})
                    break
        result, winner, score = _result(self.game, reason, winner)
        adjudication = None
        if self.judge is not None and reason != "void":
            adjudication, margin = await self.judge.final(self.game, reason)
            if margin is not None:  # KataGo's dead stones lifted: the adjudicated result
                result, score = result_string(margin), margin
                winner = BLACK if margin > 0 else WHITE if margin < 0 else 0
            adjudication = self.judge.lost(adjudication, winner)
        settings = self.settings
        return RefereedGame(
            spec=self.spec, number=self.number, size=settings.size, komi=settings.komi,
            moves=self.moves, reason=reason, result=result, winner=winner, score=score,
            fallbacks=self.fallbacks, latencies_ms=self.latencies,
            started=started, finished=time.time(), adjudication=adjudication,
        )


async def play_game(
    spec: GameSpec,
    number: int,
    players: Mapping[str, Player],
    settings: RefereeSettings,
    *,
    seed: int = 0,
    live: LiveGame | None = None,
    ready: Callable[[str], Awaitable[None]] | None = None,
    on_event: OnEvent | None = None,
    judge: GameJudge | None = None,
) -> RefereedGame:
    """Play one game to its end; ``started``/``finished`` are wall-clock stamps for the record.
    ``ready(name)``, when given, is awaited before each request to a player, outside the
    move's deadline (the run pauses games there while that player is down). ``on_event``
    hears every move, fallback and misbehaving player (:mod:`orchestrator.events`);
    ``judge`` adjudicates the game with KataGo (:mod:`orchestrator.collect.adjudicator`)."""
    return await _Referee(spec, number, players, settings, seed, live, ready, on_event,
                          judge).play()
