"""Where a dataset's games come from (issue 21, item 8): every exported sample embedded
the absolute local path of its SGF. The game table now stores it relative to the
manifest's ``sgf_root`` (the deepest folder holding every input, itself relative to the
dataset folder): a dataset moved with its inputs still finds them, and datasets built
before (absolute paths, no ``sgf_root``) read as they did."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from orchestrator.dataset import build, load_games, read_manifest
from orchestrator.dataset.build import BuildOptions
from orchestrator.dataset.check import check_sample, draw
from orchestrator.export.pipeline import ExportOptions, export

GAME = b"(;GM[1]SZ[19]KM[6.5];B[pd];W[dp];B[pp])"


def make(tmp_path: Path) -> tuple[Path, Path]:
    inputs = tmp_path / "work" / "sgf"
    (inputs / "sub").mkdir(parents=True)
    (inputs / "sub" / "a.sgf").write_bytes(GAME)
    (inputs / "b.sgf").write_bytes(b"(;GM[1]SZ[19]KM[6.5];B[dd];W[pp];B[qq])")
    dataset = tmp_path / "work" / "datasets" / "ds"
    build([inputs / "sub", inputs / "b.sgf"], dataset, BuildOptions(dedup=False))
    return inputs, dataset


def exported(dataset: Path, out: Path) -> list[dict]:
    export(dataset, out, ExportOptions(format="jsonl", image_px=124))
    return [json.loads(line) for f in sorted((out / "data").glob("*.jsonl"))
            for line in f.read_text().splitlines()]


def test_paths_are_relative_to_the_inputs_and_nothing_local_is_exported(tmp_path) -> None:
    inputs, dataset = make(tmp_path)
    manifest = read_manifest(dataset)
    assert manifest["sgf_root"] == "../../sgf"
    rows = load_games(dataset)
    assert [row.path for row in rows] == ["sub/a.sgf", "b.sgf"]
    # Each row knows where its SGF is now, and the table does not write it.
    assert [Path(row.file) for row in rows] == [(inputs / "sub" / "a.sgf").resolve(),
                                                (inputs / "b.sgf").resolve()]
    assert all("file" not in json.loads(line)
               for line in (dataset / "games.jsonl").read_text().splitlines())
    samples = exported(dataset, tmp_path / "ex")
    assert [s["sgf"] for s in samples] == ["sub/a.sgf"] * 3 + ["b.sgf"] * 3
    for data in (tmp_path / "ex" / "data").glob("*.jsonl"):
        assert str(tmp_path) not in data.read_text()


def test_a_dataset_moved_with_its_inputs_still_finds_them(tmp_path) -> None:
    _, dataset = make(tmp_path)
    shutil.move(tmp_path / "work", tmp_path / "elsewhere")
    moved = tmp_path / "elsewhere" / "datasets" / "ds"
    assert all(check_sample(sample).ok for sample in draw(moved, 6, 0))
    assert len(exported(moved, tmp_path / "ex")) == 6


def test_a_dataset_of_absolute_paths_reads_as_before(tmp_path) -> None:
    inputs, dataset = make(tmp_path)
    # As builds before sgf_root wrote it: absolute paths, no sgf_root.
    table = dataset / "games.jsonl"
    rows = [json.loads(line) for line in table.read_text().splitlines()]
    for row in rows:
        row["path"] = str((inputs / row["path"]).resolve())
    table.write_text("".join(json.dumps(row) + "\n" for row in rows))
    manifest = json.loads((dataset / "manifest.json").read_text())
    del manifest["sgf_root"]
    manifest["games"]["sha256"] = hashlib.sha256(table.read_bytes()).hexdigest()
    (dataset / "manifest.json").write_text(json.dumps(manifest))
    assert all(check_sample(sample).ok for sample in draw(dataset, 6, 0))
    samples = exported(dataset, tmp_path / "ex")
    assert [s["sgf"] for s in samples][0] == str((inputs / "sub" / "a.sgf").resolve())
