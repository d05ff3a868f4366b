"""Which game a schedule slot plays: colours and opening, a pure function of
the matchup and the slot number, so a resumed run replays exactly the slots
that were in flight.

A greedy policy replays the same game forever, so openings give variety:
``random_plies = N`` (N random moves away from the edge) or the first
``plies`` moves of the SGFs in a folder. With ``paired = true`` slots 2k and
2k+1 play the same opening with colours swapped.
"""

from __future__ import annotations

import random
from pathlib import Path

from orchestrator.collect.matchup import Matchup
from orchestrator.collect.referee import GameSpec, Opening
from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS
from orchestrator.files import read_sgf_file
from orchestrator.rules.board import Board, IllegalMove
from orchestrator.sgf import SgfError


class OpeningError(ValueError):
    """The openings folder holds no usable opening."""


def random_opening(size: int, plies: int, seed: int) -> tuple[int, ...]:
    rng = random.Random(seed)
    board = Board(size)
    margin = 2 if size >= 9 else 0
    inner = [
        r * size + c
        for r in range(margin, size - margin)
        for c in range(margin, size - margin)
    ]
    moves: list[int] = []
    color = BLACK
    for _ in range(plies):
        candidates = [p for p in inner if board.is_legal(color, p)]
        if not candidates:
            break
        point = rng.choice(candidates)
        board.play(color, point)
        moves.append(point)
        color = WHITE if color == BLACK else BLACK
    return tuple(moves)


def load_sgf_openings(folder: Path, size: int, plies: int) -> list[tuple[str, tuple[int, ...]]]:
    """Openings from the main lines of every readable SGF in ``folder`` (sorted
    by path); files of another size, with setup stones or too short are skipped."""
    openings = []
    for path in sorted(p for p in folder.rglob("*") if p.suffix.lower() == ".sgf"):
        try:
            games = read_sgf_file(path)
        except SgfError:
            continue
        for index, sgf_game in enumerate(games):
            if sgf_game.size != size or sgf_game.has_setup:
                continue
            board = Board(size)
            moves: list[int] = []
            color = BLACK
            try:
                for move in sgf_game.moves[:plies]:
                    if move.color != color or move.point == PASS:
                        break
                    board.play(color, move.point)
                    moves.append(move.point)
                    color = WHITE if color == BLACK else BLACK
            except IllegalMove:
                continue
            if len(moves) == plies:
                openings.append((f"{path.name}#{index}", tuple(moves)))
    if not openings:
        raise OpeningError(f"{folder}: no SGF with {plies} opening moves on {size}x{size}")
    return openings


class Schedule:
    def __init__(self, matchup: Matchup) -> None:
        self.matchup = matchup
        opts = matchup.openings
        self._sgf_openings = (
            load_sgf_openings(opts.sgf_dir, matchup.game.size, opts.plies)
            if opts.sgf_dir is not None
            else None
        )

    def spec(self, slot: int) -> GameSpec:
        pairing = self.matchup.pairing
        opts = self.matchup.openings
        has_openings = bool(opts.random_plies) or self._sgf_openings is not None
        paired = has_openings and opts.paired
        group = slot // 2 if paired else slot
        swap = pairing.alternate_colors and slot % 2 == 1
        black, white = (pairing.white, pairing.black) if swap else (pairing.black, pairing.white)
        opening = None
        if opts.random_plies:
            seed = self.matchup.run.seed * 1_000_003 + group
            moves = random_opening(self.matchup.game.size, opts.random_plies, seed)
            pair = group if paired else None
            opening = Opening(f"random-{opts.random_plies}-{group}", moves, pair)
        elif self._sgf_openings is not None:
            name, moves = self._sgf_openings[group % len(self._sgf_openings)]
            opening = Opening(name, moves, group if paired else None)
        return GameSpec(slot=slot, black=black, white=white, opening=opening)
