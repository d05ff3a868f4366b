"""A compiled replay-and-extract pass for the dataset build (numba, the ``fast`` extra).

:func:`positions` gives exactly :func:`orchestrator.positions.rows.replay_rows`'s rows
(boards before each move, ko points, tactics bits, dedup keys) from one fused loop over
plain arrays: no ``Board``, ``Group`` or per-move Python objects. The rules are go19's
(:mod:`orchestrator.rules.board`): occupied points, suicide, captures, positional superko
by the same 64-bit Zobrist hashes, setups (AB/AW/AE) where the record has them.

The pure path stays the reference: without numba, for boards other than 19x19, and for
every game the kernel finds anything wrong with (an illegal move, an impossible setup),
:func:`positions` calls ``replay_rows``, which raises the very error ``go19 replay``
gives. So the kernel never has to spell an error, and a game the kernel accepts is one
the reference accepts with the same rows (tests/positions/test_fastreplay.py checks that
on the whole real corpus and on random games).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from functools import cache
from operator import attrgetter
from typing import Any

import numpy as np

from orchestrator.coords import PASS
from orchestrator.positions.rows import AREA, SIZE, Positions, origin_of, replay_rows
from orchestrator.rules.board import neighbours_table, side_ko_table, zobrist_table
from orchestrator.rules.replay import komi_ok
from orchestrator.sgf import Setup, SgfGame, SgfMove, fastgrammar
from orchestrator.sgf.grammar import Node

njit: Callable[..., Any] | None
try:
    import numba

    njit = numba.njit
except ImportError:  # the pure path only
    njit = None

# GO19_PURE_REPLAY=1 keeps the reference path even with numba installed (to compare).
ENABLED = njit is not None and os.environ.get("GO19_PURE_REPLAY", "") in ("", "0")

_color = attrgetter("color")
_point = attrgetter("point")
_source = attrgetter("source")


@cache
def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Zobrist keys (3, AREA) as the rules board's, side/ko keys, neighbours (-1 padded)."""
    zob = np.array(zobrist_table(SIZE), dtype=np.uint64)
    side_ko = np.array(side_ko_table(SIZE), dtype=np.uint64)
    adj = np.full((AREA, 4), -1, np.int16)
    for p, qs in enumerate(neighbours_table(SIZE)):
        adj[p, :len(qs)] = qs
    return zob, side_ko, adj


def _flood(board: Any, adj: Any, start: int, mark: Any, stamp: int, libmark: Any,
           stack: Any, enough: int) -> tuple[int, int]:
    """The group at ``start``: its stones in ``stack[:count]`` (each marked ``stamp``),
    and its liberties counted once each; returns (count, liberties). Stops as soon as
    it has counted ``enough`` liberties (the callers only tell 0, 1, 2 or more apart):
    then ``count`` is short and some stones unmarked, which costs a second look at most."""
    color = board[start]
    mark[start] = stamp
    stack[0] = start
    count, top, libs = 1, 0, 0
    while top < count:
        p = stack[top]
        top += 1
        for k in range(4):
            q = adj[p, k]
            if q < 0:
                break
            s = board[q]
            if s == 0:
                if libmark[q] != stamp:
                    libmark[q] = stamp
                    libs += 1
                    if libs >= enough:
                        return count, libs
            elif s == color and mark[q] != stamp:
                mark[q] = stamp
                stack[count] = q
                count += 1
    return count, libs


def _seen(table: Any, used: Any, key: Any) -> bool:
    mask = len(table) - 1
    i = np.int64(key & np.uint64(mask))
    while used[i]:
        if table[i] == key:
            return True
        i = (i + 1) & mask
    return False


def _remember(table: Any, used: Any, key: Any) -> None:
    mask = len(table) - 1
    i = np.int64(key & np.uint64(mask))
    while used[i]:
        if table[i] == key:
            return
        i = (i + 1) & mask
    used[i] = True
    table[i] = key


def _setup(board: Any, adj: Any, at: int, changes: Any, mark: Any, libmark: Any,
           stack: Any, stamp: int, zob: Any) -> tuple[bool, Any, int]:
    """Apply setup ``at``'s changes; (ok, the board's new hash, next stamp)."""
    for j in range(changes[0][at], changes[0][at + 1]):
        p = changes[1][j]
        if p < 0 or p >= board.shape[0]:
            return False, np.uint64(0), stamp
        board[p] = changes[2][j]
    h = np.uint64(0)
    base = stamp
    for p in range(board.shape[0]):
        if board[p] != 0:
            h ^= zob[board[p], p]
            if mark[p] < base:  # a group not flooded yet in this setup
                stamp += 1
                count, libs = _flood(board, adj, p, mark, stamp, libmark, stack, 1)
                if libs == 0:
                    return False, h, stamp
    return True, h, stamp + 1


