"""KataGo labels joined to a game's positions: the one rule (:func:`matching_rows`), used
by ``go19 dataset build --labels`` (:class:`LabelJoin`) and by move quality
(:func:`review_game`: ``go19 review``, the report, ``collect --review``).

**The rule.** A position is found in the label set by its game (the SGF file's sha1 and the
game's index in the file) and its move number, and its label is used only if the label's
position key (stones, side to move, ko point) equals the game's, so a label made for another
position is never used: it counts as missing (``key_mismatch``). The position after a move is
looked up the same way (its key is the next row's, or for the last move the position it
leaves: :func:`position_keys`).

**The build** (``--labels DIR --target ...``):

- ``--target played``: ``move`` stays the played move; KataGo's fields ride along.
- ``--target katago``: ``move`` becomes KataGo's best move; ``policy`` is the soft target.

Either way the samples get ``katago_move`` (361 = pass), ``played_move``, ``policy``
(float32 362: KataGo's raw policy with illegal points set to 0, so it sums to 1),
``winrate`` and ``score_lead`` (Black's), ``katago_visits``, and ``ownership`` when the
labels have it. The position after the move gives ``score_lead_after`` and the played
move's ``played_loss`` (:func:`orchestrator.quality.moves.point_loss`: the mover's points
lost, KaTrain's definition), NaN where that position has no label; labels made for review
(``go19 label --review``) add ``katago_loss``, the loss of KataGo's own move by the search's
value of it (NaN at one visit, where KataGo searches no move).

A position without a label is dropped, or kept with ``--allow-missing-labels``: then
``move`` is the played move, ``katago_move`` -1 and the float fields NaN. The manifest's
``labels`` entry counts all of this and how often the played move was KataGo's.

**Review**: a recorded game as the dataset build reads it
(:func:`orchestrator.positions.samples.read_file`) joined with its labels into
:class:`orchestrator.quality.moves.GameMoves`, every move with the labels before and after it::

    labels = LabelSet("recordings/run/labels")
    for read in read_file("recordings/run/baduk-...-00001.sgf"):
        if read.status == "ok":
            game = review_game(read, labels.game(read.sha1, read.game_index))
            game.moves.loss   # each move's point loss, NaN where a label is missing
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from orchestrator.label.games import after_last
from orchestrator.label.store import GameLabels, LabelSet
from orchestrator.positions import rows
from orchestrator.positions.rows import AREA, Positions
from orchestrator.positions.samples import GameRead
from orchestrator.quality import moves as quality
from orchestrator.quality.moves import point_loss

TARGETS = ("played", "katago")


def position_keys(positions: Positions) -> np.ndarray:
    """The key of every position of a game by move number - 1: the rows' (before each move)
    and, last, the position the last move leaves (which the rows do not hold)."""
    return np.append(positions.key, np.uint64(after_last(positions)[1]))


def matching_rows(labels: GameLabels, numbers: np.ndarray,
                  keys: np.ndarray) -> tuple[np.ndarray, int]:
    """The label row of the position before each move number in ``numbers`` whose label is
    for that position (its key is the one in ``keys``), -1 where there is none; and how
    many labels were found for another position (left out)."""
    rows = labels.rows(numbers)
    wrong = (rows >= 0) & (labels.arrays["key"][np.maximum(rows, 0)] != keys)
    rows[wrong] = -1
    return rows, int(np.count_nonzero(wrong))


class LabelJoin:
    """The dataset build's join hook (``build(..., join=LabelJoin(...))``)."""

    def __init__(self, labels: LabelSet, target: str = "played",
                 keep_missing: bool = False) -> None:
        if target not in TARGETS:
            raise ValueError(f"target must be one of {TARGETS}, not {target!r}")
        self.labels = labels
        self.target = target
        self.keep_missing = keep_missing
        self.fields: dict[str, tuple[np.dtype, tuple[int, ...]]] = {
            "katago_move": (np.dtype(np.int16), ()),  # 361 = pass, -1 = no label
            "played_move": (np.dtype(np.int16), ()),
            "policy": (np.dtype(np.float32), (AREA + 1,)),  # illegal 0, sums to 1
            "winrate": (np.dtype(np.float32), ()),  # Black's
            "score_lead": (np.dtype(np.float32), ()),  # Black's
            "katago_visits": (np.dtype(np.int32), ()),
            "score_lead_after": (np.dtype(np.float32), ()),  # Black's, after the move
            "played_loss": (np.dtype(np.float32), ()),  # the mover's points lost
        }
        if labels.review:
            self.fields["katago_loss"] = (np.dtype(np.float32), ())
        if labels.ownership:
            self.fields["ownership"] = (np.dtype(np.float32), (AREA,))
        self.positions = self.labelled = self.missing = self.key_mismatch = 0
        self.samples = self.samples_labelled = self.agree = 0
        # The game the build is on: its stage rows (move number -> label row, played move).
        self._numbers = np.empty(0, np.int32)
        self._label_rows = np.empty(0, np.intp)
        self._after_rows = np.empty(0, np.intp)
        self._played = np.empty(0, np.int16)
        self._arrays: dict[str, np.ndarray] = {}

    def stage(self, game: GameRead, positions: Positions) -> Positions:
        """Find each row's label; drop unlabelled rows (unless kept); set the target."""
        labels = self.labels.game(game.sha1, game.game_index)
        if labels is None:
            rows = np.full(len(positions), -1, np.intp)
            self._arrays = {}
        else:
            rows, wrong = matching_rows(labels, positions.move_number, positions.key)
            self.key_mismatch += wrong
            self._arrays = labels.arrays
        missing = rows < 0
        self.positions += len(positions)
        self.missing += int(np.count_nonzero(missing))
        self.labelled += int(np.count_nonzero(~missing))
        if missing.any() and not self.keep_missing:
            positions, rows = positions.take(~missing), rows[~missing]
        self._numbers = positions.move_number
        self._label_rows = rows
        self._after_rows = self._after(game, positions, labels)
        self._played = positions.move
        has = rows >= 0
        if self.target == "katago" and has.any():
            moves = positions.move.copy()
            moves[has] = self._arrays["best_move"][rows[has]]
            positions = dataclasses.replace(positions, move=moves)
        return positions

    @staticmethod
    def _after(game: GameRead, positions: Positions, labels: GameLabels | None) -> np.ndarray:
        """The label row of the position after each row's move, -1 without one (or with
        another position's key)."""
        everything = game.positions
        if labels is None or everything is None or not len(positions):
            return np.full(len(positions), -1, np.intp)
        # Key m is the position after move m.
        keys = position_keys(everything)[positions.move_number]
        return matching_rows(labels, positions.move_number + 1, keys)[0]

    def values(self, game: GameRead, positions: Positions) -> dict[str, np.ndarray]:
        """The label fields of the rows the build keeps (a subset of the stage's rows)."""
        n = len(positions)
        at = np.searchsorted(self._numbers, positions.move_number)
        rows = self._label_rows[at] if n else np.empty(0, np.intp)
        after = self._after_rows[at] if n else np.empty(0, np.intp)
        has = rows >= 0
        take = rows[has]
        out: dict[str, np.ndarray] = {
            "katago_move": np.full(n, -1, np.int16),
            "played_move": self._played[at] if n else np.empty(0, np.int16),
            "policy": np.full((n, AREA + 1), np.nan, np.float32),
            "winrate": np.full(n, np.nan, np.float32),
            "score_lead": np.full(n, np.nan, np.float32),
            "katago_visits": np.full(n, -1, np.int32),
            "score_lead_after": np.full(n, np.nan, np.float32),
            "played_loss": np.full(n, np.nan, np.float32),
        }
        if self.labels.review:
            out["katago_loss"] = np.full(n, np.nan, np.float32)
        if self.labels.ownership:
            out["ownership"] = np.full((n, AREA), np.nan, np.float32)
        if len(take):
            a = self._arrays
            out["katago_move"][has] = a["best_move"][take]
            out["policy"][has] = np.maximum(a["policy"][take], 0)
            out["winrate"][has] = a["winrate"][take]
            out["score_lead"][has] = a["score_lead"][take]
            out["katago_visits"][has] = a["visits"][take]
            if self.labels.ownership:
                out["ownership"][has] = a["ownership"][take]
            if self.labels.review:
                out["katago_loss"][has] = point_loss(positions.to_play[has], a["score_lead"][
                    take], a["best_score_lead"][take])
        later = after >= 0
        if later.any():
            a = self._arrays
            both = has & later
            out["score_lead_after"][later] = a["score_lead"][after[later]]
            out["played_loss"][both] = point_loss(
                positions.to_play[both], a["score_lead"][rows[both]],
                a["score_lead"][after[both]])
        self.samples += n
        self.samples_labelled += len(take)
        self.agree += int(np.count_nonzero(out["played_move"][has] == out["katago_move"][has]))
        return out

    def summary(self) -> dict[str, Any]:
        manifest = self.labels.manifest
        engine = manifest.get("engine") or {}
        return {
            "folder": str(self.labels.folder.resolve()),  # the build makes it relative
            "target": self.target,
            "keep_missing": self.keep_missing,
            "katago": engine.get("version"),
            "models": engine.get("model_names"),
            "settings": manifest.get("settings"),
            "positions": self.positions,
            "labelled": self.labelled,
            "missing": self.missing,
            "missing_dropped": 0 if self.keep_missing else self.missing,
            "key_mismatch": self.key_mismatch,
            "samples": self.samples,
            "samples_labelled": self.samples_labelled,
            "played_is_katago": self.agree,
            "agreement": round(self.agree / self.samples_labelled, 4)
            if self.samples_labelled else None,
        }


_ORIGINS = np.zeros(max(rows.POLICY, rows.OPENING, rows.FALLBACK) + 1, np.uint8)
_ORIGINS[[rows.POLICY, rows.OPENING, rows.FALLBACK]] = (
    quality.OWN, quality.OPENING, quality.FALLBACK)


@dataclass(frozen=True, slots=True)
class ReviewedGame:
    """A game judged move by move with its labels."""

    read: GameRead  # path, sha1, game index, names, run and game number, the positions
    moves: quality.GameMoves
    labelled: int  # positions with a label (of len(moves) + 1)
    key_mismatch: int  # labels found for the game whose position key differs

    @property
    def boards(self) -> np.ndarray:
        """uint8 (n, 19, 19): the position before each move (1 Black, 2 White)."""
        assert self.read.positions is not None
        return self.read.positions.board


def review_game(read: GameRead, labels: GameLabels | None) -> ReviewedGame:
    """One game (``read.status == "ok"``) joined with its labels (None: it has none): the
    score lead before each move and after the last, KataGo's move and policy before each."""
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
        rows, mismatch = matching_rows(labels, np.arange(1, n + 2, dtype=np.int32),
                                       position_keys(positions))
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
