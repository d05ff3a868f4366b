"""Inputs with nothing to work on: `go19 dataset build`, `go19 label` and `go19 replay`
say in one line what they found, exit 2 and leave no output folder behind."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REAL_SGF, go19_here, requires_real_sgf

# Broken or unusable real files, one per reason the build rejects a file for.
BROKEN = {
    "nightmare.sgf": "empty",  # 0 bytes
    "owl42.sgf": "truncated",  # no closing ')'
    "gnugo-gorimu.sgf": "illegal:superko",  # the corpus's one real superko violation
    "2x2.sgf": "not-19x19",
    "zheng.sgf": "not-19x19",  # 6x6
}
BROKEN_FOUND = ("5 SGF files, 5 games: rejected 5 (empty 1, illegal:superko 1, "
                "not-19x19 2, truncated 1), skipped 0")
PRO_GAME = REAL_SGF / "pro19" / "01-2016.12.29-Magist-Pan_Tingyu.sgf"
DRAW = REAL_SGF / "odd" / "2018.02.27 BensonDarr VS biba2017 (010001645).SGF"  # RE[draw]


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The refusal: status 2, nothing on stdout, one line on stderr."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def copy(folder: Path, *sources: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for source in sources:
        shutil.copy(source, folder / source.name)
    return folder


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    if not REAL_SGF.is_dir():
        pytest.skip(f"real SGF corpus not found at {REAL_SGF} (it lives in ../shared)")
    return copy(tmp_path / "in", *(REAL_SGF / "odd" / name for name in BROKEN))


def fake_katago(folder: Path) -> list[object]:
    """--katago/--model/--config that exist but could never run: an input with nothing
    to label must be refused before KataGo is started."""
    folder.mkdir()
    for name in ("katago", "model.bin.gz", "analysis.cfg"):
        (folder / name).write_text("not KataGo\n")
    return ["--katago", folder / "katago", "--model", folder / "model.bin.gz",
            "--config", folder / "analysis.cfg"]


# -- dataset build ---------------------------------------------------------------------


def test_dataset_build_of_an_empty_folder(tmp_path) -> None:
    (tmp_path / "in").mkdir()
    out = tmp_path / "out"
    line = one_line(go19_here("dataset", "build", tmp_path / "in", "--out", out))
    assert line == (f"dataset build: no usable game, nothing written to {out}: "
                    "0 SGF files, 0 games: rejected 0, skipped 0")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]  # no out, no partial folder


def test_dataset_build_of_only_broken_files(tmp_path, broken) -> None:
    out = tmp_path / "out"
    line = one_line(go19_here("dataset", "build", broken, "--out", out))
    assert line == f"dataset build: no usable game, nothing written to {out}: {BROKEN_FOUND}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


@requires_real_sgf
def test_dataset_build_of_only_void_games(tmp_path) -> None:
    # A run folder whose only game was voided: go19 keeps it under void/.
    copy(tmp_path / "run" / "void", PRO_GAME)
    out = tmp_path / "out"
    line = one_line(go19_here("dataset", "build", tmp_path / "run", "--out", out))
    assert line == (f"dataset build: no usable game, nothing written to {out}: "
                    "0 SGF files, 0 games: rejected 0, skipped 0; 1 in void folders")
    assert not out.exists()


@requires_real_sgf
def test_dataset_build_whose_options_keep_no_sample(tmp_path) -> None:
    # A real drawn game: --winner-only keeps none of its 102 moves.
    copy(tmp_path / "in", DRAW)
    out = tmp_path / "out"
    line = one_line(go19_here("dataset", "build", tmp_path / "in", "--out", out, "--winner-only"))
    assert line == (f"dataset build: no samples, nothing written to {out}: 1 SGF file, "
                    "1 game: rejected 0, skipped 0; 1 game kept, 102 positions: "
                    "excluded no winner 102, duplicates 0")
    assert not out.exists()


def test_an_empty_output_folder_given_stays_as_it_was(tmp_path) -> None:
    (tmp_path / "in").mkdir()
    out = tmp_path / "out"
    out.mkdir()
    one_line(go19_here("dataset", "build", tmp_path / "in", "--out", out))
    assert out.is_dir() and not any(out.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out"]


@requires_real_sgf
def test_force_over_a_dataset_with_nothing_usable_keeps_the_dataset(tmp_path, broken) -> None:
    out = tmp_path / "out"
    built = go19_here("dataset", "build", PRO_GAME, "--out", out)
    assert built.returncode == 0, built.stderr
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    line = one_line(go19_here("dataset", "build", broken, "--out", out, "--force"))
    assert line == f"dataset build: no usable game, nothing written to {out}: {BROKEN_FOUND}"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert json.loads((out / "manifest.json").read_text())["counts"]["samples"] > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out"]


# -- label -----------------------------------------------------------------------------


def test_label_of_an_empty_folder(tmp_path) -> None:
    (tmp_path / "in").mkdir()
    out = tmp_path / "labels"
    line = one_line(go19_here("label", tmp_path / "in", "--out", out,
                              *fake_katago(tmp_path / "kg")))
    assert line == (f"label: nothing to label, nothing written to {out}: "
                    "0 SGF files, 0 games: rejected 0, skipped 0")
    assert not out.exists()


def test_label_of_only_broken_files(tmp_path, broken) -> None:
    out = tmp_path / "labels"
    line = one_line(go19_here("label", broken, "--out", out, *fake_katago(tmp_path / "kg")))
    assert line == f"label: nothing to label, nothing written to {out}: {BROKEN_FOUND}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "kg"]


@requires_real_sgf
def test_label_of_only_void_games(tmp_path) -> None:
    copy(tmp_path / "run" / "void", PRO_GAME)
    out = tmp_path / "labels"
    line = one_line(go19_here("label", tmp_path / "run", "--out", out,
                              *fake_katago(tmp_path / "kg")))
    assert line.endswith(": 0 SGF files, 0 games: rejected 0, skipped 0; 1 in void folders")
    assert not out.exists()


# -- replay ----------------------------------------------------------------------------


def test_replay_of_a_folder_without_sgf_files(tmp_path) -> None:
    (tmp_path / "notes.txt").write_text("no games here\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    line = one_line(go19_here("replay", tmp_path, empty))
    assert line == f"replay: no SGF file (*.sgf) in {tmp_path}, {empty}"


def test_replay_json_of_nothing_says_so_too(tmp_path) -> None:
    line = one_line(go19_here("replay", "--json", tmp_path))
    assert line == f"replay: no SGF file (*.sgf) in {tmp_path}"
