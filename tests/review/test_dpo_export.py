"""`go19 dataset export --format dpo` from the reviewed demo run (labels by the CPU KataGo):
every pair's chosen answer is the labels' best move and its rejected one the move the SGF
records, the prompt and picture are the SFT export's, and each trainer's layout loads back
with ``datasets.load_dataset``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from orchestrator.color import BLACK
from orchestrator.coords import from_index, move_to_text
from orchestrator.dataset.shards import iter_shards, read_manifest, sgf_file
from orchestrator.export.dpo import STYLES
from orchestrator.files import read_sgf_file
from orchestrator.label.store import LabelSet
from tests.conftest import go19_here
from tests.label.conftest import requires_katago

datasets = pytest.importorskip("datasets", reason="datasets is in the test extra")
pytestmark = requires_katago
MIN_LOSS = 0.25  # low: the short demo games have few costly moves, and every row is checked


@pytest.fixture(scope="module")
def labelled_dataset(reviewed) -> Path:
    out = reviewed.root / "dataset"
    if not out.exists():
        built = go19_here("dataset", "build", reviewed.run, "--labels", reviewed.labels,
                     "--out", out)
        assert built.returncode == 0, built.stderr
    return out


def _load(out: Path, style: str):
    if style == "trl":
        return datasets.load_dataset("parquet", data_files=str(out / "data" / "*.parquet"),
                                     split="train")
    return datasets.load_dataset("json", data_files=str(out / "data" / "*.jsonl"),
                                 split="train")


def _texts(row: dict, style: str) -> tuple[str, str, str]:
    """(prompt, chosen, rejected) as the trainer reads them."""
    if style == "trl":
        (user,) = row["prompt"]
        assert user["content"][0]["type"] == "image"
        return (user["content"][1]["text"], row["chosen"][0]["content"][0]["text"],
                row["rejected"][0]["content"][0]["text"])
    if style == "llamafactory":
        (user,) = row["messages"]
        return user["content"], row["chosen"]["content"], row["rejected"]["content"]
    user, chosen = row["messages"]
    assert chosen["role"] == "assistant"
    return user["content"], chosen["content"], row["rejected_response"]


def _spell(index: int) -> str:
    return move_to_text(from_index(int(index), 19), 19, "gtp")


@pytest.mark.parametrize("style", STYLES)
def test_pairs_are_katagos_move_over_the_played_one(reviewed, labelled_dataset, tmp_path,
                                                    style) -> None:
    out = tmp_path / style
    result = go19_here("dataset", "export", labelled_dataset, "--format", "dpo", "--dpo-style",
                  style, "--min-loss", MIN_LOSS, "--out", out)
    assert result.returncode == 0, result.stderr
    rows = _load(out, style)
    labels = LabelSet(reviewed.labels)
    (shard,) = list(iter_shards(labelled_dataset))
    with np.errstate(invalid="ignore"):
        expected = int(np.count_nonzero((shard["played_loss"] >= MIN_LOSS)
                                        & (shard["katago_move"] != shard["played_move"])))
    assert len(rows) == expected > 0
    manifest = read_manifest(labelled_dataset)
    for row in rows:
        # `sgf` is the game table's path, relative to the dataset's sgf_root
        game = read_sgf_file(sgf_file(labelled_dataset, manifest, row["sgf"]))[0]
        arrays = labels.game(game.sha1, 0).arrays
        m = row["move_number"]
        played = game.moves[m - 1]
        prompt, chosen, rejected = _texts(row, style)
        assert chosen == _spell(arrays["best_move"][m - 1])
        assert rejected == move_to_text(played.point, 19, "gtp") != chosen
        sign = 1 if played.color == BLACK else -1
        loss = sign * (float(arrays["score_lead"][m - 1]) - float(arrays["score_lead"][m]))
        assert row["rejected_loss"] == pytest.approx(loss, abs=1e-3)
        assert row["rejected_loss"] >= MIN_LOSS and row["chosen_loss"] is None  # 1 visit
        side = "Black" if played.color == BLACK else "White"
        assert f"{side} ({side.lower()} stones) to play" in prompt
    if style == "llamafactory":
        (entry,) = json.loads((out / "dataset_info.json").read_text()).values()
        assert entry["ranking"] is True and entry["formatting"] == "sharegpt"
        assert entry["columns"]["chosen"] == "chosen"


def test_prompt_and_picture_are_the_sft_exports(labelled_dataset, tmp_path) -> None:
    sft, dpo = tmp_path / "sft", tmp_path / "dpo"
    for out, extra in ((sft, ["--format", "jsonl"]),
                       (dpo, ["--format", "dpo", "--dpo-style", "swift", "--min-loss",
                              MIN_LOSS])):
        result = go19_here("dataset", "export", labelled_dataset, *extra, "--out", out)
        assert result.returncode == 0, result.stderr
    key = ("sgf", "move_number")
    lines = [json.loads(line) for line in (sft / "data" / "train-00000.jsonl").open()]
    by_move = {tuple(r[k] for k in key): r for r in lines}
    pairs = [json.loads(line) for line in (dpo / "data" / "train-00000.jsonl").open()]
    assert pairs
    for pair in pairs:
        sample = by_move[tuple(pair[k] for k in key)]
        assert pair["messages"][0] == sample["messages"][0]
        assert (dpo / pair["images"][0]).read_bytes() == (sft / sample["images"][0]).read_bytes()


def test_a_dataset_without_labels_is_refused_in_one_line(reviewed, tmp_path) -> None:
    plain = tmp_path / "plain"
    assert go19_here("dataset", "build", reviewed.run, "--out", plain).returncode == 0
    refused = go19_here("dataset", "export", plain, "--format", "dpo", "--out", tmp_path / "x")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "--labels" in refused.stderr and not (tmp_path / "x").exists()
