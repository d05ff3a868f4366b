"""Main lines of the real SGF files, read with sgfmill (not with go19's own SGF code),
as our points: row 0 at the top."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sgfmill import sgf

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS

COLORS = {"b": BLACK, "w": WHITE}


@dataclass(frozen=True)
class Record:
    path: Path
    size: int
    komi: float
    black: tuple[int, ...]  # root AB
    white: tuple[int, ...]  # root AW
    moves: tuple[tuple[int, int], ...]  # (colour, point or PASS)


def sgf_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() == ".sgf")


def to_point(rc: tuple[int, int] | None, size: int) -> int:
    """sgfmill (row from the bottom, col) to our point."""
    if rc is None:
        return PASS
    return (size - 1 - rc[0]) * size + rc[1]


def main_line(path: Path) -> Record:
    """Root setup and main-line moves; ValueError if sgfmill cannot read the file or
    it has setup after the root."""
    game = sgf.Sgf_game.from_bytes(path.read_bytes())
    size = game.get_size()
    root = game.get_root()
    black, white, empty = root.get_setup_stones()
    if empty:
        raise ValueError(f"{path.name}: AE in the root")
    moves = []
    for node in game.get_main_sequence():
        if node is not root and node.has_setup_stones():
            raise ValueError(f"{path.name}: setup after the root")
        color, rc = node.get_move()
        if color is not None:
            moves.append((COLORS[color], to_point(rc, size)))
    try:
        komi = game.get_komi()
    except ValueError:
        komi = 0.0
    return Record(
        path=path,
        size=size,
        komi=komi,
        black=tuple(sorted(to_point(rc, size) for rc in black)),
        white=tuple(sorted(to_point(rc, size) for rc in white)),
        moves=tuple(moves),
    )