def _replay(colors: Any, points: Any, setup_before: Any, changes: Any, zob: Any,
            side_ko: Any, adj: Any, boards: Any, ko_out: Any, tactical: Any,
            keys: Any, moves: Any) -> int:
    """Fill the rows; -1 if every move and setup is legal, else the step that is not."""
    n = colors.shape[0]
    area = adj.shape[0]
    board = np.zeros(area, np.uint8)
    mark = np.zeros(area, np.int64)
    libmark = np.zeros(area, np.int64)
    stack = np.zeros(area, np.int16)
    captured = np.zeros(area, np.int16)
    size = 16
    while size < 4 * (n + setup_before.shape[0] + 1):
        size *= 2
    table = np.zeros(size, np.uint64)
    used = np.zeros(size, np.bool_)
    h = np.uint64(0)
    _remember(table, used, h)
    ko = -1
    stamp = 1
    pending = 0
    for i in range(n):
        while pending < setup_before.shape[0] and setup_before[pending] < i + 1:
            ok, h, stamp = _setup(board, adj, pending, changes, mark, libmark, stack,
                                  stamp + 1, zob)
            if not ok:
                return i
            _remember(table, used, h)
            ko = -1
            pending += 1
        color = colors[i]
        p = points[i]
        boards[i, :] = board
        moves[i] = area if p < 0 else p
        ko_out[i] = ko
        keys[i] = h ^ side_ko[color * (area + 1) + ko + 1]
        if p < 0:  # a pass
            tactical[i] = 0
            ko = -1
            continue
        if p >= area or board[p] != 0:
            return i
        bits = 0
        base = stamp + 1
        n_captured = 0
        friends = 0
        friend_breathes = False
        own_in_atari = False
        empties = 0
        for k in range(4):
            q = adj[p, k]
            if q < 0:
                break
            s = board[q]
            if s == 0:
                empties += 1
                continue
            if mark[q] >= base:
                continue  # a group already read for this move
            stamp += 1
            # Opponents: 1 liberty is a capture, 2 an atari; own groups: 1 is in atari.
            count, libs = _flood(board, adj, q, mark, stamp, libmark, stack,
                                 3 if s != color else 2)
            if s != color:
                if libs == 1:
                    bits |= 1  # capture
                    for j in range(count):
                        captured[n_captured + j] = stack[j]
                    n_captured += count
                elif libs == 2:
                    bits |= 2  # atari
            else:
                friends += 1
                if libs == 1:
                    own_in_atari = True
                else:
                    friend_breathes = True
        if n_captured == 0 and empties == 0 and not friend_breathes:
            return i  # suicide
        new_hash = h ^ zob[color, p]
        other = 3 - color
        for j in range(n_captured):
            new_hash ^= zob[other, captured[j]]
        if _seen(table, used, new_hash):
            return i  # positional superko
        board[p] = color
        for j in range(n_captured):
            board[captured[j]] = 0
        h = new_hash
        _remember(table, used, h)
        ko = -1
        if own_in_atari or (n_captured == 1 and friends == 0):
            stamp += 1
            count, libs = _flood(board, adj, p, mark, stamp, libmark, stack, 2)
            if own_in_atari and libs >= 2:
                bits |= 4  # escape
            if n_captured == 1 and friends == 0 and libs == 1:
                ko = captured[0]
        tactical[i] = bits
    while pending < setup_before.shape[0]:  # setups after the last move must be possible too
        ok, h, stamp = _setup(board, adj, pending, changes, mark, libmark, stack, stamp + 1,
                              zob)
        if not ok:
            return n
        pending += 1
    return -1


def _decode(run: Any, colors: Any, points: Any) -> int:
    """The moves of a game's runs of plain move nodes (``;B[pd]``, maybe with time-left
    values after the move, whitespace anywhere between) as the reader's 19x19 table reads
    them; the count, or -1 at anything else (the caller then reads ``game.moves``)."""
    n = run.shape[0]
    count = 0
    i = 0
    while i < n:
        if run[i] != 59:  # ;
            i += 1  # whitespace, or a time-left value (no ; in those)
            continue
        i += 1
        while i < n and (run[i] == 32 or 9 <= run[i] <= 13 or 28 <= run[i] <= 31):
            i += 1
        if i + 2 >= n or count >= colors.shape[0] or run[i + 1] != 91:
            return -1
        colors[count] = 1 if run[i] == 66 else 2 if run[i] == 87 else 0
        if colors[count] == 0:
            return -1
        i += 2
        if run[i] == 93:
            points[count] = PASS
        elif i + 2 < n and run[i + 2] == 93:
            col, row = run[i] - 97, run[i + 1] - 97
            if col == 19 and row == 19:  # tt
                points[count] = PASS
            elif 0 <= col < SIZE and 0 <= row < SIZE:
                points[count] = row * SIZE + col
            else:
                return -1
            i += 2
        else:
            return -1
        i += 1
        count += 1
    return count


