"""One SGF file in, every game's positions out: the part of a build that runs in workers.

A game is read with :func:`orchestrator.sgf.read_games` and replayed with
:func:`orchestrator.sgf.replay_positions`, the code ``go19 replay`` runs, so a game
is rejected here exactly when ``go19 replay --require-19`` rejects it and for the same
reason (:attr:`SgfError.kind`). Every move of a game that replays to the end becomes
one row of :class:`Positions`; choosing which rows become samples happens later, in
the build's single process, so that the output does not depend on the worker count.

Speed: the replay (the rules engine's legality checks) is most of the cost. Per move
this module adds one ``bytes`` copy of the board and a tactics look-up that reads the
groups' liberties before the move, and builds the arrays once per game.
"""

from __future__ import annotations

import json
import random
import re
from array import array
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from orchestrator.coords import PASS
from orchestrator.rules import IllegalMove
from orchestrator.rules.board import neighbours_table
from orchestrator.rules.tactics import Tactics, classify
from orchestrator.sgf import (
    BLACK_PLAYER_PROP,
    GAME_PROP,
    RUN_PROP,
    VOID_PROP,
    WHITE_PLAYER_PROP,
    SgfError,
    SgfGame,
    read_games,
    replay_positions,
)

SIZE = 19
AREA = SIZE * SIZE
MAX_MOVE_NUMBER = np.iinfo(np.int16).max

# Where a move came from (SgfMove.source): the player's own policy, or not.
POLICY, OPENING, FALLBACK = 0, 1, 2
ORIGIN_NAMES = {OPENING: "opening", FALLBACK: "fallback"}

_CAPTURE, _ATARI, _ESCAPE = int(Tactics.CAPTURE), int(Tactics.ATARI), int(Tactics.ESCAPE)


def _side_ko_keys() -> tuple[int, ...]:
    """Random 64-bit keys per (side to move, ko point + 1), XORed into the board's
    Zobrist hash: two positions share a key only if stones, side and ko all match
    (or with probability 2**-64). Fixed seed: keys must agree across processes and runs."""
    rng = random.Random(0x19_DA7A)
    return tuple(rng.getrandbits(64) for _ in range(3 * (AREA + 1)))


_SIDE_KO = _side_ko_keys()


@dataclass(frozen=True, slots=True)
class Positions:
    """Rows, one per move, in move order: the position just before the move and the move."""

    board: np.ndarray  # uint8 (n, 19, 19): 0 empty, 1 black, 2 white, row 0 at the top
    to_play: np.ndarray  # uint8 (n,): 1 black, 2 white
    move: np.ndarray  # int16 (n,): row * 19 + col, PASS_MOVE for a pass
    move_number: np.ndarray  # int32 (n,): 1-based (int16 in the shards)
    ko: np.ndarray  # int16 (n,): the board's ko point, -1 for none
    tactical: np.ndarray  # uint8 (n,): Tactics bits of the move
    origin: np.ndarray  # uint8 (n,): POLICY, OPENING or FALLBACK
    key: np.ndarray  # uint64 (n,): dedup key of (stones, side to move, ko point)

    def __len__(self) -> int:
        return len(self.move)

    def take(self, rows: np.ndarray) -> Positions:
        """The rows selected by an index array or boolean mask, in order."""
        return Positions(*(getattr(self, name)[rows] for name in self.__slots__))


@dataclass(frozen=True, slots=True)
class GameRead:
    """One game of a file (or a file no game could be read from): what the build
    needs to account for it, and its positions when it replayed to the end."""

    path: str
    game_index: int | None  # None when the file itself could not be read
    status: str  # "ok", "rejected", "void" or "skipped"
    sha1: str | None = None
    reason: str | None = None  # rejected: SgfError.kind, as go19 replay reports it
    detail: str | None = None
    at_move: int | None = None
    black: str = ""
    white: str = ""
    result: str = ""
    winner: int = 0  # 1 black, 2 white, 0 draw or unknown
    moves: int = 0
    run: str | None = None
    game: str | None = None
    players: dict | None = None  # go19 recordings: GOXIXB / GOXIXW metadata
    positions: Positions | None = None


