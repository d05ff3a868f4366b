"""The running move quality of a live review (``collect --review``): each reviewed game's
moves (:mod:`.games`) kept in the journal's order, and after each one the numbers the report
gives the same games (:mod:`orchestrator.quality.summary`: a player's mean point loss with its
bootstrap interval, the paired difference), as a :class:`~orchestrator.events.QualityStatus`
that :func:`orchestrator.review.verdict.quality_line` words."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.color import BLACK, WHITE
from orchestrator.events import PairLoss, PlayerLoss, QualityStatus
from orchestrator.quality import summary
from orchestrator.quality.moves import GameMoves


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
