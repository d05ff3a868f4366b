"""The gate (``[stop] gate``, ``go19 gate``) on real games: the heuristic AI at level 2
against level 1 (mixed results) and against the random mover (lopsided), 9x9 with a move
cap. Its decision is over colour-swapped pairs counted in schedule order: the same
whatever order the games arrive in, the same in collect and in ``go19 gate``, never
before ``min_games``, and what it is reported with are the games it decided on."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

import pytest
import trio

from orchestrator.collect.collector import Collector
from orchestrator.collect.matchup import Matchup
from orchestrator.collect.recorder import Recorder
from orchestrator.collect.run import CollectOptions, collect
from orchestrator.collect.schedule import Schedule
from orchestrator.collect.standings import gate_line, stop_reason
from orchestrator.collect.state import RunState
from orchestrator.events import GateDecided
from orchestrator.recordings import JournalRecord, read_journal, read_run_file
from tests.collect.schedule_walk import arrival_walk, points, schedule_walk
from tests.conftest import go19_here

MATCHUP = """
[run]
name = "{name}"
seed = 11
[players.strong]
kind = "heuristic"
level = 2
seed = 1
[players.{opponent}]
kind = "{kind}"
{level}
seed = 2
[pairing]
black = "strong"
white = "{opponent}"
[game]
size = 9
komi = 7.5
move_cap = 150
concurrency = {concurrency}
[openings]
random_plies = 4
{stop}
"""
# The mixed run's gate: wide hypotheses so that 40 games decide it.
MIXED_GATE = dict(candidate="strong", elo0=0.0, elo1=150.0, alpha=0.05, beta=0.05,
                  min_games=10)
LOPSIDED_MIN_GAMES = 80


def play(root: Path, name: str, games: int, **values: object) -> Path:
    path = root / f"{name}.toml"
    path.write_text(MATCHUP.format(name=name, **values))
    options = CollectOptions(matchup_path=path, games=games, recordings=root / "rec",
                             dashboard=False)
    summary = trio.run(collect, options)
    return summary.run_dir


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory) -> Path:
    """40 games of level 2 against level 1, one at a time (so the same games every run),
    no stop rule."""
    return play(tmp_path_factory.mktemp("mixed"), "mixed", 40, opponent="weak",
                kind="heuristic", level="level = 1", concurrency=1, stop="")


@pytest.fixture(scope="module")
def lopsided(tmp_path_factory) -> SimpleNamespace:
    """Level 2 against the random mover, one game at a time (so the same games every run:
    the random mover loses them all), stopped by its gate."""
    root = tmp_path_factory.mktemp("lopsided")
    stop = ('[stop]\ngate = { candidate = "strong", elo0 = 0, elo1 = 35, alpha = 0.05, '
            f'beta = 0.05, min_games = {LOPSIDED_MIN_GAMES} }}')
    path = root / "lopsided.toml"
    path.write_text(MATCHUP.format(name="lopsided", opponent="random", kind="random",
                                   level="", concurrency=1, stop=stop))
    options = CollectOptions(matchup_path=path, games=200, recordings=root / "rec",
                             dashboard=False)
    summary = trio.run(collect, options)
    return SimpleNamespace(summary=summary, run_dir=summary.run_dir, path=path)


def records(run_dir: Path) -> list[JournalRecord]:
    return read_journal(run_dir / "games.jsonl").records


def gated_collector(run_dir: Path, tmp_path: Path) -> Collector:
    """A collector for the run's own matchup with MIXED_GATE, its games yet to come."""
    raw = read_run_file(run_dir)["matchup"]
    matchup = Matchup.model_validate({**raw, "stop": {"gate": MIXED_GATE}})
    state = RunState(run_id=run_dir.name, target=40, players=sorted(matchup.players))
    return Collector(matchup, tmp_path, Schedule(matchup), state, {}, Recorder(tmp_path, {}))


