"""find_sgf_files walks folders with os.scandir for speed; it must find exactly what
``sorted(folder.rglob("*"))`` filtered to ``*.sgf`` files and resolved would."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.dataset.sources import find_sgf_files
from orchestrator.recordings import VOID_DIR

REAL_SGF = Path(__file__).resolve().parents[2] / ".." / "shared" / "sgf" / "real"


def _by_rglob(inputs: list[Path]) -> tuple[list[Path], int]:
    files: dict[Path, None] = {}
    void = 0
    for path in inputs:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*")
                           if p.suffix.lower() == ".sgf" and p.is_file())
            skips = [VOID_DIR in p.relative_to(path).parts[:-1] for p in found]
        else:
            found, skips = [path], [path.resolve().parent.name == VOID_DIR]
        for file, skip in zip(found, skips, strict=True):
            if skip:
                void += 1
            else:
                files.setdefault(file.resolve(), None)
    return list(files), void


def test_same_files_order_and_void_count_as_rglob(tmp_path: Path) -> None:
    root = tmp_path / "in"
    for rel in ["a.sgf", "B.SGF", ".sgf", "x.sgf.txt", "x.", "za.sgf", "z-a.sgf", "é.sgf",
                "z/void/v.sgf", "z/void/w/deep.sgf", "z/Void/q.sgf", "z/a b/c.Sgf",
                "dir.sgf/in.sgf", "void/top.sgf"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("(;)")
    os.symlink(root / "z", root / "linked-folder")  # listed by rglob, not entered
    os.symlink(root / "z", root / "folder.sgf")  # not a file
    os.symlink(root / "a.sgf", root / "link.sgf")  # resolves to a.sgf: read once
    os.symlink(root / "missing", root / "dangling.sgf")
    os.symlink(root / "loop.sgf", root / "loop.sgf")
    os.symlink(root, tmp_path / "via-link")
    cases = [[root], [tmp_path / "via-link"], [root / "z" / ".."],
             [root, root / "link.sgf", root / "z" / "void" / "v.sgf"]]
    for inputs in cases:
        assert find_sgf_files(inputs) == _by_rglob(inputs), inputs
    files, void = find_sgf_files([root])
    assert void == 3
    # Path order (part by part), not string order: z/... sorts before z-a.sgf.
    assert [f.relative_to(root.resolve()).as_posix() for f in files] == [
        "B.SGF", "a.sgf", "dir.sgf/in.sgf", "z/Void/q.sgf", "z/a b/c.Sgf", "z-a.sgf",
        "za.sgf", "é.sgf"]


def test_same_as_rglob_on_the_real_corpus() -> None:
    if not REAL_SGF.is_dir():
        pytest.skip(f"real SGF corpus not found at {REAL_SGF}")
    inputs = [REAL_SGF, REAL_SGF / "counted"]
    assert find_sgf_files(inputs) == _by_rglob(inputs)
    assert len(find_sgf_files(inputs)[0]) > 800
