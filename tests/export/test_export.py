"""`go19 dataset export` on games written for the purpose: the pictures are go19's
renders (pixel for pixel, byte for byte, the right way round), answers read back to the
sample's move, both formats load as their trainers load them, and bad input is one line
with nothing written.

Expected values come from the games as written here (the previous move, the komi, the
stones) and from Pillow's and pyarrow's own readers, not from the export's code.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from orchestrator.coords import MOVE_TEXTS, PASS, move_from_text
from orchestrator.dataset import BuildOptions, DatasetError, build, load
from orchestrator.export import chunk as export_write
from orchestrator.export.chunk import ChunkResult, ExportTask
from orchestrator.export.pipeline import ExportOptions, export
from orchestrator.render import render_image, render_png
from tests.conftest import go19_here
from tests.dataset.games import moves, p, write_game
from tests.export.export_checks import BLACK, WHITE, decode, orientation_faults, parquet_rows

pytest.importorskip("pyarrow", reason="pyarrow (the `export` extra) not installed")

# Two games; the second has a capture (B A2 takes W A1) and passes, so a stone leaves
# the board and a pass leaves no last-move mark for the move after it.
GAME_A = ("Q16", "D4", "Q3", "D16", "R10", "pass", "K10", "C3")
GAME_B = ("B1", "A1", "A2", "Q16", "R16", "D4", "pass", "pass")
KOMI = 7.5  # what tests/dataset/games.write_game writes


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    write_game(tmp_path / "sgf" / "a.sgf", moves(*GAME_A), result="B+R")
    write_game(tmp_path / "sgf" / "b.sgf", moves(*GAME_B), result="W+2.5")
    out = tmp_path / "ds"
    build([tmp_path / "sgf"], out, BuildOptions(dedup=False, shard_size=5))
    return out


def previous_moves(spelled: tuple[str, ...]) -> list[int | None]:
    """The point the GO19 client marks before each move: the move before, unless a pass."""
    marks: list[int | None] = [None]
    for vertex in spelled[:-1]:
        marks.append(None if vertex == "pass" else p(vertex))
    return marks


def test_parquet_pictures_are_the_renders_the_client_sends(dataset, tmp_path) -> None:
    out = tmp_path / "ex"
    manifest = export(dataset, out, ExportOptions(image_px=200, shard_size=3))
    data = load(dataset)
    rows = parquet_rows(out)
    assert len(rows) == len(data["move"]) == 16
    marks = previous_moves(GAME_A) + previous_moves(GAME_B)
    for i, row in enumerate(rows):
        last = marks[i]
        png = row["image"]["bytes"]
        # Byte for byte what players/go19.py sends for this position at 200 px...
        assert png == render_png(data["board"][i], last, 200)
        # ... and, decoded by Pillow, pixel for pixel the renderer's picture.
        assert np.array_equal(decode(png), render_image(data["board"][i], last, 200))
        assert row["last_move"] == (-1 if last is None else last)
        assert row["image_px"] == 200
    # Six shards of at most three samples: the dataset's shards of 5 cut in 3 + 2.
    assert [s["samples"] for s in manifest["shards"]] == [3, 2, 3, 2, 3, 2, 1][:len(
        manifest["shards"])]
    assert sum(s["samples"] for s in manifest["shards"]) == 16


def test_orientation_end_to_end(dataset, tmp_path) -> None:
    """The stone a move puts down is where the next picture shows it, in its colour; a
    transposed or mirrored picture fails the same check."""
    export(dataset, tmp_path / "ex", ExportOptions(image_px=256))
    rows = parquet_rows(tmp_path / "ex")
    data = load(dataset)
    checked = 0
    for i in range(len(rows) - 1):
        this, nxt = rows[i], rows[i + 1]
        if nxt["game"] != this["game"] or this["move"] == 361:
            continue
        image = decode(nxt["image"]["bytes"])
        board = data["board"][i + 1]
        color = BLACK if this["to_play"] == 1 else WHITE
        assert board.flat[this["move"]] == color  # the board agrees (else a capture test)
        stones = np.flatnonzero(board).tolist()
        empties = [p("K4"), p("C17"), p("S18")]  # empty in every position of both games
        points = sorted({this["move"], *stones, *empties})
        assert orientation_faults(image, board, points) == []
        assert orientation_faults(image.transpose(1, 0, 2), board, points), "transposed passed"
        assert orientation_faults(image[::-1], board, points), "flipped passed"
        assert orientation_faults(image[:, ::-1], board, points), "mirrored passed"
        checked += 1
    assert checked == 12  # every move but the passes and each game's last (6 + 6)


@pytest.mark.parametrize("spelling", MOVE_TEXTS)
def test_answers_read_back_to_the_move(dataset, tmp_path, spelling) -> None:
    export(dataset, tmp_path / "ex", ExportOptions(answer=spelling, image_px=128))
    rows = parquet_rows(tmp_path / "ex")
    expected = [p(v) if v != "pass" else 361 for v in GAME_A + GAME_B]
    for row, move in zip(rows, expected, strict=True):
        assistant = row["messages"][1]
        assert assistant["role"] == "assistant"
        text = assistant["content"][0]["text"]
        assert text == row["answer"]
        point = move_from_text(text, 19, spelling)
        assert (361 if point == PASS else point) == move == row["move"]
    first = rows[0]["answer"]
    assert first == {"gtp": "Q16", "sgf": "pd", "rowcol": "3,15"}[spelling]


def test_prompt_template_placeholders(dataset, tmp_path) -> None:
    template = "{side}/{side_lower}/{side_letter} vs {opponent}, move {move_number}, " \
               "komi {komi}, {board_size}x{board_size}; {{literal}}\n{board}"
    export(dataset, tmp_path / "ex", ExportOptions(template=template, image_px=128))
    rows = parquet_rows(tmp_path / "ex")
    user = rows[1]["messages"][0]
    assert user["role"] == "user"
    assert user["content"][0] == {"type": "image", "text": None}
    text = user["content"][1]["text"]
    head, board = text.split("\n", 1)
    assert head == "White/white/W vs Black, move 2, komi 7.5, 19x19; {literal}"
    lines = board.split("\n")
    assert lines[0] == "   A B C D E F G H J K L M N O P Q R S T"
    assert lines[4] == "16 . . . . . . . . . . . . . . . X . . ."  # Q16, Black's move 1
    assert len(lines) == 20 and lines[-1].startswith(" 1 ")


def test_datasets_loads_the_parquet_export(dataset, tmp_path) -> None:
    datasets = pytest.importorskip("datasets", reason="`datasets` (test extra) not installed")
    out = tmp_path / "ex"
    export(dataset, out, ExportOptions(image_px=128, shard_size=4))
    files = sorted(str(f) for f in (out / "data").glob("*.parquet"))
    loaded = datasets.load_dataset("parquet", data_files=files, split="train",
                                   cache_dir=str(tmp_path / "hf-cache"))
    assert isinstance(loaded.features["image"], datasets.Image)
    assert len(loaded) == 16
    data = load(dataset)
    row = loaded[3]
    picture = np.asarray(row["image"].convert("RGB"))
    assert np.array_equal(picture, render_image(data["board"][3], p(GAME_A[2]), 128))
    turns = row["messages"]
    assert [t["role"] for t in turns] == ["user", "assistant"]
    assert [c["type"] for c in turns[0]["content"]] == ["image", "text"]
    assert turns[1]["content"][0]["text"] == "D16" == row["answer"]
    for name in ("move", "to_play", "move_number", "winner", "game", "source", "tactical"):
        assert name in row
    assert row["winner"] == 1 and row["move_number"] == 4 and row["to_play"] == 2
    # The folder alone is enough too: data/train-* is the train split.
    whole = datasets.load_dataset(str(out), split="train", cache_dir=str(tmp_path / "hf-cache"))
    assert whole["answer"] == loaded["answer"]


def test_jsonl_export_for_llamafactory_and_swift(dataset, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(export_write, "IMAGES_PER_FOLDER", 5)
    out = tmp_path / "ex"
    manifest = export(dataset, out, ExportOptions(format="jsonl", answer="sgf", image_px=144,
                                                  shard_size=4))
    data = load(dataset)
    lines = [json.loads(line) for f in sorted((out / "data").glob("*.jsonl"))
             for line in f.read_text().splitlines()]
    assert len(lines) == 16
    marks = previous_moves(GAME_A) + previous_moves(GAME_B)
    for i, record in enumerate(lines):
        user, assistant = record["messages"]
        assert (user["role"], assistant["role"]) == ("user", "assistant")
        assert user["content"].count("<image>") == len(record["images"]) == 1
        path = out / record["images"][0]
        assert path.is_file()
        assert path.read_bytes() == render_png(data["board"][i], marks[i], 144)
        assert move_from_text(assistant["content"], 19, "sgf") == (
            PASS if data["move"][i] == 361 else data["move"][i])
    folders = [f for f in (out / "images").iterdir()]
    assert len(folders) == 4 and all(len(list(f.iterdir())) <= 5 for f in folders)
    info = json.loads((out / "dataset_info.json").read_text())
    (entry,) = info.values()
    assert entry["formatting"] == "sharegpt" and (out / entry["file_name"]).is_dir()
    assert entry["columns"] == {"messages": "messages", "images": "images"}
    pngs = hashlib.sha256(b"".join((out / r["images"][0]).read_bytes() for r in lines[:4]))
    assert manifest["shards"][0]["images_sha256"] == pngs.hexdigest()


def test_manifest_records_source_options_and_shards(dataset, tmp_path) -> None:
    out = tmp_path / "ex"
    export(dataset, out, ExportOptions(image_px=124, shard_size=4))
    manifest = json.loads((out / "manifest.json").read_text())
    source = json.loads((dataset / "manifest.json").read_text())
    assert manifest["format"] == "go19-export/1"
    assert manifest["source"]["manifest_sha256"] == hashlib.sha256(
        (dataset / "manifest.json").read_bytes()).hexdigest()
    assert manifest["source"]["shards"] == [
        {"file": s["file"], "sha256": s["sha256"]} for s in source["shards"]]
    assert manifest["options"]["image_px"] == 124 and manifest["options"]["answer"] == "gtp"
    assert "{side}" in manifest["template"]
    assert manifest["counts"]["samples"] == 16 and manifest["counts"]["games"] == 2
    assert manifest["counts"]["image_px"] == {"124": 16}
    for shard in manifest["shards"]:
        path = out / shard["file"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == shard["sha256"]
    assert not list(tmp_path.glob(".ex.partial-*"))


def test_same_output_for_any_worker_count(dataset, tmp_path) -> None:
    one = export(dataset, tmp_path / "one", ExportOptions(image_px=124, shard_size=4))
    two = export(dataset, tmp_path / "two", ExportOptions(image_px=124, shard_size=4), workers=2)
    assert [s["sha256"] for s in one["shards"]] == [s["sha256"] for s in two["shards"]]


def test_tasks_are_plain_data_for_other_runners(dataset, tmp_path) -> None:
    """What another executor (a cluster) gets: tasks that survive JSON, results likewise."""
    def through_json(tasks, workers, done):
        for task in tasks:
            sent = ExportTask.from_dict(json.loads(json.dumps(task.as_dict())))
            result = export_write.export_chunk(sent)
            yield ChunkResult.from_dict(json.loads(json.dumps(result.as_dict())))

    one = export(dataset, tmp_path / "one", ExportOptions(image_px=124, shard_size=4))
    other = export(dataset, tmp_path / "other", ExportOptions(image_px=124, shard_size=4),
                   runner=through_json)
    assert [s["sha256"] for s in one["shards"]] == [s["sha256"] for s in other["shards"]]


class _Labels:
    """A join adding KataGo-like fields, as `--labels` would: scalars and a policy."""

    fields = {"katago_move": (np.dtype(np.int16), ()), "winrate": (np.dtype(np.float32), ()),
              "policy": (np.dtype(np.float32), (362,))}

    def stage(self, game, positions):
        return positions

    def values(self, game, positions):
        n = len(positions)
        policy = np.zeros((n, 362), np.float32)
        policy[np.arange(n), positions.move] = 1.0
        return {"katago_move": positions.move.astype(np.int16),
                "winrate": np.linspace(0, 1, n, dtype=np.float32), "policy": policy}

    def summary(self):
        return {}


def test_katago_fields_ride_along(tmp_path) -> None:
    write_game(tmp_path / "sgf" / "a.sgf", moves(*GAME_A), result="B+R")
    build([tmp_path / "sgf"], tmp_path / "ds", join=_Labels())
    export(tmp_path / "ds", tmp_path / "ex", ExportOptions(image_px=124))
    rows = parquet_rows(tmp_path / "ex")
    assert [r["katago_move"] for r in rows] == [r["move"] for r in rows]
    assert rows[-1]["winrate"] == pytest.approx(1.0)
    assert len(rows[0]["policy"]) == 362 and rows[0]["policy"][p("Q16")] == 1.0
    export(tmp_path / "ds", tmp_path / "exj", ExportOptions(format="jsonl", image_px=124))
    first = json.loads((tmp_path / "exj" / "data" / "train-00000.jsonl").open().readline())
    assert first["katago_move"] == p("Q16") and "policy" not in first


def test_bad_input_is_one_line_and_nothing_written(dataset, tmp_path) -> None:
    out = tmp_path / "ex"
    shard = dataset / "shard-00000.npz"
    good = shard.read_bytes()
    shard.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    with pytest.raises(DatasetError, match="sha256 does not match"):
        export(dataset, out, ExportOptions(image_px=124))
    assert not out.exists() and not list(tmp_path.glob(".ex.*"))
    shard.write_bytes(good)
    sgf = tmp_path / "sgf" / "b.sgf"
    sgf.write_bytes(sgf.read_bytes().replace(b"W+2.5", b"W+3.5"))
    with pytest.raises(DatasetError, match=r"b\.sgf: changed since the dataset was built"):
        export(dataset, out, ExportOptions(image_px=124))
    assert not out.exists()
    sgf.rename(tmp_path / "moved.sgf")
    with pytest.raises(DatasetError, match=r"b\.sgf: cannot read the game's SGF"):
        export(dataset, out, ExportOptions(image_px=124), workers=2)  # raised in a worker
    assert not out.exists() and not list(tmp_path.glob(".ex.*"))
    with pytest.raises(DatasetError, match=r"unknown placeholder \{colour\}"):
        ExportOptions(template="{colour} to play")
    with pytest.raises(DatasetError, match="size_px 50 is out of range"):
        ExportOptions(image_px=50)


def test_cli_export_and_refusal(dataset, tmp_path) -> None:
    out = tmp_path / "ex"
    go19 = ["dataset", "export", dataset, "--out", out, "--format", "jsonl", "--image-px", "124"]
    done = go19_here(*go19)
    assert done.returncode == 0, done.stderr
    assert "16 samples (jsonl)" in done.stdout
    assert "export: 16/16 samples" in done.stderr  # not a terminal: plain progress lines
    again = go19_here(*go19)
    assert again.returncode == 2
    assert again.stderr.strip().count("\n") == 0 and "use --force" in again.stderr
