"""`make demo-vlm` (scripts/demo_vlm.py) end to end at its smallest: every step runs the
real command (tiny model, heuristic games, two exports, two TRL adapters, the hf server,
games between the adapters), so a change that breaks the newcomer's way in fails here.
The review step is left out (`--no-review`): `collect --review` has its own tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytest.importorskip("trl", reason="TRL is not installed: pip install -e '.[vlm]'")


def test_the_demo_runs_every_step_and_plays_the_adapters(tmp_path: Path) -> None:
    work = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, "scripts/demo_vlm.py", "--work", str(work), "--games", "2",
         "--vlm-games", "1", "--steps", "1", "--move-cap", "8", "--no-review"],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    steps = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("== ")
             and line.split()[1][0].isdigit()]
    assert steps == ["1/6", "2/6", "3/6", "3/6", "3/6", "3/6", "4/6", "4/6", "5/6", "6/6"]
    assert "Traceback" not in done.stderr
    for name in ("winner", "all"):
        config = json.loads((work / f"adapter-{name}" / "adapter_config.json").read_text())
        assert config["peft_type"] == "LORA"
    (run,) = (work / "vlm").iterdir()
    games = [json.loads(line) for line in (run / "games.jsonl").read_text().splitlines()]
    assert len(games) == 1
    # Both seats were the served adapters, each answering under its own name.
    assert {games[0]["black"], games[0]["white"]} == {"winner", "all"}
    # Served under the move grammar, every move asked is the adapter's own, none a fallback.
    assert games[0]["fallbacks"] == {"winner": {}, "all": {}}
    assert list((work / "reports").glob("*/report.md"))
    assert "demo-vlm: done in" in done.stdout
