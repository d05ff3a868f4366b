"""The label folder, the run's plumbing and the dataset join without KataGo: labels written
by hand, and a real subprocess standing in for KataGo that answers turns backwards, logs
the priorities it is sent, or dies on every analysis query."""

from __future__ import annotations

import json
import stat
import sys
import textwrap

import numpy as np
import pytest

from orchestrator.dataset import BuildOptions, build, load
from orchestrator.label.games import select_games
from orchestrator.label.join import LabelJoin
from orchestrator.label.run import EngineFiles, LabelRun, LabelRunError, RunOptions
from orchestrator.label.store import MANIFEST, LabelError, LabelSet, LabelWriter, empty_labels
from tests.conftest import go19_here
from tests.label.sgfs import CAPTURE, MIDGAME_SETUP, MIDGAME_STONES, write_games

SETTINGS = RunOptions().settings(None)
QF = 5 * 19 + 16  # Q14, empty before every move of MIDGAME_SETUP


@pytest.fixture
def midgame(tmp_path):
    path = tmp_path / "games" / "midgame.sgf"
    path.parent.mkdir()
    path.write_text(MIDGAME_SETUP)
    return path


def _hand_labels(folder, games, *, best=QF, wrong_key_row=None):
    """Labels made by hand: a one-hot policy at ``best``, -1 on the stones, and Black's
    winrate 0.25 + row / 100."""
    writer = LabelWriter.open(folder, SETTINGS, [], resume=False)
    for game in games:
        arrays = empty_labels(game, ownership=False)
        for row in range(game.positions):
            arrays["policy"][row] = 0
            arrays["policy"][row][list(MIDGAME_STONES[row])] = -1
            arrays["policy"][row][best] = 1
        arrays["best_move"][:] = best
        arrays["winrate"][:] = 0.25 + np.arange(game.positions) / 100
        arrays["score_lead"][:] = -1.5
        arrays["visits"][:] = 1
        if wrong_key_row is not None:
            arrays["key"][wrong_key_row] ^= 1
        writer.add(game, arrays)
    writer.flush()
    return LabelSet(folder)


def test_labels_round_trip_and_are_found_by_game_and_move(tmp_path, midgame):
    games, _ = select_games([midgame])
    labels = _hand_labels(tmp_path / "labels", games)
    game = labels.game(games[0].sha1, 0)
    assert game is not None and labels.game(games[0].sha1, 1) is None
    assert list(game.rows(np.array([5, 1, 9, 3]))) == [4, 0, -1, 2]
    assert game.arrays["winrate"][2] == pytest.approx(0.27)
    manifest = json.loads((tmp_path / "labels" / MANIFEST).read_text())
    assert manifest["counts"] == {"games": 1, "status": {"ok": 1}, "reasons": {},
                                  "positions": 5}
    assert manifest["games"][0]["shard"] == manifest["shards"][0]["file"]


def test_a_changed_shard_or_a_foreign_folder_is_one_clear_error(tmp_path, midgame):
    games, _ = select_games([midgame])
    _hand_labels(tmp_path / "labels", games)
    shard = next((tmp_path / "labels").glob("shard-*.npz"))
    shard.write_bytes(shard.read_bytes()[:-1] + b"x")
    with pytest.raises(LabelError, match=f"{shard.name}: sha256 does not match"):
        LabelSet(tmp_path / "labels")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(LabelError, match="holds no labels.json"):
        LabelWriter.open(tmp_path / "other", SETTINGS, [], resume=False)
    with pytest.raises(LabelError, match="already holds labels"):
        LabelWriter.open(tmp_path / "labels", SETTINGS, [], resume=False)
    with pytest.raises(LabelError, match="other settings"):
        LabelWriter.open(tmp_path / "labels", {**SETTINGS, "visits": 8}, [], resume=True)


