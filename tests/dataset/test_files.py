"""The dataset on disk: shards and manifest read back (hashes checked), the output
folder rules, and `go19 dataset check` (sheet and sgfmill cross-check) finding
what is right and what is not."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from orchestrator.dataset import (
    FIELDS,
    BuildOptions,
    DatasetError,
    build,
    iter_shards,
    load,
    load_games,
    read_manifest,
)
from orchestrator.dataset.check import MARK_COLOR, SHEET_PX
from orchestrator.files import sha256_file
from orchestrator.render import point_center
from tests.conftest import go19_here
from tests.dataset.games import moves, p, write_game

GAME = ("Q16", "D4", "Q3", "D16", "R5", "C14", "pass", "K10", "R10", "pass", "O17", "F3",
        "C6")  # 13 moves, B to play at 1, 3, ...


@pytest.fixture
def dataset(tmp_path) -> Path:
    write_game(tmp_path / "sgf" / "game.sgf", moves(*GAME), result="W+R")
    out = tmp_path / "ds"
    build([tmp_path / "sgf"], out, BuildOptions(shard_size=5))
    return out


def test_round_trip_through_shards(dataset) -> None:
    manifest = read_manifest(dataset)
    assert [s["samples"] for s in manifest["shards"]] == [5, 5, 3]
    for entry in manifest["shards"]:
        assert sha256_file(dataset / entry["file"]) == entry["sha256"]
    shards = list(iter_shards(dataset))
    assert [len(s["move"]) for s in shards] == [5, 5, 3]
    data = load(dataset)
    for name, (dtype, shape) in FIELDS.items():
        assert data[name].dtype == dtype and data[name].shape == (13, *shape)
    expected = [361 if v == "pass" else p(v) for v in GAME]
    assert data["move"].tolist() == expected
    assert data["move_number"].tolist() == list(range(1, 14))
    assert data["to_play"].tolist() == [1, 2] * 6 + [1]
    assert set(data["winner"].tolist()) == {2} and set(data["ko"].tolist()) == {-1}
    # Row 0 is the top: before move 2, B's Q16 is at row 3 (19 - 16), column Q (15).
    assert data["board"][1][3, 15] == 1 and np.count_nonzero(data["board"][1]) == 1
    (game,) = load_games(dataset)
    assert (game.status, game.samples, game.result, game.winner) == \
        ("ok", 13, "W+R", 2)


def test_a_corrupt_shard_is_named(dataset) -> None:
    shard = dataset / "shard-00001.npz"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(DatasetError) as info:
        load(dataset)
    assert str(info.value) == f"{shard}: sha256 does not match the manifest (corrupt or changed)"
    shards = iter_shards(dataset)
    assert len(next(shards)["move"]) == 5  # the shard before it is still readable
    with pytest.raises(DatasetError):
        next(shards)
    result = go19_here("dataset", "check", dataset, "--sample", "13")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == f"dataset check: {shard}: sha256 does not match the manifest " \
                            "(corrupt or changed)\n"


def test_a_missing_or_foreign_manifest(tmp_path, dataset) -> None:
    with pytest.raises(DatasetError, match="not found"):
        load(tmp_path)
    (dataset / "manifest.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(DatasetError, match="not a go19-dataset/1 manifest"):
        load(dataset)


def test_output_folder_rules(tmp_path, dataset) -> None:
    sgf = tmp_path / "sgf"
    with pytest.raises(DatasetError, match="exists and is not empty"):
        build([sgf], dataset)
    before = read_manifest(dataset)["created"]
    build([sgf], dataset, BuildOptions(max_per_game=2), force=True)
    assert read_manifest(dataset)["counts"]["samples"] == 2 and before
    assert sorted(f.name for f in dataset.iterdir()) == \
        ["games.jsonl", "manifest.json", "shard-00000.npz"]
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(DatasetError, match="not a go19 dataset"):
        build([sgf], other, force=True)
    assert (other / "keep.txt").read_text() == "mine"
    empty = tmp_path / "empty"
    empty.mkdir()
    build([sgf], empty)
    assert read_manifest(empty)["counts"]["samples"] == 13
    # Nothing is left behind beside the outputs.
    assert sorted(f.name for f in tmp_path.iterdir()) == ["ds", "empty", "notes", "sgf"]


def test_bad_input_is_one_line(tmp_path) -> None:
    result = go19_here("dataset", "build", tmp_path / "nowhere", "--out", tmp_path / "ds")
    assert result.returncode == 2
    assert result.stderr == f"dataset build: {tmp_path / 'nowhere'}: no such file or folder\n"
    assert not (tmp_path / "ds").exists()
    result = go19_here("dataset", "check", tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "not found" in result.stderr


def test_check_sheet_marks_the_target(tmp_path) -> None:
    write_game(tmp_path / "sgf" / "one.sgf", moves("Q16", "D4"))
    out = tmp_path / "ds"
    build([tmp_path / "sgf"], out, BuildOptions(max_per_game=1))  # move 1: B to play Q16
    sheet = tmp_path / "sheet.png"
    result = go19_here("dataset", "check", out, "--sample", "1", "--out", sheet)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "ok       #0 sgf/one.sgf move 1: B to play Q16"
    image = np.asarray(Image.open(io.BytesIO(sheet.read_bytes())).convert("RGB"))
    # contact_sheet puts the first picture 8 px from the top-left corner.
    x, y = point_center(p("Q16"), 19, SHEET_PX)
    assert tuple(image[8 + y, 8 + x]) == MARK_COLOR
    x, y = point_center(p("D4"), 19, SHEET_PX)  # an empty point, unmarked
    assert tuple(image[8 + y, 8 + x]) != MARK_COLOR


def test_check_finds_a_changed_source(tmp_path, dataset) -> None:
    assert go19_here("dataset", "check", dataset, "--sample", "13").returncode == 0
    source = tmp_path / "sgf" / "game.sgf"
    source.write_bytes(source.read_bytes().replace(b"PB[b]", b"PB[someone else]"))
    result = go19_here("dataset", "check", dataset, "--sample", "3")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 4 and all(line.startswith("MISMATCH") for line in lines[:3])
    assert "changed since the build (SHA-1 differs)" in lines[0]


def test_check_finds_a_wrong_board_or_target(tmp_path, dataset) -> None:
    # Forge shard 0 (and its hash, so it loads): sample 2's board gains a stone and
    # sample 3's target moves. sgfmill's replay of the SGF must disagree.
    shard = dataset / "shard-00000.npz"
    with np.load(shard) as npz:
        arrays = {name: npz[name].copy() for name in npz.files}
    arrays["board"][2][9, 9] = 2
    arrays["move"][3] = p("A1")
    np.savez(shard, **arrays)
    manifest = read_manifest(dataset)
    manifest["shards"][0].update(sha256=sha256_file(shard), bytes=shard.stat().st_size)
    (dataset / "manifest.json").write_text(json.dumps(manifest))
    result = go19_here("dataset", "check", dataset, "--sample", "13")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[2] == ("MISMATCH #2 sgf/game.sgf move 3: B to play Q3: board differs at 1 "
                        "points (first K10: sample 2, SGF 0)")
    assert lines[3] == "MISMATCH #3 sgf/game.sgf move 4: W to play A1: target A1, SGF has D16"
    assert sum(line.startswith("ok ") for line in lines) == 11
    assert lines[-1].startswith("11/13 samples agree")


class Doubler:
    """A join (the hook KataGo labels use) adding one field: twice the move number."""

    fields = {"twice": (np.dtype(np.int32), ())}

    def stage(self, game, positions):
        return positions

    def values(self, game, positions):
        return {"twice": positions.move_number * 2}

    def summary(self):
        return {"doubled": True}


def test_fields_added_by_a_join_load_too(tmp_path) -> None:
    write_game(tmp_path / "sgf" / "game.sgf", moves(*GAME))
    out = tmp_path / "ds"
    build([tmp_path / "sgf"], out, BuildOptions(shard_size=5), join=Doubler())
    data = load(out)
    assert data["twice"].tolist() == [2 * n for n in range(1, 14)]
    assert data["move"].tolist() == [361 if v == "pass" else p(v) for v in GAME]
    assert read_manifest(out)["labels"] == {"doubled": True}
