"""Leela Zero's resign analysis (``resign_analysis.py``) over games already played out:
where each game *would* have resigned under a threshold and a number of turns, and what
that would have cost (resigning a game the side went on to win) and saved (the moves after
the resignation). Pure: numpy in, numbers out.

**The rule** is ``[adjudicate]``'s (KataGo's ``play.cpp``, docs/adjudication.md): in the
position after ``move`` moves, the side to move resigns when its own win rate has been
below ``threshold`` on ``turns`` of *its* turns in a row and ``move >= min_move`` (KataGo's
``1 + area/5``: 73 on 19x19). The win rates are Black's (go19's labels), one per position
after each move; the side to move's own is ``1 - p`` for White.

**Counted**, per cell of the grid:

- *incorrect*: the side that would have resigned did not lose (it won, or the game was a
  draw, which a resignation turns into a loss), Leela Zero's false resign;
- *correct*: it lost; *no resign*: the rule never fired;
- *moves saved*: the moves played after the resignation point, as a share of every move
  the games took (the length Leela Zero's table says the games got shorter by).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from orchestrator.color import BLACK, WHITE
from orchestrator.ratings.elo import Z95


@dataclass(frozen=True, slots=True)
class PlayedGame:
    """A played-out game as the analysis needs it.

    ``to_play[k]`` and ``black_winrate[k]`` are of the position after ``k + 1`` moves, for
    the positions with a label, in order and without a gap (the labels may stop before the
    game's end: ``--max-moves``); ``moves`` is how many moves the game took, ``winner``
    BLACK, WHITE, or 0 for a draw."""

    moves: int
    winner: int
    to_play: np.ndarray
    black_winrate: np.ndarray

    @property
    def seen(self) -> int:
        """Moves whose following position has a win rate."""
        return len(self.black_winrate)


@dataclass(frozen=True, slots=True)
class Resign:
    color: int  # the side that resigns
    move: int  # after this many moves


class ResignStreak:
    """The rule over one game's positions, fed in order: the table here replays it over
    labels, and ``[adjudicate]`` (``collect/adjudicator.py``) runs it live, so the two
    can never disagree on where a game resigns."""

    def __init__(self, threshold: float, turns: int, min_move: int) -> None:
        self.threshold, self.turns, self.min_move = threshold, turns, min_move
        self.low = {BLACK: 0, WHITE: 0}

    def see(self, move: int, to_move: int, black_winrate: float) -> float | None:
        """The position after ``move`` moves, ``to_move`` to play: the side to move's own
        win rate when it resigns here, else None."""
        own = black_winrate if to_move == BLACK else 1.0 - black_winrate
        self.low[to_move] = self.low[to_move] + 1 if own < self.threshold else 0
        if self.low[to_move] >= self.turns and move >= self.min_move:
            return own
        return None


def first_resignation(game: PlayedGame, threshold: float, turns: int,
                      min_move: int) -> Resign | None:
    """Where the rule first fires in the game, or None."""
    streak = ResignStreak(threshold, turns, min_move)
    for k, (color, black) in enumerate(zip(game.to_play.tolist(),
                                           game.black_winrate.tolist(), strict=True)):
        if streak.see(k + 1, color, black) is not None:
            return Resign(color, k + 1)
    return None


def wilson(hits: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a share ``hits / n`` (None when ``n`` is 0)."""
    if n == 0:
        return None
    p = hits / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    return max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale)


@dataclass(frozen=True, slots=True)
class Cell:
    """One threshold x turns of the table."""

    threshold: float
    turns: int
    games: int
    correct: int
    incorrect: int
    moves: int  # every move the games took
    saved: int  # moves after the resignation points

    @property
    def resigned(self) -> int:
        return self.correct + self.incorrect

    @property
    def no_resign(self) -> int:
        return self.games - self.resigned

    @property
    def incorrect_of_resigned(self) -> tuple[float, float] | None:
        """95 % Wilson interval of the incorrect share among the games that resign."""
        return wilson(self.incorrect, self.resigned)

    @property
    def saved_share(self) -> float:
        return self.saved / self.moves if self.moves else 0.0

    def as_dict(self) -> dict[str, object]:
        interval = self.incorrect_of_resigned
        return {"threshold": self.threshold, "turns": self.turns, "games": self.games,
                "resigned": self.resigned, "correct": self.correct,
                "incorrect": self.incorrect, "no_resign": self.no_resign,
                "incorrect_of_resigned": (None if interval is None else
                                          round(self.incorrect / self.resigned, 4)),
                "incorrect_interval": None if interval is None else [round(v, 4)
                                                                     for v in interval],
                "moves": self.moves, "moves_saved": self.saved,
                "saved_share": round(self.saved_share, 4)}


def cell(games: Sequence[PlayedGame], threshold: float, turns: int, min_move: int) -> Cell:
    correct = incorrect = saved = 0
    for game in games:
        resign = first_resignation(game, threshold, turns, min_move)
        if resign is None:
            continue
        if game.winner == resign.color or game.winner == 0:
            incorrect += 1
        else:
            correct += 1
        saved += game.moves - resign.move
    return Cell(threshold, turns, len(games), correct, incorrect,
                sum(g.moves for g in games), saved)


def table(games: Sequence[PlayedGame], thresholds: Iterable[float], turns: Iterable[int],
          min_move: int) -> list[Cell]:
    """The grid, threshold by threshold, each with every number of turns."""
    turns = list(turns)
    return [cell(games, t, n, min_move) for t in thresholds for n in turns]