def test_katago_target_replaces_the_move_and_keeps_a_soft_policy(tmp_path, midgame):
    games, _ = select_games([midgame])
    labels = _hand_labels(tmp_path / "labels", games, wrong_key_row=2)
    join = LabelJoin(labels, "katago")
    manifest = build([midgame], tmp_path / "ds", BuildOptions(dedup=False), join=join)
    with np.load(tmp_path / "ds" / "shard-00000.npz") as npz:
        data = {name: npz[name] for name in npz.files}
    # Row 2 (move 3) has a label made for another position: dropped, not used.
    assert list(data["move_number"]) == [1, 2, 4, 5]
    assert list(data["move"]) == [QF] * 4 == list(data["katago_move"])
    assert list(data["played_move"]) == [60, 300, 72, QF]  # D16, Q4, Q16, Q14
    assert (data["policy"] >= 0).all() and (data["policy"].sum(axis=1) == 1).all()
    assert data["winrate"] == pytest.approx([0.25, 0.26, 0.28, 0.29])
    assert manifest["labels"]["key_mismatch"] == 1 and manifest["labels"]["missing"] == 1
    assert manifest["labels"]["played_is_katago"] == 1  # move 5 was Q14
    assert manifest["fields"]["policy"] == {"dtype": "float32", "shape": [362]}
    assert list(load(tmp_path / "ds")["move"]) == [QF] * 4


def test_missing_labels_are_kept_on_request(tmp_path, midgame):
    capture = midgame.parent / "capture.sgf"
    capture.write_text(CAPTURE)
    games, _ = select_games([midgame])  # the capture game gets no labels
    labels = _hand_labels(tmp_path / "labels", games)
    join = LabelJoin(labels, "katago", keep_missing=True)
    build([midgame.parent], tmp_path / "ds", BuildOptions(dedup=False), join=join)
    data = load(tmp_path / "ds")
    with np.load(tmp_path / "ds" / "shard-00000.npz") as npz:
        katago_move, policy = npz["katago_move"], npz["policy"]
    unlabelled = katago_move == -1
    assert unlabelled.sum() == 1 and data["move"][unlabelled][0] == 18 * 19 + 10  # played
    assert np.isnan(policy[unlabelled]).all() and not np.isnan(policy[~unlabelled]).any()


