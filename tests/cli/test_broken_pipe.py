"""`go19 dataset build … | head` (issue 21, item 8): the reader goes away before the
summary is printed; that ended in a BrokenPipeError traceback. A real pipe, closed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    (tmp_path / "g.sgf").write_bytes(b"(;SZ[19];B[pd];W[dp])")
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "dataset", "build", tmp_path / "g.sgf",
         "--out", tmp_path / "ds"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # as `head` does once it has read enough: before the summary here
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert stderr == ""
    assert (tmp_path / "ds" / "manifest.json").is_file()
