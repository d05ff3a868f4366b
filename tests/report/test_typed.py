"""The report is typed to its edge: ``write_report`` returns dataclasses, and report.json is
exactly them written by :func:`orchestrator.report.model.to_json` (an infinite Elo as
``"+inf"``, an undefined number as null, an optional part left out while it is absent)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

from orchestrator.quality.report import QualityUnavailable
from orchestrator.quality.summary import Interval
from orchestrator.report.build import write_report
from orchestrator.report.model import (
    HeadToHead,
    PlayerSection,
    Report,
    RunSummary,
    Verdict,
    to_json,
)
from tests.report.synth import Game, write_run

PLAYERS = {"a": {"kind": "heuristic"}, "b": {"kind": "random"}}


def test_report_json_is_the_typed_report(tmp_path: Path) -> None:
    games = [Game(1, "a", "b", "black"), Game(2, "b", "a", "white")]  # a wins both
    run = write_run(tmp_path / "rec", "t-20260101-000000", games, PLAYERS, ("a", "b"))
    report = write_report([run], tmp_path / "out")
    assert isinstance(report, Report)
    assert isinstance(report.verdict, Verdict) and isinstance(report.runs[0], RunSummary)
    assert all(isinstance(p, PlayerSection) for p in report.players.values())
    (h2h,) = report.head_to_head
    assert isinstance(h2h, HeadToHead) and h2h.estimate.elo == math.inf
    assert isinstance(report.quality, QualityUnavailable)
    written = json.loads((tmp_path / "out" / "report.json").read_text())
    assert written == to_json(report)
    assert list(written) == [f.name for f in dataclasses.fields(Report)]
    assert written["verdict"]["elo"] == "+inf" and written["verdict"]["elo_low"] is None
    assert "tokens" not in written["players"]["a"]  # absent: left out, not null
    assert all("said" not in g for g in written["games"])


def test_to_json_numbers() -> None:
    assert to_json(Interval(1.5, math.nan, -math.inf)) == {
        "value": 1.5, "low": None, "high": "-inf"}
    assert to_json({"k": (1, 2.0, [math.inf])}) == {"k": [1, 2.0, ["+inf"]]}
