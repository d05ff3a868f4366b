"""`go19 label` and the dataset join end to end, against the real KataGo `make katago`
prepares. KataGo on a CPU takes about a second a position (more under load), so one
module-wide run labels 12 positions (6 without the real corpus) and the tests read it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from orchestrator.coords import PASS
from orchestrator.dataset import load
from orchestrator.dataset.shards import MANIFEST as DATASET_MANIFEST
from orchestrator.files import read_sgf_file
from orchestrator.label.games import select_games
from orchestrator.label.run import EngineFiles, LabelRun, RunOptions
from orchestrator.label.store import MANIFEST, LabelSet, LabelWriter
from orchestrator.rules.replay import replay_positions
from tests.conftest import REAL_SGF, REPO, requires_real_sgf
from tests.label.conftest import KATAGO, requires_katago
from tests.label.sgfs import (
    CAPTURE_POINT,
    MIDGAME_STONES,
    NOT_FOR_THE_DATASET,
    write_games,
)
from tests.polling import wait_for

pytestmark = requires_katago

REAL_GAME = REAL_SGF / "pro19" / "01-2016.12.29-Magist-Pan_Tingyu.sgf"
MAX_MOVES = 6


def go19(*args: object, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *map(str, args)],
                          cwd=REPO, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    root = tmp_path_factory.mktemp("label")
    write_games(root / "games")
    inputs = [root / "games", *([REAL_GAME] if REAL_GAME.is_file() else [])]
    out = root / "labels"
    result = go19("label", *inputs, "--out", out, "--max-moves", MAX_MOVES)
    assert result.returncode == 0, result.stderr
    return SimpleNamespace(root=root, inputs=inputs, out=out, result=result,
                           manifest=json.loads((out / MANIFEST).read_text()))


def _entries(manifest: dict) -> dict[str, dict]:
    return {Path(e["path"]).name: e for e in manifest["games"]}


def _game(labels: LabelSet, path: Path):
    data = path.read_bytes()
    return labels.game(hashlib.sha1(data).hexdigest(), 0)


def test_every_game_is_labelled_or_accounted_for(labelled):
    entries = _entries(labelled.manifest)
    assert entries["a-capture.sgf"]["status"] == "ok"
    assert entries["a-capture.sgf"]["positions"] == 1
    assert entries["b-midgame-setup.sgf"]["positions"] == 5
    odd = entries["c-odd-komi.sgf"]  # refused before KataGo sees it (it refused it too)
    assert (odd["status"], odd["reason"]) == ("rejected", "bad-komi")
    assert odd["detail"] == "komi 0.3 is not a multiple of 0.5"
    assert entries["d-void.sgf"]["status"] == "void"
    for name, (_, reason) in NOT_FOR_THE_DATASET.items():
        assert (entries[name]["status"], entries[name]["reason"]) == ("rejected", reason)
    # No traceback, and nothing KataGo had to refuse.
    stderr = labelled.result.stderr
    assert "Traceback" not in stderr
    assert not [line for line in stderr.splitlines() if line.startswith("error:")]
    real = REAL_GAME.is_file()
    assert labelled.manifest["counts"]["positions"] == 6 + (MAX_MOVES if real else 0)
    assert labelled.manifest["engine"]["version"] == "1.18.1"
    assert labelled.manifest["settings"]["visits"] == 1
    for shard in labelled.manifest["shards"]:
        data = (labelled.out / shard["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == shard["sha256"]


def test_best_moves_are_legal_and_policies_mark_the_stones(labelled):
    labels = LabelSet(labelled.out)
    checked = 0
    for entry in labelled.manifest["games"]:
        if entry["status"] != "ok":
            continue
        # labels.json spells the path relative to the label folder
        game = read_sgf_file(labelled.out / entry["path"], require_size=19)[0]
        arrays = labels.game(entry["sha1"], 0).arrays
        assert list(arrays["move_number"]) == list(range(1, entry["positions"] + 1))
        for live, move, number in replay_positions(game):
            if number > entry["positions"]:
                break
            row = number - 1
            policy = arrays["policy"][row]
            stones = set(np.flatnonzero(np.array(live.board.stones) != 0))
            assert set(np.flatnonzero(policy[:361] == -1)) == stones
            assert policy[policy >= 0].sum() == pytest.approx(1.0, abs=1e-3)
            best = int(arrays["best_move"][row])
            assert live.board.is_legal(move.color, PASS if best == 361 else best)
            assert arrays["to_play"][row] == move.color
            assert 0.0 <= arrays["winrate"][row] <= 1.0 and arrays["visits"][row] == 1
            checked += 1
    assert checked == labelled.manifest["counts"]["positions"]


def test_capturing_ten_stones_is_the_label(labelled):
    arrays = _game(LabelSet(labelled.out), labelled.root / "games" / "a-capture.sgf").arrays
    assert int(arrays["best_move"][0]) == CAPTURE_POINT
    assert arrays["policy"][0][CAPTURE_POINT] > 0.5


def test_setup_stones_mid_game_start_a_board_without_history(labelled):
    arrays = _game(LabelSet(labelled.out),
                   labelled.root / "games" / "b-midgame-setup.sgf").arrays
    assert list(arrays["history"]) == [1, 1, 1, 0, 0]
    for row, stones in MIDGAME_STONES.items():
        assert set(np.flatnonzero(arrays["policy"][row] == -1)) == stones


@requires_real_sgf
def test_a_real_game_is_labelled_by_file_hash_and_move_number(labelled):
    labels = LabelSet(labelled.out)
    arrays = _game(labels, REAL_GAME).arrays
    assert list(arrays["move_number"]) == list(range(1, MAX_MOVES + 1))
    assert list(arrays["to_play"]) == [1, 2] * (MAX_MOVES // 2)
    assert (arrays["winrate"] > 0.2).all() and (arrays["winrate"] < 0.8).all()  # even opening


def test_resume_asks_only_for_what_is_missing(labelled, tmp_path):
    out = tmp_path / "labels"
    shutil.copytree(labelled.out, out)
    again = go19("label", *labelled.inputs, "--out", out, "--max-moves", MAX_MOVES)
    assert again.returncode == 2 and "--resume" in again.stderr
    other = go19("label", *labelled.inputs, "--out", out, "--resume", "--visits", 2)
    assert other.returncode == 2 and "other settings" in other.stderr
    resumed = go19("label", *labelled.inputs, "--out", out, "--max-moves", MAX_MOVES,
                   "--resume")
    assert resumed.returncode == 0, resumed.stderr
    labelled_games = sum(e["status"] == "ok" for e in labelled.manifest["games"])
    assert f"already labelled {labelled_games};" in resumed.stdout
    assert "0/0 games labelled (0 positions)" in resumed.stdout  # nothing was left to ask
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["shards"] == labelled.manifest["shards"]
    assert len(manifest["runs"]) == 2
    # The same games. Paths are relative to the label folder, copied here away from its
    # inputs: the games kept are as written there, the ones asked again spelled from here.
    moved, before = _entries(manifest), _entries(labelled.manifest)
    for entries, folder in ((moved, out), (before, labelled.out)):
        for entry in entries.values():
            where = labelled.out if entry["status"] == "ok" else folder
            entry["path"] = (where / entry.pop("path")).resolve()
            entry["ident"] = entry["ident"].split(":")[0]  # unreadable:<path> too
    assert moved == before


def _build(labelled, out: Path, *options: object) -> tuple[dict, dict]:
    result = go19("dataset", "build", *labelled.inputs, "--out", out, "--no-dedup",
                  "--labels", labelled.out, *options)
    assert result.returncode == 0, result.stderr
    data = {}
    for shard in json.loads((out / DATASET_MANIFEST).read_text())["shards"]:
        with np.load(out / shard["file"]) as npz:
            for name in npz.files:
                data.setdefault(name, []).append(npz[name])
    return json.loads((out / DATASET_MANIFEST).read_text()), {
        k: np.concatenate(v) for k, v in data.items()}


def test_dataset_with_katago_targets(labelled, tmp_path):
    manifest, data = _build(labelled, tmp_path / "ds", "--target", "katago")
    positions = labelled.manifest["counts"]["positions"]
    assert len(data["move"]) == positions  # unlabelled positions dropped
    joined = manifest["labels"]
    assert (joined["labelled"], joined["missing_dropped"]) == (positions, joined["missing"])
    # (The odd-komi game's positions were missing too: it is rejected now, no sample.)
    assert joined["missing"] == (146 - MAX_MOVES if REAL_GAME.is_file() else 0)
    assert (data["move"] == data["katago_move"]).all()
    assert (data["move"] != data["played_move"]).any()
    capture = data["move_number"] == 1
    capture &= data["board"].reshape(-1, 361).sum(axis=1) == 11 * 1 + 22 * 2
    assert list(data["move"][capture]) == [CAPTURE_POINT]
    policy = data["policy"]
    assert (policy >= 0).all()
    assert policy.sum(axis=1) == pytest.approx(np.ones(positions), abs=1e-3)
    occupied = data["board"].reshape(-1, 361) != 0
    assert (policy[:, :361][occupied] == 0).all()
    assert np.isfinite(data["winrate"]).all() and (data["katago_visits"] == 1).all()
    # The plain dataset fields still read as before.
    assert len(load(tmp_path / "ds")["move"]) == positions


def test_dataset_with_played_targets_reports_agreement(labelled, tmp_path):
    manifest, data = _build(labelled, tmp_path / "ds", "--target", "played",
                            "--allow-missing-labels")
    joined = manifest["labels"]
    has = data["katago_move"] >= 0
    assert has.sum() == joined["samples_labelled"] == labelled.manifest["counts"]["positions"]
    assert (~has).sum() == joined["missing"] > 0
    assert (data["move"] == data["played_move"]).all()
    agree = int((data["move"][has] == data["katago_move"][has]).sum())
    assert joined["played_is_katago"] == agree
    assert np.isnan(data["policy"][~has]).all() and np.isnan(data["winrate"][~has]).all()


class _KillAfter:
    """A reporter that kills KataGo once ``answers`` answers have come in."""

    def __init__(self, answers: int) -> None:
        self.answers = answers
        self.done = 0
        self.pid: int | None = None
        self.killed = False
        self.lines: list[str] = []

    def start(self, games: int, positions: int) -> None:
        self.total = positions

    def engine_started(self, pid: int) -> None:
        self.pid = pid

    def advance(self, positions: int) -> None:
        self.done += positions
        if not self.killed and self.done >= self.answers:
            self.killed = True
            os.kill(self.pid, signal.SIGKILL)

    def game_done(self, game) -> None:
        pass

    def message(self, line: str) -> None:
        self.lines.append(line)


async def test_a_killed_engine_is_restarted_and_nothing_is_lost(labelled, tmp_path):
    games_dir = labelled.root / "games"
    games, _ = select_games([games_dir / "a-capture.sgf", games_dir / "b-midgame-setup.sgf"])
    options = RunOptions(max_in_flight=2)
    writer = LabelWriter.open(tmp_path / "labels", options.settings(None), [], resume=False)
    files = EngineFiles(KATAGO.binary, KATAGO.model, KATAGO.config, tmp_path / "katago.log")
    reporter = _KillAfter(answers=2)
    result = await LabelRun(writer, files, options, reporter).run(games)
    writer.flush()
    assert reporter.killed and result.restarts == 1
    assert [line for line in reporter.lines if "KataGo died" in line]
    assert (result.labelled, result.positions, reporter.done) == (2, 6, 6)
    mine, reference = LabelSet(tmp_path / "labels"), LabelSet(labelled.out)
    assert len(mine) == 6
    for name in ("a-capture.sgf", "b-midgame-setup.sgf"):
        got, want = _game(mine, games_dir / name).arrays, _game(reference, games_dir / name).arrays
        assert (got["best_move"] == want["best_move"]).all()
        np.testing.assert_allclose(got["policy"], want["policy"], atol=1e-5)


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


@pytest.mark.slow
def test_a_killed_label_run_resumes_without_loss(labelled, tmp_path):
    out = tmp_path / "labels"
    args = [sys.executable, "-m", "orchestrator.cli", "label", *labelled.inputs,
            "--out", out, "--max-moves", MAX_MOVES]
    process = subprocess.Popen([*map(str, args)], cwd=REPO, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        # Killed once KataGo is up and the queries go out: any moment after would do.
        wait_for(lambda: "Started, ready" in _text(out / "katago.log"), "KataGo started",
                 limit=600, process=process)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == -signal.SIGKILL  # killed in the middle, not finished
    resumed = go19(*args[3:], "--resume")
    assert resumed.returncode == 0, resumed.stderr
    labels = LabelSet(out)
    manifest = json.loads((out / MANIFEST).read_text())
    assert _entries(manifest).keys() == _entries(labelled.manifest).keys()
    assert [e["status"] for e in manifest["games"]] == [
        e["status"] for e in labelled.manifest["games"]]
    keys = set(zip(labels.arrays["sha1"], labels.arrays["move_number"], strict=True))
    assert len(keys) == len(labels) == labelled.manifest["counts"]["positions"]
    assert not np.isnan(labels.arrays["winrate"]).any()
