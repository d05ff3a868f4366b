"""`kill -9` of a real `go19 dataset build` or `dataset export` (issue 21, item 7): its
workers die with it (they went on writing for 3-13 s under PID 1), and the next run
removes the dead run's `.NAME.partial-PID` folder, saying so in one line (nothing did:
a rerun has another PID, and 614 MB stayed behind)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from orchestrator.dataset import build
from orchestrator.dataset.build import BuildOptions
from tests.conftest import REAL_SGF, REPO, requires_real_sgf
from tests.polling import wait_for

pytestmark = requires_real_sgf


def children(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def go19(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *map(str, args)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


def kill_mid_run(args: list[object], out: Path) -> tuple[Path, set[int]]:
    """Start the command, SIGKILL it once its partial folder and two workers exist;
    return the folder it left and its workers."""
    proc = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", *map(str, args)],
                            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    partial = out.with_name(f".{out.name}.partial-{proc.pid}")
    wait_for(lambda: partial.is_dir() and len(children(proc.pid)) >= 2 or proc.poll() is not None,
             "a partial folder and two workers")
    proc.send_signal(signal.SIGSTOP)  # nothing more of its own from here
    workers = children(proc.pid)
    assert proc.poll() is None and partial.is_dir(), "it finished before it could be killed"
    proc.kill()
    proc.wait()
    return partial, workers


def check_sweep(args: list[object], partial: Path, workers: set[int], out: Path) -> str:
    # At once: SIGKILL from the kernel (they used to finish their task first, seconds on an
    # idle machine); 5 s because a loaded one (make test's two workers) can take over 1 s to
    # deliver and reap even a SIGKILL.
    wait_for(lambda: not any(running(pid) for pid in workers),
             f"end of workers {sorted(workers)} after their parent died", limit=5.0)
    assert partial.is_dir()
    again = go19(*args)
    assert again.returncode == 0, again.stderr
    assert not partial.exists() and (out / "manifest.json").is_file()
    assert not list(out.parent.glob(f".{out.name}.partial-*"))
    (line,) = [line for line in again.stderr.splitlines() if "stale" in line]
    assert f"{partial.name} (PID {partial.name.rsplit('-', 1)[1]} is gone)" in line
    return line


def test_a_killed_build_takes_its_workers_with_it_and_the_rerun_sweeps(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    args: list[object] = ["dataset", "build", REAL_SGF, "--out", out, "--workers", "2"]
    partial, workers = kill_mid_run(args, out)
    line = check_sweep(args, partial, workers, out)
    assert line.startswith("dataset build: removed 1 stale partial folder: ")


def test_a_killed_export_takes_its_workers_with_it_and_the_rerun_sweeps(tmp_path: Path) -> None:
    dataset = tmp_path / "ds"
    # Two dataset shards of 300 samples: two export tasks of 300 pictures, seconds each.
    build([REAL_SGF / "pro19"], dataset, BuildOptions(max_per_game=2, shard_size=300))
    out = tmp_path / "ex"
    args: list[object] = ["dataset", "export", dataset, "--out", out, "--format", "jsonl",
                          "--workers", "2"]
    partial, workers = kill_mid_run(args, out)
    line = check_sweep(args, partial, workers, out)
    assert line.startswith("dataset export: removed 1 stale partial folder: ")
    assert os.listdir(out / "data")
