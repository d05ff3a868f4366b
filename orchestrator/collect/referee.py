"""One refereed game: ask each side for a move under a deadline, replace what
cannot be played with the heuristic AI's move (and say why), end on two passes,
resignation, the move cap or too many fallbacks (void)."""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

from orchestrator.coords import PASS
from orchestrator.players.base import RESIGN, Player, PlayerError
from orchestrator.players.heuristic import HeuristicAI
from orchestrator.recordings import OPENING, fallback_source
from orchestrator.rules.board import BLACK, WHITE, IllegalMove
from orchestrator.rules.game import Game
from orchestrator.rules.scoring import result_string


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


@dataclass(frozen=True, slots=True)
class RefereeSettings:
    size: int = 19
    komi: float = 2.5
    move_cap: int = 722
    move_timeout_s: float = 30.0
    void_after: int = 20
    fallback_level: int = 2


@dataclass(frozen=True, slots=True)
class PlayedMove:
    color: int
    point: int
    source: str | None  # None: the player's own policy; "opening"; "fallback:<reason>"
    latency_ms: float | None = None  # how long the player took to answer, when it did


@dataclass
class LiveGame:
    """What the dashboard reads about a game in flight; the referee updates it."""

    number: int
    spec: GameSpec
    game: Game
    waiting_on: str | None = None
    # Shared with the run: recent latencies per player, and a sink for fallback events.
    latency_sink: dict[str, deque] | None = None
    event_sink: Callable[[str], None] | None = None


@dataclass
class GameOutcome:
    spec: GameSpec
    number: int
    size: int
    komi: float
    moves: list[PlayedMove]
    reason: str  # two-passes | resign | move-cap | void
    result: str  # SGF RE: B+3.5, W+R, 0, Void
    winner: int | None  # BLACK, WHITE, 0 for a draw, None when void
    score: float | None  # Black's area margin after komi; None on resign/void
    fallbacks: dict[str, Counter] = field(default_factory=dict)
    latencies_ms: dict[str, list[float]] = field(default_factory=dict)
    started: float = 0.0
    finished: float = 0.0

    @property
    def void(self) -> bool:
        return self.reason == "void"


async def play_game(
    spec: GameSpec,
    number: int,
    players: dict[str, Player],
    settings: RefereeSettings,
    *,
    seed: int = 0,
    live: LiveGame | None = None,
) -> GameOutcome:
    game = Game(settings.size, settings.komi)
    if live is not None:
        live.game = game
    fallback_ai = HeuristicAI(seed=seed, level=settings.fallback_level)
    names = {BLACK: spec.black, WHITE: spec.white}
    fallbacks: dict[str, Counter] = {name: Counter() for name in set(names.values())}
    latencies: dict[str, list[float]] = {name: [] for name in set(names.values())}
    fallback_count = {BLACK: 0, WHITE: 0}
    played: list[PlayedMove] = []
    opening = spec.opening.moves if spec.opening else ()
    started = time.time()
    last_move: int | None = None
    reason = ""
    winner: int | None = None

    while True:
        if game.over_by_passes:
            reason = "two-passes"
            break
        if game.move_number >= settings.move_cap:
            reason = "move-cap"
            break
        color = game.to_play
        name = names[color]
        point: int | None = None
        source: str | None = None
        elapsed_ms: float | None = None
        ply = game.move_number
        if ply < len(opening) and game.board.is_legal(color, opening[ply]):
            point, source = opening[ply], OPENING
            game.play(point)
        else:
            opening = ()
            failure = None
            if live is not None:
                live.waiting_on = name
            asked = time.perf_counter()
            with trio.move_on_after(settings.move_timeout_s) as deadline:
                try:
                    point = await players[name].genmove(game)
                except PlayerError as exc:
                    failure = exc.reason
                except Exception as exc:  # noqa: BLE001 - one broken reply must not end the run
                    failure = "error"
                    if live is not None and live.event_sink is not None:
                        live.event_sink(f"game {number}: {name} raised {exc!r}")
            if live is not None:
                live.waiting_on = None
            if deadline.cancelled_caught:
                failure = "timeout"
            elif failure is None:
                elapsed_ms = (time.perf_counter() - asked) * 1000.0
                latencies[name].append(elapsed_ms)
                if live is not None and live.latency_sink is not None:
                    live.latency_sink.setdefault(name, deque(maxlen=1000)).append(elapsed_ms)
            if point == RESIGN and failure is None:
                reason, winner = "resign", 3 - color
                break
            if failure is None:
                # play() checks legality before changing anything: one probe, not two.
                try:
                    game.play(point)
                except IllegalMove as exc:
                    failure = f"illegal:{exc.reason}"
            if failure is not None:
                fallbacks[name][failure] += 1
                if live is not None and live.event_sink is not None:
                    live.event_sink(
                        f"game {number} move {game.move_number + 1}: {name} {failure}, fallback"
                    )
                fallback_count[color] += 1
                if fallback_count[color] > settings.void_after:
                    reason = "void"
                    break
                point = fallback_ai.choose(game.board, color, last_move)
                source = fallback_source(failure)
                game.play(point)
        played.append(PlayedMove(color, point, source, elapsed_ms))
        last_move = None if point == PASS else point

    score = None
    if reason == "void":
        result = "Void"
    elif reason == "resign":
        result = ("B" if winner == BLACK else "W") + "+R"
    else:
        area = game.score()
        score, winner, result = area.margin, area.winner, result_string(area.margin)
    return GameOutcome(
        spec=spec,
        number=number,
        size=settings.size,
        komi=settings.komi,
        moves=played,
        reason=reason,
        result=result,
        winner=winner,
        score=score,
        fallbacks=fallbacks,
        latencies_ms=latencies,
        started=started,
        finished=time.time(),
    )
