"""A recorded game judged by KataGo's labels: its rows, as the dataset build and ``go19
label`` read them (:func:`orchestrator.positions.samples.read_file`), joined with a label
folder into :class:`orchestrator.quality.moves.GameMoves`.

The join is the dataset build's (docs/labels.md): a position is found by its game (the SGF
file's sha1 and the game's index in the file) and move number, and its label is used only if
the label's position key equals the game's, so labels made for another position count as
missing (``key_mismatch``). The position after the last move, which the rows do not hold, is
played out here (:func:`orchestrator.label.games.after_last`) to check its key too.

    from orchestrator.label.store import LabelSet
    from orchestrator.review.games import review_file
    labels = LabelSet("recordings/run/labels")
    for game in review_file("recordings/run/baduk-...-00001.sgf", labels):
        game.moves.loss   # each move's point loss, NaN where a label is missing
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from orchestrator.label.games import after_last
from orchestrator.label.store import GameLabels, LabelSet
from orchestrator.positions import samples
from orchestrator.positions.samples import AREA, GameRead, read_file
from orchestrator.quality import moves as quality

_ORIGINS = np.zeros(max(samples.POLICY, samples.OPENING, samples.FALLBACK) + 1, np.uint8)
_ORIGINS[[samples.POLICY, samples.OPENING, samples.FALLBACK]] = (
    quality.OWN, quality.OPENING, quality.FALLBACK)


@dataclass(frozen=True, slots=True)
class ReviewedGame:
    read: GameRead  # path, sha1, game index, names, run and game number, the positions
    moves: quality.GameMoves
    labelled: int  # positions with a label (of len(moves) + 1)
    key_mismatch: int  # labels found for the game whose position key differs

    def board(self, index: int) -> np.ndarray:
        """The position before move ``index + 1`` (uint8 19x19, 1 Black, 2 White)."""
        assert self.read.positions is not None
        return self.read.positions.board[index]


def review_game(read: GameRead, labels: GameLabels | None) -> ReviewedGame:
    """One game (``read.status == "ok"``) joined with its labels (None: it has none)."""
    positions = read.positions
    if positions is None:
        raise ValueError(f"{read.path}: game {read.game_index} has no positions "
                         f"({read.status} {read.reason})")
    n = len(positions)
    lead = np.full(n + 1, np.nan)
    best = np.full(n, -1, np.int16)
    policy = np.full((n, AREA + 1), np.nan, np.float32)
    labelled = mismatch = 0
    if labels is not None and n:
        rows = labels.rows(np.arange(1, n + 2, dtype=np.int32))
        keys = np.append(positions.key, np.uint64(after_last(positions)[1]))
        found = rows >= 0
        wrong = found & (labels.arrays["key"][np.maximum(rows, 0)] != keys)
        mismatch = int(np.count_nonzero(wrong))
        rows[wrong] = -1
        found = rows >= 0
        labelled = int(np.count_nonzero(found))
        a = labels.arrays
        lead[found] = a["score_lead"][rows[found]]
        before = found[:n]
        best[before] = a["best_move"][rows[:n][before]]
        policy[before] = a["policy"][rows[:n][before]]
    moves = quality.judge(positions.to_play, positions.move, _ORIGINS[positions.origin],
                          lead, best, policy)
    return ReviewedGame(read, moves, labelled, mismatch)


def review_file(path: str | Path, labels: LabelSet) -> list[ReviewedGame]:
    """Every game of one SGF file that replays to the end (as the dataset build reads it),
    with its labels; games the build would not use are left out."""
    return [review_game(read, labels.game(read.sha1, read.game_index))
            for read in read_file(path) if read.status == "ok"]
