"""One SGF file in, every game's positions out: the part of a build that runs in workers.

A game is read with :func:`orchestrator.files.read_sgf_file` and replayed with
:func:`orchestrator.rules.replay.replay_positions`, the code ``go19 replay`` runs, so a game
is rejected here exactly when ``go19 replay --require-19`` rejects it and for the same
reason (:attr:`SgfError.reason`). Every move of a game that replays to the end becomes
one row of :class:`Positions`; choosing which rows become samples happens later, in
the build's single process, so that the output does not depend on the worker count.

Speed: the replay (the rules engine's legality checks) is most of the cost. Per move
this module adds one ``bytes`` copy of the board and a tactics look-up that reads the
groups' liberties before the move, and builds the arrays once per game.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.coords import PASS, to_index
from orchestrator.files import MAX_SGF_BYTES, read_sgf_file
from orchestrator.move_record import Origin, move_origin
from orchestrator.rules import IllegalMove
from orchestrator.rules.board import Board, neighbours_table
from orchestrator.rules.replay import replay_positions
from orchestrator.rules.tactics import Tactics, classify
from orchestrator.sgf import (
    BLACK_PLAYER_PROP,
    GAME_PROP,
    RUN_PROP,
    VOID_PROP,
    WHITE_PLAYER_PROP,
    NotNineteen,
    SgfError,
    SgfGame,
)
from orchestrator.sgf.grammar import Node, main_lines
from orchestrator.untrusted import BadJson, read_json

SIZE = 19
AREA = SIZE * SIZE
MAX_MOVE_NUMBER = np.iinfo(np.int16).max

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


@dataclass(frozen=True, slots=True)
class GameRead:
    """One game of a file (or a file no game could be read from): what the build
    needs to account for it, and its positions when it replayed to the end."""

    path: str
    game_index: int | None  # None when the file itself could not be read
    status: str  # "ok", "rejected", "void" or "skipped"
    sha1: str | None = None
    reason: str | None = None  # rejected: SgfError.reason, as go19 replay reports it
    detail: str | None = None
    at_move: int | None = None
    black: str = ""
    white: str = ""
    result: str = ""
    winner: int = 0  # 1 black, 2 white, 0 draw or unknown (SgfGame.winner)
    komi: float = 0.0
    setup_at: tuple[int, ...] = ()  # before_move of each setup (AB/AW/AE) on the main line
    moves: int = 0
    run: str | None = None
    game: str | None = None
    players: dict | None = None  # go19 recordings: GOXIXB / GOXIXW metadata
    positions: Positions | None = None


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


def _metadata(raw: str | None) -> object:
    """A GOXIXB/GOXIXW value: compact JSON as go19 writes it, else the text as is."""
    if raw is None:
        return None
    try:
        return read_json(raw, None)  # bounded by the SGF file's own bound
    except BadJson:
        return raw


def _game_read(path: str, game: SgfGame, nodes: list[Node] | None = None) -> GameRead:
    props = game.root_props
    players = None
    if BLACK_PLAYER_PROP in props or WHITE_PLAYER_PROP in props:
        players = {"black": _metadata(props.get(BLACK_PLAYER_PROP)),
                   "white": _metadata(props.get(WHITE_PLAYER_PROP))}
    common: dict[str, Any] = dict(
        path=path, game_index=game.game_index, sha1=game.sha1, black=game.black_name,
        white=game.white_name, result=game.result, winner=game.winner, komi=game.komi,
        setup_at=tuple(s.before_move for s in game.setup), moves=len(game.moves),
        run=props.get(RUN_PROP), game=props.get(GAME_PROP), players=players,
    )
    if props.get(VOID_PROP, "").strip() not in ("", "0"):
        return GameRead(status="void", **common)
    from orchestrator.positions.fastreplay import positions as fast  # _positions, compiled
    try:
        positions = fast(game, nodes)
    except SgfError as exc:
        return GameRead(status="rejected", reason=exc.reason, detail=exc.detail,
                        at_move=getattr(exc, "move", None), **common)
    if len(positions) > MAX_MOVE_NUMBER:
        # Far beyond any move cap; int16 move numbers would wrap. Legal, so not "rejected".
        return GameRead(status="skipped", reason="too-long", **common)
    return GameRead(status="ok", positions=positions, **common)


def read_file(path: str | Path, max_bytes: int | None = MAX_SGF_BYTES) -> list[GameRead]:
    """Every game of one SGF file, replayed; a file that cannot be read (or is over
    ``max_bytes``) is one rejected entry with the reason ``go19 replay --require-19``
    gives."""
    try:
        return [read for _, read in read_games_of(path, max_bytes)]
    except SgfError as exc:
        return [GameRead(path=str(path), game_index=None, status="rejected",
                         reason=exc.reason, detail=exc.detail,
                         at_move=getattr(exc, "move", None))]


def read_games_of(path: str | Path, max_bytes: int | None = MAX_SGF_BYTES
                  ) -> list[tuple[SgfGame, GameRead]]:
    """Every game of one SGF file as read (its :class:`SgfGame`) and as replayed (its
    :class:`GameRead`, :func:`read_file`'s), from one reading; raises the SgfError of a
    file that cannot be read."""
    from orchestrator.positions import fastreplay  # fastreplay imports this module
    from orchestrator.sgf import fastgrammar
    path = str(path)
    trees: list[list[Node]] = []
    step2 = fastgrammar.main_lines if fastreplay.ENABLED else main_lines

    def lines(text: str) -> list[list[Node]]:
        trees.extend(step2(text))  # kept: the compiled replay reads plain moves from them
        return trees

    games = read_sgf_file(path, require_size=SIZE, lines=lines, max_bytes=max_bytes)
    return [(game, _game_read(path, game, trees[game.game_index])) for game in games]


def read_files(paths: list[str], max_bytes: int | None = MAX_SGF_BYTES
               ) -> list[list[GameRead]]:
    """:func:`read_file` over a batch: one call per worker task."""
    return [read_file(path, max_bytes) for path in paths]


def read_game(path: str | Path, game: SgfGame) -> GameRead:
    """One game already read from ``path`` (by :func:`orchestrator.files.read_sgf_file`),
    replayed as :func:`read_file` replays it; a game not on a 19x19 board is rejected as
    :func:`read_file` rejects its file."""
    if game.size != SIZE:
        exc = NotNineteen(f"board is {game.size}x{game.size}, not {SIZE}x{SIZE}", str(path))
        return GameRead(path=str(path), game_index=game.game_index, sha1=game.sha1,
                        status="rejected", reason=exc.reason, detail=exc.detail)
    return _game_read(str(path), game)
