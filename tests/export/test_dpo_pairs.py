"""`go19 dataset export --format dpo` on a run written for the purpose (tests/export/
labelled_run.py: every move costs 3 points, from every origin): the rejected answer is the
player's own move unless asked otherwise, the `sgf` column names the run as the SFT
export's does, the last progress line counts every sample, and a `chosen_loss` that is
null everywhere is said why (issue 34 item 1, issue 30 item 11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.dataset.shards import read_manifest
from tests.conftest import go19_here
from tests.export.labelled_run import MOVES, OWN, RUN, SGF_NAME, write_run


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return write_run(tmp_path_factory.mktemp("dpo") / "recordings")


def built(source: Path, out: Path, *extra: str) -> Path:
    """A dataset of ``source`` (the run or the recordings folder) joined with its labels."""
    labels = source / RUN / "labels" if (source / RUN).is_dir() else source / "labels"
    done = go19_here("dataset", "build", source, "--labels", labels, "--no-dedup",
                     "--out", out, *extra)
    assert done.returncode == 0, done.stderr
    return out


def pairs(dataset: Path, out: Path, *extra: str) -> tuple[list[dict], dict, str, str]:
    """The swift-style pairs (rows), the export manifest, stdout and stderr."""
    done = go19_here("dataset", "export", dataset, "--format", "dpo", "--dpo-style", "swift",
                     "--out", out, *extra)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (out / "data" / "train-00000.jsonl").open()]
    return rows, json.loads((out / "manifest.json").read_text()), done.stdout, done.stderr


def test_only_the_players_own_moves_are_rejected(run, tmp_path) -> None:
    dataset = built(run, tmp_path / "ds", "--include-fallback")
    assert read_manifest(dataset)["counts"]["samples"] == len(MOVES)  # every origin kept
    rows, manifest, said, _ = pairs(dataset, tmp_path / "own")
    assert [r["move_number"] for r in rows] == OWN  # 3, 5, 7: not the book, not a fallback
    assert all(r["rejected_loss"] == pytest.approx(3.0) for r in rows)
    counts = manifest["counts"]
    assert (counts["samples"], counts["candidates"], counts["not_own"]) == (3, 7, 4)
    assert manifest["options"]["dpo_include_fallback"] is False
    assert "4 such opening-book or fallback moves left out (--dpo-include-fallback" in said
    rows, manifest, _, _ = pairs(dataset, tmp_path / "all", "--dpo-include-fallback")
    assert [r["move_number"] for r in rows] == list(range(1, len(MOVES) + 1))
    assert manifest["counts"]["not_own"] == 0


def test_a_dataset_without_fallback_moves_gives_the_same_pairs(run, tmp_path) -> None:
    rows, manifest, _, _ = pairs(built(run, tmp_path / "ds"), tmp_path / "ex")
    assert [r["move_number"] for r in rows] == OWN
    assert manifest["counts"]["candidates"] == len(OWN)


def test_the_sgf_column_names_the_run_in_both_exports(run, tmp_path) -> None:
    """Built from the run folder itself, the game's path was its file name alone in the
    DPO export, while the SFT export of a dataset built from `recordings` had the run."""
    for source, name in ((run, "from-run"), (run.parent, "from-recordings")):
        dataset = built(source, tmp_path / name)
        rows, _, _, _ = pairs(dataset, tmp_path / f"{name}-dpo")
        sft = tmp_path / f"{name}-sft"
        assert go19_here("dataset", "export", dataset, "--format", "jsonl",
                         "--out", sft).returncode == 0
        lines = [json.loads(line) for line in (sft / "data" / "train-00000.jsonl").open()]
        assert {r["sgf"] for r in rows} == {r["sgf"] for r in lines} == {f"{RUN}/{SGF_NAME}"}


def test_the_last_progress_line_counts_every_sample(run, tmp_path) -> None:
    dataset = built(run, tmp_path / "ds", "--include-fallback")
    _, _, _, progress = pairs(dataset, tmp_path / "ex")
    assert progress.splitlines()[-1].startswith("export: 7/7 samples (100 %)")


def test_a_chosen_loss_null_everywhere_is_said_why(run, tmp_path) -> None:
    rows, manifest, said, _ = pairs(built(run, tmp_path / "ds"), tmp_path / "ex")
    assert rows and all(r["chosen_loss"] is None for r in rows)  # labels at 1 visit
    assert manifest["counts"]["chosen_loss"] == 0
    assert "chosen_loss is null in every pair: KataGo searched no move of its own" in said
