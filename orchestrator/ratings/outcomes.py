"""From finished games to the counts the estimators take: per colour, and per colour-swapped pair.

A game is a :class:`GameOutcome` (the ``black``, ``white`` and ``winner`` of a
``games.jsonl`` line, see docs/formats.md). ``winner`` is ``"black"``, ``"white"``,
``"draw"`` (a jigo under integer komi; half-point komi never draws) or ``None`` for a game
with no result, which every helper here skips. Void games are the caller's to leave out.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Literal, get_args

from orchestrator.ratings.elo import Pentanomial, RatingsError, Wdl

Winner = Literal["black", "white", "draw"]  # in this order: Black's, White's, neither
_WINNERS = (*get_args(Winner), None)


@dataclass(frozen=True)
class GameOutcome:
    """One game. ``pair`` names its colour-swapped twin (e.g. ``(run, opening.pair)``)."""

    black: str
    white: str
    winner: Winner | None
    pair: Hashable | None = None

    def __post_init__(self) -> None:
        if self.winner not in _WINNERS:
            raise RatingsError(
                f"game {self.black} vs {self.white}: winner must be black, white, draw or "
                f"None, got {self.winner!r}"
            )
        if self.black == self.white:
            raise RatingsError(f"game {self.black} vs {self.white}: a player cannot play itself")

    def points_for(self, player: str) -> float:
        """Points ``player`` took from this finished game (1, ½ or 0)."""
        if self.winner == "draw":
            return 0.5
        color = "black" if player == self.black else "white"
        return 1.0 if self.winner == color else 0.0

    def opponent_of(self, player: str) -> str:
        return self.white if player == self.black else self.black


@dataclass(frozen=True)
class ColorSplit:
    """A player's results overall and with each colour (Black moves first)."""

    overall: Wdl
    as_black: Wdl
    as_white: Wdl


def _result(points: float) -> Wdl:
    return Wdl(wins=int(points == 1.0), losses=int(points == 0.0), draws=int(points == 0.5))


def _involves(game: GameOutcome, player: str, opponent: str | None) -> bool:
    if player not in (game.black, game.white):
        return False
    return opponent is None or game.opponent_of(player) == opponent


def split_by_color(
    games: Iterable[GameOutcome], player: str, opponent: str | None = None
) -> ColorSplit:
    """``player``'s W/L/D overall, as Black and as White, against ``opponent`` or everyone."""
    as_black, as_white = Wdl(), Wdl()
    for game in games:
        if game.winner is None or not _involves(game, player, opponent):
            continue
        if game.black == player:
            as_black += _result(game.points_for(player))
        else:
            as_white += _result(game.points_for(player))
    return ColorSplit(overall=as_black + as_white, as_black=as_black, as_white=as_white)


def pentanomial_from_games(
    games: Iterable[GameOutcome], player: str, opponent: str | None = None
) -> Pentanomial:
    """Pentanomial counts of ``player``'s colour-swapped pairs.

    A pair counts once both its games have a result; games without a ``pair`` key and
    pairs still waiting for a game are left out. A pair key shared by more than two of
    ``player``'s games, or by two games where ``player`` kept the same colour, is an error.
    """
    by_pair: dict[Hashable, list[GameOutcome]] = {}
    for game in games:
        if game.pair is not None and _involves(game, player, opponent):
            by_pair.setdefault(game.pair, []).append(game)
    counts = [0] * 5
    for key, pair in by_pair.items():
        if len(pair) > 2:
            raise RatingsError(f"pair {key!r}: {player} has {len(pair)} games, expected 2")
        if len(pair) < 2 or any(g.winner is None for g in pair):
            continue
        if (pair[0].black == player) == (pair[1].black == player):
            raise RatingsError(f"pair {key!r}: {player} has the same colour in both games")
        counts[round(2 * sum(g.points_for(player) for g in pair))] += 1
    return Pentanomial.from_counts(counts)
