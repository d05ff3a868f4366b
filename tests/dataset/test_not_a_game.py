"""Game trees that are no game (issue 21, item 8): random bytes are rejected, not counted
as games; in a file that also holds a real game, the junk is left out and the real game
keeps its index in the file, through the build, the export and `dataset check`."""

from __future__ import annotations

import json
import random
from pathlib import Path

from orchestrator.dataset import build, load_games
from orchestrator.dataset.build import EmptyDataset
from orchestrator.dataset.check import check_sample, draw
from orchestrator.export.pipeline import ExportOptions, export

GAME = b"(;GM[1]SZ[19]KM[6.5]PB[b]PW[w];B[pd];W[dp];B[pp];W[dd])"


def test_random_bytes_are_rejected_by_the_build(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "noise.sgf").write_bytes(random.Random(1).randbytes(200_000))
    try:
        build([tmp_path / "in"], tmp_path / "ds", refuse_empty=True)
    except EmptyDataset as exc:
        counts = exc.counts
    assert (counts.games, counts.games_ok, dict(counts.rejected)) == (1, 0, {"unparseable": 1})


def test_a_junk_tree_before_a_game_is_left_out_and_the_game_keeps_its_index(
    tmp_path: Path,
) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "mixed.sgf").write_bytes(b"(;x[junk])" + GAME)
    build([tmp_path / "in"], tmp_path / "ds")
    (row,) = load_games(tmp_path / "ds")
    assert (row.status, row.game_index, row.moves) == ("ok", 1, 4)
    export(tmp_path / "ds", tmp_path / "ex", ExportOptions(format="jsonl", image_px=124))
    lines = (tmp_path / "ex" / "data" / "train-00000.jsonl").read_text().splitlines()
    assert [json.loads(line)["answer"] for line in lines] == ["Q16", "D4", "Q4", "D16"]
    assert all(check_sample(sample).ok for sample in draw(tmp_path / "ds", 4, 0))
