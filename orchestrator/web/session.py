"""The game behind ``go19 play``: the page's settings, which seats (:mod:`.seats`) sit
in each of the five modes, one game task after another (auto-restart, stop after N
finished games, or after collect's streak of void games), the server rows and training
mode.

A game is refereed by collect's own :func:`play_game`, so legality, superko,
scoring, clocks, fallbacks (timeout, cancelled, error, illegal reply: the heuristic
AI plays the move, marked), collect's ``void_after`` rule and the recorded SGF are
exactly collect's. The seats adapt the page to the :class:`Player` protocol: a human
seat waits for a legal click (no clock), a VLM seat asks a GO19 server (the page's
timeout is its clock, and "cancel VLM response" the referee's
:meth:`LiveGame.cancel_request`).

The settings live here, not in the page: every tab shows them as they are (after a
restart too), an edit in one tab is sent at once and shows in all, and what a new
game would change is said ("new game to apply") until one starts.

A game with a human seat that ends counted (two passes or the move cap) goes through a
scoring phase (:mod:`.scoring`): the dead stones are proposed and marked on the board,
a click on a stone marks its string dead or alive, and **confirm score** ends the game
with that count (any page confirms: in human vs human either player, otherwise the one
human). Play does not resume: the referee's game ended at the two passes, as collect's
does. AI-only games are scored as they stand, as in collect.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import trio
from pydantic import ValidationError

from orchestrator import __version__
from orchestrator.collect.collector import MAX_VOID_STREAK
from orchestrator.collect.matchup import Fallback as FallbackRule
from orchestrator.collect.players import go19_meta, heuristic_meta, openai_meta
from orchestrator.collect.referee import GameSpec, LiveGame, RefereeSettings, play_game
from orchestrator.collect.sgf_record import game_sgf
from orchestrator.collect.standings import fallback_status, void_streak_text
from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS, to_gtp
from orchestrator.events import Event, Fallback, VoidStreak
from orchestrator.files import atomic_write
from orchestrator.players.base import RESIGN, Player
from orchestrator.players.openai import AskSettings, OpenAIEndpoint, OpenAIPlayer
from orchestrator.prompt import read_template
from orchestrator.recordings import VOID_DIR, PlayerMeta, sgf_name, utc_stamp
from orchestrator.render import RenderSettings
from orchestrator.rules.dead_stones import AdjudicatedScore
from orchestrator.rules.game import Game
from orchestrator.web import views
from orchestrator.web.connection import ServerCheck
from orchestrator.web.endpoints import Endpoint, open_endpoints
from orchestrator.web.pulse import Pulse
from orchestrator.web.scoring import Scoring, scored
from orchestrator.web.seats import (
    AI_LEVEL,
    SIZE,
    AiSeat,
    HumanSeat,
    VlmSeat,
)
from orchestrator.web.settings import MODE_NAMES, PlaySettings, settings_error

if TYPE_CHECKING:  # what play_game returns, only named in annotations
    from orchestrator.collect.referee import RefereedGame
    from orchestrator.web.katago import KataGoOwnership

MOVE_CAP = 722
HUMAN_MODES = ("hh", "ha", "hv")  # a human seat: a counted end is scored by the players
VOID_AFTER = FallbackRule.model_validate({}).void_after  # collect's: more fallbacks, void game


class PlaySession:
    """Everything one ``go19 play`` server shows; pages are views of it (all pages see
    the same game). Runs its tasks in the nursery it is given."""

    def __init__(self, nursery: trio.Nursery, recordings: Path,
                 settings: PlaySettings | None = None,
                 katago: KataGoOwnership | None = None) -> None:
        self.nursery = nursery
        self.recordings = recordings
        self.settings = settings or PlaySettings()
        self.katago = katago  # the dead stones' proposer beside the estimate, if any
        self.pulse = Pulse()
        self.run_id = f"play-{utc_stamp(time.time())}"
        self.checks = {i: ServerCheck(self.changed, partial(self._server_ok, i)) for i in (1, 2)}
        self.number = 0
        self.finished = 0  # games finished (void ones apart)
        self.void = 0
        self.series = 0  # finished games since "new game": what "stop after N" counts
        self.live: LiveGame | None = None
        self.game_settings = self.settings
        self.marks: dict[int, str] = {}  # move index -> fallback reason
        self.outcome: RefereedGame | None = None
        self.end_text = ""
        self.scoring: Scoring | None = None  # the scoring phase, while the players mark
        self.final_score: AdjudicatedScore | None = None  # the count the players confirmed
        self._confirmed = trio.Event()
        self.status = ("", "info")
        self.saved: list[Path] = []
        self.waiting_human = False
        self.thinking: str | None = None
        self.vlm_png: bytes | None = None  # the PNG of this game's last GO19 request
        self.vlm_png_version = 0
        self.clicks, self._clicks_in = self._new_clicks()
        self._estimate: tuple[tuple[int, int], str] | None = None  # (game, move), line
        self._refused = False  # the last settings edit was refused: its reason stays shown
        self._snapshot: tuple[int, str] = (-1, "")
        self._endpoints: dict[int, Endpoint] = {}
        self._games_scope: trio.CancelScope | None = None
        self._games_done: trio.Event | None = None

    # -- events from the page ---------------------------------------------------

    def handle(self, message: dict) -> None:
        """One message from a page: settings, a click, a button."""
        kind = message.get("type")
        if "settings" in message and not self._apply(message["settings"]):
            return
        if kind == "new":
            problem = self.settings.missing_model()
            if problem is not None:
                self.say(problem, "error")
            else:
                self.new_game()
        elif kind in ("click", "toggle"):
            point = message.get("point")
            if type(point) is not int or not 0 <= point < SIZE * SIZE:  # JSON true is no point
                self.say(f"bad point {point!r}", "error")
            elif kind == "toggle":
                self._toggle(point)
            else:
                self._act(point)
        elif kind == "confirm":
            if self.scoring is None:
                self.say("nothing to confirm: a score is confirmed after two passes", "info")
            else:
                self._confirmed.set()
        elif kind == "pass":
            self._act(PASS)
        elif kind == "resign":
            self._act(RESIGN)
        elif kind == "cancel":
            if self.thinking is None or self.live is None or not self.live.cancel_request():
                self.say("no VLM response to cancel", "info")
        elif kind == "check":
            index = message.get("server")
            if index in (1, 2):
                host, port = self.settings.server(index)
                auto = getattr(self.settings, f"auto_reconnect{index}")
                self.checks[index].check(self.nursery, host, port, self.settings.timeout, auto,
                                         self.settings.model(index))
        elif kind != "settings":
            self.say(f"unknown request {kind!r}", "error")
        self.changed()

    def _apply(self, raw: object) -> bool:
        """The page sends what it changed; the rest stays as it is here."""
        if not isinstance(raw, dict):
            self.say("bad settings: expected an object", "error")
            return False
        try:
            settings = PlaySettings.model_validate({**self.settings.model_dump(), **raw})
        except ValidationError as exc:
            self._refused = True
            self.say(settings_error(exc), "error")
            return False
        self._refused = False
        old, self.settings = self.settings, settings
        for i, check in self.checks.items():
            if settings.row(i) != old.row(i):
                check.forget()  # the label spoke of another address
            elif not getattr(settings, f"auto_reconnect{i}"):
                check.stop()
        return True

    def _act(self, action: int) -> None:
        if self.scoring is not None:
            self.say("play is over: click a stone to mark its group dead or alive, then "
                     "confirm score", "info")
        elif self.outcome is not None or self.live is None:
            self.say("the game is over: press new game", "info")
        elif not self.waiting_human:
            self.say(f"not your turn: waiting for {self.thinking or 'the AI'}", "info")
        else:
            try:
                self._clicks_in.send_nowait(action)
            except trio.WouldBlock:
                self.say("one move at a time", "info")

    def _toggle(self, point: int) -> None:
        scoring = self.scoring
        where = to_gtp(point, SIZE)
        if scoring is None:
            self.say("no stones to mark: groups are marked dead after two passes", "info")
            return
        try:
            stones, dead = scoring.toggle(point)
        except ValueError:
            self.say(f"no stone at {where}: click a stone to mark its group", "info")
            return
        color = "black" if scoring.board[point] == BLACK else "white"
        count = f"{len(stones)} {color} stone{'s' * (len(stones) != 1)}"
        self.say(f"{count} at {where} marked {'dead' if dead else 'alive'}", "info")

    # -- state shown to pages -----------------------------------------------------

    def changed(self) -> None:
        self.pulse.bump()

    def say(self, text: str, level: str) -> None:
        self.status = (text, level)
        self.changed()

    def on_event(self, event: Event) -> None:
        """What the referee says about the game: fallbacks get their mark and a line (a
        cancelled response was asked for: news, not a fault)."""
        if isinstance(event, Fallback):
            self.marks[event.move - 1] = event.reason
            self.say(fallback_status(event), "info" if event.reason == "cancelled" else "error")

    def server_failed(self, index: int, reason: str) -> None:
        settings = self.game_settings
        host, port = settings.server(index)
        auto = getattr(self.settings, f"auto_reconnect{index}")
        self.checks[index].failed(self.nursery, host, port,
                                  reason.removeprefix(f"{settings.where(index)}: "),
                                  self.settings.timeout, auto, settings.model(index))

    def _server_ok(self, index: int) -> None:
        endpoint = self._endpoints.get(index)
        if endpoint is not None:
            endpoint.reset()

    def pending(self) -> str:
        """What the form says that the game on the board does not: it waits for a new game."""
        if self.live is None:
            return ""
        now, then = dict(self.settings.applies()), dict(self.game_settings.applies())
        changed = [f"{label} {value}" for label, value in now.items() if then.get(label) != value]
        return f"new game to apply: {', '.join(changed)}" if changed else ""

    def _estimate_line(self, game: Game) -> str:
        """The estimate, once per move of a game however many pages look."""
        key = (self.number, game.move_number)
        if self._estimate is None or self._estimate[0] != key:
            self._estimate = (key, views.estimate_line(game.board, game.komi))
        return self._estimate[1]

    def snapshot(self) -> dict:
        live = self.live
        game = live.game if live is not None else Game(SIZE, self.settings.komi)
        marked = [m.point for i, m in enumerate(game.moves)
                  if i in self.marks and m.point != PASS and game.board[m.point] == m.color]
        counted = self.outcome is not None and self.outcome.reason in views.COUNTED
        scoring = self.scoring
        if scoring is not None:
            looking = f"; {scoring.waiting} is looking…" if scoring.waiting else ""
            turn = (f"Scoring (dead stones proposed by {scoring.source}{looking}): click a "
                    "stone to mark its group dead or alive, then confirm score")
        elif self.outcome is not None:
            turn = self.end_text
        elif self.thinking:
            turn = f"{self.thinking} is thinking…"
        elif self.waiting_human:
            turn = f"{'Black' if game.to_play == BLACK else 'White'} to play: your move"
        else:
            turn = ""
        settings = self.game_settings
        series = ""
        if settings.auto_restart and settings.stop_after:
            series = f"{min(self.series + 1, settings.stop_after)} of {settings.stop_after}"
        return {
            "type": "play",
            "board": views.board_info(SIZE),
            "settings": self.settings.model_dump(),
            "modes": MODE_NAMES,
            "pending": self.pending(),
            "game": {
                "number": self.number,
                "mode": settings.mode,
                "series": series,
                "black": live.spec.black if live else "",
                "white": live.spec.white if live else "",
                "stones": views.stones(game.board),
                "move": game.move_number,
                "moves": views.move_points(game),
                "to_play": "black" if game.to_play == BLACK else "white",
                "your_move": self.waiting_human and self.outcome is None,
                "last": views.last_stone(game),
                "last_pass": bool(game.moves) and game.moves[-1].point == PASS,
                "fallbacks": marked,
                "captures": {"black": game.board.captures[BLACK],
                             "white": game.board.captures[WHITE]},
                "over": self.outcome is not None,
                "scoring": scoring is not None,
                "result": self.outcome.result if self.outcome else None,
                "count": (views.count_marks(game.board, scoring.dead) if scoring is not None
                          else views.count_marks(game.board, self._lifted()) if counted
                          else None),
            },
            "turn": turn,
            "estimate": self._score_line(game, counted),
            "status": {"text": self.status[0], "level": self.status[1]},
            "servers": {i: {"label": c.label, "colour": c.color} for i, c in self.checks.items()},
            "vlm_png": self.vlm_png_version if self.vlm_png else None,
            "can_cancel": self.thinking is not None,
            "finished": self.finished,
            "void": self.void,
            # Only while training mode is on: the line is about what it does.
            "saved": str(self.saved[-1]) if self.saved and self.settings.training else "",
        }

    def _score_line(self, game: Game, counted: bool) -> str:
        """Under the board: the estimate while playing, the count once play is over (with
        the marked or confirmed dead stones lifted)."""
        if self.scoring is not None:
            return views.score_line(game.board, self.scoring.score())
        if counted and self.final_score is not None:
            return views.score_line(game.board, self.final_score)
        if counted:
            return views.count_line(game.board, game.komi)
        return self._estimate_line(game)

    def _lifted(self) -> frozenset[int]:
        """The dead stones of the confirmed count (none for a game scored as it stood)."""
        if self.final_score is None:
            return frozenset()
        return frozenset().union(*self.final_score.dead)

    def snapshot_text(self) -> str:
        """The snapshot as JSON, built once per change and shared by every page."""
        version = self.pulse.version
        if self._snapshot[0] != version:
            self._snapshot = (version, json.dumps(self.snapshot(), separators=(",", ":")))
        return self._snapshot[1]

    # -- games --------------------------------------------------------------------

    def _new_clicks(self) -> tuple[trio.MemoryReceiveChannel, trio.MemorySendChannel]:
        send, receive = trio.open_memory_channel[int](1)
        return receive, send

    def new_game(self) -> None:
        """Cancel the game in progress (unrecorded) and start one with the current settings,
        once the old one has wound down (its seats must not touch the new game's state)."""
        if self._games_scope is not None:
            self._games_scope.cancel()
        self.series = 0
        scope, done = trio.CancelScope(), trio.Event()
        previous, self._games_scope, self._games_done = self._games_done, scope, done
        self.nursery.start_soon(self._games, scope, done, previous)

    async def _games(self, scope: trio.CancelScope, done: trio.Event,
                     previous: trio.Event | None) -> None:
        try:
            with scope:
                if previous is not None:
                    await previous.wait()
                void_games: list[RefereedGame] = []  # the void games in a row, so far
                while True:
                    await self._one_game()
                    outcome = self.outcome
                    void_games = [*void_games, outcome] if outcome and outcome.void else []
                    settings = self.settings
                    if not settings.auto_restart:
                        break
                    if len(void_games) >= MAX_VOID_STREAK:  # collect's rule
                        self.say(f"auto-restart stopped: {_streak_text(void_games)}; check "
                                 "the servers (check connection), then press new game",
                                 "error")
                        break
                    if settings.stop_after is not None and self.series >= settings.stop_after:
                        self.say(f"auto-restart stopped after {self.series} game"
                                 f"{'s' * (self.series != 1)} (stop after {settings.stop_after})",
                                 "info")
                        break
        finally:
            done.set()

    async def _one_game(self) -> None:
        settings = self.game_settings = self.settings
        self.number += 1
        self.marks = {}
        self.outcome = None
        self.end_text = ""
        self.final_score = None
        self.vlm_png = None  # "what the VLM sees" shows this game's requests only
        self.clicks, self._clicks_in = self._new_clicks()
        if not self._refused:  # a refused edit's reason outlives the game it did not shape
            self.say("", "info")
        async with open_endpoints(settings, max_failures=MOVE_CAP + 1) as endpoints:
            self._endpoints = endpoints
            seats, meta = self._seats(settings, endpoints)
            black, white = seats[BLACK], seats[WHITE]
            spec = GameSpec(slot=self.number - 1, black=black.name, white=white.name)
            live = LiveGame(number=self.number, spec=spec, game=Game(SIZE, settings.komi))
            self.live = live
            self.changed()
            outcome = await play_game(
                spec, self.number, {black.name: black, white.name: white},
                RefereeSettings(size=SIZE, komi=settings.komi, move_cap=MOVE_CAP,
                                # Only the VLM seats have a clock: the page's timeout.
                                move_timeout_s=None, void_after=VOID_AFTER,
                                fallback_level=AI_LEVEL,
                                clocks={seat.name: settings.timeout for seat in seats.values()
                                        if isinstance(seat, VlmSeat)}),
                seed=int(time.time()) * 1000 + self.number, live=live, on_event=self.on_event,
            )
        self._endpoints = {}
        if outcome.reason in views.COUNTED and settings.mode in HUMAN_MODES:
            scoring = await self._score(live.game)
            score = self.final_score = scoring.score()
            outcome = scored(outcome, score, scoring.proposer, scoring.touched)
            self.end_text = views.scored_end_line(outcome.reason, score)
        self.outcome = outcome
        if outcome.void:
            self.void += 1
            self.end_text = _void_text(outcome)
        else:
            self.finished += 1
            self.series += 1
            if outcome.adjudication is None:
                self.end_text = views.end_line(outcome.result, outcome.reason, live.game)
        self.changed()
        if self.settings.training:  # as the checkbox stands when the game ends
            try:
                path = await trio.to_thread.run_sync(self._save, outcome, meta)
            except OSError as exc:
                self.say(f"training mode: cannot save in {self.recordings}: "
                         f"{exc.strerror or exc}", "error")
            else:
                self.saved.append(path)
                self.say(f"void game kept apart: {path}" if outcome.void else f"saved {path}",
                         "info")

    async def _score(self, game: Game) -> Scoring:
        """The scoring phase of a game whose play ended counted: the proposal shown, the
        marks taken, until a page confirms (a new game cancels it: the game is dropped,
        unrecorded, as one cancelled in play)."""
        scoring = Scoring(game)
        if self.katago is not None:  # asked below: the phase says so from its start
            scoring.waiting = self.katago.name
        self._confirmed = trio.Event()
        self.scoring = scoring
        self.changed()
        try:
            async with trio.open_nursery() as nursery:
                if self.katago is not None:
                    nursery.start_soon(self._ask_katago, scoring, game)
                await self._confirmed.wait()
                nursery.cancel_scope.cancel()
        finally:
            self.scoring = None
        self.status = ("", "info")  # the marks' lines are old news once the count is agreed
        return scoring

    async def _ask_katago(self, scoring: Scoring, game: Game) -> None:
        """KataGo's proposal, in place of the estimate's if nobody has marked a group."""
        assert self.katago is not None
        name = self.katago.name
        try:
            answer = await self.katago.ownership(game)
        finally:
            scoring.waiting = None
        if isinstance(answer, str):
            self.say(f"{answer}; the dead stones are the estimate's", "error")
        elif scoring.propose(answer, name):
            self.say(f"{name} proposes {scoring.proposed(answer)} dead stones", "info")
        else:
            self.say(f"{name} proposes {scoring.proposed(answer)} dead stones; your marks "
                     "stand (it answered after them)", "info")

    def _seats(self, settings: PlaySettings, endpoints: dict[int, Endpoint]
               ) -> tuple[dict[int, Player], dict[str, PlayerMeta]]:
        mode = settings.mode
        mine = BLACK if settings.color == "black" else WHITE
        other = 3 - mine
        seed = self.number
        meta: dict[str, PlayerMeta] = {}
        render = RenderSettings(image_px=settings.image_px)

        def human(color: int) -> HumanSeat:
            name = "human" if mode != "hh" else f"human-{'black' if color == BLACK else 'white'}"
            meta[name] = PlayerMeta(kind="human")
            return HumanSeat(self, name)

        def ai() -> AiSeat:
            meta["heuristic-ai"] = heuristic_meta(AI_LEVEL, seed)
            # Against a human it passes back once only dead stones are left to play on.
            return AiSeat(self, "heuristic-ai", seed, agrees_to_end=mode == "ha")

        def vlm(index: int) -> VlmSeat:
            where = settings.where(index)
            adapter = settings.adapter(index)
            endpoint = endpoints[index]
            if isinstance(endpoint, OpenAIEndpoint):
                name = adapter or settings.model(index)
                ask = AskSettings(model=settings.model(index), template=read_template(None),
                                  render=render)
                meta[name] = openai_meta(ask, [where], adapter or None, "none")
                return VlmSeat(self, index, OpenAIPlayer(endpoint, ask, name), name, render)
            name = adapter or f"vlm-{where}"
            meta[name] = go19_meta(adapter or None, None, where, render)
            return VlmSeat(self, index, endpoint, name, render)

        seats: dict[int, Player]
        if mode == "hh":
            seats = {BLACK: human(BLACK), WHITE: human(WHITE)}
        elif mode == "ha":
            seats = {mine: human(mine), other: ai()}
        elif mode == "hv":
            seats = {mine: human(mine), other: vlm(1)}
        elif mode == "av":
            seats = {mine: ai(), other: vlm(1)}
        else:
            seats = {BLACK: vlm(1), WHITE: vlm(2)}
            if seats[WHITE].name == seats[BLACK].name:
                seats[WHITE] = seats[BLACK]  # self-play: one player answers for both colours
        return seats, meta

    def _save(self, outcome: RefereedGame, meta: dict[str, PlayerMeta]) -> Path:
        """Training mode: the finished game as collect records it, in recordings/ (a void
        one in recordings/void/, as in a run folder), named as collect names a game
        (``baduk-<stamp>-<game>.sgf``; ``…-2.sgf`` and on when another go19 play saved
        the same second and game number), and its record says that name."""
        folder = self.recordings / VOID_DIR if outcome.void else self.recordings
        folder.mkdir(parents=True, exist_ok=True)
        stamp, copy = utc_stamp(outcome.finished), 1
        while (folder / sgf_name(stamp, outcome.number, copy)).exists():
            copy += 1
        game = outcome.record(self.run_id, meta, sgf_name(stamp, outcome.number, copy))
        path = folder / game.journal.sgf
        atomic_write(path, game_sgf(game, __version__))
        return path


def _streak_text(void_games: list[RefereedGame]) -> str:
    """The void games in a row as collect's stop line words them."""
    fallbacks: dict[str, Counter[str]] = {}
    for outcome in void_games:
        for name, counts in outcome.fallbacks.items():
            fallbacks.setdefault(name, Counter()).update(counts)
    return void_streak_text(VoidStreak(len(void_games), tuple(
        (name, tuple(counts.most_common())) for name, counts in sorted(fallbacks.items())
        if counts)))


def _void_text(outcome: RefereedGame) -> str:
    """Why a game is void, as collect's rule has it."""
    worst, count = max(((name, sum(c.values())) for name, c in outcome.fallbacks.items()),
                       key=lambda item: item[1])
    return (f"Game void: {worst} needed {count} fallbacks (more than void_after = "
            f"{VOID_AFTER}, collect's rule); not saved with the finished games")
