"""KataGo labels joined to ``go19 dataset build`` samples (``--labels DIR --target ...``).

A sample's position is found in the label set by its game (the SGF file's sha1 and the
game's index in the file) and its move number, and must have the same dedup key (stones,
side to move, ko point) as the label, so a label made for another position is never
used: it counts as missing (``key_mismatch``).

- ``--target played``: ``move`` stays the played move; KataGo's fields ride along.
- ``--target katago``: ``move`` becomes KataGo's best move; ``policy`` is the soft target.

Either way the samples get ``katago_move`` (361 = pass), ``played_move``, ``policy``
(float32 362: KataGo's raw policy with illegal points set to 0, so it sums to 1),
``winrate`` and ``score_lead`` (Black's), ``katago_visits``, and ``ownership`` when the
labels have it. The position after the move, looked up the same way (its key is the next
row's, or for the last move the position it leaves), gives ``score_lead_after`` and the
played move's ``played_loss`` (:func:`orchestrator.quality.moves.point_loss`: the mover's
points lost, KaTrain's definition), NaN where that position has no label; labels made for
review (``go19 label --review``) add ``katago_loss``, the loss of KataGo's own move by the
search's value of it (NaN at one visit, where KataGo searches no move).

A position without a label is dropped, or kept with ``--allow-missing-labels``: then
``move`` is the played move, ``katago_move`` -1 and the float fields NaN. The manifest's
``labels`` entry counts all of this and how often the played move was KataGo's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from orchestrator.label.games import after_last
from orchestrator.label.store import LabelSet
from orchestrator.positions.samples import AREA, GameRead, Positions
from orchestrator.quality.moves import point_loss

TARGETS = ("played", "katago")


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
            rows = labels.rows(positions.move_number)
            found = rows >= 0
            wrong = found & (labels.arrays["key"][np.maximum(rows, 0)] != positions.key)
            self.key_mismatch += int(np.count_nonzero(wrong))
            rows[wrong] = -1
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
    def _after(game: GameRead, positions: Positions, labels) -> np.ndarray:
        """The label row of the position after each row's move, -1 without one (or with
        another position's key)."""
        after = np.full(len(positions), -1, np.intp)
        everything = game.positions
        if labels is None or everything is None or not len(positions):
            return after
        keys = np.append(everything.key, np.uint64(after_last(everything)[1]))
        found = labels.rows(positions.move_number + 1)
        expected = keys[positions.move_number]  # row m is the position after move m
        ok = (found >= 0) & (labels.arrays["key"][np.maximum(found, 0)] == expected)
        after[ok] = found[ok]
        return after

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
