"""The recordings under kills, damage and full or read-only disks.

Real processes (``go19 collect`` killed with SIGKILL), real files, a real small
tmpfs for the full disk (mounting one needs root: skipped otherwise). The matchups
use GO19 servers embedded in the run, so nothing else has to be started.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sgfmill import sgf

from orchestrator.collect.recorder import append_line
from orchestrator.collect.standings import words
from orchestrator.events import JournalRepaired, RunContinued, RunResumed
from tests.conftest import REPO
from tests.polling import wait_for

from .harness import check_recordings, journal, run_collect, two_go19_players

MATCHUP = two_go19_players(
    'embedded = {{ engine = "random", seed = 1, delay_ms = {delay} }}',
    'embedded = {{ engine = "random", seed = 2, delay_ms = {delay} }}', slots=4,
    run='name = "rec"\nseed = 3', game="size = 9\nmove_cap = 80\nconcurrency = 4")


def write_matchup(folder: Path, delay_ms: float = 0.0) -> Path:
    path = folder / "rec.toml"
    path.write_text(MATCHUP.format(delay=delay_ms))
    return path


def collect_cmd(matchup: Path, recordings: Path, games: int) -> list[str]:
    return [sys.executable, "-m", "orchestrator.cli", "collect", "--matchup", str(matchup),
            "--games", str(games), "--recordings", str(recordings), "--no-dashboard",
            "--no-report"]


ENV = dict(os.environ, PYTHONPATH=str(REPO))


def run_dir_of(recordings: Path) -> Path:
    (run_dir,) = recordings.glob("rec-*")
    return run_dir


@contextlib.contextmanager
def tmpfs(path: Path, size_kib: int) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs",
                              str(path)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}); needs root")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def remount(path: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(path)], check=True)


def check_on_disk(run_dir: Path) -> set[str]:
    """What a kill may leave: whole SGFs, whole journal lines (the last one may be cut)
    each naming an SGF on disk, no duplicates. Returns the SGF names."""
    names = set()
    for path in [*run_dir.glob("baduk-*.sgf"), *run_dir.glob("void/baduk-*.sgf")]:
        game = sgf.Sgf_game.from_bytes(path.read_bytes())  # raises on a truncated file
        record = json.loads(game.get_root().get("GOXIXREC"))
        assert record["sgf"] == path.name
        names.add(path.name)
    raw = (run_dir / "games.jsonl").read_bytes() if (run_dir / "games.jsonl").exists() else b""
    lines = raw.split(b"\n")
    if lines[-1]:
        lines = lines[:-1]  # cut short by the kill: resume drops it (its SGF rebuilds it)
    records = [json.loads(line) for line in lines if line]
    assert {r["sgf"] for r in records} <= names
    assert len({r["game"] for r in records}) == len(records)
    finished = [r["slot"] for r in records if not r["void"]]
    assert len(set(finished)) == len(finished)
    assert not (run_dir / "corrupt").exists()
    return names


# -- repairs on resume, manufactured by hand -------------------------------------------


async def test_resume_repairs_and_reports_what_it_found(tmp_path: Path) -> None:
    matchup = write_matchup(tmp_path)
    rec = tmp_path / "rec"
    first = await run_collect(matchup, rec, games=6)
    run_dir = first.run_dir
    records = journal(run_dir)
    by_slot = {r["slot"]: r for r in records}
    # 1. a journal line whose SGF is gone: dropped, its slot replayed.
    (run_dir / by_slot[1]["sgf"]).unlink()
    # 2. an SGF whose journal line is gone: the line is rebuilt from the SGF.
    # 3. a last line cut short by a kill, without its newline.
    # 4. a temporary file a kill left in the middle of an SGF write.
    # 5. an SGF without a journal line that is itself cut short: moved aside, replayed.
    kept = [r for r in records if r["slot"] not in (2, 4)]
    lines = [json.dumps(r, separators=(",", ":")) for r in kept]
    (run_dir / "games.jsonl").write_text("\n".join(lines) + "\n" + lines[-1][:40])
    (run_dir / f".{by_slot[3]['sgf']}.tmp").write_bytes(b"(;FF[4]GM[1]SZ[9];B[ee]")
    broken = run_dir / by_slot[4]["sgf"]
    broken.write_bytes(broken.read_bytes()[:200])

    resumed = await run_collect(matchup, rec, games=6, resume=True)
    assert resumed.run_dir == run_dir
    said = [words(e) for _, e in resumed.log if isinstance(e, JournalRepaired | RunContinued)]
    (chosen,) = [line for line in said if line.startswith("resume: continuing ")]
    assert chosen.startswith(f"resume: continuing {run_dir} (")
    said.remove(chosen)
    assert sorted(said) == sorted([
        f"resume: journal line rebuilt from {by_slot[2]['sgf']}",
        f"resume: journal line dropped, no SGF: game {by_slot[1]['game']} ({by_slot[1]['sgf']})",
        f"resume: unreadable SGF moved to corrupt/: {by_slot[4]['sgf']}",
        "resume: removed 1 unfinished temporary file(s)",
    ])
    (resuming,) = [e for _, e in resumed.log if isinstance(e, RunResumed)]
    assert resuming == RunResumed(str(run_dir), 4, 6)  # slots 0, 2 (rebuilt), 3 and 5
    final = check_recordings(run_dir, 6)
    rebuilt = next(r for r in final if r["sgf"] == by_slot[2]["sgf"])
    assert rebuilt == by_slot[2]  # the SGF carried the whole record
    replayed = {r["slot"] for r in final if r["game"] > max(by_slot[s]["game"] for s in by_slot)}
    assert replayed == {1, 4}
    assert (run_dir / "corrupt" / by_slot[4]["sgf"]).exists()


# -- full and read-only disks ----------------------------------------------------------


def test_a_line_a_full_disk_cuts_short_is_cut_off_again(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", 8) as disk:  # two pages
        journal_path = disk / "games.jsonl"
        journal_path.write_bytes(b"x" * 4000 + b"\n")
        with contextlib.suppress(OSError):
            (disk / "filler").write_bytes(b"f" * 8192)
        before = journal_path.read_bytes()
        with pytest.raises(OSError) as caught:
            append_line(journal_path, "y" * 500 + "\n")  # 95 bytes fit, the rest cannot
        assert caught.value.errno == 28  # ENOSPC
        assert journal_path.read_bytes() == before


def test_full_disk_stops_the_run_with_one_line_and_resume_finishes(tmp_path: Path) -> None:
    matchup = write_matchup(tmp_path)
    with tmpfs(tmp_path / "disk", 40) as disk:
        rec = disk / "rec"
        cmd = collect_cmd(matchup, rec, games=12)
        full = subprocess.run(cmd, cwd=REPO, env=ENV, capture_output=True, text=True,
                              timeout=120)
        assert full.returncode == 2, full.stdout + full.stderr
        assert full.stderr.splitlines() == [
            f"collect: cannot write recordings in {run_dir_of(rec)}: No space left on device"
        ]
        assert "Traceback" not in full.stdout
        run_dir = run_dir_of(rec)
        assert not list(run_dir.rglob(".*.tmp"))
        saved = check_on_disk(run_dir)
        assert (run_dir / "games.jsonl").read_bytes().endswith(b"\n")
        assert 0 < len(saved) < 12
        remount(disk, "size=2m")
        resumed = subprocess.run(cmd + ["--resume"], cwd=REPO, env=ENV, capture_output=True,
                                 text=True, timeout=120)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        final = check_recordings(run_dir, 12)
        assert saved <= {r["sgf"] for r in final}


def fill(disk: Path) -> Path:
    """Take every free byte of ``disk``."""
    filler = disk / "filler"
    with contextlib.suppress(OSError):
        filler.write_bytes(b"f" * (8 << 20))
    return filler


def test_full_disk_at_start_is_one_line_and_leaves_no_run_folder(tmp_path: Path) -> None:
    """It used to be a 26-line ExceptionGroup traceback, exit 1, and an empty run folder."""
    matchup = write_matchup(tmp_path)
    with tmpfs(tmp_path / "disk", 64) as disk:
        rec = disk / "rec"
        rec.mkdir()
        fill(disk)
        done = subprocess.run(collect_cmd(matchup, rec, games=4), cwd=REPO, env=ENV,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stdout + done.stderr
        (line,) = done.stderr.splitlines()
        assert re.fullmatch(rf"collect: cannot write recordings in {re.escape(str(rec))}/"
                            r"rec-[\d-]+: No space left on device", line), line
        assert "Traceback" not in done.stdout
        assert list(rec.iterdir()) == []


def test_resume_that_cannot_repair_on_a_full_or_read_only_disk(tmp_path: Path) -> None:
    """--resume must rewrite a journal whose last line a kill cut short: on a full disk,
    then on a read-only one, that is one line and exit 2, the recordings untouched; with
    the disk back, the same --resume finishes the run."""
    matchup = write_matchup(tmp_path)
    with tmpfs(tmp_path / "disk", 2048) as disk:
        rec = disk / "rec"
        cmd = collect_cmd(matchup, rec, games=6)
        first = subprocess.run(collect_cmd(matchup, rec, games=3), cwd=REPO, env=ENV,
                               capture_output=True, text=True, timeout=120)
        assert first.returncode == 0, first.stdout + first.stderr
        run_dir = run_dir_of(rec)
        journal_path = run_dir / "games.jsonl"
        journal_path.write_bytes(journal_path.read_bytes()[:-20])  # a cut-short last line
        damaged = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
        filler = fill(disk)
        for expected in ("No space left on device", "Read-only file system"):
            resumed = subprocess.run([*cmd, "--resume"], cwd=REPO, env=ENV,
                                     capture_output=True, text=True, timeout=120)
            assert resumed.returncode == 2, resumed.stdout + resumed.stderr
            assert resumed.stderr.splitlines() == [
                f"collect: cannot write recordings in {run_dir}: {expected}"
            ]
            assert "Traceback" not in resumed.stdout
            assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == damaged
            if expected.startswith("No space"):
                filler.unlink()
                remount(disk, "ro")
        remount(disk, "rw")
        final = subprocess.run([*cmd, "--resume"], cwd=REPO, env=ENV, capture_output=True,
                               text=True, timeout=120)
        assert final.returncode == 0, final.stdout + final.stderr
        check_recordings(run_dir, 6)


@pytest.mark.slow
def test_read_only_disk_mid_run_stops_cleanly_and_resume_finishes(tmp_path: Path) -> None:
    matchup = write_matchup(tmp_path, delay_ms=3)
    with tmpfs(tmp_path / "disk", 4096) as disk:
        rec = disk / "rec"
        cmd = collect_cmd(matchup, rec, games=30)
        proc = subprocess.Popen(cmd, cwd=REPO, env=ENV, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

        def three_recorded() -> bool:
            runs = list(rec.glob("rec-*"))
            return bool(runs) and (runs[0] / "games.jsonl").exists() \
                and len(journal(runs[0])) >= 3

        wait_for(three_recorded, "3 games in the journal")
        # Held still while the disk turns read-only, so the run cannot end first.
        os.kill(proc.pid, signal.SIGSTOP)
        remount(disk, "ro")
        os.kill(proc.pid, signal.SIGCONT)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 2, out + err
        run_dir = run_dir_of(rec)
        assert err.splitlines() == [
            f"collect: cannot write recordings in {run_dir}: Read-only file system"
        ]
        saved = check_on_disk(run_dir)
        remount(disk, "rw")
        resumed = subprocess.run(cmd + ["--resume"], cwd=REPO, env=ENV, capture_output=True,
                                 text=True, timeout=180)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        final = check_recordings(run_dir, 30)
        assert saved <= {r["sgf"] for r in final}


# -- SIGKILL at random moments ---------------------------------------------------------


def journal_lines(run_dir: Path) -> int:
    path = run_dir / "games.jsonl"
    return path.read_bytes().count(b"\n") if path.exists() else 0


def kill_mid_write(proc: subprocess.Popen, run_dir: Path, limit: float) -> str | None:
    """SIGKILL while an SGF is being written: stop the process as soon as a temporary
    SGF shows, and kill it only if the file is still there (the write not finished)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and proc.poll() is None:
        for folder in (run_dir, run_dir / "void"):
            with contextlib.suppress(FileNotFoundError), os.scandir(folder) as entries:
                tmp = next((e.name for e in entries
                            if e.name.startswith(".baduk-") and e.name.endswith(".tmp")), None)
            if tmp is None:
                continue
            os.kill(proc.pid, signal.SIGSTOP)
            if (folder / tmp).exists():
                os.kill(proc.pid, signal.SIGKILL)
                return tmp
            os.kill(proc.pid, signal.SIGCONT)
    proc.kill()
    return None


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    games, wanted_kills = 150, 12
    rng = random.Random(19)
    matchup = write_matchup(tmp_path, delay_ms=3)
    rec = tmp_path / "rec"
    cmd = collect_cmd(matchup, rec, games)
    ever_saved: set[str] = set()
    kills = 0
    mid_write: list[str] = []
    left_over = 0  # temporary files the last kill left
    for cycle in range(wanted_kills):
        resume = ["--resume"] if cycle else []
        out_path = tmp_path / f"out-{cycle}.txt"
        with out_path.open("w") as out:
            proc = subprocess.Popen(cmd + resume, cwd=REPO, env=ENV, stdout=out,
                                    stderr=subprocess.STDOUT, text=True)
        # Kill only once this run is at work: its folder exists, its repairs are done.
        ready = "resuming " if cycle else None

        def at_work(proc: subprocess.Popen = proc, out_path: Path = out_path,
                    ready: str | None = ready) -> bool:
            if proc.poll() is not None:
                return True  # it ended first: what it recorded is checked below
            return ready in out_path.read_text() if ready else any(rec.glob("rec-*/run.json"))

        wait_for(at_work, f"run {cycle} at work")
        run_dir = run_dir_of(rec)
        if cycle % 3 == 2:
            hit = kill_mid_write(proc, run_dir, limit=30)
            if hit:
                mid_write.append(hit)
        else:
            # A random moment, counted in games recorded rather than in seconds: a run
            # with few games left could otherwise end before a timed kill.
            wanted = journal_lines(run_dir) + rng.randint(0, 5)
            while journal_lines(run_dir) < wanted and proc.poll() is None:
                time.sleep(0.005)
            proc.kill()
        proc.wait()
        output = out_path.read_text()
        assert proc.returncode == -signal.SIGKILL, f"finished before the kill:\n{output}"
        assert "Traceback" not in output
        kills += 1
        if left_over:
            # This resume found what the kill before left mid-write, and said so.
            assert f"resume: removed {left_over} unfinished temporary file(s)" in output
        else:
            assert "unfinished temporary" not in output
        left_over = len(list(run_dir.rglob(".*.tmp")))
        saved = check_on_disk(run_dir)
        assert ever_saved <= saved  # nothing recorded is ever lost
        ever_saved = saved
    final = subprocess.run(cmd + ["--resume"], cwd=REPO, env=ENV, capture_output=True,
                           text=True, timeout=300)
    assert final.returncode == 0, final.stdout + final.stderr
    records = check_recordings(run_dir, games)
    assert ever_saved <= {r["sgf"] for r in records}
    assert kills >= 10 and mid_write, (kills, mid_write)
    print(f"\nkills survived: {kills}, of which during an SGF write: {len(mid_write)}; "
          f"{len(records)} games recorded ({sum(r['void'] for r in records)} void)")
