"""Known counts in, known numbers out: a hand-written run folder through the whole report.

The run: alpha against beta on 9x9, ten finished games plus one void one.

  game  alpha  result for alpha   ended by     notes
  1     B      win                two-passes   opening book: plies 1-2
  2     W      win                two-passes
  3     B      win                two-passes   alpha's ply 3 is fallback:timeout
  4     W      win                two-passes   alpha's ply 2 is fallback:illegal:occupied
  5     B      win                two-passes
  6     W      win                two-passes
  7     B      win                two-passes
  8     W      loss               resign       four plies
  9     B      loss               resign       four plies
  10    W      loss               move-cap
  11    B      (void)             void         alpha's plies 1, 3, 5 are fallback:error,
                                               and a fourth error made it void (unplayed)
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from orchestrator.ratings import Wdl, sprt
from orchestrator.recordings import parse_record
from orchestrator.report.build import ReportError, write_report
from tests.report.synth import Game, report_json, write_run

PLAYERS = {
    "alpha": {"kind": "go19", "adapter": "a1", "endpoint": "10.0.0.1:5019"},
    "beta": {"kind": "gtp", "command": "gnugo --mode gtp"},
}
SPRT = {"elo0": 0.0, "elo1": 30.0, "alpha": 0.05, "beta": 0.05, "model": "logistic"}
LAT = {"n": 1000, "p50": 100.0, "p95": 200.0, "max": 300.0}


def games() -> list[Game]:
    out = []
    for n in range(1, 11):
        alpha_black = n % 2 == 1
        black, white = ("alpha", "beta") if alpha_black else ("beta", "alpha")
        alpha_wins = n <= 7
        winner = ("black" if alpha_black else "white") if alpha_wins else (
            "white" if alpha_black else "black")
        game = Game(n, black, white, winner, latency={"alpha": LAT})
        if n in (8, 9):
            game.reason, game.moves = "resign", 4
        if n == 10:
            game.reason = "move-cap"
        if n == 1:
            game.opening_plies, game.sources = 2, {1: "opening", 2: "opening"}
        if n == 3:
            game.sources, game.fallbacks = {3: "fallback:timeout"}, {"alpha": {"timeout": 1}}
        if n == 4:
            game.sources = {2: "fallback:illegal:occupied"}
            game.fallbacks = {"alpha": {"illegal:occupied": 1}}
        out.append(game)
    out.append(Game(11, "alpha", "beta", None, reason="void",
                    sources={1: "fallback:error", 3: "fallback:error", 5: "fallback:error"},
                    fallbacks={"alpha": {"error": 4}}))
    return out


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return write_run(tmp_path / "rec", "known-20260101-000000", games(), PLAYERS,
                     ("alpha", "beta"), SPRT)


def test_totals_and_terminations(run_dir: Path, tmp_path: Path) -> None:
    report = report_json([run_dir], tmp_path / "out")
    assert report["totals"] == {
        "runs": 1, "games": 11, "finished": 10, "void": 1, "rated": 10, "draws": 0,
        "no_result": 0, "self_play": 0,
        "moves": 8 * 6 + 2 * 4 + 6,  # eight six-ply games (void included), two of four
    }
    assert report["termination"] == {"two-passes": 7, "resign": 2, "move-cap": 1, "void": 1}
    lengths = report["lengths"]
    assert (lengths["games"], lengths["min"], lengths["max"]) == (10, 4, 6)
    assert lengths["mean"] == pytest.approx((8 * 6 + 2 * 4) / 10)  # void excluded: 5.6
    assert sum(lengths["counts"]) == 10


def test_elo_los_and_nelo_by_hand(run_dir: Path, tmp_path: Path) -> None:
    report = report_json([run_dir], tmp_path / "out")
    (h2h,) = report["head_to_head"]
    assert (h2h["player"], h2h["opponent"], h2h["counts"]) == ("alpha", "beta", "games")
    assert h2h["results"] == {"games": 10, "wins": 7, "losses": 3, "draws": 0}
    est = h2h["estimate"]
    # s = 7/10; Elo = 400·log10(0.7/0.3) = 400·0.367977 = 147.19
    assert est["score"] == pytest.approx(0.7)
    assert est["elo"] == pytest.approx(147.19, abs=0.01)
    # per-game variance 0.7·0.3 = 0.21; σ of the mean √(0.21/10) = 0.144914;
    # LOS = Φ(0.2/0.144914) = Φ(1.38013) = 0.91622
    assert est["los"] == pytest.approx(0.91622, abs=1e-4)
    # 95 %: s ± 1.96·0.144914 = [0.415973, 0.984027] -> Elo [-58.95, +715.85]; ± = 387.40
    assert est["elo_low"] == pytest.approx(-58.95, abs=0.05)
    assert est["elo_high"] == pytest.approx(715.85, abs=0.05)
    assert est["error"] == pytest.approx(387.40, abs=0.05)
    # nElo = 0.2/√0.21 · 800/ln10 = 0.436436 · 347.436 = 151.63
    assert est["nelo"] == pytest.approx(151.63, abs=0.01)
    assert h2h["pentanomial"] is None
    assert h2h["curve"][-1]["games"] == 10
    assert h2h["curve"][-1]["elo"] == pytest.approx(est["elo"])
    # after game 1 alpha is 1-0: score 1, Elo +inf, no interval
    assert h2h["curve"][0] == {"games": 1, "elo": "+inf", "low": None, "high": None}


def test_color_split(run_dir: Path, tmp_path: Path) -> None:
    alpha = report_json([run_dir], tmp_path / "out")["players"]["alpha"]
    # alpha is Black in 1, 3, 5, 7 (won) and 9 (lost); White in 2, 4, 6 (won), 8, 10 (lost)
    assert alpha["as_black"] == {"games": 5, "wins": 4, "losses": 1, "draws": 0}
    assert alpha["as_white"] == {"games": 5, "wins": 3, "losses": 2, "draws": 0}


def test_sprt_status_from_run_json(run_dir: Path, tmp_path: Path) -> None:
    report = report_json([run_dir], tmp_path / "out")
    (result,) = report["head_to_head"][0]["sprt"]
    expected = sprt(Wdl(wins=7, losses=3), 0.0, 30.0, 0.05, 0.05)
    assert result["llr"] == pytest.approx(expected.llr)
    # Wald's bounds for α = β = 0.05: ±ln(19) = ±2.944; 7-3 is far from either
    assert result["upper"] == pytest.approx(math.log(19))
    assert result["status"] == "continue"
    assert report["runs"][0]["sprt"] == result


def test_fallback_and_illegal_rates_per_move_asked(run_dir: Path, tmp_path: Path) -> None:
    players = report_json([run_dir], tmp_path / "out")["players"]
    alpha, beta = players["alpha"], players["beta"]
    # alpha asked: game 1: 3 plies - 1 book = 2; games 2-7: 3 each = 18;
    # games 8, 9: 2 plies + the resignation = 3 each; game 10: 3;
    # game 11: 3 fallbacks played + 1 unplayed = 4.   2 + 18 + 6 + 3 + 4 = 33
    assert alpha["moves_asked"] == 33
    assert alpha["fallbacks"] == {"error": 4, "illegal:occupied": 1, "timeout": 1}
    assert alpha["fallback_rate"] == pytest.approx(6 / 33)
    assert alpha["illegal_rate"] == pytest.approx(1 / 33)
    assert alpha["fallback_rate_by_reason"]["error"] == pytest.approx(4 / 33)
    # beta: game 1: 3 - 1 book = 2; games 2-7: 18; games 8, 9: 2 each; 10: 3; 11: 3  = 30
    assert beta["moves_asked"] == 30
    assert beta["fallback_rate"] == 0.0


def test_latency_pooled_from_per_game_summaries(run_dir: Path, tmp_path: Path) -> None:
    report = report_json([run_dir], tmp_path / "out")
    lat = report["players"]["alpha"]["latency_ms"]
    assert lat["n"] == 10 * 1000 and lat["max"] == 300.0
    # identical games: the pooled quantiles are the game's own; p99 lies 4/5 of the way
    # from p95 (200) to max (300) on the linear quantile function: 280. Each game is
    # spread over its n = 1000 replies, so quantiles land within 1/1000 of their rank:
    # 2000 ms per unit of rank between p95 and max, i.e. within 2 ms.
    assert lat["p50"] == pytest.approx(100.0, abs=2)
    assert lat["p95"] == pytest.approx(200.0, abs=2)
    assert lat["p99"] == pytest.approx(280.0, abs=2)
    assert report["players"]["beta"]["latency_ms"]["n"] == 0
    assert any("latency percentiles are pooled" in note for note in report["notes"])


def test_files_written_and_json_round_trips(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    report = report_json([run_dir], out)
    assert json.loads((out / "report.json").read_text()) == report
    md = (out / "report.md").read_text()
    # names people know: the adapter beside the key, the engine beside gnugo's
    assert "## alpha · a1 vs beta · gnugo" in md
    assert md.index("> **Verdict:**") < md.index("## Runs")
    assert "+147.2 ± 387.4" in md
    assert "91.6 %" in md  # LOS
    assert "## Ratings" not in md  # one run, two players: the head-to-head says it all
    html = (out / "report.html").read_text()
    assert html.count("<svg") >= 6 and "+147.2 ± 387.4" in html


def test_pentanomial_from_paired_openings(tmp_path: Path) -> None:
    # five colour-swapped pairs: alpha wins both games of pairs 0-2 and splits 3-4,
    # so the pentanomial is [0, 0, 2, 0, 3] and alpha leads 8-2 by games.
    paired = []
    for k in range(10):
        pair, second = divmod(k, 2)
        black, white = ("alpha", "beta") if second == 0 else ("beta", "alpha")
        alpha_wins = pair < 3 or second == 0
        winner = ("black" if black == "alpha" else "white") if alpha_wins else (
            "white" if black == "alpha" else "black")
        paired.append(Game(k + 1, black, white, winner, opening_plies=2, pair=pair,
                           sources={1: "opening", 2: "opening"}))
    run_dir = write_run(tmp_path, "paired-20260101-000000", paired, PLAYERS, ("alpha", "beta"))
    (h2h,) = report_json([run_dir], tmp_path / "out")["head_to_head"]
    assert h2h["counts"] == "pairs" and h2h["pentanomial"] == [0, 0, 2, 0, 3]
    est = h2h["estimate"]
    # pair scores: 0.5 twice, 1.0 three times: mean 0.8, Elo = 400·log10(4) = 240.82;
    # variance (2·0.3² + 3·0.2²)/5 = 0.06, σ of the mean √(0.06/5) = 0.109545,
    # LOS = Φ(0.3/0.109545) = Φ(2.7386) = 0.99692; nElo = 0.3/√(2·0.06)·347.436 = 300.89
    assert est["samples"] == 5
    assert est["elo"] == pytest.approx(240.82, abs=0.01)
    assert est["los"] == pytest.approx(0.99692, abs=1e-4)
    assert est["nelo"] == pytest.approx(300.89, abs=0.01)
    assert h2h["estimate_games"]["score"] == pytest.approx(0.8)  # 8-2 by games
    # the Elo line counts a pair once both its games are in: nothing after game 1, one WW
    # pair after game 2 (score 1, Elo +inf, no interval); it ends on the headline number
    assert h2h["curve"][0] == {"games": 2, "elo": "+inf", "low": None, "high": None}
    assert h2h["curve"][-1]["games"] == 10
    assert h2h["curve"][-1]["elo"] == pytest.approx(est["elo"])
    assert h2h["curve"][-1]["low"] == pytest.approx(est["elo_low"])


def test_combined_runs_rate_three_players_with_an_anchor(run_dir: Path, tmp_path: Path) -> None:
    # a second run: gamma beats alpha 3-1 (two paired openings)
    more = [
        Game(1, "gamma", "alpha", "black", pair=0, opening_plies=1, sources={1: "opening"}),
        Game(2, "alpha", "gamma", "white", pair=0, opening_plies=1, sources={1: "opening"}),
        Game(3, "gamma", "alpha", "black", pair=1, opening_plies=1, sources={1: "opening"}),
        Game(4, "alpha", "gamma", "black", pair=1, opening_plies=1, sources={1: "opening"}),
    ]
    players = {**PLAYERS, "gamma": {"kind": "heuristic", "level": 2}}
    second = write_run(tmp_path / "rec", "g-20260101-000000", more, players, ("gamma", "alpha"))
    out = tmp_path / "combined"
    report = report_json([run_dir, second], out, anchor={"beta": 1000.0})
    ratings = report["ratings"]
    assert ratings["anchor"] == {"beta": 1000.0} and not ratings["anchor_default"]
    rows = {r["player"]: r for r in ratings["rows"]}
    assert rows["beta"]["elo"] == 1000.0 and rows["beta"]["stderr"] == 0.0
    assert [r["player"] for r in ratings["rows"]] == ["gamma", "alpha", "beta"]
    assert rows["alpha"]["games"] == 14 and rows["gamma"]["games"] == 4
    assert report["totals"]["games"] == 15 and report["totals"]["runs"] == 2
    pairs = {(s["player"], s["opponent"]) for s in report["head_to_head"]}
    assert pairs == {("alpha", "beta"), ("gamma", "alpha")}
    assert "## Ratings" in (out / "report.md").read_text()

    default = report_json([run_dir, second], tmp_path / "default")["ratings"]
    assert default["anchor"] == {"alpha": 0.0} and default["anchor_default"]
    assert default["rows"][[r["player"] for r in default["rows"]].index("alpha")]["elo"] == 0.0
    assert "Anchor: alpha = 0 (default: the first player by name" in (
        tmp_path / "default" / "report.md").read_text()


def test_unknown_anchor_is_one_line_error(run_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="anchor 'nobody' played no games"):
        write_report([run_dir], tmp_path / "out", anchor={"nobody": 0.0})


def test_a_run_without_model_replies_reads_as_before(run_dir: Path, tmp_path: Path) -> None:
    """No tokens, no replies in the records: no Tokens table, no "said" anywhere."""
    report = report_json([run_dir], tmp_path / "out")
    assert all("tokens" not in p for p in report["players"].values())
    assert all("said" not in g for g in report["games"])
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "## Tokens" not in markdown and " said " not in markdown
    # A record without them writes its line without them, as a GO19 run's recorder does.
    for line in (run_dir / "games.jsonl").read_text().splitlines():
        written = json.loads(parse_record(line).to_json())
        assert "tokens" not in written and "replies" not in written
