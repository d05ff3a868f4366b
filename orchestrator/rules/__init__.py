"""Pure rules core: no I/O, no trio."""

from orchestrator.color import BLACK, EMPTY, WHITE, opponent
from orchestrator.rules.board import (
    Board,
    IllegalMove,
    MoveResult,
    OccupiedError,
    OffBoardError,
    SuicideError,
    SuperkoError,
)
from orchestrator.rules.estimate import Estimate, estimate
from orchestrator.rules.game import Game, Move
from orchestrator.rules.scoring import AreaScore, result_string, tromp_taylor
from orchestrator.rules.tactics import Tactics, classify

__all__ = [
    "BLACK", "EMPTY", "WHITE", "Board", "IllegalMove", "MoveResult", "OccupiedError",
    "OffBoardError", "SuicideError", "SuperkoError", "opponent", "Game", "Move",
    "AreaScore", "result_string", "tromp_taylor", "Estimate", "estimate", "Tactics", "classify",
]