if ENABLED and njit is not None:
    _decode = njit(cache=True, nogil=True)(_decode)
    _flood = njit(cache=True, nogil=True)(_flood)
    _seen = njit(cache=True, nogil=True)(_seen)
    _remember = njit(cache=True, nogil=True)(_remember)
    _setup = njit(cache=True, nogil=True)(_setup)
    _replay = njit(cache=True, nogil=True)(_replay)


# Most games have no setup: the kernel only reads these.
_NO_SETUP = (np.zeros(0, np.int64),
             (np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint8)))


def _changes(game: SgfGame) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Setups as arrays: before_move per setup; offsets, points, colours of the changes in
    ``Board.setup``'s order (cleared, then black, then white)."""
    if not game.setup:
        return _NO_SETUP
    before = np.array([s.before_move for s in game.setup], np.int64)
    offsets: list[int] = [0]
    pts: list[int] = []
    cols: list[int] = []
    for s in game.setup:
        for group, color in ((s.empty, 0), (s.black, 1), (s.white, 2)):
            pts += group
            cols += [color] * len(group)
        offsets.append(len(pts))
    return before, (np.array(offsets, np.int64), np.array(pts, np.int64),
                    np.array(cols, np.uint8))


def warm() -> float:
    """Compile the kernels, the replay's and :mod:`fastgrammar`'s (once per machine: numba
    caches them) or load them (once per process, a fraction of a second); seconds taken.
    Where numba cannot compile here, the pure path takes over with a warning."""
    global ENABLED
    started = time.process_time()
    if ENABLED:
        try:
            positions(SgfGame(moves=(SgfMove(1, 0), SgfMove(2, 1)),
                              setup=(Setup(0, black=(3,)), Setup(5, white=(4,)))),
                      [{}, ";B[aa];W[ba]"])
            for text in ("(;B[aa])", "(;C[\u00e9])"):  # the build's parse: bytes, code points
                fastgrammar.main_lines(text)
        except Exception as exc:  # numba installed but unusable on this machine
            ENABLED = False
            warnings.warn(f"go19: the compiled replay is unusable here ({exc}); using the "
                          "pure path", RuntimeWarning, stacklevel=2)
    return time.process_time() - started


def _moves(game: SgfGame, nodes: list[Node] | None) -> tuple[np.ndarray, np.ndarray, bool]:
    """Colours and points of the game's moves, and whether they all came from runs of
    plain move nodes (then none has a source, comment or time): read straight from the
    runs' text when they hold as many moves as the game (no other node held one), else
    from ``game.moves`` one by one."""
    n = len(game.moves)
    if nodes is not None:
        runs = "".join([node for node in nodes if node.__class__ is str])
        if runs.isascii():
            colors = np.empty(n, np.uint8)
            points = np.empty(n, np.int64)
            if _decode(np.frombuffer(runs.encode("ascii"), np.uint8), colors, points) == n:
                return colors, points, True
    colors = np.fromiter(map(_color, game.moves), np.uint8, n)
    points = np.fromiter(map(_point, game.moves), np.int64, n)
    return colors, points, False


def positions(game: SgfGame, nodes: list[Node] | None = None) -> Positions:
    """``rows.replay_rows(game)``, computed by the kernel where it can be. ``nodes``, the
    main line the reader built ``game`` from, saves reading ``game.moves`` one by one."""
    if not ENABLED or game.size != SIZE or not komi_ok(game.komi):
        return replay_rows(game)
    colors, points, plain = _moves(game, nodes)
    n = len(colors)
    before, changes = _changes(game)
    zob, side_ko, adj = _tables()
    boards = np.empty((n, AREA), np.uint8)
    ko = np.empty(n, np.int16)
    tactical = np.empty(n, np.uint8)
    keys = np.empty(n, np.uint64)
    move = np.empty(n, np.int16)
    if _replay(colors, points, before, changes, zob, side_ko, adj, boards, ko, tactical,
               keys, move) >= 0:
        return replay_rows(game)  # raises the reference's own error for this game
    sources = None if plain else list(map(_source, game.moves))
    if sources is None or sources.count(None) == n:
        origin = np.zeros(n, np.uint8)
    else:
        origin = np.array([origin_of(s) for s in sources], np.uint8)
    return Positions(
        board=boards.reshape(n, SIZE, SIZE),
        to_play=colors,
        move=move,
        move_number=np.arange(1, n + 1, dtype=np.int32),
        ko=ko,
        tactical=tactical,
        origin=origin,
        key=keys,
    )


LOAD_SECONDS = warm()  # CPU seconds this process spent compiling or loading the kernel
