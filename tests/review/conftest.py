"""One real demo run reviewed by the CPU KataGo, shared by every test of this folder: `make
demo`'s matchup (two embedded GO19 servers serving the heuristic AI at levels 2 and 1)
cut to two games of 6 moves, then `go19 review` on it, which labels its 2 x 7 positions
(the position after the last move included) and writes its report."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import REPO

MOVE_CAP = 6
GAMES = 2


def go19(*args: object, cwd: Path = REPO,
         timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``go19`` from this checkout (PYTHONPATH: outside the repo root, ``-m`` would import
    the package the venv was installed from), run in ``cwd``."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def short_demo(folder: Path) -> Path:
    """`make demo`'s matchup with games of MOVE_CAP moves (2 random opening plies), as TOML."""
    text = (REPO / "matchups" / "demo.toml").read_text()
    demo = tomllib.loads(text)
    assert demo["game"]["move_cap"] > MOVE_CAP and demo["openings"]["random_plies"] == 4
    text = text.replace(f"move_cap = {demo['game']['move_cap']}", f"move_cap = {MOVE_CAP}")
    text = text.replace("random_plies = 4", "random_plies = 2")
    path = folder / "short-demo.toml"
    path.write_text(text)
    return path


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory) -> SimpleNamespace:
    """A recorded short demo run, without labels."""
    root = tmp_path_factory.mktemp("review")
    played = go19("collect", "--matchup", short_demo(root), "--games", GAMES,
                  "--no-dashboard", "--no-report", "--recordings", root / "recordings",
                  cwd=root)
    assert played.returncode == 0, played.stderr
    (run,) = (root / "recordings").iterdir()
    return SimpleNamespace(root=root, run=run)


@pytest.fixture(scope="session")
def reviewed(demo_run) -> SimpleNamespace:
    """The demo run after `go19 review` (labels in RUN/labels, the report in root/report);
    the modules using it skip without KataGo (tests.label.conftest.requires_katago)."""
    out = demo_run.root / "report"
    result = go19("review", demo_run.run, "--max-games", GAMES, "--max-moves", MOVE_CAP,
                  "--out", out, cwd=demo_run.root)
    assert result.returncode == 0, result.stderr
    return SimpleNamespace(**vars(demo_run), out=out, result=result,
                           labels=demo_run.run / "labels")
