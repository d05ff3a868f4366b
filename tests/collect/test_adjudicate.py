"""``[adjudicate]`` with the CPU KataGo of `make katago` (``visits = 1``, 9x9, heuristic
level 2 against random): a resigned game, a holdout game played out with the dead-stone
count, the SGF property read back by sgfmill, and a KataGo killed mid-game (the game goes
on unadjudicated, said once). The rule's own arithmetic is tested without KataGo."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import numpy as np
import sgfmill.sgf
import trio

from orchestrator.collect.adjudicator import ResignWatch, black_view, held_out
from orchestrator.collect.collector import Collector
from orchestrator.collect.matchup import Adjudicate
from orchestrator.collect.run import CollectOptions, collect
from orchestrator.collect.standings import words
from orchestrator.color import BLACK, WHITE
from orchestrator.events import AdjudicationOff, Event
from orchestrator.label.run import EngineFiles
from orchestrator.quality.resign import wilson
from orchestrator.recordings import read_journal
from orchestrator.report.build import build_report
from tests.label.conftest import KATAGO, requires_katago

SEED = 0  # slot 0 resigns, slot 1 is held out (held_out(0, slot, 0.5))

MATCHUP = """
[run]
name = "adj"
seed = {seed}

[players.heur]
kind = "heuristic"
level = 2

[players.rand]
kind = "random"

[pairing]
black = "heur"
white = "rand"

[game]
size = 9
komi = 7.5
move_cap = {cap}
move_timeout_s = 30
concurrency = 1

[adjudicate]
resign_min_move = 10
holdout = 0.5
visits = 1
dead_visits = 1  # KataGo's own rule wants >= 100; one keeps the test to seconds
"""


def _options(tmp_path: Path, games: int, cap: int = 200) -> CollectOptions:
    path = tmp_path / "adj.toml"
    path.write_text(MATCHUP.format(seed=SEED, cap=cap))
    return CollectOptions(matchup_path=path, games=games, recordings=tmp_path / "rec",
                          dashboard=False,
                          katago=EngineFiles(KATAGO.binary, KATAGO.model, KATAGO.config,
                                             tmp_path / "k.log"))


def test_the_rule_counts_own_turns_in_a_row_after_the_minimum_move() -> None:
    watch = ResignWatch(Adjudicate(resign_turns=2, resign_min_move=3), 9)
    assert watch.see(1, WHITE, 0.99) is None  # White's 1 %: one low turn
    assert watch.see(2, BLACK, 0.99) is None  # Black is fine
    assert watch.see(3, WHITE, 0.5) is None  # White recovered: the count starts again
    assert watch.see(5, WHITE, 0.97) is None
    resign = watch.see(7, WHITE, 0.98)
    assert resign is not None and resign.color == "W" and resign.move == 7
    assert resign.winrate == 0.02
    early = ResignWatch(Adjudicate(resign_turns=1), 9)  # min move 1 + 81/5 = 17
    assert early.see(16, BLACK, 0.0) is None and early.see(17, BLACK, 0.0) is not None


def test_answers_turn_to_blacks_view() -> None:
    own = np.array([0.5, -1.0])
    assert black_view(0.3, own, WHITE, "BLACK")[0] == 0.3
    winrate, flipped = black_view(0.3, own, WHITE, "SIDETOMOVE")
    assert winrate == 0.7 and flipped is not None and list(flipped) == [-0.5, 1.0]
    assert black_view(0.3, own, BLACK, "SIDETOMOVE")[0] == 0.3
    assert black_view(0.3, None, BLACK, "WHITE")[0] == 0.7
    assert [held_out(SEED, slot, 0.5) for slot in (0, 1)] == [False, True]


@requires_katago
async def test_a_decided_game_resigns_and_a_holdout_game_is_played_out(tmp_path):
    # The holdout game stops at move 40 (KataGo asked once a move): decided by then, and
    # counted with the dead stones as two passes would be.
    summary = await collect(_options(tmp_path, 2, cap=40), None, None, lambda line: None)
    assert summary.exit_code == 0
    records = {r.slot: r for r in read_journal(summary.run_dir / "games.jsonl").records}
    resigned, held = records[0], records[1]
    assert resigned.reason == "resign" and resigned.result == "B+R"  # random is White
    adj = resigned.adjudication
    assert adj is not None and adj.resign is not None and adj.resign.color == "W"
    assert adj.resign.move == resigned.moves and adj.resign.winrate < 0.05
    assert adj.resign.move >= 10
    assert held.reason == "move-cap"  # random is Black: it would have resigned, lost
    hadj = held.adjudication
    assert hadj is not None and hadj.holdout and hadj.would_resign is not None
    assert hadj.would_resign.color == "B" and hadj.false_resign is False
    assert hadj.adjudicated_result == held.result and hadj.area_result is not None
    assert hadj.dead_stones is not None
    root = sgfmill.sgf.Sgf_game.from_bytes(
        (summary.run_dir / resigned.sgf).read_bytes()).get_root()
    assert root.get("RE") == "B+R"
    assert json.loads(root.get("GOXIXADJ"))["resign"]["winrate"] == adj.resign.winrate
    section = build_report([summary.run_dir]).adjudication
    assert section is not None and (section.resigned, section.holdout) == (1, 1)
    assert section.moves_saved_pct == round(100 * (held.moves - resigned.moves) / held.moves, 1)
    assert (section.false_resigns, section.holdout_would_resign) == (0, 1)
    assert section.false_resign_ci == [round(x, 4) for x in wilson(0, 1) or ()]


def test_the_wilson_interval() -> None:
    low, high = wilson(1, 10) or (0, 0)
    assert round(low, 4) == 0.0179 and round(high, 4) == 0.4042
    assert wilson(0, 0) is None


@requires_katago
async def test_a_katago_killed_mid_game_leaves_the_game_unadjudicated(tmp_path):
    heard: list[Event] = []
    killed: list[int] = []

    async def killer(collector: Collector) -> None:
        adjudicator = collector.adjudicator
        assert adjudicator is not None and adjudicator.engine is not None
        while not collector.state.live or collector.state.live[1].game.move_number < 2:
            await trio.sleep(0.01)  # polls for a state: the game under way
        killed.append(adjudicator.engine.pid)
        os.kill(adjudicator.engine.pid, signal.SIGKILL)

    options = _options(tmp_path, 1, cap=40)
    summary = await collect(options, heard.append, killer, lambda line: None)
    assert killed and summary.exit_code == 0 and summary.state.done == 1
    (record,) = read_journal(summary.run_dir / "games.jsonl").records
    assert record.reason in ("two-passes", "move-cap") and record.adjudication is not None
    assert record.adjudication.off is not None and "KataGo" in record.adjudication.off
    assert record.adjudication.resign is None and record.adjudication.area_result is None
    offs = [e for e in heard if isinstance(e, AdjudicationOff)]
    assert len(offs) == 1
    assert words(offs[0]).startswith("game 1: no adjudication (KataGo")
