"""A game read from SGF, replayed under go19's rules: every position of its main line,
or the position at its end. sgfmill keeps ``sgf_moves`` apart from its SGF parser the
same way: the SGF layer knows nothing of the rules, and this module is where they meet.

A record the rules reject raises an :class:`~orchestrator.sgf.SgfError` subclass
(:class:`IllegalMoveInRecord`, :class:`IllegalSetup`, :class:`BadKomi`, or
``NotSupported`` for a board the rules cannot hold), so readers of files report every
problem the same way.
"""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.color import BLACK
from orchestrator.coords import PASS, to_gtp, to_sgf
from orchestrator.rules.board import IllegalMove
from orchestrator.rules.game import Game
from orchestrator.sgf import NotSupported, Setup, SgfError, SgfGame, SgfMove

REPLAY_MAX_SIZE = 25  # what the rules Board supports (GTP's letters)


class IllegalMoveInRecord(SgfError):
    """A recorded move our rules reject. ``move`` is its 1-based number and ``rule``
    the :class:`~orchestrator.rules.IllegalMove` reason (occupied, suicide, superko,
    off-board)."""

    def __init__(self, move: int, rule: str, detail: str, path: str | None = None) -> None:
        self.move = move
        self.rule = rule
        self.reason = f"illegal:{rule}"
        super().__init__(detail, path)


class IllegalSetup(SgfError):
    """Setup stones that leave a group without liberties."""

    reason = "illegal-setup"


class BadKomi(SgfError):
    """A komi that is not a multiple of 0.5 (``KM[0.3]``): no Go rules score with it,
    KataGo refuses it, and a prompt must not show it."""

    reason = "bad-komi"


def komi_ok(komi: float) -> bool:
    return (komi * 2).is_integer()



def _spell(move: SgfMove, size: int) -> str:
    """``B[km] (L7)``, for messages."""
    letter = "B" if move.color == BLACK else "W"
    if move.point != PASS and not 0 <= move.point < size * size:
        return f"{letter} at point {move.point}"
    return f"{letter}[{to_sgf(move.point, size)}] ({to_gtp(move.point, size)})"


def _apply_setup(live: Game, setup: Setup) -> None:
    try:
        live.setup(setup.black, setup.white, setup.empty)
    except ValueError as exc:  # IllegalMove is a ValueError too
        raise IllegalSetup(f"setup in node {setup.node}: {exc}") from None


def replay_positions(game: SgfGame) -> Iterator[tuple[Game, SgfMove, int]]:
    """Replay the main line, yielding (position before the move, the move, its
    1-based number) for every move.

    The yielded :class:`Game` is the live one, with ``to_play`` set to the move's
    colour: copy what you keep, it changes on the next step. Setups apply where
    they were recorded. Raises :class:`IllegalMoveInRecord` at the first move our
    rules reject, :class:`IllegalSetup` for impossible setup stones.
    """
    return _positions(game, _start(game))


def replay(game: SgfGame) -> Game:
    """The position after the whole main line (raises like :func:`replay_positions`)."""
    live = _start(game)
    for _ in _positions(game, live):
        pass
    return live


def _start(game: SgfGame) -> Game:
    """The empty board the game starts on; the rules stop at 25x25 (GTP letters)."""
    if game.size > REPLAY_MAX_SIZE:
        raise NotSupported(f"board size {game.size} cannot be replayed (2..{REPLAY_MAX_SIZE})")
    if not komi_ok(game.komi):
        raise BadKomi(f"komi {game.komi:g} is not a multiple of 0.5")
    return Game(size=game.size, komi=game.komi)


def _positions(game: SgfGame, live: Game) -> Iterator[tuple[Game, SgfMove, int]]:
    setups = game.setup
    pending = 0
    for number, move in enumerate(game.moves, 1):
        while pending < len(setups) and setups[pending].before_move < number:
            _apply_setup(live, setups[pending])
            pending += 1
        live.to_play = move.color
        yield live, move, number
        try:
            live.play(move.point, move.color)
        except IllegalMove as exc:
            raise IllegalMoveInRecord(
                number, exc.reason, f"move {number} {_spell(move, game.size)}: {exc.reason}"
            ) from None
    for setup in setups[pending:]:
        _apply_setup(live, setup)

