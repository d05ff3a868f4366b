"""`go19 adjudicate` on a run folder and label folder written by hand: three played-out
games of ten moves whose win rates are chosen so that every cell of a 2 x 2 grid can be
counted by hand (below), and the games the table must leave out (a resigned game, a void
game, a game without labels); then the bad inputs, each one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from orchestrator.cli import main
from orchestrator.label.games import select_games
from orchestrator.label.run import RunOptions
from orchestrator.label.store import LabelWriter, empty_labels
from orchestrator.quality.resign import PlayedGame, first_resignation, wilson
from tests.conftest import go19_here
from tests.report.synth import Game, journal_line

RUN = "hand-20261201-120000"
POINTS = ("dd", "pp", "dp", "pd", "jj", "cc", "qq", "cq", "qc", "kk")  # no captures
# Black's win rate in the position after k moves, k = 0..10 (the last: after the last move,
# which the table never uses: the game is over there). Black is to move at even k.
WINRATES = {
    # A, Black wins. White's own win rate after moves 3, 5, 7, 9: .03 .02 .01 .01.
    1: ("black", [.5, .5, .6, .97, .97, .98, .98, .99, .99, .99, .99]),
    # B, Black wins, but Black's own win rate dips to .04 after moves 2 and 4 (then .6).
    2: ("black", [.5, .5, .04, .5, .04, .5, .6, .4, .6, .4, .6]),
    # C, White wins; White's own win rate is .08 after moves 1, 3 and 5.
    3: ("white", [.5, .92, .5, .92, .5, .92, .5, .5, .5, .5, .5]),
    # E ended by resignation in the run: left out whatever its win rates.
    4: ("white", [.5, .01, .5, .01, .5, .01, .5, .01, .5, .01, .5]),
}
MIN_MOVE = 2
# By hand, min move 2 (C's first low turn, after move 1, cannot resign), 30 moves in all:
#   (0.05, 1): A resigns (White) after move 3: correct, 7 moves saved; B (Black) after
#              move 2: incorrect, 8 saved; C never.        -> 1 correct, 1 incorrect, 15
#   (0.05, 3): A after move 7 (its third low turn): correct, 3 saved; B's streak is 2.
#                                                          -> 1 correct, 0 incorrect, 3
#   (0.1, 1):  A 7, B 8 as above; C (White) after move 3: incorrect, 7 saved.
#                                                          -> 1 correct, 2 incorrect, 22
#   (0.1, 3):  A 3; C after move 5: incorrect, 5 saved.    -> 1 correct, 1 incorrect, 8
EXPECTED = {(0.05, 1): (1, 1, 15), (0.05, 3): (1, 0, 3), (0.1, 1): (1, 2, 22),
            (0.1, 3): (1, 1, 8)}


def _sgf(game: Game) -> str:
    result = {"black": "B+3.5", "white": "W+3.5"}[game.winner or "black"]
    if game.reason == "resign":
        result = result[0] + "+R"
    nodes = "".join(f";{'BW'[i % 2]}[{p}]" for i, p in enumerate(POINTS[:game.moves]))
    return (f"(;FF[4]CA[UTF-8]GM[1]SZ[19]KM[7.5]RU[Chinese]PB[{game.black}]"
            f"PW[{game.white}]RE[{result}]GOXIXRUN[{RUN}]GOXIXGAME[{game.number}]{nodes})\n")


def write_labelled_run(root: Path) -> Path:
    run = root / RUN
    (run / "void").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"run_id": RUN, "matchup": {"players": {}}}))
    players = {n: {"kind": "heuristic"} for n in ("a", "b")}
    games = [Game(n, "a", "b", winner, reason="resign" if n == 4 else "two-passes",
                  moves=10) for n, (winner, _) in WINRATES.items()]
    games.append(Game(5, "a", "b", None, reason="void", moves=10))
    lines = []
    for game in games:
        (run / ("void" if game.void else "") / game.sgf_name).write_text(_sgf(game))
        lines.append({**journal_line(RUN, game, players), "size": 19, "komi": 7.5,
                      "result": _sgf(game).split("RE[")[1].split("]")[0]})
    writer = LabelWriter.open(run / "labels", RunOptions(review=True).settings(None), [run],
                              resume=False)
    labelled, _ = select_games([run], review=True)
    for label_game in labelled:
        number = int(Path(label_game.path).stem.rsplit("-", 1)[1])
        arrays = empty_labels(label_game, ownership=False, review=True)
        arrays["policy"][:] = 1 / 362
        arrays["best_move"][:] = 0
        arrays["winrate"][:] = WINRATES[number][1]
        arrays["score_lead"][:] = 0
        arrays["visits"][:] = 1
        writer.add(label_game, arrays)
    writer.flush()
    # F: a played-out game the labels do not hold (added after labelling).
    late = Game(6, "a", "b", "white", moves=10)
    (run / late.sgf_name).write_text(_sgf(late))
    lines.append({**journal_line(RUN, late, players), "size": 19, "komi": 7.5,
                  "result": "W+3.5"})
    (run / "games.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return run


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_labelled_run(tmp_path)


def test_the_table_is_the_count_by_hand(run: Path) -> None:
    done = go19_here("adjudicate", run, "--thresholds", "0.1,0.05", "--turns", "3,1",
                     "--min-move", MIN_MOVE, "--json")
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout)
    assert (table["games"], table["moves"], table["min_move"]) == (3, 30, MIN_MOVE)
    assert table["moves_with_winrate"] == 27  # after moves 1..9 of each game
    assert table["notes"] == ["1 game ended by resignation left out",
                              "1 game without labels left out"]
    cells = {(c["threshold"], c["turns"]): c for c in table["cells"]}
    assert list(cells) == [(0.05, 1), (0.05, 3), (0.1, 1), (0.1, 3)]  # sorted
    for key, (correct, incorrect, saved) in EXPECTED.items():
        c = cells[key]
        assert (c["correct"], c["incorrect"], c["moves_saved"]) == (correct, incorrect,
                                                                    saved), key
        assert c["resigned"] == correct + incorrect
        assert c["no_resign"] == 3 - correct - incorrect
        assert c["saved_share"] == round(saved / 30, 4)
    # One incorrect of two resigned: the Wilson interval of 1/2 (0.0945, 0.9055).
    assert cells[(0.05, 1)]["incorrect_interval"] == [0.0945, 0.9055]
    assert cells[(0.05, 3)]["incorrect_interval"] == [0.0, 0.7935]  # 0 of 1
    assert wilson(0, 0) is None


def test_the_text_table_names_every_cell(run: Path) -> None:
    done = go19_here("adjudicate", run, "--thresholds", "0.05,0.1", "--turns", "1",
                     "--min-move", MIN_MOVE)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == ("adjudicate: 3 played-out games, 30 moves, KataGo's win rate after "
                        "27 of them; resigning from move 2 on")
    assert lines[1].split() == ["win", "rate", "<", "turns", "resigned", "correct",
                                "incorrect", "no", "resign", "incorrect", "of", "resigned",
                                "[95", "%]", "moves", "saved"]
    assert lines[2].split() == ["0.05", "1", "2", "1", "(33.3", "%)", "1", "(33.3", "%)",
                                "1", "(33.3", "%)", "50.0", "%", "[9.5,", "90.5]", "50.0",
                                "%"]
    assert lines[3].split()[:3] == ["0.1", "1", "3"] and lines[3].endswith("73.3 %")
    assert lines[4:] == ["note: 1 game ended by resignation left out",
                         "note: 1 game without labels left out"]


def test_games_ended_at_the_move_cap_count_and_are_said(run: Path) -> None:
    journal = run / "games.jsonl"
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    for line in lines:
        if line["game"] in (1, 3):
            line["reason"] = "move-cap"
    journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = go19_here("adjudicate", run, "--thresholds", "0.05", "--turns", "1",
                     "--min-move", MIN_MOVE, "--json")
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout)
    (cell,) = table["cells"]
    assert (table["games"], cell["correct"], cell["incorrect"]) == (3, 1, 1)  # as before
    assert table["notes"][-1].startswith("2 of the 3 games counted ended at the move cap")


def test_the_default_min_move_is_katagos_and_it_says_nothing_can_resign(run: Path) -> None:
    done = go19_here("adjudicate", run, "--json")
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout)
    assert table["min_move"] == 73  # 1 + 361 // 5
    assert all(c["resigned"] == 0 for c in table["cells"])
    assert len(table["cells"]) == 5 * 3
    assert table["notes"][-1].startswith("no labelled position reaches move 73")


def _one_line(done, text: str) -> None:
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and text in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_bad_input_is_one_line_and_exit_2(run: Path, tmp_path: Path) -> None:
    _one_line(go19_here("adjudicate", tmp_path / "nowhere"), "not a go19 run folder")
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "run.json").write_text(json.dumps({"run_id": "bare"}))
    (bare / "games.jsonl").write_text("")
    _one_line(go19_here("adjudicate", bare), "no KataGo labels for")
    _one_line(go19_here("adjudicate", bare, "--labels", run / "labels"),
              "no played-out game with labels")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "labels.json").write_text("{not json")
    _one_line(go19_here("adjudicate", run, "--labels", broken), "labels.json")
    (run / "labels" / "shard-00000.npz").write_bytes(b"truncated")
    _one_line(go19_here("adjudicate", run), "shard-00000.npz")


@pytest.mark.parametrize("option", [["--thresholds", "0.5"], ["--thresholds", "x"],
                                    ["--turns", "0"], ["--min-move", "-1"]])
def test_a_bad_grid_is_refused_by_the_parser(run: Path, option: list[str],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["adjudicate", str(run), *option])
    assert exit_.value.code == 2
    assert "expected" in capsys.readouterr().err


def test_first_resignation_counts_only_the_movers_own_turns() -> None:
    # White's own win rate is low after moves 1 and 3; Black's (after 2) is not: with
    # turns = 2 White resigns after move 3, Black's turn between breaking nothing.
    game = PlayedGame(moves=5, winner=1, to_play=np.array([2, 1, 2, 1], np.uint8),
                      black_winrate=np.array([.99, .5, .99, .5]))
    found = first_resignation(game, 0.05, 2, 0)
    assert found is not None and (found.color, found.move) == (2, 3)
