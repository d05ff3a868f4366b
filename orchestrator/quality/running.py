"""The running move quality of a live review (``collect --review``): each reviewed game's
moves (:func:`orchestrator.label.join.review_game`) kept in the journal's order, and after
each one the numbers the report gives the same games (:mod:`orchestrator.quality.summary`: a
player's mean point loss with its bootstrap interval, the paired difference), as a
:class:`QualityStatus` that :func:`orchestrator.quality.verdict.quality_line` words and
:class:`orchestrator.events.GameReviewed` carries."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.color import BLACK, WHITE
from orchestrator.quality import summary
from orchestrator.quality.moves import GameMoves
from orchestrator.quality.summary import Interval


@dataclass(frozen=True, slots=True)
class PlayerLoss:
    """One player's mean point loss a move over its reviewed games."""

    player: str
    games: int
    mean_loss: Interval


@dataclass(frozen=True, slots=True)
class PairLoss:
    """The paired verdict's numbers: ``opponent``'s mean point loss minus ``player``'s
    over the ``games`` reviewed games they played against each other."""

    player: str
    opponent: str
    games: int
    difference: Interval


@dataclass(frozen=True, slots=True)
class QualityStatus:
    """The running move quality after the latest reviewed game."""

    games: int  # reviewed games
    players: tuple[PlayerLoss, ...]
    pair: PairLoss | None  # None for self-play


@dataclass(frozen=True, slots=True)
class _Game:
    moves: GameMoves
    black: str
    white: str


class RunningQuality:
    """Reviewed games by their place in the journal (games reviewed out of order count in
    the journal's order, as the report counts them)."""

    def __init__(self, pairing: tuple[str, str] | None) -> None:
        self.pairing = pairing  # the matchup's two players; None for self-play
        self._games: dict[int, _Game] = {}

    def __len__(self) -> int:
        return len(self._games)

    def add(self, order: int, moves: GameMoves, black: str, white: str) -> None:
        self._games[order] = _Game(moves, black, white)

    def _seats(self, player: str) -> list[tuple[int, GameMoves, int]]:
        return [(order, g.moves, color) for order, g in sorted(self._games.items())
                for name, color in ((g.black, BLACK), (g.white, WHITE)) if name == player]

    def status(self) -> QualityStatus:
        names = sorted({n for g in self._games.values() for n in (g.black, g.white)})
        players = []
        for name in names:
            t = summary.tally([(moves, color) for _, moves, color in self._seats(name)])
            players.append(PlayerLoss(name, t.games, summary.estimates(t)["all"]["mean_loss"]))
        pair = None
        if self.pairing is not None:
            player, opponent = self.pairing
            mine = {order: (moves, color) for order, moves, color in self._seats(player)}
            theirs = {order: (moves, color) for order, moves, color in self._seats(opponent)}
            shared = [k for k in mine if k in theirs and mine[k][1] != theirs[k][1]]
            a = summary.tally([mine[k] for k in shared])
            b = summary.tally([theirs[k] for k in shared])
            pair = PairLoss(player, opponent, len(shared), summary.loss_difference(a, b))
        return QualityStatus(len(self._games), tuple(players), pair)
