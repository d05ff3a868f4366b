"""`go19 train-lora` (orchestrator/train/lora.py) on the slices `make demo-vlm` trains on:
a short heuristic run's winner moves and all its moves, exported as SFT parquet."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def go19(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *map(str, args)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)


pytest.importorskip("trl", reason="TRL is not installed: pip install -e '.[vlm]'")


@pytest.fixture(scope="module")
def slices(tmp_path_factory):
    work = tmp_path_factory.mktemp("slices")
    made = go19("collect", "--matchup", "matchups/demo.toml", "--games", "2", "--recordings",
                work / "rec", "--no-dashboard", "--no-report")
    assert made.returncode == 0, made.stderr
    (run,) = (work / "rec").iterdir()
    for name, flags in {"winner": ["--winner-only"], "all": []}.items():
        built = go19("dataset", "build", run, *flags, "--out", work / f"ds-{name}")
        assert built.returncode == 0, built.stderr
        exported = go19("dataset", "export", work / f"ds-{name}", "--out", work / name)
        assert exported.returncode == 0, exported.stderr
    return work


def test_the_winner_slice_is_a_part_of_all_moves(slices) -> None:
    from orchestrator.train.lora import load_export

    winner, every = load_export(slices / "winner"), load_export(slices / "all")
    assert 0 < len(winner) < len(every)
    assert "messages" in winner.column_names  # what SFTTrainer reads


def test_two_steps_save_an_adapter_serve_loads(slices, tiny, tmp_path, capfd) -> None:
    """...and say only their step lines: no progress bars of datasets or transformers, no
    trainer log dicts repeating them, no library deprecation warnings (`make demo-vlm`
    showed all four between its lines)."""
    said: list[str] = []
    from orchestrator.train.lora import LoraRun, train

    capfd.readouterr()
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        result = train(LoraRun(tiny.model, slices / "winner", tmp_path / "a", steps=2,
                               batch=2, threads=1, every=1), said.append)
    assert result.steps == 2 and result.samples > 0
    assert [line.split(":")[0] for line in said] == ["  step 1/2", "  step 2/2"]
    assert capfd.readouterr() == ("", "")
    assert not [w for w in shown if issubclass(w.category, FutureWarning)]
    config = json.loads((tmp_path / "a" / "adapter_config.json").read_text())
    assert config["peft_type"] == "LORA"
    assert (tmp_path / "a" / "adapter_model.safetensors").stat().st_size > 0


def test_bad_export_folder_is_one_line(tiny, tmp_path) -> None:
    done = go19("train-lora", "--model", tiny.model, "--export", tmp_path, "--out",
                tmp_path / "a", "--steps", "1")
    assert done.returncode == 2
    assert "no data/*.parquet" in done.stderr and "Traceback" not in done.stderr