_WINNER_RE = re.compile(r"\s*([BW])\s*\+", re.I)


def winner_of(result: str) -> int:
    """1 or 2 from ``RE`` values like ``B+R``, ``W+3.5``, ``B+Time``; 0 for a draw,
    no result, or anything that does not name a winner with ``+``."""
    match = _WINNER_RE.match(result)
    if match is None:
        return 0
    return 1 if match.group(1).upper() == "B" else 2


def origin_of(source: str | None) -> int:
    if source is None:
        return POLICY
    return OPENING if source == "opening" else FALLBACK


def _positions(game: SgfGame) -> Positions:
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
    side_ko = _SIDE_KO
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
        ko_point = -1 if board.ko_point is None else board.ko_point
        ko.append(ko_point)
        keys.append(board.hash ^ side_ko[color * (AREA + 1) + ko_point + 1])
        bits = 0
        if point != PASS:
            stones = board.stones
            own_in_atari = False
            mirror[point] = color
            for q in adj[point]:
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
        tactical.append(bits)
    n = len(ko)
    if live is not None and all(s.before_move < n for s in game.setup) \
            and mirror != bytes(live.board.stones):
        raise AssertionError(f"board mirror diverged from the rules board (game {game.sha1})")
    moves = game.moves
    return Positions(
        board=np.frombuffer(bytes(boards), np.uint8).reshape(n, SIZE, SIZE),
        to_play=np.array([m.color for m in moves], np.uint8),
        move=np.array([AREA if m.point == PASS else m.point for m in moves], np.int16),
        move_number=np.arange(1, n + 1, dtype=np.int32),
        ko=np.frombuffer(ko, np.int16),
        tactical=np.frombuffer(tactical, np.uint8),
        origin=np.array([origin_of(m.source) for m in moves], np.uint8),
        key=np.array(keys, np.uint64),
    )


def _metadata(raw: str | None) -> object:
    """A GOXIXB/GOXIXW value: compact JSON as go19 writes it, else the text as is."""
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _game_read(path: str, game: SgfGame) -> GameRead:
    props = game.root_props
    players = None
    if BLACK_PLAYER_PROP in props or WHITE_PLAYER_PROP in props:
        players = {"black": _metadata(props.get(BLACK_PLAYER_PROP)),
                   "white": _metadata(props.get(WHITE_PLAYER_PROP))}
    common = dict(
        path=path, game_index=game.game_index, sha1=game.sha1, black=game.black_name,
        white=game.white_name, result=game.result, winner=winner_of(game.result),
        moves=len(game.moves), run=props.get(RUN_PROP), game=props.get(GAME_PROP),
        players=players,
    )
    if props.get(VOID_PROP, "").strip() not in ("", "0"):
        return GameRead(status="void", **common)
    from orchestrator.dataset.fastreplay import positions as fast  # _positions, compiled
    try:
        positions = fast(game)
    except SgfError as exc:
        return GameRead(status="rejected", reason=exc.kind, detail=exc.reason,
                        at_move=getattr(exc, "move", None), **common)
    if len(positions) > MAX_MOVE_NUMBER:
        # Far beyond any move cap; int16 move numbers would wrap. Legal, so not "rejected".
        return GameRead(status="skipped", reason="too-long", **common)
    return GameRead(status="ok", positions=positions, **common)


def read_file(path: str | Path) -> list[GameRead]:
    """Every game of one SGF file, replayed; a file that cannot be read is one
    rejected entry with the reason ``go19 replay --require-19`` gives."""
    path = str(path)
    try:
        games = read_games(path, require_size=SIZE)
    except SgfError as exc:
        return [GameRead(path=path, game_index=None, status="rejected", reason=exc.kind,
                         detail=exc.reason, at_move=getattr(exc, "move", None))]
    return [_game_read(path, game) for game in games]


def read_files(paths: list[str]) -> list[list[GameRead]]:
    """:func:`read_file` over a batch: one call per worker task."""
    return [read_file(path) for path in paths]
