"""A report from a real collection: the built-in heuristic AI against real GNU Go on
9x9 (two games, one colour-swapped pair), recorded by collect and read back here by
sgfmill, independently of go19's reader."""

from __future__ import annotations

import json
from pathlib import Path

from sgfmill import sgf

from orchestrator.collect.run import CollectOptions, collect
from tests.conftest import GNUGO, requires_gnugo
from tests.report.synth import report_json

MATCHUP = """
[run]
name = "hvg"
seed = 3
[players.heuristic]
kind = "heuristic"
level = 1
seed = 3
[players.gnugo-l0]
kind = "gtp"
command = "{gnugo} --mode gtp --level 0 --chinese-rules"
[pairing]
black = "heuristic"
white = "gnugo-l0"
[game]
size = 9
komi = 7.5
move_timeout_s = 30
concurrency = 2
[openings]
random_plies = 2
paired = true
"""


def asked_by_sgfmill(run_dir: Path, journal: list[dict]) -> dict[str, int]:
    """Moves asked per player: own-policy nodes, fallbacks and a resignation."""
    asked = {"heuristic": 0, "gnugo-l0": 0}
    for record in journal:
        folder = run_dir / "void" if record["void"] else run_dir
        game = sgf.Sgf_game.from_bytes((folder / record["sgf"]).read_bytes())
        names = {"b": record["black"], "w": record["white"]}
        for node in game.get_main_sequence()[1:]:
            color, _ = node.get_move()
            if color and not node.has_property("GOXIXSRC"):
                asked[names[color]] += 1
        for name, reasons in record["fallbacks"].items():
            asked[name] += sum(reasons.values())
        if game.get_root().get("RE").endswith("+R"):
            loser = "w" if game.get_root().get("RE").startswith("B") else "b"
            asked[names[loser]] += 1
    return asked


@requires_gnugo
async def test_report_of_heuristic_against_gnugo(tmp_path: Path) -> None:
    path = tmp_path / "hvg.toml"
    path.write_text(MATCHUP.format(gnugo=GNUGO))
    summary = await collect(
        CollectOptions(matchup_path=path, games=2, recordings=tmp_path / "rec", dashboard=False),
    )
    run_dir = summary.run_dir
    sgfs = [*run_dir.glob("*.sgf"), *(run_dir / "void").glob("*.sgf")]
    journal = [json.loads(line) for line in (run_dir / "games.jsonl").read_text().splitlines()]

    report = report_json([run_dir], tmp_path / "out")

    totals = report["totals"]
    assert totals["games"] == len(sgfs) == len(journal)
    assert totals["finished"] == sum(not r["void"] for r in journal) == 2
    assert sum(report["termination"].values()) == len(sgfs)
    assert report["warnings"] == []
    (h2h,) = report["head_to_head"]
    assert (h2h["player"], h2h["opponent"]) == ("heuristic", "gnugo-l0")
    assert h2h["games"] == totals["rated"]
    assert h2h["counts"] == "pairs" and sum(h2h["pentanomial"]) == 1
    asked = asked_by_sgfmill(run_dir, journal)
    for name, count in asked.items():
        assert report["players"][name]["moves_asked"] == count
    gnugo = report["players"]["gnugo-l0"]
    # GNU Go never needs a fallback, so every move asked of it was timed once
    assert gnugo["fallback_total"] == 0
    assert gnugo["latency_ms"]["n"] == asked["gnugo-l0"] > 0
    assert {"report.md", "report.json", "report.html"} <= {
        p.name for p in (tmp_path / "out").iterdir()
    }
