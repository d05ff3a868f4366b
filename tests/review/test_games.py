"""A game joined with labels written by hand: the row after the last move (its key from the
rules board, ko point included), each move's point loss worked out by hand (Black, White, a
pass, the last move), and the dataset join's ``played_loss``, without KataGo."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from orchestrator.color import WHITE
from orchestrator.dataset import BuildOptions, build
from orchestrator.dataset.shards import iter_shards
from orchestrator.files import read_sgf_file
from orchestrator.label.games import select_games
from orchestrator.label.join import LabelJoin, matching_rows, review_game
from orchestrator.label.run import RunOptions
from orchestrator.label.store import GameLabels, LabelSet, LabelWriter, empty_labels
from orchestrator.positions.samples import read_file
from orchestrator.quality.moves import OPENING
from orchestrator.quality.report import QualityReport
from orchestrator.report.build import write_report
from orchestrator.rules.replay import replay
from tests.report.synth import Game as SynthGame
from tests.report.synth import journal_line

# Black to capture White's B18 ('bb') at C18 ('cb') as the fifth move, leaving a ko at B18:
# the stones are set up, then B Q16, W D4, B passes, W R4, B C18.
KO = ("(;GM[1]FF[4]CA[UTF-8]SZ[19]KM[7.5]RU[Chinese]AB[ab][ba][bc]AW[ca][db][cc][bb]"
      ";B[pd]GOXIXSRC[opening];W[dp];B[];W[qp];B[cb])")
B18 = 1 * 19 + 1
C18 = 1 * 19 + 2
# Black's lead before moves 1..5 and after move 5, as KataGo might say.
LEADS = [0.5, 1.5, 0.0, -2.0, -1.0, 6.0]
# By hand, the mover's view: B 0.5-1.5 = -1; W -(1.5-0) = -1.5; B pass 0-(-2) = 2;
# W -(-2-(-1)) = 1; B (the last move) -1-6 = -7.
LOSSES = [-1.0, -1.5, 2.0, 1.0, -7.0]


@pytest.fixture
def ko_game(tmp_path):
    path = tmp_path / "games" / "ko.sgf"
    path.parent.mkdir()
    path.write_text(KO)
    return path


def test_review_rows_end_with_the_position_after_the_last_move(ko_game) -> None:
    (plain,), _ = select_games([ko_game])
    (review,), _ = select_games([ko_game], review=True)
    assert plain.positions == 5 and review.positions == 6
    assert (review.key[:5] == plain.key).all()
    after = replay(read_sgf_file(ko_game)[0])
    assert after.board.ko_point == B18  # the capture left a ko: the key must say so
    assert int(review.key[5]) == after.board.position_key(WHITE)
    assert review.to_play[5] == WHITE
    # One query from the start covers all six turns: the five moves are its history.
    (segment,) = review.segments
    assert segment.rows == 6 and len(segment.moves) == 5
    (capped,), _ = select_games([ko_game], review=True, max_moves=3)
    assert capped.positions == 4 and (capped.key == plain.key[:4]).all()


def _labels(game, leads, best=C18) -> dict[str, np.ndarray]:
    arrays = empty_labels(game, ownership=False, review=True)
    arrays["policy"][:] = 0.001
    arrays["policy"][:, best] = 0.9
    arrays["best_move"][:] = best
    arrays["score_lead"][:] = leads
    arrays["winrate"][:] = 0.5
    arrays["visits"][:] = 1
    return arrays


def test_point_loss_by_hand(ko_game) -> None:
    (game,), _ = select_games([ko_game], review=True)
    (read,) = read_file(ko_game)
    reviewed = review_game(read, GameLabels(_labels(game, LEADS)))
    moves = reviewed.moves
    assert moves.loss == pytest.approx(LOSSES)
    assert moves.origin[0] == OPENING
    assert (reviewed.labelled, reviewed.key_mismatch) == (6, 0)
    assert moves.played[4] == C18 and moves.best[4] == C18 and moves.rank[4] == 1
    assert moves.rank[2] == 2  # the pass, behind C18
    assert moves.lead == pytest.approx(LEADS[:5])


def test_a_label_for_another_position_is_not_used(ko_game) -> None:
    (game,), _ = select_games([ko_game], review=True)
    (read,) = read_file(ko_game)
    arrays = _labels(game, LEADS)
    arrays["key"][5] ^= 1  # the row after the last move describes another position
    reviewed = review_game(read, GameLabels(arrays))
    assert reviewed.key_mismatch == 1
    assert reviewed.moves.loss[:4] == pytest.approx(LOSSES[:4])
    assert math.isnan(reviewed.moves.loss[4])
    unlabelled = review_game(read, None)
    assert np.isnan(unlabelled.moves.loss).all() and (unlabelled.moves.best == -1).all()


def test_the_dataset_join_knows_the_played_moves_loss(ko_game, tmp_path) -> None:
    (game,), _ = select_games([ko_game], review=True)
    writer = LabelWriter.open(tmp_path / "labels", RunOptions(review=True).settings(None),
                              [str(ko_game)], resume=False)
    writer.add(game, _labels(game, LEADS))
    writer.flush()
    labels = LabelSet(tmp_path / "labels")
    assert labels.review
    build([ko_game], tmp_path / "ds", BuildOptions(), join=LabelJoin(labels))
    (arrays,) = list(iter_shards(tmp_path / "ds"))
    # The opening move is not a sample; moves 2..5 are, the last one included.
    assert arrays["move_number"].tolist() == [2, 3, 4, 5]
    assert arrays["played_loss"] == pytest.approx(LOSSES[1:])
    assert arrays["score_lead_after"] == pytest.approx(LEADS[2:])
    assert np.isnan(arrays["katago_loss"]).all()  # one visit: KataGo searched no move


def test_the_build_and_review_join_by_one_rule(ko_game, tmp_path) -> None:
    """A label made for another position (its key) in the middle of the game: the dataset
    build and the review both leave it out, through the one rule (label.join.matching_rows),
    and agree on every other move's point loss."""
    (game,), _ = select_games([ko_game], review=True)
    arrays = _labels(game, LEADS)
    arrays["key"][2] ^= 1  # the position before move 3 is another's
    labels = GameLabels(arrays)
    rows, wrong = matching_rows(labels, np.arange(1, 7, dtype=np.int32), game.key)
    assert rows.tolist() == [0, 1, -1, 3, 4, 5] and wrong == 1
    (read,) = read_file(ko_game)
    reviewed = review_game(read, labels)
    assert reviewed.key_mismatch == 1
    writer = LabelWriter.open(tmp_path / "labels", RunOptions(review=True).settings(None),
                              [str(ko_game)], resume=False)
    writer.add(game, arrays)
    writer.flush()
    join = LabelJoin(LabelSet(tmp_path / "labels"), keep_missing=True)
    build([ko_game], tmp_path / "ds", BuildOptions(), join=join)
    (shard,) = list(iter_shards(tmp_path / "ds"))
    review_loss = reviewed.moves.loss[shard["move_number"] - 1]
    assert np.isnan(shard["played_loss"]).tolist() == np.isnan(review_loss).tolist()
    assert np.isnan(review_loss).tolist() == [True, True, False, False]  # moves 2, 3 | 4, 5
    assert shard["played_loss"][2:] == pytest.approx(review_loss[2:])
    assert join.key_mismatch == 1


