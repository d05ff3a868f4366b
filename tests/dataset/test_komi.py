"""Komi on its way to KataGo and prompts (issue 21, item 5): Fox's KM[375] (Chinese rules,
3.75 stones) is 7.5 points, and a komi that is no multiple of 0.5 rejects its game with a
reason on both reading paths, so neither a label nor a prompt ever shows it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from orchestrator.dataset import build, load_games
from orchestrator.export.pipeline import ExportOptions, export
from orchestrator.positions import fastreplay, samples
from tests.conftest import REAL_SGF, requires_real_sgf

FOX_375 = ["odd/fox_go_server_komi.sgf", "odd/S 1-1 ELFOpenGo vs Golaxy.SGF",
           "odd/S 1-2 Golaxy vs ELFOpenGo.SGF"]


@pytest.mark.parametrize("compiled", [True, False])
def test_a_game_whose_komi_is_no_half_point_is_rejected(tmp_path: Path, compiled: bool,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    if compiled and not fastreplay.ENABLED:
        pytest.skip("numba is not installed (pip install 'go19[fast]'): no compiled path")
    monkeypatch.setattr(fastreplay, "ENABLED", compiled)
    path = tmp_path / "odd.sgf"
    path.write_bytes(b"(;SZ[19]KM[0.3];B[dd];W[pp])")
    (read,) = samples.read_file(path)
    assert (read.status, read.reason, read.detail) == (
        "rejected", "bad-komi", "komi 0.3 is not a multiple of 0.5")
    assert read.positions is None


@requires_real_sgf
def test_fox_chinese_komi_reaches_the_prompts_as_points(tmp_path: Path) -> None:
    """It was: "komi 3.75" in 437 exported prompts."""
    inputs = tmp_path / "fox"
    inputs.mkdir()
    for name in FOX_375:
        assert b"KM[375]" in (REAL_SGF / name).read_bytes()
        shutil.copy(REAL_SGF / name, inputs / Path(name).name)
    build([inputs], tmp_path / "ds")
    assert [row.status for row in load_games(tmp_path / "ds")] == ["ok"] * 3
    manifest = export(tmp_path / "ds", tmp_path / "ex", ExportOptions(
        format="jsonl", image_px=124, template="{side} to play, komi {komi}."))
    prompts = [json.loads(line)["messages"][0]["content"]
               for f in sorted((tmp_path / "ex" / "data").glob("*.jsonl"))
               for line in f.read_text().splitlines()]
    assert len(prompts) == manifest["counts"]["samples"] > 400
    assert all(prompt.endswith("komi 7.5.") for prompt in prompts)
