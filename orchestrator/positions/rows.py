"""Per-move rows of one game (:class:`Positions`): their layout, the origin codes, and
:func:`replay_rows`, the reference replay that makes them (the rules engine's own replay,
:func:`orchestrator.rules.replay.replay_positions`, the code ``go19 replay`` runs). Its
compiled twin (:mod:`.fastreplay`) gives the same rows and falls back on it;
:mod:`.samples` reads files into games with their rows through either.

Speed: the replay (the rules engine's legality checks) is most of the cost. Per move
this module adds one ``bytes`` copy of the board and a tactics look-up that reads the
groups' liberties before the move, and builds the arrays once per game.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from orchestrator.coords import PASS, to_index
from orchestrator.move_record import Origin, move_origin
from orchestrator.rules import IllegalMove
from orchestrator.rules.board import Board, neighbours_table
from orchestrator.rules.replay import replay_positions
from orchestrator.rules.tactics import Tactics, classify
from orchestrator.sgf import SgfGame

SIZE = 19
AREA = SIZE * SIZE

# Where a move came from (SgfMove.source): the player's own policy, or not.
POLICY, OPENING, FALLBACK = 0, 1, 2
_ORIGIN_CODES = {Origin.OWN: POLICY, Origin.OPENING: OPENING, Origin.FALLBACK: FALLBACK}
ORIGIN_NAMES = {code: name.value for name, code in _ORIGIN_CODES.items() if code != POLICY}

_CAPTURE, _ATARI, _ESCAPE = int(Tactics.CAPTURE), int(Tactics.ATARI), int(Tactics.ESCAPE)


@dataclass(frozen=True, slots=True)
class Positions:
    """Rows, one per move, in move order: the position just before the move and the move."""

    board: np.ndarray  # uint8 (n, 19, 19): 0 empty, 1 black, 2 white, row 0 at the top
    to_play: np.ndarray  # uint8 (n,): 1 black, 2 white
    move: np.ndarray  # int16 (n,): coords index, row * 19 + col, 361 for a pass
    move_number: np.ndarray  # int32 (n,): 1-based (int16 in the shards)
    ko: np.ndarray  # int16 (n,): the board's ko point, -1 for none
    tactical: np.ndarray  # uint8 (n,): Tactics bits of the move
    origin: np.ndarray  # uint8 (n,): POLICY, OPENING or FALLBACK
    key: np.ndarray  # uint64 (n,): Board.position_key (stones, side to move, ko point)

    def __len__(self) -> int:
        return len(self.move)

    def take(self, rows: np.ndarray) -> Positions:
        """The rows selected by an index array or boolean mask, in order."""
        return Positions(*(getattr(self, name)[rows] for name in self.__slots__))


def origin_of(source: str | None) -> int:
    return _ORIGIN_CODES[move_origin(source)]


def _place(board: Board, mirror: bytearray, around: tuple[int, ...], color: int,
           point: int) -> int:
    """Put the move on the mirror (its stone down, opponent groups in atari off) and
    return its tactics bits, from the rules board as it is before the move."""
    bits = 0
    stones = board.stones
    own_in_atari = False
    mirror[point] = color
    for q in around:
        s = stones[q]
        if not s:
            continue
        group = board.group_at(q)
        liberties = len(group.liberties)
        if s != color:
            if liberties == 1:
                bits |= _CAPTURE
                for stone in group.stones:
                    mirror[stone] = 0
            elif liberties == 2:
                bits |= _ATARI
        elif liberties == 1:
            own_in_atari = True
    if own_in_atari:
        try:
            bits |= int(classify(board, color, point)) & _ESCAPE
        except IllegalMove:
            pass  # the replay rejects the move next; nothing of this game is kept
    return bits


def replay_rows(game: SgfGame) -> Positions:
    """Replay ``game`` and keep every position; raises the replay's SgfError.

    ``bytes(board.stones)`` (a list of 361 ints) costs more than playing the move,
    so the board is mirrored in a bytearray updated per move: the stone goes down
    and neighbouring opponent groups with one liberty come off. The same reading of
    the neighbours' liberties gives the tactics bits, as
    :func:`~orchestrator.rules.tactics.classify` defines them (which is called only
    when an own neighbour is in atari, to know whether the move escapes). Setup
    stones resync the mirror; after the last move it must equal the rules board.
    """
    adj = neighbours_table(SIZE)
    resync = {setup.before_move + 1 for setup in game.setup}
    mirror = bytearray(AREA)
    boards = bytearray()
    ko = array("h")
    tactical = array("B")
    keys: list[int] = []
    live = None
    for live, played, number in replay_positions(game):
        board = live.board
        if number in resync:
            mirror[:] = bytes(board.stones)
        boards += mirror
        color, point = played.color, played.point
        ko.append(-1 if board.ko_point is None else board.ko_point)
        keys.append(board.position_key(color))
        bits = 0 if point == PASS else _place(board, mirror, adj[point], color, point)
        tactical.append(bits)
    n = len(ko)
    if live is not None and all(s.before_move < n for s in game.setup) \
            and mirror != bytes(live.board.stones):
        raise AssertionError(f"board mirror diverged from the rules board (game {game.sha1})")
    moves = game.moves
    return Positions(
        board=np.frombuffer(bytes(boards), np.uint8).reshape(n, SIZE, SIZE),
        to_play=np.array([m.color for m in moves], np.uint8),
        move=np.array([to_index(m.point, SIZE) for m in moves], np.int16),
        move_number=np.arange(1, n + 1, dtype=np.int32),
        ko=np.frombuffer(ko, np.int16),
        tactical=np.frombuffer(tactical, np.uint8),
        origin=np.array([origin_of(m.source) for m in moves], np.uint8),
        key=np.array(keys, np.uint64),
    )
