"""`go19 replay` as a user runs it: its command line, stdout, stderr and exit status, run in
this process but for the one test about the process's own output streams."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.conftest import REAL_SGF, REPO, go19_here, requires_real_sgf

# The games PROVENANCE.md says our rules must reject, and why.
REJECTED = {
    "odd/nightmare.sgf": "empty",
    "odd/owl42.sgf": "truncated",
    "odd/gnugo-gorimu.sgf": "illegal:superko",
}


def provenance_counts() -> dict[str, int]:
    """Files per folder from the Counts table of PROVENANCE.md."""
    text = (REAL_SGF / "PROVENANCE.md").read_text(encoding="utf-8")
    return {m[1]: int(m[2]) for m in re.finditer(r"^\| `([\w-]+)/` \| (\d+) \|", text, re.M)}


@requires_real_sgf
def test_json_over_the_whole_corpus() -> None:
    result = go19_here("replay", str(REAL_SGF), "--json")
    assert result.returncode == 0
    assert "Traceback" not in result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    by_file: dict[str, list[dict]] = {}
    for record in records:
        name = Path(record["path"]).relative_to(REAL_SGF).as_posix()
        by_file.setdefault(name, []).append(record)
    files_per_folder = Counter(name.split("/")[0] for name in by_file)
    assert files_per_folder == provenance_counts()
    assert sum(files_per_folder.values()) == 869
    rejected = {n: r[0]["reason"] for n, r in by_file.items() if r[0]["status"] == "rejected"}
    assert rejected == REJECTED
    statuses = Counter(r["status"] for r in records)
    # 869 files, one holding two games: 870 records.
    assert statuses == {"ok": 867, "rejected": 3}
    reading10 = by_file["odd/reading10.sgf"]
    assert [r["game_index"] for r in reading10] == [0, 1]
    assert all("game_index" not in r for n, r in by_file.items() if n != "odd/reading10.sgf"
               for r in r)
    (gorimu,) = by_file["odd/gnugo-gorimu.sgf"]
    assert gorimu["at_move"] == 381 and gorimu["moves"] == 381
    assert "B[km]" in gorimu["detail"]
    (ufc,) = by_file["counted/1-GLOBIS_AQZ-Ray.sgf"]
    # It ends with passes (PROVENANCE: "played out with passes"), so it is counted.
    assert ufc["status"] == "ok" and ufc["re"] == "W+62.5"
    assert re.fullmatch(r"[BW]\+\d+(\.5)?|0", ufc["tromp_taylor"])
    (resigned,) = by_file["odd/1-2 Dolbaram VS LeelaZero.SGF"]
    assert resigned["tromp_taylor"] is None and resigned["re"] == "W+T"
    assert "867 games ok, 3 rejected" in result.stderr


def test_plain_lines_and_summary(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "good.sgf").write_bytes(b"(;SZ[9]RE[B+R];B[ee];W[cc])")
    (tmp_path / "sub" / "two.SGF").write_bytes(b"(;SZ[9];B[aa];W[])(;SZ[9];B[ee];W[ee])")
    (tmp_path / "sub" / "notes.txt").write_bytes(b"not an sgf")
    (tmp_path / "passes.sgf").write_bytes(b"(;SZ[5]KM[0.5];B[cc];W[];B[])")
    result = go19_here("replay", str(tmp_path))
    assert result.returncode == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines == [
        f"{tmp_path}/good.sgf: ok, 2 moves, RE[B+R]",
        # One black stone owns the whole 5x5 board: 25 - 0.5.
        f"{tmp_path}/passes.sgf: ok, 3 moves, two passes, Tromp-Taylor B+24.5",
        f"{tmp_path}/sub/two.SGF (game 1): ok, 2 moves",
        f"{tmp_path}/sub/two.SGF (game 2): rejected (illegal:occupied): "
        "move 2 W[ee] (E5): occupied",
        "3 files: 3 games ok, 1 rejected (illegal:occupied 1)",
    ]


def test_file_names_that_are_not_utf8(tmp_path: Path) -> None:
    name = os.fsdecode(b"caf\xe9.sgf")  # Latin-1 bytes in a file name
    (tmp_path / name).write_bytes(b"(;SZ[9];B[ee])")
    # A subprocess: what is checked is how the real process's stdout writes the name.
    result = subprocess.run([sys.executable, "-m", "orchestrator.cli", "replay", str(tmp_path)],
                            cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert result.stdout.splitlines()[0].endswith("caf\\udce9.sgf: ok, 1 move")


def test_require_19_rejects_other_sizes(tmp_path: Path) -> None:
    path = tmp_path / "nine.sgf"
    path.write_bytes(b"(;SZ[9];B[ee])")
    result = go19_here("replay", "--require-19", str(path), "--json")
    assert result.returncode == 0
    (record,) = map(json.loads, result.stdout.splitlines())
    assert (record["status"], record["reason"]) == ("rejected", "not-19x19")


def test_missing_path_exits_2_with_one_line(tmp_path: Path) -> None:
    result = go19_here("replay", str(tmp_path / "nowhere"))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip().count("\n") == 0 and "nowhere" in result.stderr


def test_a_komi_that_is_no_multiple_of_a_half_is_rejected(tmp_path: Path) -> None:
    """No Go rules score with it and KataGo refuses it: it must reach neither a label nor
    a prompt. Fox's x100 komi reads as the points it means (KM[375]: 7.5)."""
    (tmp_path / "odd.sgf").write_bytes(b"(;SZ[9]KM[0.3];B[ee])")
    (tmp_path / "fox.sgf").write_bytes(b"(;SZ[9]KM[375]RU[Chinese];B[ee];W[];B[])")
    result = go19_here("replay", str(tmp_path))
    assert result.stdout.splitlines() == [
        f"{tmp_path}/fox.sgf: ok, 3 moves, two passes, Tromp-Taylor B+73.5",
        f"{tmp_path}/odd.sgf: rejected (bad-komi): komi 0.3 is not a multiple of 0.5",
        "2 files: 1 game ok, 1 rejected (bad-komi 1)",
    ]


def test_random_bytes_are_no_game(tmp_path: Path) -> None:
    """200 KB of random bytes hold "(;" often enough: they were three "ok, 0 moves" games.
    A tree without a move, a setup stone or an SGF root property is no game."""
    import random

    path = tmp_path / "noise.sgf"
    path.write_bytes(random.Random(1).randbytes(200_000))
    result = go19_here("replay", str(path))
    assert result.stdout.splitlines() == [
        f"{path}: rejected (unparseable): no game: 3 game trees without a move, a setup "
        "stone or an SGF root property",
        "1 file: 0 games ok, 1 rejected (unparseable 1)",
    ]


def test_one_of_something_is_singular(tmp_path: Path) -> None:
    (tmp_path / "one.sgf").write_bytes(b"(;SZ[19];B[pd])")
    result = go19_here("replay", str(tmp_path))
    assert result.stdout.splitlines() == [f"{tmp_path}/one.sgf: ok, 1 move",
                                          "1 file: 1 game ok, 0 rejected"]
    build = go19_here("dataset", "build", str(tmp_path / "one.sgf"), "--out", str(tmp_path / "ds"))
    # (it was "1 samples in 1 shards from 1 games (1 files")
    assert build.stdout.startswith(f"{tmp_path / 'ds'}: 1 sample in 1 shard from 1 game (1 file, ")
