"""The report's move-quality section: the runs' games joined with their KataGo labels
(:func:`orchestrator.label.join.review_game`), and the numbers of
:mod:`orchestrator.quality.report` over them (``report.quality``).

Label folders: the ones given (``--labels``), else each run's own ``RUN_DIR/labels`` (where
``go19 review`` writes them). Without any, the section says how to get one. A game counts
when it has labels; the players' numbers are over their counted moves (own moves labelled
before and after; opening-book and fallback moves counted apart).

Per head-to-head it also says after how many games each verdict's interval first excluded 0:
the quality verdict's over the labelled games, the Elo verdict's over every rated game of the
pair (in the order the report counts them, and as it counts them: pentanomial pairs once both
games are in), so the two can be compared on the same run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from orchestrator.label.join import review_game
from orchestrator.label.store import GameLabels, LabelError, LabelSet
from orchestrator.quality.report import (
    Counts,
    Decided,
    JudgedGame,
    LabelSettings,
    QualityReport,
    QualityUnavailable,
    quality_report,
)
from orchestrator.ratings import estimate
from orchestrator.recordings import rated_game
from orchestrator.report import series
from orchestrator.report.load import RunData, Warn
from orchestrator.report.model import HeadToHead
from orchestrator.report.stats import checked_pairs, chronological
from orchestrator.words import plural

LABELS_DIR = "labels"  # RUN_DIR/labels: where go19 review labels a run

HINT = ("No KataGo labels for these runs, so no move quality: `go19 review RUN_DIR` labels "
        "a run's games into RUN_DIR/labels (`make katago` first; slow on a CPU: "
        "--max-games, --max-moves) and writes this report with the section; `go19 report "
        "--labels DIR` uses a label folder made otherwise (`go19 label --review`).")


def label_folders(runs: Sequence[RunData], given: Sequence[Path] | None) -> list[Path]:
    """The label folders a report uses: the given ones, else the runs' own."""
    if given:
        return [Path(p) for p in given]
    return [run.path / LABELS_DIR for run in runs if (run.path / LABELS_DIR).is_dir()]


def _find(sets: Sequence[LabelSet], sha1: str | None,
          game_index: int | None) -> GameLabels | None:
    for labels in sets:
        found = labels.game(sha1, game_index)
        if found is not None:
            return found
    return None


def _judged(runs: Sequence[RunData], sets: Sequence[LabelSet],
            warn: Warn) -> tuple[list[JudgedGame], Counts]:
    """The runs' finished games with labels, in the report's order, and the counts."""
    out = []
    games = labelled = unlabelled = unreadable = mismatch = 0
    for data in chronological(runs):
        line = data.line
        if line.void:
            continue
        games += 1
        read = data.sgf.positions() if data.sgf is not None else None
        if read is None or read.status != "ok":
            unreadable += 1
            continue
        labels = _find(sets, read.sha1, read.game_index)
        if labels is None:
            unlabelled += 1
            continue
        game = review_game(read, labels)
        mismatch += game.key_mismatch
        labelled += 1
        out.append(JudgedGame(run=line.run, game=line.game, black=line.black, white=line.white,
                              sgf=str(Path(read.path)), moves=game.moves, boards=game.boards))
    if mismatch:
        warn(f"move quality: {plural(mismatch, 'label')} made for other positions than the "
             "games' (key mismatch) left out")
    return out, Counts(games, labelled, unlabelled, unreadable, mismatch)


def _elo_decided(runs: Sequence[RunData], player: str, opponent: str) -> Decided:
    """After how many rated games of the pair the Elo interval first excluded 0, and from
    which game on it always did, counted as the report counts the head-to-head."""
    outcomes = [o for o in (rated_game(g.line) for g in chronological(runs)) if o is not None]
    games = [g for g in outcomes if {g.black, g.white} == {player, opponent}]
    games = checked_pairs(games, player, opponent, "", lambda _: None)
    first = steady = None
    for k, counts in series.running_counts(games, player):
        est = estimate(counts)
        low, high = est.elo_low, est.elo_high
        decided = low is not None and high is not None and (low > 0 or high < 0)
        if decided:
            first = k if first is None else first
            steady = k if steady is None else steady
        else:
            steady = None
    return Decided(len(games), first, steady)


def _settings(sets: Sequence[LabelSet]) -> LabelSettings:
    first = sets[0].manifest
    engine = first.get("engine") or {}
    settings = first.get("settings") or {}
    return LabelSettings(folders=[str(s.folder) for s in sets], katago=engine.get("version"),
                         models=engine.get("model_names"), visits=settings.get("visits"),
                         max_moves=settings.get("max_moves"),
                         review=bool(settings.get("review")))


def section(runs: Sequence[RunData], head_to_head: Sequence[HeadToHead],
            labels: Sequence[Path] | None, warn: Warn) -> QualityReport | QualityUnavailable:
    """``report.quality``: :class:`QualityUnavailable` (with how to get labels) without a
    label folder."""
    return pairs_section(runs, [(h.player, h.opponent) for h in head_to_head], labels, warn)


def pairs_section(runs: Sequence[RunData], pairs: Sequence[tuple[str, str]],
                  labels: Sequence[Path] | None, warn: Warn
                  ) -> QualityReport | QualityUnavailable:
    """The section with the head-to-heads of ``pairs`` (player, opponent): the report's,
    and ``go19 gate``'s over the games it counted."""
    sets = []
    for folder in label_folders(runs, labels):
        try:
            sets.append(LabelSet(folder))
        except (LabelError, OSError) as exc:
            warn(f"move quality: {folder}: {exc}; left out")
    if not sets:
        return QualityUnavailable(available=False, hint=HINT)
    judged, counts = _judged(runs, sets, warn)
    return quality_report(judged, pairs,
                          lambda player, opponent: _elo_decided(runs, player, opponent),
                          _settings(sets), counts)
