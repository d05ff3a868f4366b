"""Without Ray, `--ray` is one clear line and exit status 2, and nothing is written."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator.cli import main
from tests.cluster.conftest import REAL, requires_real


@pytest.fixture
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError


@requires_real
@pytest.mark.parametrize("command", [["label", "--max-moves", "1"], ["dataset", "build"]])
def test_ray_missing_is_one_line(no_ray: None, command: list[str], tmp_path: Path,
                                 capsys: Any) -> None:
    out = tmp_path / "out"
    game = str(sorted((REAL / "pro19").glob("*.sgf"))[0])
    status = main([*command, game, "--out", str(out), "--ray"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1
    assert err[0].endswith("--ray needs Ray: pip install 'go19[cluster]'")
    assert not out.exists()


@requires_real
@pytest.mark.parametrize("command", [["label"], ["dataset", "build"]])
def test_input_taken_for_an_address_is_one_line(command: list[str], tmp_path: Path,
                                                capsys: Any) -> None:
    folder = str(REAL / "pro19")
    status = main([*command, "--ray", folder, "--out", str(tmp_path / "out"), folder])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "not a Ray address" in err[0]
    assert not (tmp_path / "out").exists()
