"""Small 19x19 games written for the purpose, and an independent look at SGF files
through sgfmill (not go19's reader or rules)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sgfmill import boards as sgfmill_boards
from sgfmill import sgf as sgfmill_sgf
from sgfmill import sgf_grammar

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS, from_gtp
from orchestrator.sgf import SgfGame, SgfMove, write_sgf

COLORS = {"b": BLACK, "w": WHITE}


def p(vertex: str, size: int = 19) -> int:
    """A point from a GTP vertex: tests spell moves the way a player reads a board."""
    return from_gtp(vertex, size)


def moves(*spelled: str, first: int = BLACK, size: int = 19) -> tuple[SgfMove, ...]:
    """Alternating moves from GTP vertices; ``"Q16@opening"`` marks the move's source."""
    out = []
    color = first
    for text in spelled:
        vertex, _, source = text.partition("@")
        out.append(SgfMove(color, PASS if vertex == "pass" else p(vertex, size), source or None))
        color = 3 - color
    return tuple(out)


def write_game(path: Path, played: tuple[SgfMove, ...], result: str = "B+R", size: int = 19,
               **root: str) -> Path:
    game = SgfGame(size=size, komi=7.5, result=result, black_name="b", white_name="w",
                   root_props=dict(root), moves=played)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(write_sgf(game))
    return path


def sgfmill_positions(path: Path, game_index: int = 0) -> list[tuple[np.ndarray, int, int]]:
    """(board before the move, colour, point; 361 for a pass) for every main-line
    move, replayed on sgfmill's board."""
    tree = sgf_grammar.parse_sgf_collection(path.read_bytes())[game_index]
    game = sgfmill_sgf.Sgf_game.from_coarse_game_tree(tree, override_encoding="iso-8859-1")
    size = game.get_size()
    board = sgfmill_boards.Board(size)
    out = []
    for node in game.get_main_sequence():
        black, white, empty = node.get_setup_stones()
        if black or white or empty:
            board.apply_setup(black, white, empty)
        color, rc = node.get_move()
        played = [(color, rc)] if color is not None else []
        if color == "b" and node.has_property("W"):  # "B[tt]W[tt]" in one node
            played.append(("w", node.get("W")))
        for color, rc in played:
            stones = np.zeros((size, size), np.uint8)
            for there, (row, col) in board.list_occupied_points():
                stones[size - 1 - row, col] = COLORS[there]
            point = size * size if rc is None else (size - 1 - rc[0]) * size + rc[1]
            out.append((stones, COLORS[color], point))
            if rc is not None:
                board.play(rc[0], rc[1], color)
    return out
