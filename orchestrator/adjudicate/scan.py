"""The runs' played-out games joined with the win rates of their KataGo labels, for the
resign analysis (:mod:`orchestrator.quality.resign`).

Runs are read as the report reads them (:mod:`orchestrator.report.load`), labels as the
report's move-quality section finds them (the given folders, else each ``RUN_DIR/labels``)
and joined by the build's rule (:func:`orchestrator.label.join.matching_rows`: a label is
used only for the position it was made for). A game counts when it was played out and its
winner is known: void games, games that already ended by resignation (``[adjudicate]``:
their played-out result is unknown) and games without a label for their first positions
are left out and counted; games that ended at the move cap are counted and said (their
winner is the area count of an unfinished board). A game's win rates stop at its first
position without a label (``--max-moves``, a key mismatch): no resignation is seen after
it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from orchestrator.color import BLACK, WHITE
from orchestrator.label.join import matching_rows
from orchestrator.label.store import GameLabels, LabelError, LabelSet
from orchestrator.quality.resign import PlayedGame
from orchestrator.report.load import RunData, Warn, load_runs
from orchestrator.report.quality import LABELS_DIR

WINNERS = {"black": BLACK, "white": WHITE, "draw": 0}


class ScanError(ValueError):
    """Nothing to analyse (``str()`` is one line)."""


@dataclass
class Scan:
    """The games the table counts and what was left out."""

    games: list[PlayedGame] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)
    finished: int = 0  # non-void games in the runs
    resigned: int = 0  # ended by resignation: left out
    no_winner: int = 0
    unreadable: int = 0
    unlabelled: int = 0
    mismatched: int = 0  # labels made for other positions (left out)
    capped: int = 0  # counted games that ended at the move cap

    @property
    def moves(self) -> int:
        return sum(g.moves for g in self.games)

    @property
    def seen(self) -> int:
        """Moves whose following position has a win rate (at most each game's moves - 1:
        the position after the last move ends the game)."""
        return sum(g.seen for g in self.games)

    @property
    def partial(self) -> int:
        """Games with win rates for only part of their positions."""
        return sum(g.seen < g.moves - 1 for g in self.games)

    @property
    def last_seen(self) -> int:
        """The furthest position with a win rate, in moves played."""
        return max((g.seen for g in self.games), default=0)


def label_sets(runs: Sequence[RunData], given: Sequence[Path] | None) -> list[LabelSet]:
    """The label folders given, else each run's own; :class:`ScanError` when there is
    none or one cannot be read."""
    folders = [Path(p) for p in given] if given else [
        run.path / LABELS_DIR for run in runs if (run.path / LABELS_DIR).is_dir()]
    if not folders:
        names = " ".join(str(run.path) for run in runs)
        raise ScanError(f"no KataGo labels for {names}: `go19 review {names}` labels the "
                        "games into RUN_DIR/labels (or give --labels DIR)")
    sets = []
    for folder in folders:
        try:
            sets.append(LabelSet(folder))
        except LabelError as exc:
            raise ScanError(str(exc)) from None
        except OSError as exc:
            raise ScanError(f"{folder}: cannot read: {exc.strerror or exc}") from None
    return sets


def _find(sets: Sequence[LabelSet], sha1: str | None, index: int | None) -> GameLabels | None:
    for labels in sets:
        found = labels.game(sha1, index)
        if found is not None:
            return found
    return None


def scan(run_dirs: Sequence[Path], labels: Sequence[Path] | None, warn: Warn) -> Scan:
    runs = load_runs(run_dirs, warn)
    sets = label_sets(runs, labels)
    out = Scan(folders=[s.folder for s in sets])
    for run in runs:
        for data in run.games:
            line = data.line
            if line.void:
                continue
            out.finished += 1
            if line.reason == "resign":
                out.resigned += 1
                continue
            winner = WINNERS.get(line.winner or "")
            if winner is None:
                out.no_winner += 1
                continue
            read = data.sgf.positions() if data.sgf is not None else None
            if read is None or read.status != "ok" or read.positions is None:
                out.unreadable += 1
                continue
            found = _find(sets, read.sha1, read.game_index)
            positions = read.positions
            after = positions.move_number >= 2  # the position after move 1 and on
            rows = np.empty(0, np.intp)
            if found is not None:
                rows, wrong = matching_rows(found, positions.move_number[after],
                                            positions.key[after])
                out.mismatched += wrong
                missing = np.flatnonzero(rows < 0)
                rows = rows[:missing[0]] if len(missing) else rows
            if found is None or (len(positions) > 1 and not len(rows)):
                out.unlabelled += 1
                continue
            out.capped += line.reason == "move-cap"
            out.games.append(PlayedGame(
                moves=len(positions), winner=winner,
                to_play=found.arrays["to_play"][rows].astype(np.uint8),
                black_winrate=found.arrays["winrate"][rows].astype(np.float64)))
    return out