def orders(games: list[JournalRecord]) -> dict[str, list[JournalRecord]]:
    """The journal's games in orders a run could deliver them: as finished, backwards, the
    candidate's wins first (its quick wins), its losses first, shuffled."""
    wins = [r for r in games if points(r, "strong") == 1.0]
    losses = [r for r in games if points(r, "strong") != 1.0]
    out = {"journal": games, "reversed": games[::-1], "wins first": wins + losses,
           "losses first": losses + wins}
    for seed in range(3):
        shuffled = list(games)
        random.Random(seed).shuffle(shuffled)
        out[f"shuffled {seed}"] = shuffled
    return out


def test_the_gate_ignores_arrival_order(mixed_run: Path, tmp_path: Path) -> None:
    games = records(mixed_run)
    assert len(games) == 40
    config = {k: v for k, v in MIXED_GATE.items() if k != "candidate"}
    expected = schedule_walk(games, "strong", **config)
    # The data make the test bite: decided before its last pair (so games arrive after
    # the decision), and counting pairs as they arrive would decide otherwise.
    assert expected.decision is not None and expected.games < len(games)
    naive = {name: arrival_walk(order, "strong", **config)
             for name, order in orders(games).items()}
    assert any(n != expected for n in naive.values()), naive

    for name, order in orders(games).items():
        collector = gated_collector(mixed_run, tmp_path / name.replace(" ", "-"))
        for record in order:
            collector.count(record)
        stop, status = collector.state.stop, collector.state.gate
        assert isinstance(stop, GateDecided), name
        assert stop.gate == status, name  # shown as decided, whatever came after
        assert (status.decision, status.games) == (expected.decision, expected.games), name
        assert status.llr == pytest.approx(expected.llr, abs=1e-9), name
        assert collector.stop_kind == "gate"


def test_collect_stops_at_the_gate_never_before_min_games(lopsided) -> None:
    summary = lopsided.summary
    stop = summary.state.stop
    assert isinstance(stop, GateDecided) and stop.gate.decision == "H1"
    assert summary.exit_code == 0 and summary.stop_kind == "gate"
    # Level 2 wins every pair: its LLR passes 2.94 long before min_games, and the decision
    # waits for min_games exactly.
    games = records(lopsided.run_dir)
    assert all(points(r, "strong") == 1.0 for r in games)
    assert schedule_walk(games, "strong", 0, 35).games < LOPSIDED_MIN_GAMES
    assert stop.gate.games == LOPSIDED_MIN_GAMES
    assert summary.state.gate == stop.gate
    walked = schedule_walk(games, "strong", 0, 35, min_games=LOPSIDED_MIN_GAMES)
    assert (walked.decision, walked.games) == ("H1", stop.gate.games)
    assert stop_reason(stop) == gate_line(stop.gate)
    assert stop_reason(stop).startswith(
        f"gate: accept strong over random — LLR {stop.gate.llr:.2f} (-2.94, 2.94) [0, 35], "
        f"{LOPSIDED_MIN_GAMES} games, {LOPSIDED_MIN_GAMES}–0")


def test_go19_gate_makes_collects_decision_from_the_journal(lopsided) -> None:
    result = go19_here("gate", lopsided.run_dir)
    assert result.returncode == 0, result.stderr
    assert result.stdout == stop_reason(lopsided.summary.state.stop) + "\n"
    report = json.loads((lopsided.run_dir / "gate.json").read_text())
    assert report["decision"] == "accept" and report["line"] == result.stdout.strip()
    assert report["llr"] == pytest.approx(lopsided.summary.state.gate.llr, abs=1e-4)


