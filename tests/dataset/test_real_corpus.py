"""`go19 dataset build` over the real corpus in ../shared/sgf/real (PROVENANCE.md):
rejections as `go19 replay` gives them, samples checked move by move against
sgfmill, provenance from MANIFEST.tsv, and the same output for any worker count."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from orchestrator.commands.replay import check_file, sgf_files
from orchestrator.dataset import build, load, load_games, read_manifest
from orchestrator.dataset.build import BuildOptions
from orchestrator.files import read_sgf_file
from orchestrator.positions.samples import read_file
from orchestrator.rules.replay import replay_positions
from orchestrator.rules.tactics import classify
from tests.conftest import REAL_SGF, go19_here, requires_real_sgf
from tests.dataset.games import sgfmill_positions

pytestmark = requires_real_sgf

# Games checked sample by sample: handicap stones in the root, handicap stones in
# the second node (buzco1, which also ends "B[tt]W[tt]"), stones in a move node
# (Fox), passes as B[tt] (UEC Cup), an ordinary pro game.
FEW_GAMES = (
    "handicap/2004-04-28-R-dokuganryu-GnuGoCVS.sgf",
    "odd/buzco1.sgf",
    "handicap/fox_go_server_handicap.sgf",
    "counted/1-GLOBIS_AQZ-Ray.sgf",
    "pro19/AG vs AG - G09 - English.sgf",
)


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("real") / "ds"
    build([REAL_SGF], out, BuildOptions(), provenance=REAL_SGF / "MANIFEST.tsv", workers=1)
    return out


@pytest.fixture(scope="module")
def table(real) -> list[dict]:
    return load_games(real)


@pytest.fixture(scope="module")
def samples(real) -> dict[str, np.ndarray]:
    return load(real)


def test_rejections_are_those_of_go19_replay(real, table) -> None:
    # go19 replay's own function, file by file, as `go19 replay --require-19` runs it.
    theirs = Counter()
    ok = 0
    for path in sgf_files([REAL_SGF]):
        for record in check_file(path, 19):
            if record.status == "rejected":
                theirs[(str(path.resolve()), record.reason)] += 1
            else:
                ok += 1
    ours = Counter((row.file, row.reason) for row in table if row.status == "rejected")
    assert ours == theirs
    counts = read_manifest(real)["counts"]
    assert counts["rejected"] == dict(Counter(reason for _, reason in theirs.elements()))
    assert counts["games_ok"] == counts["games_kept"] == ok
    assert counts["files"] == 869  # PROVENANCE.md


def test_small_boards_are_rejected_as_not_19x19(table) -> None:
    # PROVENANCE.md: small-boards/ holds only 9x9, 11x11 and 13x13 games (233 files).
    rows = [r for r in table if "/small-boards/" in r.file]
    assert len(rows) == 233
    assert {(r.status, r.reason) for r in rows} == {("rejected", "not-19x19")}
    assert all(r.samples == 0 for r in rows)


def test_superko_game_is_rejected_and_gives_no_samples(table, samples) -> None:
    (row,) = [r for r in table if r.file.endswith("odd/gnugo-gorimu.sgf")]
    assert (row.status, row.reason, row.at_move) == ("rejected", "illegal:superko", 381)
    assert not np.any(samples["game"] == table.index(row))


@pytest.mark.parametrize("name", FEW_GAMES)
def test_every_sample_matches_sgfmill(name, table, samples) -> None:
    path = REAL_SGF / name
    (row,) = [r for r in table if r.file == str(path.resolve())]
    assert row.status == "ok"
    theirs = sgfmill_positions(path)
    assert len(theirs) == row.moves
    mine = np.flatnonzero(samples["game"] == table.index(row))
    assert len(mine) == row.samples > 0
    numbers = samples["move_number"][mine]
    assert len(set(numbers.tolist())) == len(mine)  # each move at most once
    for i in mine:
        board, color, point = theirs[samples["move_number"][i] - 1]
        assert samples["move"][i] == point
        assert samples["to_play"][i] == color
        assert np.array_equal(samples["board"][i], board)


def test_boards_and_tactics_agree_with_the_rules_engine() -> None:
    # Every position of every fifth 19x19 game: the build's board mirror against the
    # rules board, its tactics reading against rules.tactics.classify.
    paths = [p for p in sgf_files([REAL_SGF]) if "small-boards" not in p.parts][::5]
    compared = bits = 0
    for path in paths:
        for read in read_file(path):
            if read.status != "ok":
                continue
            (game,) = [g for g in read_sgf_file(path) if g.game_index == read.game_index]
            for i, (live, move, _) in enumerate(replay_positions(game)):
                board = live.board
                assert read.positions.board[i].tobytes() == bytes(board.stones), path
                expected = classify(board, move.color, move.point)
                assert read.positions.tactical[i] == int(expected), (path, i + 1)
                compared += 1
                bits += bool(expected)
    assert compared > 20_000 and bits > 3_000


def test_provenance_is_carried_from_the_manifest(real, table) -> None:
    with open(REAL_SGF / "MANIFEST.tsv", encoding="utf-8") as fh:
        repos = {str((REAL_SGF / r["file"]).resolve()): r["source_repo"]
                 for r in csv.DictReader(fh, delimiter="\t")}
    kept = [r for r in table if r.status == "ok"]
    assert kept and all(r.source == repos[r.file] for r in kept)
    assert all(r.licence is None for r in kept)  # MANIFEST.tsv has no licence column
    counts = read_manifest(real)["counts"]["provenance"]
    assert counts == {"known source": len(kept), "unknown licence": len(kept)}


def test_sample_counts_add_up(real, table, samples) -> None:
    counts = read_manifest(real)["counts"]
    assert counts["samples"] == len(samples["move"]) == sum(r.samples for r in table)
    assert counts["positions"] == sum(r.moves for r in table if r.status == "ok")
    assert counts["positions"] == counts["samples"] + counts["duplicates"]
    assert counts["duplicates"] > 0  # common openings (and the empty board) repeat
    # Dedup: no two samples share stones, side to move and ko point.
    keyed = {(s.tobytes(), t, k) for s, t, k in
             zip(samples["board"], samples["to_play"], samples["ko"], strict=True)}
    assert len(keyed) == counts["samples"]


def test_workers_do_not_change_the_output(tmp_path) -> None:
    outputs = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        build([REAL_SGF / "counted", REAL_SGF / "odd"], out,
              BuildOptions(shard_size=4096), workers=workers)
        manifest = read_manifest(out)
        outputs.append(([s["sha256"] for s in manifest["shards"]], manifest["games"]["sha256"]))
    assert len(outputs[0][0]) > 2
    assert outputs[0] == outputs[1]


def test_check_cli_on_the_real_dataset(real, tmp_path) -> None:
    sheet = tmp_path / "sheet.png"
    result = go19_here("dataset", "check", real, "--sample", "20", "--seed", "7", "--out", sheet)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert sum(line.startswith("ok ") for line in lines) == 20
    assert lines[-1].startswith("20/20 samples agree")
    assert sheet.read_bytes().startswith(b"\x89PNG")


def test_cli_build_summary_and_refusal(real, tmp_path) -> None:
    out = tmp_path / "cli"
    args = ["dataset", "build", REAL_SGF / "encoding", "--out", out, "--max-per-game", "3"]
    first = go19_here(*args)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"{out}: ")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["max_per_game"] == 3
    again = go19_here(*args)
    assert again.returncode == 2
    assert again.stderr == f"dataset build: {out}: exists and is not empty (use --force to " \
                           "replace it)\n"
