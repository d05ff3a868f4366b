"""``go19 dataset check``: draw random samples, check each against its source SGF
read independently with sgfmill (not go19's reader or rules), and draw them on
one contact sheet for a check by eye.

A sample passes when its game's file still has the SHA-1 recorded at build time,
and sgfmill's main line, replayed with sgfmill's own board (setup stones where
they stand, captures; it knows no ko or suicide rules, and needs none for a game
our rules found legal), reaches the sample's move number with the same board,
the same side to move and the same move.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sgfmill import boards as sgfmill_boards
from sgfmill import sgf as sgfmill_sgf
from sgfmill import sgf_grammar

from orchestrator.coords import PASS, from_index, from_rowcol, to_gtp, to_index
from orchestrator.dataset.shards import GameTableRow, load_games, read_manifest, read_shard
from orchestrator.positions.rows import SIZE
from orchestrator.render import caption, contact_sheet, mark, render_image

SHEET_PX = 384  # per board: the VLM's renderer, small enough for 20 on one sheet
SHEET_COLS = 5
MARK_COLOR = (0, 150, 255)
_COLORS = {"b": 1, "w": 2}
_NAMES = {1: "B", 2: "W"}


@dataclass(frozen=True)
class Drawn:
    index: int  # in the whole dataset, shards concatenated
    game: GameTableRow
    board: np.ndarray  # (19, 19) uint8
    to_play: int
    move: int
    move_number: int


@dataclass(frozen=True)
class Checked:
    sample: Drawn
    problem: str | None  # None when sgfmill agrees

    @property
    def ok(self) -> bool:
        return self.problem is None


def draw(folder: str | Path, count: int, seed: int) -> list[Drawn]:
    """``count`` distinct samples chosen at random (by ``seed``), in dataset order;
    only the shards holding them are read (and their sha256 checked)."""
    manifest = read_manifest(folder)
    games = load_games(folder)
    total = sum(entry["samples"] for entry in manifest["shards"])
    chosen = sorted(random.Random(seed).sample(range(total), min(count, total)))
    drawn: list[Drawn] = []
    start = 0
    for entry in manifest["shards"]:
        end = start + entry["samples"]
        rows = [i - start for i in chosen if start <= i < end]
        if rows:
            arrays = read_shard(folder, manifest, entry)
            for row in rows:
                drawn.append(Drawn(
                    index=start + row,
                    game=games[int(arrays["game"][row])],
                    board=arrays["board"][row],
                    to_play=int(arrays["to_play"][row]),
                    move=int(arrays["move"][row]),
                    move_number=int(arrays["move_number"][row]),
                ))
        start = end
    return drawn


def _sgfmill_position(data: bytes, game_index: int, move_number: int
                      ) -> tuple[np.ndarray, int, int]:
    """sgfmill's board before move ``move_number`` of the game's main line, the
    colour to play and the move (a coords index). Raises ValueError."""
    trees = sgf_grammar.parse_sgf_collection(data)
    if game_index >= len(trees):
        raise ValueError(f"sgfmill finds {len(trees)} games, not game {game_index + 1}")
    # Latin-1 never fails to decode; moves and setup are ASCII anyway.
    game = sgfmill_sgf.Sgf_game.from_coarse_game_tree(
        trees[game_index], override_encoding="iso-8859-1")
    size = game.get_size()
    if size != SIZE:
        raise ValueError(f"sgfmill reads a {size}x{size} board")
    board = sgfmill_boards.Board(size)
    number = 0
    for node in game.get_main_sequence():
        black, white, empty = node.get_setup_stones()
        if black or white or empty:
            board.apply_setup(black, white, empty)
        color, rc = node.get_move()
        moves = [(color, rc)] if color is not None else []
        if color == "b" and node.has_property("W"):  # both in one node: B first, as ours
            moves.append(("w", node.get("W")))
        for color, rc in moves:
            number += 1
            if number == move_number:
                stones = np.zeros((size, size), np.uint8)
                for color_there, (row, col) in board.list_occupied_points():
                    stones[size - 1 - row, col] = _COLORS[color_there]
                # sgfmill counts rows from the bottom.
                point = PASS if rc is None else from_rowcol(size - 1 - rc[0], rc[1], size)
                return stones, _COLORS[color], to_index(point, size)
            if rc is not None:
                board.play(rc[0], rc[1], color)
    raise ValueError(f"sgfmill's main line has {number} moves, fewer than {move_number}")


def _gtp(index: int) -> str:
    return to_gtp(from_index(index, SIZE), SIZE)


def check_sample(sample: Drawn) -> Checked:
    game = sample.game
    path = Path(game.file)  # where the SGF is now (shards.load_games)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Checked(sample, f"cannot read {path}: {exc.strerror or exc}")
    if hashlib.sha1(data).hexdigest() != game.sha1:
        return Checked(sample, f"{path} changed since the build (SHA-1 differs)")
    try:
        board, to_play, move = _sgfmill_position(data, game.game_index or 0, sample.move_number)
    except (ValueError, IndexError) as exc:
        return Checked(sample, f"sgfmill cannot replay it: {exc}")
    problems = []
    if move != sample.move:
        problems.append(f"target {_gtp(sample.move)}, SGF has {_gtp(move)}")
    if to_play != sample.to_play:
        problems.append(f"{_NAMES[sample.to_play]} to play, SGF has {_NAMES[to_play]}")
    differ = np.flatnonzero(board.ravel() != sample.board.ravel())
    if len(differ):
        first = int(differ[0])
        problems.append(f"board differs at {len(differ)} points (first {_gtp(first)}: sample "
                        f"{int(sample.board.flat[first])}, SGF {int(board.flat[first])})")
    return Checked(sample, "; ".join(problems) or None)


def _where(game: GameTableRow, width: int = 1000) -> str:
    """The file's last two path parts (and the game, in a file of several)."""
    where = "/".join(Path(game.file).parts[-2:])
    if game.game_index:
        where += f" (game {game.game_index + 1})"
    return where if len(where) <= width else "..." + where[3 - width:]


def describe(sample: Drawn) -> str:
    """``pro19/game.sgf move 57: B to play Q16``."""
    return (f"{_where(sample.game)} move {sample.move_number}: {_NAMES[sample.to_play]} "
            f"to play {_gtp(sample.move)}")


def picture(checked: Checked) -> np.ndarray:
    """The sample's board as the VLM sees it, the target crossed out in blue, captioned."""
    sample = checked.sample
    image = render_image(sample.board, None, SHEET_PX)
    if from_index(sample.move, SIZE) != PASS:
        image = mark(image, sample.move, SIZE, MARK_COLOR, cross=True)
    text = (f"{_where(sample.game, 44)}\nmove {sample.move_number}, "
            f"{_NAMES[sample.to_play]} to play, target {_gtp(sample.move)}\n"
            f"{'ok' if checked.ok else 'MISMATCH'}")
    return caption(image, text)


def sheet(checked: list[Checked]) -> bytes:
    return contact_sheet([picture(c) for c in checked], SHEET_COLS)
