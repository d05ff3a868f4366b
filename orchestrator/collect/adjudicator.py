"""``[adjudicate]``: KataGo beside the games ends decided ones by its win rate and scores
dead stones by its ownership (docs/adjudication.md).

One KataGo analysis engine (:func:`~orchestrator.label.engine.open_katago`) serves every
game of the run; each game has its :class:`GameJudge`. After each move the referee asks
the judge about the new position: the query goes to KataGo and the referee waits for its
answer at most the game's move deadline (so adjudication never slows a game by more than
one move's time). An answer that does not come by then, or a KataGo that is gone, turns
adjudication off for that game, said once (:class:`~orchestrator.events.AdjudicationOff`):
the game is played out and scored by the plain area count, never adjudicated on a guess.

The resignation rule is KataGo's own (``play.cpp``): the side to move resigns once its
win rate has been below ``resign_winrate`` on ``resign_turns`` of its turns in a row, never
before move ``resign_min_move``. A ``holdout`` share of games, chosen from the run's seed
and the game's slot (so a replayed slot is held out again), never resigns; it records
where it would have, and at the end whether that side lost (else a false resign).

Perspective: KataGo reports win rate and ownership as its config's
``reportAnalysisWinratesAs`` says (SIDETOMOVE when absent); :func:`report_as` reads it and
:func:`black_view` turns both into Black's view, which the rules here take.
"""

from __future__ import annotations

import random
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import trio

from orchestrator.collect.matchup import Adjudicate
from orchestrator.color import BLACK, WHITE
from orchestrator.label.engine import (
    KataGoDied,
    KataGoEngine,
    KataGoError,
    game_query,
    open_katago,
)
from orchestrator.quality.resign import ResignStreak
from orchestrator.recordings import Adjudication, Resignation
from orchestrator.rules.dead_stones import adjudicated_score
from orchestrator.rules.game import Game
from orchestrator.rules.scoring import result_string

_REPORT_AS = re.compile(r"^\s*reportAnalysisWinratesAs\s*=\s*(\w+)", re.MULTILINE)
COLOR_LETTER = {BLACK: "B", WHITE: "W"}


def report_as(config: Path) -> str:
    """BLACK, WHITE or SIDETOMOVE: whose view KataGo's answers are in under ``config``."""
    found = _REPORT_AS.findall(config.read_text(encoding="utf-8", errors="replace"))
    return found[-1].upper() if found else "SIDETOMOVE"


def black_view(winrate: float, ownership: np.ndarray | None, to_move: int,
               perspective: str) -> tuple[float, np.ndarray | None]:
    """Win rate and ownership in Black's view, from KataGo's ``perspective``."""
    flip = perspective == "WHITE" or (perspective == "SIDETOMOVE" and to_move == WHITE)
    if not flip:
        return winrate, ownership
    return 1.0 - winrate, None if ownership is None else -ownership


def held_out(seed: int, slot: int, share: float) -> bool:
    """Whether the game in ``slot`` never resigns (the same answer on every replay)."""
    return random.Random(f"holdout:{seed}:{slot}").random() < share


class ResignWatch:
    """KataGo's resignation rule (``quality/resign.ResignStreak``, the one the table of
    ``go19 adjudicate`` replays) over one game's positions, in order (no I/O)."""

    def __init__(self, settings: Adjudicate, size: int) -> None:
        self.streak = ResignStreak(settings.resign_winrate, settings.resign_turns,
                                   settings.min_move(size))

    def see(self, move: int, to_move: int, black_winrate: float) -> Resignation | None:
        """The position after ``move`` moves, ``to_move`` to play: its resignation, if due."""
        own = self.streak.see(move, to_move, black_winrate)
        if own is None:
            return None
        return Resignation(color=COLOR_LETTER[to_move], move=move, winrate=round(own, 4),
                           threshold=self.streak.threshold, turns=self.streak.turns)


