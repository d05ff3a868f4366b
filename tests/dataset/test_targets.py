"""Which moves become samples: winner only, tactics, fallback and opening marks,
dedup, picks per game, skips and rejections, on games written for the purpose.

Expected values come from reading the games by hand (comments say why), never
from the code under test.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from orchestrator.dataset import BuildOptions, DatasetError, build, load, load_games
from orchestrator.sgf import (
    BLACK_PLAYER_PROP,
    GAME_PROP,
    RUN_PROP,
    VOID_PROP,
    WHITE_PLAYER_PROP,
)
from tests.conftest import go19_here
from tests.dataset.games import moves, p, write_game

# A game with one capture, one atari and one escape (moves 3, 9, 10):
#  3 B A2 takes the W stone at A1 (its last liberty);
#  9 B Q15 leaves W Q16 (already boxed in by R16 and Q17) with one liberty, P16;
# 10 W P16 joins Q16, and the pair has three liberties.
TACTICAL = ("B1", "A1", "A2", "Q16", "R16", "D4", "Q17", "D5", "Q15", "P16", "C16", "pass",
            "pass")
TACTICS_BITS = {3: 1, 9: 2, 10: 4}  # capture 1, atari 2, escape 4


def run(tmp_path: Path, options: BuildOptions | None = None, **kw) -> dict:
    out = tmp_path / "out"
    manifest = build([tmp_path / "sgf"], out, options or BuildOptions(), force=True, **kw)
    return {"manifest": manifest, "data": load(out), "games": load_games(out)}


def numbers(result: dict) -> list[int]:
    return result["data"]["move_number"].tolist()


def test_every_move_is_a_sample_with_its_fields(tmp_path) -> None:
    write_game(tmp_path / "sgf" / "a.sgf", moves(*TACTICAL), result="W+R")
    result = run(tmp_path)
    data = result["data"]
    assert numbers(result) == list(range(1, 14))
    assert data["to_play"].tolist() == [1, 2] * 6 + [1]
    expected_moves = [p(v) for v in TACTICAL[:11]] + [361, 361]
    assert data["move"].tolist() == expected_moves
    assert data["winner"].tolist() == [2] * 13
    assert data["tactical"].tolist() == [TACTICS_BITS.get(n, 0) for n in range(1, 14)]
    assert data["game"].tolist() == [0] * 13
    # Before move 4, the W stone at A1 has been taken by move 3.
    board = data["board"][3]
    assert board.flat[p("A1")] == 0 and board.flat[p("A2")] == 1 and board.flat[p("B1")] == 1
    assert int(np.count_nonzero(board)) == 2
    assert not data["board"][0].any()  # move 1: the empty board


@pytest.mark.parametrize(("result", "kept"), [
    ("B+R", [1, 3, 5, 7, 9, 11, 13]),
    ("W+12.5", [2, 4, 6, 8, 10, 12]),
    ("?", []),
    ("Draw", []),
])
def test_winner_only(tmp_path, result: str, kept: list[int]) -> None:
    write_game(tmp_path / "sgf" / "a.sgf", moves(*TACTICAL), result=result)
    out = run(tmp_path, BuildOptions(winner_only=True))
    assert numbers(out) == kept
    excluded = out["manifest"]["counts"]["excluded"]
    if kept:
        assert excluded == {"loser": 13 - len(kept)}
    else:
        assert excluded == {"no winner": 13}
    if result == "B+R":
        # The loser's moves were still played: before move 5, W's Q16 is on the board.
        assert out["data"]["board"][2].flat[p("Q16")] == 2


def test_tactics_only(tmp_path) -> None:
    write_game(tmp_path / "sgf" / "a.sgf", moves(*TACTICAL))
    out = run(tmp_path, BuildOptions(tactics_only=True))
    assert numbers(out) == [3, 9, 10]
    assert out["data"]["tactical"].tolist() == [1, 2, 4]
    both = run(tmp_path, BuildOptions(tactics_only=True, winner_only=True))
    assert numbers(both) == [3, 9]  # B won: W's escape at 10 goes


def test_fallback_and_opening_moves_are_replayed_not_targets(tmp_path) -> None:
    played = moves("Q16@opening", "D4@opening", "Q4", "D16", "C3@fallback:timeout", "R3",
                   "F17", "pass@fallback:illegal:occupied")
    write_game(tmp_path / "sgf" / "a.sgf", played)
    out = run(tmp_path)
    assert numbers(out) == [3, 4, 6, 7]
    assert out["manifest"]["counts"]["excluded"] == {"fallback": 2, "opening": 2}
    board = out["data"]["board"][0]  # before move 3: the two opening stones stand
    assert board.flat[p("Q16")] == 1 and board.flat[p("D4")] == 2
    assert out["data"]["board"][2].flat[p("C3")] == 1  # before move 6: the fallback stone
    every = run(tmp_path, BuildOptions(include_fallback=True))
    assert numbers(every) == list(range(1, 9))


def test_dedup_across_games_and_within_a_game(tmp_path) -> None:
    # The same game twice (different GN, so different files and SHA-1s); then passes
    # that bring back (stones, side to move) within one game: moves 5 and 6 repeat 3 and 4.
    write_game(tmp_path / "sgf" / "a.sgf", moves(*TACTICAL), GN="first")
    write_game(tmp_path / "sgf" / "b.sgf", moves(*TACTICAL), GN="second")
    write_game(tmp_path / "sgf" / "c.sgf", moves("Q16", "D4", "pass", "pass", "pass", "pass"))
    out = run(tmp_path)
    # c.sgf's move 1 (the empty board, B to play) was move 1 of a.sgf.
    assert [g.samples for g in out["games"]] == [13, 0, 3]
    assert numbers(out)[13:] == [2, 3, 4]
    assert out["manifest"]["counts"]["duplicates"] == 13 + 1 + 2
    raw = run(tmp_path, BuildOptions(dedup=False))
    assert [g.samples for g in raw["games"]] == [13, 13, 6]


def test_dedup_key_includes_the_ko_point(tmp_path) -> None:
    # W E5 takes B F5 (whose only liberty it was) and leaves a ko at F5. After
    # B pass / W pass, move 11 (B to play) has the stones of move 9 but no ko point:
    # kept. Move 12 (W to play, no ko, same stones) repeats move 10: dropped.
    played = moves("E6", "F6", "D5", "G5", "E4", "F4", "F5", "E5", "pass", "pass", "pass", "A1")
    write_game(tmp_path / "sgf" / "ko.sgf", played)
    out = run(tmp_path)
    data = out["data"]
    assert numbers(out) == list(range(1, 12))
    assert out["manifest"]["counts"]["duplicates"] == 1
    assert data["ko"][8] == p("F5") and data["ko"][10] == -1
    assert np.array_equal(data["board"][8], data["board"][10])
    assert data["to_play"][8] == data["to_play"][10] == 1
    assert data["tactical"][7] == 1  # W E5 captures


def test_max_per_game_spreads_evenly(tmp_path) -> None:
    write_game(tmp_path / "sgf" / "a.sgf", moves(*TACTICAL))
    out = run(tmp_path, BuildOptions(max_per_game=4))
    # 13 moves, 4 picks evenly from the first to the last: 1, 5, 9, 13.
    assert numbers(out) == [1, 5, 9, 13]
    assert out["manifest"]["counts"]["not_picked"] == 9


def test_tactical_bias_picks_half_tactical(tmp_path) -> None:
    write_game(tmp_path / "sgf" / "a.sgf", moves(*TACTICAL))
    seen_tactical: set[int] = set()
    for seed in range(8):
        out = run(tmp_path, BuildOptions(max_per_game=4, tactical_bias=True, seed=seed))
        picked = numbers(out)
        tactical = [n for n in picked if n in TACTICS_BITS]
        # Two of the three tactical moves; the other two picks spread over the ten
        # others, first and last: moves 1 and 13.
        assert len(picked) == 4 and len(tactical) == 2
        assert [n for n in picked if n not in TACTICS_BITS] == [1, 13]
        again = run(tmp_path, BuildOptions(max_per_game=4, tactical_bias=True, seed=seed))
        assert numbers(again) == picked
        seen_tactical.update(tactical)
    assert seen_tactical == set(TACTICS_BITS)  # the seed decides which two


def test_tactical_bias_needs_max_per_game() -> None:
    with pytest.raises(DatasetError, match="max_per_game"):
        BuildOptions(tactical_bias=True)


def test_skips_and_rejections(tmp_path) -> None:
    sgf = tmp_path / "sgf"
    write_game(sgf / "ok.sgf", moves(*TACTICAL))
    write_game(sgf / "short.sgf", moves("Q16", "D4", "C3"))
    write_game(sgf / "nine.sgf", moves("C3", "G7", size=9), size=9)
    (sgf / "corrupt.sgf").write_bytes(b"(;GM[1]SZ[19];B[pd];W[zz])")
    write_game(sgf / "marked-void.sgf", moves("C3", "R3"), **{VOID_PROP: "1"})
    write_game(sgf / "run" / "void" / "in-void-folder.sgf", moves("C3", "R3"))
    out = run(tmp_path, BuildOptions(min_moves=5))
    counts = out["manifest"]["counts"]
    assert counts["rejected"] == {"corrupt-coordinate": 1, "not-19x19": 1}
    assert counts["skipped"] == {"short": 1, "void": 1}
    assert counts["void_files"] == 1 and counts["files"] == 5
    assert counts["samples"] == 13
    rows = {Path(g.path).name: g for g in out["games"]}
    assert set(rows) == {"ok.sgf", "short.sgf", "nine.sgf", "corrupt.sgf", "marked-void.sgf"}
    assert (rows["corrupt.sgf"].reason, rows["corrupt.sgf"].at_move) == \
        ("corrupt-coordinate", 2)
    assert rows["nine.sgf"].detail == "board is 9x9, not 19x19"
    assert rows["marked-void.sgf"].status == "void"


def test_provenance_manifest_and_require_provenance(tmp_path) -> None:
    sgf = tmp_path / "sgf"
    write_game(sgf / "known.sgf", moves("Q16", "D4"))
    write_game(sgf / "no-licence.sgf", moves("C3", "R17"))
    write_game(sgf / "unlisted.sgf", moves("K10", "D16"))
    table = tmp_path / "prov.json"
    table.write_text(json.dumps({
        "sgf/known.sgf": {"source": "example/repo", "licence": "MIT"},
        "sgf/no-licence.sgf": {"source": "example/other"},
    }))
    out = run(tmp_path, provenance=table)
    rows = {Path(g.path).name: g for g in out["games"]}
    assert (rows["known.sgf"].source, rows["known.sgf"].licence) == ("example/repo", "MIT")
    assert (rows["no-licence.sgf"].source, rows["no-licence.sgf"].licence) == \
        ("example/other", None)
    assert rows["unlisted.sgf"].source is None
    assert out["manifest"]["counts"]["provenance"] == {
        "known licence": 1, "known source": 2, "unknown licence": 2, "unknown source": 1}
    strict = run(tmp_path, BuildOptions(require_provenance=True), provenance=table)
    assert [g.samples for g in strict["games"]] == [2, 0, 0]
    assert strict["manifest"]["counts"]["skipped"] == {"no-provenance": 2}
    tsv = tmp_path / "prov.tsv"
    tsv.write_text("path\tsource\tlicense\nsgf/known.sgf\texample/repo\tGPL-3.0\n")
    rows = {Path(g.path).name: g for g in run(tmp_path, provenance=tsv)["games"]}
    assert rows["known.sgf"].licence == "GPL-3.0"


def test_bad_provenance_manifest_is_one_line(tmp_path) -> None:
    write_game(tmp_path / "sgf" / "a.sgf", moves("Q16"))
    bad = tmp_path / "prov.tsv"
    bad.write_text("name\trepo\nsgf/a.sgf\tx\n")
    with pytest.raises(DatasetError) as info:
        run(tmp_path, provenance=bad)
    assert str(info.value) == f"{bad}: header has no 'file' or 'path' column"
    assert not (tmp_path / "out").exists()


def test_a_stage_joins_per_position(tmp_path) -> None:
    # The hook a label join uses: keyed by (SGF sha1, move number), it may drop
    # positions and replace the target.
    path = write_game(tmp_path / "sgf" / "a.sgf", moves(*TACTICAL))
    sha1 = hashlib.sha1(path.read_bytes()).hexdigest()
    labels = {(sha1, 2): p("K10"), (sha1, 7): p("T19")}

    def label(game, positions):
        keys = [(game.sha1, int(n)) for n in positions.move_number]
        keep = np.array([k in labels for k in keys])
        positions = positions.take(keep)
        positions.move[:] = [labels[(game.sha1, int(n))] for n in positions.move_number]
        return positions

    out = run(tmp_path, stages=[label])
    assert numbers(out) == [2, 7]
    assert out["data"]["move"].tolist() == [p("K10"), p("T19")]
    assert out["manifest"]["counts"]["excluded"] == {"stages": 11}



def test_recording_metadata_reaches_the_game_table(tmp_path) -> None:
    write_game(tmp_path / "sgf" / "run" / "baduk-00001.sgf", moves("Q16", "D4"),
               **{RUN_PROP: "demo-20261129-171000", GAME_PROP: "1",
                  BLACK_PLAYER_PROP: '{"kind":"go19","adapter":"r5"}',
                  WHITE_PLAYER_PROP: '{"kind":"gtp"}'})
    (row,) = run(tmp_path)["games"]
    assert (row.run, row.game) == ("demo-20261129-171000", "1")
    assert row.players == {"black": {"kind": "go19", "adapter": "r5"},
                              "white": {"kind": "gtp"}}


def test_the_summary_says_when_no_provenance_manifest_was_given(tmp_path) -> None:
    sgf = tmp_path / "sgf"
    write_game(sgf / "own.sgf", moves("Q16", "D4"))
    plain = go19_here("dataset", "build", sgf, "--out", tmp_path / "plain")
    assert plain.returncode == 0, plain.stderr
    assert "  provenance: no manifest given (--source-manifest FILE records each game's " \
        "source and licence)" in plain.stdout.splitlines()
    table = tmp_path / "prov.json"
    table.write_text(json.dumps({"sgf/own.sgf": {"source": "example/repo"}}))
    listed = go19_here("dataset", "build", sgf, "--out", tmp_path / "listed",
                       "--source-manifest", table)
    assert "  provenance: known source 1, unknown licence 1" in listed.stdout.splitlines()
    strict = go19_here("dataset", "build", sgf, "--out", tmp_path / "strict",
                       "--require-provenance")
    assert (strict.returncode, strict.stderr) == (
        2, "dataset build: --require-provenance needs --source-manifest FILE: without one "
           "no game's source and licence are known\n")
    assert not (tmp_path / "strict").exists()
