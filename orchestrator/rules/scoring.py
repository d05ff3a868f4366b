"""Area scoring, Tromp-Taylor: a point counts for a colour if it holds that
colour's stone, or is empty and every path from it through empty points
reaches stones of that colour only. Komi goes to White."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.color import BLACK, EMPTY, WHITE
from orchestrator.rules.board import Board
from orchestrator.rules.regions import empty_regions


@dataclass(frozen=True, slots=True)
class AreaScore:
    black: int
    white: int
    komi: float

    @property
    def margin(self) -> float:
        """Black's lead after komi (negative: White leads)."""
        return self.black - self.white - self.komi

    @property
    def winner(self) -> int:
        """1 black, 2 white, 0 jigo."""
        if self.margin > 0:
            return BLACK
        if self.margin < 0:
            return WHITE
        return EMPTY

    @property
    def result(self) -> str:
        return result_string(self.margin)


def result_string(margin: float) -> str:
    """Black's margin as an SGF RE value: ``B+3.5``, ``W+0.5``, ``0`` for jigo."""
    if margin == 0:
        return "0"
    lead = abs(margin)
    text = f"{lead:g}" if lead != int(lead) else f"{int(lead)}"
    return ("B+" if margin > 0 else "W+") + text


def tromp_taylor(board: Board, komi: float) -> AreaScore:
    counts = {BLACK: board.stone_count(BLACK), WHITE: board.stone_count(WHITE)}
    regions = empty_regions(board)
    for points, borders in zip(regions.points, regions.borders, strict=True):
        if borders in (BLACK, WHITE):  # one color only (the mask is 1 or 2)
            counts[borders] += len(points)
    return AreaScore(counts[BLACK], counts[WHITE], komi)