@dataclass
class GameJudge:
    """One game's adjudication: :meth:`after_move` each move, :meth:`final` at the end."""

    adjudicator: Adjudicator
    number: int
    holdout: bool
    size: int

    def __post_init__(self) -> None:
        self.watch = ResignWatch(self.adjudicator.settings, self.size)
        self.record = Adjudication(holdout=self.holdout)
        self.off: str | None = None
        self.would: Resignation | None = None

    def _turn_off(self, reason: str) -> None:
        if self.off is None:
            self.off = reason
            self.adjudicator.say(self.number, reason)

    async def after_move(self, game: Game, wait_s: float | None) -> Resignation | None:
        """The resignation due after the last move (None: play on). Waits for KataGo at
        most ``wait_s`` seconds (None: its own deadline)."""
        if self.off is not None or self.would is not None and self.holdout:
            return None  # a holdout game needs no more answers once it would have resigned
        answer = await self.adjudicator.ask(game, self.adjudicator.settings.visits, False,
                                            wait_s)
        if isinstance(answer, str):
            self._turn_off(answer)
            return None
        winrate, _ = answer
        resign = self.watch.see(game.move_number, game.to_play, winrate)
        if resign is None:
            return None
        if self.holdout:
            self.would = resign
            return None
        return resign

    async def final(self, game: Game, reason: str) -> tuple[Adjudication, float | None]:
        """The game's adjudication record once play ended for ``reason``, and Black's
        adjudicated margin when dead stones were scored (None: the plain count stands)."""
        record = self.record.model_copy(update={"would_resign": self.would,
                                                "off": self.off})
        if reason == "resign":
            return record, None
        margin: float | None = None
        if (reason in ("two-passes", "move-cap") and self.off is None
                and self.adjudicator.settings.dead_stones == "katago"):
            # Its search (dead_visits) may take far longer than a move's: KataGo's own
            # deadline (the watchdog of label/engine.py) bounds it instead.
            answer = await self.adjudicator.ask(game, self.adjudicator.settings.dead_visits,
                                                True, None)
            if isinstance(answer, str):
                self._turn_off(answer)
                record = record.model_copy(update={"off": self.off})
            else:
                _, ownership = answer
                assert ownership is not None
                scored = adjudicated_score(game.board, ownership.tolist(), game.komi)
                margin = scored.adjudicated.margin
                record = record.model_copy(update={
                    "area_result": result_string(scored.plain.margin),
                    "adjudicated_result": result_string(margin),
                    "dead_stones": sum(len(chain) for chain in scored.dead),
                    "flipped": scored.flipped})
        return record, margin

    def lost(self, record: Adjudication, winner: int | None) -> Adjudication:
        """The holdout's verdict: did the side that would have resigned lose?"""
        if self.would is None or winner is None:
            return record
        resigner = BLACK if self.would.color == "B" else WHITE
        return record.model_copy(update={"false_resign": winner == resigner or winner == 0})


class Adjudicator:
    """The run's KataGo for adjudication: :meth:`open` it beside the games; ``say`` hears
    each game whose adjudication goes off (game number, reason)."""

    def __init__(self, settings: Adjudicate, config: Path, seed: int,
                 say: Callable[[int, str], None] | None = None) -> None:
        self.settings = settings
        self.perspective = report_as(config)
        self.seed = seed
        self.say = say or (lambda game, reason: None)
        self.engine: KataGoEngine | None = None
        self.version = ""

    @asynccontextmanager
    async def open(self, binary: Path, model: Path, config: Path,
                   log: Path) -> AsyncIterator[Adjudicator]:
        """KataGo started (the net loaded) for the run; :class:`KataGoDied` if it cannot."""
        async with open_katago(binary, model, config, log, own_session=True,
                               timeout=self.settings.timeout) as engine:
            self.engine, self.version = engine, engine.version
            try:
                yield self
            finally:
                self.engine = None

    def judge(self, number: int, slot: int, size: int) -> GameJudge:
        return GameJudge(self, number, held_out(self.seed, slot, self.settings.holdout), size)

    async def ask(self, game: Game, visits: int, ownership: bool, wait_s: float | None
                  ) -> tuple[float, np.ndarray | None] | str:
        """Black's win rate (and ownership) of the game's position, or why not."""
        engine = self.engine
        if engine is None or engine.death is not None:
            return "KataGo is gone"
        query = game_query(game.moves, komi=game.komi, size=game.board.size,
                           analyze_turns=[game.move_number], max_visits=visits,
                           include_policy=False, include_ownership=ownership)
        with trio.move_on_after(wait_s if wait_s is not None else float("inf")):
            try:
                answer = await engine.query(query)
            except KataGoDied as exc:
                return f"KataGo died: {str(exc).split(';')[0]}"
            except KataGoError as exc:
                return f"KataGo refused the position: {exc}"
            if answer.winrate is None or (ownership and answer.ownership is None):
                return "KataGo answered without a win rate"
            return black_view(answer.winrate, answer.ownership, game.to_play,
                              self.perspective)
        return f"KataGo lags: no answer within the move deadline ({wait_s:g} s)"
