"""What the page draws, as plain JSON-ready values: the stones of a board, the moves
that put them there, the seed client's one-line estimate, and at the end the referee's
area count, point by point, for the board to mark (with the dead stones of a scoring
phase lifted, :mod:`.scoring`)."""

from __future__ import annotations

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import GTP_COLUMNS, PASS
from orchestrator.rules.board import Board
from orchestrator.rules.dead_stones import AdjudicatedScore, without
from orchestrator.rules.estimate import estimate
from orchestrator.rules.game import Game
from orchestrator.rules.scoring import empty_regions, tromp_taylor

COUNTED = ("two-passes", "move-cap")  # the game ends counted (not resigned, not void)


def board_info(size: int) -> dict:
    """What the page needs to draw a board: its size and the GTP column letters."""
    return {"size": size, "columns": GTP_COLUMNS[:size]}


def stones(board: Board) -> str:
    """One character per point, row 0 (the top) first: 0 empty, 1 black, 2 white."""
    return "".join(map(str, board.stones))


def move_points(game: Game) -> list[int | None]:
    """Each move's point (None for a pass), for the page's move numbers."""
    return [None if m.point == PASS else m.point for m in game.moves]


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


def count_marks(board: Board, dead: frozenset[int] | set[int] = frozenset()) -> dict:
    """The referee's area count point by point (Tromp-Taylor) once the ``dead`` stones are
    lifted: the empty (or lifted) points that count for Black and for White, the dame
    (empty points reaching both colours, or none), and the stones lifted."""
    marks: dict[str, list[int]] = {"black": [], "white": [], "dame": [], "dead": sorted(dead)}
    owners = {1: "black", 2: "white"}  # the regions' border bitmask: 3 both, 0 none
    regions = empty_regions(without(board, dead) if dead else board)
    for points, borders in zip(regions.points, regions.borders, strict=True):
        marks[owners.get(borders, "dame")].extend(points)
    for points in marks.values():
        points.sort()
    return marks


def count_line(board: Board, komi: float) -> str:
    """The estimate line's place once the game is counted: the referee's own count."""
    area = tromp_taylor(board, komi)
    marks = count_marks(board)
    return (
        f"Area count B {area.black} vs W {area.white + komi:g} (komi {komi:g}) — "
        f"{lead(area.margin)} | stones {board.stone_count(BLACK)}/{board.stone_count(WHITE)}"
        f" · area {len(marks['black'])}/{len(marks['white'])} · dame {len(marks['dame'])}"
    )


def _stones(count: int) -> str:
    return f"{count} dead stone{'s' * (count != 1)}"


def score_line(board: Board, score: AdjudicatedScore) -> str:
    """The count of a scoring phase: with the marked stones lifted, each side's dead
    stones, and the plain area count beside it."""
    counted, plain, komi = score.adjudicated, score.plain, score.adjudicated.komi
    dead = {BLACK: 0, WHITE: 0}
    for chain in score.dead:
        dead[board[min(chain)]] += len(chain)
    return (
        f"Count B {counted.black} vs W {counted.white + komi:g} (komi {komi:g}) — "
        f"{lead(counted.margin)} | dead {dead[BLACK]}/{dead[WHITE]} · as the stones stand "
        f"B {plain.black} vs W {plain.white + komi:g} — {lead(plain.margin)}"
    )


def end_line(result: str, reason: str, game: Game) -> str:
    """The result, why the game ended and, when it was counted, the area count."""
    text = f"Game over: {result} ({reason})"
    if reason in COUNTED:
        area = tromp_taylor(game.board, game.komi)
        text += (f" — area count B {area.black} vs W {area.white} + komi {game.komi:g} "
                 f"= {area.white + game.komi:g}")
    return text


def scored_end_line(reason: str, score: AdjudicatedScore) -> str:
    """The confirmed result of a scoring phase: the count with the dead stones lifted, and
    the plain count when it had another winner."""
    counted, komi = score.adjudicated, score.adjudicated.komi
    lifted = sum(len(chain) for chain in score.dead)
    text = (f"Game over: {counted.result} ({reason}, {_stones(lifted)} lifted) — area count "
            f"B {counted.black} vs W {counted.white} + komi {komi:g} = "
            f"{counted.white + komi:g}")
    if score.flipped:
        text += f"; as the stones stood {score.plain.result}"
    return text


def last_stone(game: Game) -> int | None:
    if game.moves and game.moves[-1].point != PASS:
        return game.moves[-1].point
    return None
