"""What the page draws, as plain JSON-ready values: the stones of a board, the
seed client's one-line estimate, and the end-of-game line."""

from __future__ import annotations

from orchestrator.coords import PASS
from orchestrator.rules.board import Board
from orchestrator.rules.estimate import estimate
from orchestrator.rules.game import Game
from orchestrator.rules.scoring import tromp_taylor


def stones(board: Board) -> str:
    """One character per point, row 0 (the top) first: 0 empty, 1 black, 2 white."""
    return "".join(map(str, board.stones))


def lead(margin: float) -> str:
    if margin == 0:
        return "even"
    return f"{'B' if margin > 0 else 'W'} +{abs(margin):.1f}"


def estimate_line(board: Board, komi: float) -> str:
    """``Estimate B N.N vs W N.N (komi K) — B +N.N | stones·territory·dead·disputed·dame``,
    each category as Black/White counts (the referee's conservative estimate)."""
    e = estimate(board, komi)
    return (
        f"Estimate B {e.black_area:.1f} vs W {e.white_area + komi:.1f} (komi {komi:g}) — "
        f"{lead(e.margin)} | stones {e.black_stones}/{e.white_stones} · territory "
        f"{e.black_territory}/{e.white_territory} · dead {e.black_dead}/{e.white_dead} · "
        f"disputed {e.disputed} · dame {e.dame}"
    )


def end_line(result: str, reason: str, game: Game) -> str:
    """The result, why the game ended and, when it was counted, the area count."""
    text = f"Game over: {result} ({reason})"
    if reason in ("two-passes", "move-cap"):
        area = tromp_taylor(game.board, game.komi)
        text += (f" — area count B {area.black} vs W {area.white} + komi {game.komi:g} "
                 f"= {area.white + game.komi:g}")
    return text


def last_stone(game: Game) -> int | None:
    if game.moves and game.moves[-1].point != PASS:
        return game.moves[-1].point
    return None