def test_a_report_reads_each_sgf_once(ko_game, tmp_path) -> None:
    """A labelled run's report (the move-quality section included) opens each game's SGF
    once: the counts, the record and the positions come from one read (an audit hook
    counts the opens)."""
    run = tmp_path / "rec" / "ko-20260101-000000"
    players = {"b": {"kind": "heuristic"}, "w": {"kind": "random"}}
    record = journal_line(run.name, SynthGame(1, "b", "w", "white", moves=5), players)
    (run / "void").mkdir(parents=True)
    (run / record["sgf"]).write_text(KO.replace("KM[7.5]", "KM[7.5]PB[b]PW[w]"))
    (run / "games.jsonl").write_text(json.dumps(record) + "\n")
    (game,), _ = select_games([run], review=True)
    writer = LabelWriter.open(run / "labels", RunOptions(review=True).settings(None),
                              [str(run)], resume=False)
    writer.add(game, _labels(game, LEADS))
    writer.flush()
    opened: list[str] = []
    _OPENS.append(opened)
    try:
        report = write_report([run], tmp_path / "out")
    finally:
        _OPENS.remove(opened)
    assert isinstance(report.quality, QualityReport) and report.quality.counts.labelled == 1
    assert [Path(p).name for p in opened if str(p).endswith(".sgf")] == [record["sgf"]]


_OPENS: list[list[str]] = []  # the lists an audit hook appends opened paths to


def _audit(event: str, args: tuple) -> None:
    if event == "open" and _OPENS and isinstance(args[0], str | Path):
        _OPENS[-1].append(str(args[0]))


sys.addaudithook(_audit)  # for good: a hook cannot be removed, so it does nothing when idle
