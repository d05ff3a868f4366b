"""`go19 gate` on the session's reviewed demo run (the CPU KataGo's labels in RUN/labels):
gate.json carries the report's paired move-quality verdict over the games the gate
counted, worded by the same review code."""

from __future__ import annotations

import json

from tests.conftest import go19_here
from tests.label.conftest import requires_katago
from tests.review.conftest import GAMES

pytestmark = requires_katago


def test_gate_json_has_the_move_quality_verdict_of_its_games(reviewed, tmp_path) -> None:
    out = tmp_path / "gate.json"
    result = go19_here("gate", reviewed.run, "--candidate", "strong", "--min-games", 0,
                       "--out", out)
    assert result.returncode in (0, 1, 5), result.stderr
    gate = json.loads(out.read_text())
    assert gate["games"] == GAMES  # one colour-swapped pair
    report = json.loads((reviewed.out / "report.json").read_text())
    (pair,) = [h for h in report["quality"]["head_to_head"]
               if (h["player"], h["opponent"]) == ("strong", "weak")]
    quality = gate["quality"]
    assert quality is not None and quality["games"] == pair["games"] == GAMES
    assert quality["sentence"] == pair["sentence"]
    assert quality["difference"] == pair["difference"]
    assert quality["labels"] == [str(reviewed.labels)]
