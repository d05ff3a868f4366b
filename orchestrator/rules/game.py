"""A game under the referee's rules: a board plus whose turn it is, the move
list, and the end by two consecutive passes or the move cap."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from orchestrator.color import BLACK, WHITE, opponent
from orchestrator.coords import PASS
from orchestrator.rules.board import Board, MoveResult
from orchestrator.rules.scoring import AreaScore, tromp_taylor


class Move(NamedTuple):
    """One move of the record; a tuple so that appending one per move stays cheap."""

    color: int
    point: int  # PASS for a pass


@dataclass
class Game:
    size: int = 19
    komi: float = 7.5
    board: Board = field(init=False)
    to_play: int = BLACK
    moves: list[Move] = field(default_factory=list)
    consecutive_passes: int = 0
    # Stones placed by setup/handicap, in order, so stateful players can replay them.
    setup_stones: list[Move] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.board = Board(self.size)

    def setup(self, black=(), white=(), empty=(), to_play: int | None = None) -> None:
        self.board.setup(black, white, empty)
        self.setup_stones += [Move(BLACK, p) for p in black] + [Move(WHITE, p) for p in white]
        if to_play is not None:
            self.to_play = to_play

    def place_handicap(self, points: list[int]) -> None:
        """Fixed or free handicap stones for Black; White moves next."""
        self.setup(black=points, to_play=WHITE)

    def play(self, point: int, color: int | None = None) -> MoveResult:
        """Play for the side to move (or ``color``, for records where one side
        moves twice in a row); raises IllegalMove and changes nothing if illegal."""
        color = self.to_play if color is None else color
        result = self.board.play(color, point)
        self.moves.append(Move(color, point))
        self.consecutive_passes = self.consecutive_passes + 1 if point == PASS else 0
        self.to_play = opponent(color)
        return result

    @property
    def over_by_passes(self) -> bool:
        return self.consecutive_passes >= 2

    @property
    def move_number(self) -> int:
        """Moves played so far (passes included); the next move is number move_number + 1."""
        return len(self.moves)

    def score(self) -> AreaScore:
        return tromp_taylor(self.board, self.komi)
