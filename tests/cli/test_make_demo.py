"""`make demo` installs only what the demo uses (issue 21, item 8): it installed the whole
test extra (pytest, selenium, datasets, pyarrow …). The Makefile's plan for a fresh
.venv, and the demo's own run with every extra made unimportable."""

from __future__ import annotations

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


def test_the_demo_runs_without_any_extra(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRAS, "collect", "--matchup", "matchups/demo.toml",
         "--games", "2", "--recordings", tmp_path / "rec", "--reports", tmp_path / "reports",
         "--no-dashboard"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (report,) = (tmp_path / "reports").iterdir()
    assert (report / "report.html").is_file()
