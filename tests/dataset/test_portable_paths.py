"""No path of the machine's own in what is shipped (issue 34, item 2): the export
manifest's `source.dataset` was absolute, labels.json's `games[].path` (and `inputs`, and
the engine's files) absolute, the dataset manifest's `labels.folder` relative to where the
build ran. Every one is now relative to the folder holding its manifest: recordings,
labels and dataset moved together still work, an export copied elsewhere names nothing of
either place, and folders written before read as they did."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from orchestrator.dataset.check import check_sample, draw
from orchestrator.label.store import LabelSet
from tests.conftest import go19_here
from tests.export.labelled_run import RUN, SGF_NAME, write_run


def strings(value: object) -> Iterator[str]:
    """Every string of a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def json_files(folder: Path) -> Iterator[tuple[Path, object]]:
    """Every manifest (.json) and every row of every .jsonl under ``folder``."""
    for path in sorted(folder.rglob("*.json")):
        yield path, json.loads(path.read_text())
    for path in sorted(folder.rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            yield path, json.loads(line)


def machine_paths(folder: Path, *places: Path) -> list[str]:
    """Strings of ``folder``'s manifests and rows that are absolute paths or name one of
    ``places``."""
    return [f"{path.relative_to(folder)}: {text!r}" for path, value in json_files(folder)
            for text in strings(value)
            if os.path.isabs(text) or any(str(place) in text for place in places)]


def test_moved_together_they_work_and_name_nothing_of_the_machine(tmp_path) -> None:
    work = tmp_path / "work"
    run = write_run(work / "recordings", engine=tmp_path / "katago")
    # Absolute arguments, the worst case: what the build was given must not be kept so.
    built = go19_here("dataset", "build", (work / "recordings").resolve(), "--labels",
                      run.resolve() / "labels", "--no-dedup", "--out",
                      (work / "datasets" / "ds").resolve())
    assert built.returncode == 0, built.stderr
    moved = tmp_path / "elsewhere"
    shutil.move(work, moved)
    dataset = moved / "datasets" / "ds"
    manifest = json.loads((dataset / "manifest.json").read_text())
    assert manifest["labels"]["folder"] == f"../../recordings/{RUN}/labels"
    assert manifest["inputs"] == ["../../recordings"]
    assert all(check_sample(sample).ok for sample in draw(dataset, 5, 0))
    assert len(LabelSet(moved / "recordings" / RUN / "labels")) == 8
    labels = json.loads((moved / "recordings" / RUN / "labels" / "labels.json").read_text())
    assert [g["path"] for g in labels["games"]] == [f"../{SGF_NAME}"]
    assert labels["inputs"] == [".."]

    export = moved / "exports" / "dpo"
    for fmt in (["--format", "jsonl"], ["--format", "dpo", "--dpo-style", "swift"]):
        out = export.with_name(fmt[1])
        done = go19_here("dataset", "export", dataset, *fmt, "--out", out)
        assert done.returncode == 0, done.stderr
        assert json.loads((out / "manifest.json").read_text())["source"]["dataset"] == \
            "../../datasets/ds"
    # The export copied to another machine's layout: nothing of this one in it.
    shipped = tmp_path / "another" / "place"
    shutil.copytree(moved / "exports", shipped)
    assert machine_paths(shipped, tmp_path) == []
    assert machine_paths(moved, tmp_path) == []  # recordings, labels, dataset, exports


def test_folders_written_with_absolute_paths_read_as_before(tmp_path) -> None:
    run = write_run(tmp_path / "recordings")
    labels_json = run / "labels" / "labels.json"
    labels = json.loads(labels_json.read_text())
    for game in labels["games"]:  # as label folders made before wrote them
        game["path"] = str((run / SGF_NAME).resolve())
    labels["inputs"] = [str(run.resolve())]
    labels_json.write_text(json.dumps(labels))
    assert len(LabelSet(run / "labels")) == 8
    built = go19_here("dataset", "build", run, "--labels", run / "labels", "--out",
                      tmp_path / "ds")
    assert built.returncode == 0, built.stderr
    resumed = go19_here("review", run, "--labels", run / "labels", "--out", tmp_path / "r")
    assert resumed.returncode == 0, resumed.stderr
