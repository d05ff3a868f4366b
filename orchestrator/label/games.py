"""Which positions ``go19 label`` asks KataGo about: the rows ``go19 dataset build`` reads.

Games come from the dataset build's own reader (:func:`orchestrator.positions.samples.read_file`
over :func:`orchestrator.dataset.sources.find_sgf_files`): the same files (``void/`` folders
skipped), the same 19x19-only reading, the same rejections and void games, the same rows.
Every row of a game that replays to the end is labelled (the position just before each
move); which rows become samples (fallback moves, dedup, picks) is decided by the build
later, so one label set serves any build options. With ``review`` (``go19 review``, ``go19
label --review``) one more row follows the last labelled move: the position after it, so
that every labelled move has the score lead before and after it (its point loss).

A game is sent as one analysis query per *segment*: from the game's start (its setup and
handicap stones as ``initialStones``) with its moves as history. Setup stones in the
middle of a game (AB/AW/AE after move 1) cannot be sent as moves, so the board right after
them starts a new segment as bare ``initialStones``, without history: KataGo then knows
neither the ko point nor earlier positions for superko there (``history`` is false for
those rows).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from orchestrator.color import BLACK, WHITE, opponent
from orchestrator.coords import from_index
from orchestrator.dataset.sources import find_sgf_files
from orchestrator.positions.rows import SIZE, Positions
from orchestrator.positions.samples import GameRead, read_file
from orchestrator.rules.board import Board
from orchestrator.rules.game import Move


@dataclass(frozen=True, slots=True)
class Segment:
    """Rows ``first`` .. ``first + len(moves)`` of a game, as one query: KataGo's turn
    ``t`` is row ``first + t``, the position before move number ``first + t + 1``."""

    first: int
    initial_stones: tuple[Move, ...]
    initial_player: int
    moves: tuple[Move, ...]  # the moves between the segment's rows (one fewer than rows)
    history: bool  # False: a bare board after mid-game setup stones

    @property
    def rows(self) -> int:
        return len(self.moves) + 1


@dataclass(frozen=True, slots=True)
class LabelGame:
    """One game read from the inputs, labelled (status ``ok``) or accounted for."""

    path: str
    game_index: int | None  # None when the file itself could not be read
    sha1: str | None
    status: str  # "ok", or the build's "rejected" / "void" / "skipped"
    reason: str | None = None
    detail: str | None = None
    komi: float = 0.0
    moves: int = 0  # moves in the main line
    segments: tuple[Segment, ...] = ()
    to_play: np.ndarray | None = None  # uint8 (n,) per labelled row
    key: np.ndarray | None = None  # uint64 (n,): the build's dedup key of each row

    @property
    def positions(self) -> int:
        return 0 if self.key is None else len(self.key)

    @property
    def ident(self) -> str:
        """The game's identity across runs and in label sets: ``sha1:game_index``."""
        return game_ident(self.sha1, self.game_index, self.path)

    @property
    def where(self) -> str:
        return self.path if self.game_index in (None, 0) else f"{self.path} game {self.game_index}"


def game_ident(sha1: str | None, game_index: int | None, path: str) -> str:
    if sha1 is None:
        return f"unreadable:{path}"
    return f"{sha1}:{game_index}"


def _initial_stones(board: np.ndarray) -> tuple[Move, ...]:
    """Every stone on ``board`` as KataGo's ``initialStones``."""
    flat = board.reshape(-1)
    return tuple(Move(BLACK, int(p)) for p in np.flatnonzero(flat == BLACK)) + tuple(
        Move(WHITE, int(p)) for p in np.flatnonzero(flat == WHITE))


def segments(read: GameRead, rows: int) -> tuple[Segment, ...]:
    """The queries that cover rows ``0 .. rows - 1`` of a game read by the build."""
    positions = read.positions
    assert positions is not None
    # A row past the last move (review) has no board of its own: no segment starts there.
    starts = sorted({0} | {at for at in read.setup_at if 0 < at < min(rows, len(positions))})
    moves = [Move(int(color), from_index(int(index), SIZE))
             for color, index in zip(positions.to_play, positions.move, strict=True)]
    out = []
    for first, end in zip(starts, [*starts[1:], rows], strict=True):
        out.append(Segment(
            first=first,
            initial_stones=_initial_stones(positions.board[first]),
            initial_player=int(positions.to_play[first]),
            moves=tuple(moves[first:end - 1]),
            history=first == 0,
        ))
    return tuple(out)


def after_last(positions: Positions) -> tuple[int, int]:
    """Side to move and position key of the position after a game's last move (the rows
    hold the positions before each move only): the last row's board with its move played."""
    board = Board(SIZE)
    flat = positions.board[-1].reshape(-1)
    board.setup(black=np.flatnonzero(flat == BLACK).tolist(),
                white=np.flatnonzero(flat == WHITE).tolist())
    color = int(positions.to_play[-1])
    board.play(color, from_index(int(positions.move[-1]), SIZE))
    return opponent(color), board.position_key(opponent(color))


def _label_game(read: GameRead, max_moves: int | None, review: bool) -> LabelGame:
    positions = read.positions
    assert positions is not None
    n = len(positions)
    moves = n if max_moves is None else min(n, max_moves)
    end = moves + 1 if review and n else moves  # review: the position after move `moves` too
    to_play, key = positions.to_play[:end].copy(), positions.key[:end].copy()
    if end > n:  # after the game's last move: a position the rows do not hold
        color, last = after_last(positions)
        to_play = np.append(to_play, np.uint8(color))
        key = np.append(key, np.uint64(last))
    return LabelGame(
        path=read.path, game_index=read.game_index, sha1=read.sha1, status="ok",
        komi=read.komi, moves=read.moves,
        segments=segments(read, end) if end else (),
        to_play=to_play, key=key,
    )


def _accounted(read: GameRead) -> LabelGame:
    return LabelGame(path=read.path, game_index=read.game_index, sha1=read.sha1,
                     status=read.status, reason=read.reason, detail=read.detail,
                     moves=read.moves)


def label_game(read: GameRead, max_moves: int | None = None,
               review: bool = False) -> LabelGame:
    """One game as the dataset build read it, with its queries (``max_moves`` and
    ``review`` as :func:`select_games` has them), or accounted for when it has no rows."""
    return _label_game(read, max_moves, review) if read.status == "ok" else _accounted(read)


def read_label_games(path: str | Path, max_moves: int | None = None,
                     review: bool = False) -> list[LabelGame]:
    """Every game of one SGF file as the dataset build reads it, with its queries."""
    return [label_game(read, max_moves, review) for read in read_file(path)]


def select_games(
    inputs: Iterable[str | Path],
    *,
    max_games: int | None = None,
    max_moves: int | None = None,
    review: bool = False,
) -> tuple[list[LabelGame], int]:
    """Every game under ``inputs`` in the build's order, and the number of files skipped
    in ``void`` folders. ``max_games`` stops after that many games to label (games the
    build would not use are still listed up to there); ``max_moves`` labels only the
    first rows of each game (the positions before moves 1 .. max_moves); ``review`` adds
    the position after the last of those moves."""
    files, void_files = find_sgf_files([Path(p) for p in inputs])
    return list(_iter_games(files, max_games, max_moves, review)), void_files


def _iter_games(files: list[Path], max_games: int | None, max_moves: int | None,
                review: bool) -> Iterator[LabelGame]:
    to_label = 0
    for path in files:
        for game in read_label_games(path, max_moves, review):
            if game.status == "ok":
                if max_games is not None and to_label >= max_games:
                    return
                to_label += 1
            yield game