def test_dataset_cli_refuses_label_options_without_labels_and_bad_label_folders(
    tmp_path, midgame
):
    result = go19_here("dataset", "build", midgame, "--out", tmp_path / "ds", "--target", "katago")
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "need --labels" in result.stderr
    result = go19_here("dataset", "build", midgame, "--out", tmp_path / "ds", "--labels", tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "labels.json: not found" in result.stderr


def test_label_cli_bad_input_is_one_line(tmp_path):
    result = go19_here("label", tmp_path / "nowhere", "--out", tmp_path / "labels",
                       "--katago", tmp_path / "katago", "--model", tmp_path / "m",
                       "--config", tmp_path / "c")
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "--katago" in result.stderr and "no such file" in result.stderr
    for name in ("katago", "m", "c"):
        (tmp_path / name).write_text("")
    result = go19_here("label", tmp_path / "nowhere", "--out", tmp_path / "labels",
                       "--katago", tmp_path / "katago", "--model", tmp_path / "m",
                       "--config", tmp_path / "c")
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "nowhere: no such file or folder" in result.stderr


# A stand-in for `katago analysis`: answers the version and models, logs each analysis
# query's priority and turns, then answers the turns backwards with a one-hot policy at
# the turn number; with "die" in the model's path it exits at every analysis query.
FAKE = textwrap.dedent('''
    import json, os, sys
    dies = any("die" in arg for arg in sys.argv)
    log = open(os.environ["GO19_FAKE_KATAGO_LOG"], "a")
    for line in sys.stdin:
        q = json.loads(line)
        if q.get("action") == "query_version":
            print(json.dumps({**q, "version": "0.0-fake"}), flush=True)
            continue
        if q.get("action") == "query_models":
            print(json.dumps({**q, "models": [{"internalName": "fake"}]}), flush=True)
            continue
        if q.get("action"):
            continue
        log.write(json.dumps({"priority": q["priority"], "turns": q["analyzeTurns"],
                              "stones": len(q["initialStones"])}) + "\\n")
        log.flush()
        if dies:
            sys.exit(5)
        for turn in reversed(q["analyzeTurns"]):
            policy = [0.0] * 362
            policy[turn] = 1.0
            print(json.dumps({"id": q["id"], "turnNumber": turn, "moveInfos": [],
                              "rootInfo": {"winrate": 0.5, "scoreLead": 0.0, "visits": 1},
                              "policy": policy}), flush=True)
''')


class _Quiet:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.done = 0

    def start(self, games: int, positions: int) -> None: ...
    def engine_started(self, pid: int) -> None: ...
    def game_done(self, game) -> None: ...

    def advance(self, positions: int) -> None:
        self.done += positions

    def message(self, line: str) -> None:
        self.lines.append(line)


def _fake(tmp_path, monkeypatch, model="model.bin.gz"):
    script = tmp_path / "fake-katago"
    script.write_text(f"#!{sys.executable}\n{FAKE}")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (tmp_path / model).write_text("")
    (tmp_path / "analysis.cfg").write_text("")
    monkeypatch.setenv("GO19_FAKE_KATAGO_LOG", str(tmp_path / "queries.jsonl"))
    return EngineFiles(script, tmp_path / model, tmp_path / "analysis.cfg",
                       tmp_path / "katago.log")


async def test_answers_land_in_their_rows_and_earlier_games_go_first(tmp_path, monkeypatch):
    write_games(tmp_path / "games")
    games, _ = select_games([tmp_path / "games"])
    writer = LabelWriter.open(tmp_path / "labels", SETTINGS, [], resume=False)
    reporter = _Quiet()
    result = await LabelRun(writer, _fake(tmp_path, monkeypatch), RunOptions(max_in_flight=3),
                            reporter).run(games)
    writer.flush()
    assert (result.labelled, result.positions, reporter.done) == (2, 6, 6)
    queries = [json.loads(line) for line in (tmp_path / "queries.jsonl").read_text().splitlines()]
    # capture (33 setup stones, 1 turn), midgame (2 queries): game n has -n (the odd komi
    # is rejected before any query).
    sent = [(q["priority"], tuple(q["turns"]), q["stones"]) for q in queries]
    assert sorted(sent) == [(-1, (0, 1), 5), (-1, (0, 1, 2), 0), (0, (0,), 33)]
    assert sent.index((-1, (0, 1), 5)) > sent.index((-1, (0, 1, 2), 0))
    labels = LabelSet(tmp_path / "labels")
    midgame = next(g for g in games if g.path.endswith("b-midgame-setup.sgf"))
    arrays = labels.game(midgame.sha1, 0).arrays
    assert list(arrays["best_move"]) == [0, 1, 2, 0, 1]  # the fake's turn marker, per row
    assert list(arrays["history"]) == [1, 1, 1, 0, 0]


async def test_an_engine_that_keeps_dying_stops_the_run_with_a_reason(tmp_path, monkeypatch):
    write_games(tmp_path / "games")
    games, _ = select_games([tmp_path / "games"])
    writer = LabelWriter.open(tmp_path / "labels", SETTINGS, [], resume=False)
    reporter = _Quiet()
    run = LabelRun(writer, _fake(tmp_path, monkeypatch, "die.bin.gz"),
                   RunOptions(max_restarts=2), reporter)
    with pytest.raises(LabelRunError, match="died 3 times in a row.*status 5"):
        await run.run(games)
    writer.flush()
    assert run.result.restarts == 2 and reporter.done == 0
    assert len([line for line in reporter.lines if "restarting" in line]) == 2
    statuses = {e["status"] for e in json.loads((tmp_path / "labels" / MANIFEST).read_text())[
        "games"]}
    assert "ok" not in statuses


def test_games_keep_the_build_order_and_limits(tmp_path):
    write_games(tmp_path / "games")
    games, _ = select_games([tmp_path / "games"], max_games=1, max_moves=2)
    assert [g.path.rsplit("/", 1)[1] for g in games] == ["a-capture.sgf"]  # not the second
    games, _ = select_games([tmp_path / "games"], max_games=2, max_moves=2)
    names = [g.path.rsplit("/", 1)[1] for g in games]
    # Two games to label, and the files after them: none of those is a game to label (the
    # odd komi is rejected), so nothing stops the listing before the end.
    assert names == ["a-capture.sgf", "b-midgame-setup.sgf", "bad-setup.sgf", "c-odd-komi.sgf",
                     "d-void.sgf", "garbage.sgf", "illegal.sgf", "nine.sgf"]
    assert [g.positions for g in games] == [1, 2, 0, 0, 0, 0, 0, 0]
    assert [len(s.moves) for s in games[1].segments] == [1]  # rows 0-1: one move between
