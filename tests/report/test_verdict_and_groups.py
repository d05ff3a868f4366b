"""The verdict says what the statistics say (clear win, clear loss, undecided, SPRT
decided); players who never met are rated in separate groups; per-pair and per-game
tables, margins and pace from hand-written runs."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from orchestrator.quality.report import Decided
from orchestrator.ratings import EloEstimate
from orchestrator.report.model import Sprt
from orchestrator.report.names import label
from orchestrator.report.quality_tables import decided
from orchestrator.report.verdict import sentence
from tests.report.synth import Game, report_json, write_run

PLAYERS = {
    "r5": {"kind": "go19", "adapter": "lora_mix_qwen_r5", "model": "Qwen3-VL-8B"},
    "r4": {"kind": "go19", "adapter": "lora_mix_qwen_r4", "model": "Qwen3-VL-8B"},
    "gnugo": {"kind": "gtp", "command": "/usr/games/gnugo --mode gtp --level 1"},
    "rand": {"kind": "random", "seed": 0},
}
SPRT = {"elo0": 0.0, "elo1": 30.0, "alpha": 0.05, "beta": 0.05, "model": "logistic"}


def _match(a: str, b: str, a_wins: int, b_wins: int, paired: bool = False) -> list[Game]:
    """Alternating colours, ``a`` first as Black; ``a`` wins its first ``a_wins`` games."""
    out = []
    for k in range(a_wins + b_wins):
        black, white = (a, b) if k % 2 == 0 else (b, a)
        a_won = k < a_wins
        winner = "black" if (black == a) == a_won else "white"
        pair = k // 2 if paired else None
        out.append(Game(k + 1, black, white, winner, pair=pair,
                        opening_plies=2 if paired else 0,
                        sources={1: "opening", 2: "opening"} if paired else {},
                        finished_second=60 * (k + 1)))
    return out


def _report(tmp_path: Path, games: list[Game], pairing=("r5", "r4"), sprt=None) -> dict:
    run = write_run(tmp_path / "rec", "v-20260101-000000", games, PLAYERS, pairing, sprt)
    return report_json([run], tmp_path / "out")


def test_clear_win(tmp_path: Path) -> None:
    v = _report(tmp_path, _match("r5", "r4", 40, 10))["verdict"]
    assert v["stronger"] == "r5" and v["los"] > 0.99
    assert v["sentence"].startswith("r5 is stronger than r4 with 100 % confidence (Elo +")


def test_clear_loss(tmp_path: Path) -> None:
    v = _report(tmp_path, _match("r5", "r4", 10, 40))["verdict"]
    assert v["stronger"] == "r4" and v["los"] < 0.01
    assert v["sentence"].startswith("r4 is stronger than r5 with 100 % confidence (Elo −")
    assert "for r5)" in v["sentence"]


def test_undecided(tmp_path: Path) -> None:
    report = _report(tmp_path, _match("r5", "r4", 11, 9))
    v = report["verdict"]
    assert v["stronger"] is None and 0.05 < v["los"] < 0.95
    assert v["sentence"].startswith("Undecided: r5 vs r4 Elo +34.9 [")
    assert f"LOS {100 * v['los']:.0f} %; more games needed." in v["sentence"]
    md = (tmp_path / "out" / "report.md").read_text()
    assert md.splitlines()[2] == f"> **Verdict:** {v['sentence']}"
    assert "> - **stronger**: not decided yet" in md


def test_sprt_decision_names_the_game(tmp_path: Path) -> None:
    report = _report(tmp_path, _match("r5", "r4", 60, 0), sprt=SPRT)
    (sprt,) = report["head_to_head"][0]["sprt"]
    assert sprt["decision"] == "H1"
    # the LLR first reaches the bound at that game, not before
    first = sprt["decided_at"]
    assert 1 < first < 60
    assert sprt["curve"][-1]["llr"] >= sprt["upper"]
    v = report["verdict"]
    assert v["stronger"] == "r5"
    assert v["sentence"].endswith(f"the SPRT accepted H1 (+30 Elo rather than +0) at game "
                                  f"{first}.")


def test_undecided_sprt_is_said(tmp_path: Path) -> None:
    report = _report(tmp_path, _match("r5", "r4", 11, 9), sprt=SPRT)
    v = report["verdict"]
    assert v["sprt"]["decision"] is None and v["sprt"]["decided_at"] is None
    assert v["sentence"].endswith(
        f"; the SPRT [0, 30] has not decided yet (LLR {v['sprt']['llr']:+.2f}, bounds -2.94 "
        "and +2.94).")


def test_sprt_h0_and_clean_sweep_sentences() -> None:
    est = EloEstimate(games=400, samples=400, score=0.47, elo=-20.0, elo_low=-60.0, elo_high=20.0,
                   error=20.4, los=0.16, nelo=None, nelo_error=None)
    h0 = Sprt(run="v", player="r5", opponent="r4", elo0=0.0, elo1=30.0, alpha=0.05, beta=0.05,
              model="logistic", counts="games", samples=400, llr=-3.1, lower=-2.94,
              upper=2.94, decision="H0", status="accepted H0", curve=[], decided_at=400)
    assert sentence("r5", "r4", est, h0, "games") == (
        "r5 is not shown to be 30 Elo stronger than r4; the SPRT accepted H0 (+0 Elo rather "
        "than +30) at game 400.")
    sweep = EloEstimate(games=3, samples=3, score=1.0, elo=math.inf, elo_low=None, elo_high=None,
                     error=math.inf, los=None, nelo=None, nelo_error=None)
    assert sentence("r5", "r4", sweep, None, "pairs") == (
        "r5 won all 3 pairs against r4; too few games for an interval, more games needed.")


@pytest.mark.parametrize(("wins", "paired", "said", "counted"), [
    (2, False, "r5 won both games against r4", "trinomial, 2 games"),
    (2, True, "r5 won the one pair against r4", "pentanomial, 1 pair"),
])
def test_a_clean_sweep_of_two_games_in_words(tmp_path: Path, wins: int, paired: bool,
                                              said: str, counted: str) -> None:
    report = _report(tmp_path, _match("r5", "r4", wins, 0, paired=paired))
    assert report["verdict"]["sentence"] == (
        f"{said}; too few games for an interval, more games needed.")
    md = (tmp_path / "out" / "report.md").read_text()
    assert f"**Elo of r5 (95 %)**: +∞ ({counted}; too few games for an interval)" in md
    assert "- **Elo (95 %)**: +∞ (too few games for an interval)" in md
    assert "every one of" not in md and "[n/a, n/a]" not in md and "(no interval)" not in md


def test_two_unconnected_runs_are_rated_as_two_groups(tmp_path: Path) -> None:
    first = write_run(tmp_path / "rec", "a-20260101-000000", _match("r5", "r4", 6, 4),
                      PLAYERS, ("r5", "r4"))
    second = write_run(tmp_path / "rec", "b-20260101-000000", _match("gnugo", "rand", 7, 3),
                       PLAYERS, ("gnugo", "rand"))
    report = report_json([first, second], tmp_path / "out")
    ratings = report["ratings"]
    assert [g["players"] for g in ratings["groups"]] == [["gnugo", "rand"], ["r4", "r5"]]
    # each group has its own anchor at 0, so both groups' first players sit at 0
    assert ratings["anchor"] == {"gnugo": 0.0, "r4": 0.0}
    by_player = {r["player"]: r for r in ratings["rows"]}
    assert by_player["rand"]["group"] == 0 and by_player["r4"]["group"] == 1
    assert by_player["r4"]["elo"] == 0.0 and by_player["gnugo"]["elo"] == 0.0
    assert by_player["r5"]["elo"] > 0 and by_player["rand"]["elo"] < 0
    assert any("2 groups that never met" in w for w in report["warnings"])
    md = (tmp_path / "out" / "report.md").read_text()
    assert "| group | # | player |" in md
    assert "each rated on its own scale" in md


def test_one_group_when_a_chain_connects_them(tmp_path: Path) -> None:
    first = write_run(tmp_path / "rec", "a-20260101-000000", _match("r5", "r4", 6, 4),
                      PLAYERS, ("r5", "r4"))
    second = write_run(tmp_path / "rec", "b-20260101-000000", _match("r4", "gnugo", 5, 5),
                       PLAYERS, ("r4", "gnugo"))
    ratings = report_json([first, second], tmp_path / "out")["ratings"]
    assert len(ratings["groups"]) == 1 and len(ratings["rows"]) == 3


def test_pairs_games_margins_and_pace(tmp_path: Path) -> None:
    # 6 paired games: r5 wins pairs 0 and 1 twice over, pair 2 goes 1-1.
    games = _match("r5", "r4", 5, 1, paired=True)
    report = _report(tmp_path, games)
    (section,) = report["head_to_head"]
    assert [p["points"] for p in section["pairs"]] == [2.0, 2.0, 1.0]
    assert section["pairs"][2]["games"] == [5, 6]
    rows = report["games"]
    assert [r["game"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert rows[0]["sgf"].endswith("v-20260101-000000/" + games[0].sgf_name)
    md = (tmp_path / "out" / "report.md").read_text()
    assert f"[sgf](../rec/v-20260101-000000/{games[0].sgf_name})" in md
    assert "| 2 | o2 | 5, 6 | B+3.5, B+3.5 | 1 (one each) |" in md
    # margins from r5's side: 5 wins by 3.5, one loss by 3.5
    m = report["margins"]
    assert m["player"] == "r5" and m["games"] == 6 and sum(m["counts"]) == 6
    edges, counts = m["bin_edges"], m["counts"]
    assert sum(c for lo, c in zip(edges, counts, strict=False) if lo >= 0) == 5
    # six games one minute apart: the first started at 1:00, the last finished at 6:00
    pace = report["pace"]
    assert pace["duration_s"] == 300.0
    assert pace["games_per_hour"] == pytest.approx(6 / 300 * 3600)
    assert pace["moves_per_s"] == pytest.approx(36 / 300)
    assert report["labels"]["r5"] == "r5 · lora_mix_qwen_r5 (Qwen3-VL-8B)"
    assert label("gnugo", PLAYERS["gnugo"]) == "gnugo · gnugo --level 1"
    assert label("x", {"kind": "go19", "embedded": {"engine": "heuristic", "level": 2}}) == (
        "x · embedded heuristic L2")


def test_fallback_rate_over_games_shows_a_degrading_adapter(tmp_path: Path) -> None:
    games = _match("r5", "r4", 10, 10)
    for g in games[10:]:  # r4 starts failing halfway: one timeout per game
        g.fallbacks = {"r4": {"timeout": 1}}
        g.sources = {2 if g.black == "r5" else 1: "fallback:timeout"}
    curves = _report(tmp_path, games)["fallback_curves"]
    r4 = curves["r4"]
    assert [p["games"] for p in r4] == [5, 10, 15, 20]  # buckets of five games
    assert r4[0]["rate"] == r4[1]["rate"] == 0.0
    assert r4[2]["rate"] == r4[3]["rate"] == pytest.approx(5 / 15)  # 1 of 3 moves asked
    assert all(p["rate"] == 0.0 for p in curves["r5"])


def test_when_a_verdict_was_decided_in_plain_words() -> None:
    assert decided(Decided(1, None, None), "labelled game") == (
        "not decided after 1 labelled game")
    assert decided(Decided(40, 12, 12), "rated game") == "decided after 12 of 40 rated games"
    assert decided(Decided(40, 12, 15), "rated game") == (
        "decided after 12 of 40 rated games, undecided again until game 15")
    assert decided(Decided(30, 23, None), "labelled game") == (
        "decided after 23 of 30 labelled games, undecided again by the last")