@pytest.mark.parametrize(("args", "status", "start"), [
    ((), 0, "gate: accept strong over random — "),
    (("--candidate", "random"), 1, "gate: reject random, keep strong — "),
    (("--min-games", 1000), 5, "gate: undecided, strong against random — "),
])
def test_go19_gate_exit_status_is_the_decision(lopsided, tmp_path, args, status, start) -> None:
    out = tmp_path / "gate.json"
    result = go19_here("gate", lopsided.run_dir, *args, "--out", out)
    assert result.returncode == status, result.stderr
    assert result.stdout.startswith(start) and result.stdout.count("\n") == 1
    assert json.loads(out.read_text())["decision"] == {0: "accept", 1: "reject",
                                                       5: "undecided"}[status]


def test_gate_json_holds_the_counted_games(mixed_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "gate.json"
    args = [f"--{k.replace('_', '-')}={v}" for k, v in MIXED_GATE.items()]
    result = go19_here("gate", mixed_run, *args, "--out", out)
    report = json.loads(out.read_text())
    games = records(mixed_run)
    walked = schedule_walk(games, "strong", 0, 150, min_games=10)
    assert result.returncode == {"H1": 0, "H0": 1}[walked.decision or ""]
    assert report["games"] == walked.games and report["pairs"] == walked.games // 2
    counted = sorted(games, key=lambda r: r.slot or 0)[:walked.games]
    as_black = [points(r, "strong") for r in counted if r.black == "strong"]
    as_white = [points(r, "strong") for r in counted if r.white == "strong"]
    assert report["as_black"] == {"wins": as_black.count(1.0), "losses": as_black.count(0.0),
                                  "draws": 0}
    assert report["as_white"] == {"wins": as_white.count(1.0), "losses": as_white.count(0.0),
                                  "draws": 0}
    pairs = [0] * 5
    for k in range(0, walked.games, 2):
        pairs[round(2 * (points(counted[k], "strong") + points(counted[k + 1], "strong")))] += 1
    assert report["pentanomial"] == pairs
    for name in ("strong", "weak"):
        side = report["players"][name]
        assert side["illegal"] == sum(r.illegal.get(name, 0) for r in counted)
        assert side["fallback_moves"] == sum(sum(r.fallbacks.get(name, {}).values())
                                             for r in counted)
    assert report["not_counted"] == {"after_decision": len(games) - walked.games,
                                     "waiting": 0, "without_slot": 0}
    assert report["quality"] is None  # no labels
    assert report["elo"]["low"] < report["elo"]["value"] < report["elo"]["high"]


def test_a_resumed_run_whose_gate_decided_stops_at_once(lopsided) -> None:
    before = records(lopsided.run_dir)
    options = CollectOptions(matchup_path=lopsided.path, games=300, resume=lopsided.run_dir,
                             dashboard=False)
    summary = trio.run(collect, options)
    assert summary.state.stop == lopsided.summary.state.stop
    assert summary.exit_code == 0
    assert records(lopsided.run_dir) == before


def test_bad_input_is_one_line(mixed_run: Path, lopsided, tmp_path: Path) -> None:
    cases = {
        "not a go19 run folder (no run.json)": (tmp_path,),
        "not a go19 run folder (no such folder)": (tmp_path / "nope",),
        "candidate 'r9' is not a player of this run (strong, random)":
            (lopsided.run_dir, "--candidate", "r9"),
        "its matchup has no [stop] gate; name the candidate with --candidate NAME":
            (mixed_run,),
        "2 runs: say where gate.json goes with --out FILE": (mixed_run, lopsided.run_dir),
        "plays strong vs weak, not strong vs random": (lopsided.run_dir, mixed_run, "--out",
                                                      tmp_path / "g.json"),
        "elo1 must be greater than elo0": (lopsided.run_dir, "--elo0", "50"),
    }
    for message, args in cases.items():
        result = go19_here("gate", *args)
        err = result.stderr
        assert result.returncode == 2, (args, result)
        assert result.stdout == "" and err.count("\n") == 1, (args, err)
        assert err.startswith("gate: ") and message in err, (args, err)
    assert not (mixed_run / "gate.json").exists()
