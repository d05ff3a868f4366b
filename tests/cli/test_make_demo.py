"""`make demo` installs only what the demo uses (issue 21, item 8): it installed the whole
test extra (pytest, selenium, datasets, pyarrow …). The Makefile's plan for a fresh
.venv, and the demo's own run with every extra made unimportable."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

EXTRAS = ("pytest", "hypothesis", "selenium", "datasets", "pyarrow", "starlette", "hypercorn",
          "numba", "isal", "ray", "mypy", "ruff")
# Runs go19 with the extras' modules refused at import, as in a venv without them.
WITHOUT_EXTRAS = f"""
import importlib.abc, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {EXTRAS!r}:
            raise ImportError(f"no module named {{name!r}} (not installed by make demo)",
                              name=name)
sys.meta_path.insert(0, Refuse())
from orchestrator.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_make_demo_installs_go19_without_extras(tmp_path: Path) -> None:
    plan = subprocess.run(["make", "-n", "demo", f"VENV={tmp_path / 'venv'}"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    if plan.returncode != 0 and "not found" in plan.stderr:
        pytest.skip("make is not installed")
    installs = [line for line in plan.stdout.splitlines() if "pip install" in line]
    assert any(line.endswith("pip install -q -e .") for line in installs), plan.stdout
    assert not any("[" in line for line in installs), plan.stdout
    # make test still installs the test extra.
    test_plan = subprocess.run(["make", "-n", "test", f"VENV={tmp_path / 'venv'}"], cwd=REPO,
                               capture_output=True, text=True, timeout=60)
    assert "pip install -q -e '.[test]'" in test_plan.stdout


def without_extras(*args: object, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """go19 ARGS with the extras refused, this checkout's code whatever ``cwd``."""
    return subprocess.run([sys.executable, "-c", WITHOUT_EXTRAS, *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_the_demo_decides_and_ends_with_what_to_do_next(tmp_path: Path) -> None:
    """Issue 30, item 10: the demo's 20 games left its verdict undecided on half the seeds
    (10-10, Elo +0 [-217, +217]) and it ended on the report's path. Its matchup now decides
    (one game at a time: the same games on every run), and its last lines say what to try
    next; the training-data ones work as printed, with no extra installed."""
    plan = subprocess.run(["make", "-n", "demo", f"VENV={tmp_path / 'venv'}"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    if plan.returncode != 0 and "not found" in plan.stderr:
        pytest.skip("make is not installed")
    (line,) = [line for line in plan.stdout.splitlines() if " collect " in line]
    args = shlex.split(line)[2:]
    assert args[:4] == ["--matchup", "matchups/demo.toml", "--games", "20"]
    assert "--next-steps" in args
    done = without_extras("collect", *args, "--recordings", tmp_path / "rec", "--reports",
                          tmp_path / "reports", "--no-dashboard")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "strong is stronger than weak with " in done.stdout  # decided, not "Undecided"
    (report,) = (tmp_path / "reports").iterdir()
    (run,) = (tmp_path / "rec").iterdir()
    steps = done.stdout.split("\nwhat next:\n")[1].splitlines()
    assert steps[0] == (f"  the report: open {report / 'report.html'} in a browser (also "
                        "report.md, report.json)")
    assert (report / "report.html").is_file()
    commands = [step.strip() for step in steps if step.startswith("    ")]
    assert any("go19 play" in c for c in commands)
    assert f".venv/bin/go19 review {run} --max-games 4" in " ".join(commands)
    for command in commands[2:4]:  # the training data, as a newcomer would run them
        words = shlex.split(command)
        assert words[0] == ".venv/bin/go19" and words[1] == "dataset"
        ran = without_extras(*words[1:], cwd=tmp_path)
        assert ran.returncode == 0, command + ran.stderr
    assert list((tmp_path / "exports" / run.name / "data").glob("*.jsonl"))
