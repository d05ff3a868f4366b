"""collect end to end: real GO19 servers on loopback (embedded in the run), real
GNU Go, real files; the recordings are read back with sgfmill, independently
of go19's own reader."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio
import trio.testing
from sgfmill import sgf

from orchestrator.collect.run import CollectOptions, collect
from orchestrator.collect.standings import sprt_line
from orchestrator.events import SprtAccepted, VoidStreak
from orchestrator.recordings import read_journal
from tests.collect.schedule_walk import schedule_walk
from tests.conftest import GNUGO, REPO, requires_gnugo

EMBEDDED = """
[run]
name = "{name}"
seed = 5
[players.strong]
kind = "go19"
embedded = {{ engine = "heuristic", level = 2, seed = 1{strong_extra} }}
slots = 2
adapter = "stand-in-strong"
[players.weak]
kind = "go19"
embedded = {{ engine = "heuristic", level = 1, seed = 2{weak_extra} }}
slots = 2
[pairing]
black = "strong"
white = "{white}"
[game]
size = {size}
komi = 2.5
move_timeout_s = {timeout}
concurrency = {concurrency}
[fallback]
void_after = {void_after}
{extra}
"""


def matchup(tmp_path: Path, name: str = "t", **kw) -> Path:
    values = dict(
        name=name, strong_extra="", weak_extra="", white="weak", size=9, timeout=5,
        concurrency=3, void_after=200, extra="",
    )
    values.update(kw)
    path = tmp_path / f"{name}.toml"
    path.write_text(EMBEDDED.format(**values))
    return path


def journal(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "games.jsonl").read_text().splitlines()]


def sgf_games(run_dir: Path) -> dict[str, sgf.Sgf_game]:
    return {p.name: sgf.Sgf_game.from_bytes(p.read_bytes()) for p in run_dir.glob("*.sgf")}


def moves_of(game: sgf.Sgf_game) -> list[tuple[str, tuple | None, str | None]]:
    out = []
    for node in game.get_main_sequence()[1:]:
        color, point = node.get_move()
        source = node.get("GOXIXSRC") if node.has_property("GOXIXSRC") else None
        out.append((color, point, source))
    return out


async def run_collect(path: Path, tmp_path: Path, games: int, resume=False):
    options = CollectOptions(
        matchup_path=path, games=games, resume=resume, recordings=tmp_path / "rec",
        dashboard=False,
    )
    return await collect(options)


async def test_collect_records_every_game_once(tmp_path: Path) -> None:
    summary = await run_collect(matchup(tmp_path), tmp_path, games=6)
    records = journal(summary.run_dir)
    games = sgf_games(summary.run_dir)
    assert summary.state.done == 6
    assert len(records) == 6 and len(games) == 6
    assert sorted(r["sgf"] for r in records) == sorted(games)
    assert len({r["game"] for r in records}) == 6
    for record in records:
        game = games[record["sgf"]]
        root = game.get_root()
        assert game.get_size() == 9
        assert root.get("RE") == record["result"]
        assert root.get("PB") == record["black"] and root.get("PW") == record["white"]
        assert game.get_komi() == 2.5
        assert len(moves_of(game)) == record["moves"]
        assert record["reason"] in ("two-passes", "move-cap")
        assert record["latency_ms"]["strong"]["n"] > 0
    # Colours alternate, so both players had both colours.
    assert {r["black"] for r in records} == {"strong", "weak"}
    run_info = json.loads((summary.run_dir / "run.json").read_text())
    assert run_info["games_target"] == 6


async def test_two_pass_results_match_an_independent_count(tmp_path: Path) -> None:
    """RE of a two-pass game is the Tromp-Taylor count of the final sgfmill board."""
    from sgfmill import boards

    summary = await run_collect(matchup(tmp_path), tmp_path, games=3)
    for record in journal(summary.run_dir):
        game = sgf.Sgf_game.from_bytes((summary.run_dir / record["sgf"]).read_bytes())
        board = boards.Board(9)
        for color, point, _ in moves_of(game):
            if point is not None:
                board.play(point[0], point[1], color)
        # sgfmill's area_score counts stones plus single-colour-bordered empty regions.
        margin = board.area_score() - 2.5
        expected = "0" if margin == 0 else f"{'B' if margin > 0 else 'W'}+{abs(margin):g}"
        assert record["result"] == expected


async def test_self_play_uses_one_endpoint(tmp_path: Path) -> None:
    summary = await run_collect(matchup(tmp_path, white="strong"), tmp_path, games=2)
    records = journal(summary.run_dir)
    assert all(r["black"] == r["white"] == "strong" for r in records)
    assert list(records[0]["players"]) == ["strong"]


async def test_paired_openings_swap_colors_and_are_marked(tmp_path: Path) -> None:
    path = matchup(tmp_path, extra="[openings]\nrandom_plies = 4\npaired = true\n")
    summary = await run_collect(path, tmp_path, games=4)
    records = sorted(journal(summary.run_dir), key=lambda r: r["slot"])
    games = sgf_games(summary.run_dir)
    for first, second in (records[0:2], records[2:4]):
        assert first["opening"]["pair"] == second["opening"]["pair"]
        assert first["black"] == second["white"] and first["white"] == second["black"]
        a = moves_of(games[first["sgf"]])[:4]
        b = moves_of(games[second["sgf"]])[:4]
        assert [m[1] for m in a] == [m[1] for m in b]
        assert all(m[2] == "opening" for m in a + b)
    assert records[0]["opening"]["id"] != records[2]["opening"]["id"]


@pytest.fixture
def virtual_clock() -> trio.testing.MockClock:
    """Virtual time for runs whose servers are embedded (their delays are trio sleeps): a
    strong answer takes no time at all however loaded the machine is, so a 100 ms deadline
    is met by it and missed by a 400 ms delay every time."""
    return trio.testing.MockClock(autojump_threshold=0.002)


async def test_timeouts_become_marked_fallbacks(
    tmp_path: Path, virtual_clock: trio.testing.MockClock
) -> None:
    """The weak server answers after 400 ms, the deadline is 100 ms: every weak move is a
    fallback:timeout, marked in the SGF and counted in the journal."""
    path = matchup(tmp_path, weak_extra=", delay_ms = 400", timeout=0.1, concurrency=2)
    summary = await run_collect(path, tmp_path, games=2)
    for record in journal(summary.run_dir):
        game = sgf.Sgf_game.from_bytes((summary.run_dir / record["sgf"]).read_bytes())
        weak_color = "b" if record["black"] == "weak" else "w"
        weak_moves = [m for m in moves_of(game) if m[0] == weak_color]
        assert weak_moves and all(m[2] == "fallback:timeout" for m in weak_moves)
        assert record["fallbacks"]["weak"] == {"timeout": len(weak_moves)}
        # The strong server sees only the board, so it may walk into a superko it cannot
        # know about; it never times out.
        assert set(record["fallbacks"]["strong"]) <= {"illegal:superko"}


async def test_too_many_fallbacks_void_the_game_and_replay_it(
    tmp_path: Path, virtual_clock: trio.testing.MockClock
) -> None:
    path = matchup(tmp_path, weak_extra=", delay_ms = 400", timeout=0.05, void_after=3,
                   concurrency=1)
    # Every game with weak is void, so the run stops itself after a streak of them.
    summary = await run_collect(path, tmp_path, games=1)
    stop = summary.state.stop
    assert isinstance(stop, VoidStreak) and stop.games == 10 and not stop.unreachable
    assert summary.exit_code == 4  # fewer games than asked, not by the SPRT: a failed run
    run_dir = summary.run_dir
    records = journal(run_dir)
    assert len(records) == 10 and all(r["void"] for r in records)
    assert all((run_dir / "void" / r["sgf"]).exists() for r in records)
    assert not list(run_dir.glob("*.sgf"))
    assert all(r["slot"] == 0 for r in records)  # the same slot, replayed
    assert all(r["fallbacks"]["weak"]["timeout"] == 4 for r in records)


@requires_gnugo
async def test_heuristic_against_real_gnugo(tmp_path: Path) -> None:
    path = tmp_path / "g.toml"
    path.write_text(
        f"""
[players.heuristic]
kind = "heuristic"
[players.gnugo]
kind = "gtp"
command = "{GNUGO} --mode gtp --level 0 --chinese-rules"
instances = 2
[pairing]
black = "heuristic"
white = "gnugo"
[game]
size = 9
komi = 7.5
concurrency = 2
"""
    )
    summary = await run_collect(path, tmp_path, games=2)
    records = journal(summary.run_dir)
    assert len(records) == 2
    for record in records:
        assert record["fallbacks"]["gnugo"] == {}  # GNU Go never needs a fallback
        assert record["reason"] in ("two-passes", "resign", "move-cap")
        assert record["players"]["gnugo"]["kind"] == "gtp"


def test_kill_and_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    path = matchup(tmp_path, concurrency=3)
    rec = tmp_path / "rec"
    cmd = [sys.executable, "-m", "orchestrator.cli", "collect", "--matchup", str(path),
           "--games", "8", "--recordings", str(rec), "--no-dashboard", "--no-report"]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        run_dirs = list(rec.glob("t-*"))
        if run_dirs and (run_dirs[0] / "games.jsonl").exists() and len(
            (run_dirs[0] / "games.jsonl").read_text().splitlines()
        ) >= 2:
            break
        time.sleep(0.05)  # polling for the state (2 journal lines); the 60 s is a hang guard
    else:
        proc.kill()
        pytest.fail("collect recorded fewer than 2 games in 60 s: nothing to kill mid-run")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    run_dir = next(rec.glob("t-*"))
    before = len(journal(run_dir))
    assert 2 <= before < 8
    resumed = subprocess.run(cmd + ["--resume"], cwd=REPO, env=env, capture_output=True,
                             text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "Traceback" not in resumed.stdout + resumed.stderr
    assert list(rec.glob("t-*")) == [run_dir]  # resumed in place, no new run folder
    records = journal(run_dir)
    games = sgf_games(run_dir)
    assert len(records) == 8 and len(games) == 8
    assert sorted(r["sgf"] for r in records) == sorted(games)
    assert sorted(r["slot"] for r in records) == list(range(8))
    assert len({r["game"] for r in records}) == 8


async def test_per_move_latency_is_recorded_and_reported_exactly(tmp_path: Path) -> None:
    import numpy as np

    from tests.report.synth import report_json

    summary = await run_collect(matchup(tmp_path), tmp_path, games=2)
    samples: dict[str, list[float]] = {"strong": [], "weak": []}
    for record in journal(summary.run_dir):
        game = sgf.Sgf_game.from_bytes((summary.run_dir / record["sgf"]).read_bytes())
        names = {"b": record["black"], "w": record["white"]}
        per_game = {"strong": 0, "weak": 0}
        for node in game.get_main_sequence()[1:]:
            if node.has_property("GOXIXMS"):
                color, _ = node.get_move()
                samples[names[color]].append(float(node.get("GOXIXMS")))
                per_game[names[color]] += 1
        for name, count in per_game.items():
            assert record["latency_ms"][name]["n"] == count
    report = report_json([summary.run_dir], tmp_path / "report")
    for name, values in samples.items():
        latency = report["players"][name]["latency_ms"]
        assert latency["method"] == "exact"
        assert latency["n"] == len(values)
        assert abs(latency["p50"] - float(np.percentile(values, 50))) < 0.01
        assert abs(latency["p99"] - float(np.percentile(values, 99))) < 0.01


async def test_sprt_stops_a_lopsided_match_early(tmp_path: Path) -> None:
    """Heuristic AI against the random mover: H1 (elo1 = 100) is accepted long before the
    200 games asked for, games in flight are dropped, and the journal holds only
    finished games. The decision is over the games in schedule order up to the deciding
    one, and so is what is shown of it, whichever games finished after it (four at a time,
    some do): the same as counting the journal's games in slot order by hand."""
    path = tmp_path / "sprt.toml"
    path.write_text(
        """
[players.heuristic]
kind = "heuristic"
[players.random]
kind = "random"
[pairing]
black = "heuristic"
white = "random"
[game]
size = 9
komi = 7.5
concurrency = 4
[stop]
sprt = { elo0 = 0, elo1 = 100, alpha = 0.05, beta = 0.05 }
"""
    )
    summary = await run_collect(path, tmp_path, games=200)
    state = summary.state
    assert isinstance(state.stop, SprtAccepted) and state.stop.sprt.decision == "H1"
    assert summary.exit_code == 0  # the SPRT deciding is a run that did its job
    assert 0 < state.done < 200
    records = journal(summary.run_dir)
    assert len(records) == state.done
    # The LLR the dashboard shows is the deciding one, past ln((1-b)/a) = 2.94.
    assert state.sprt == state.stop.sprt
    assert state.sprt.llr >= state.sprt.upper
    assert state.sprt.upper == pytest.approx(2.944, abs=1e-3)
    assert f"LLR {state.sprt.llr:+.2f} (-2.94, +2.94)" in sprt_line(state.sprt)
    walked = schedule_walk(read_journal(summary.run_dir / "games.jsonl").records,
                           "heuristic", 0, 100, unit=1)
    assert (walked.decision, walked.games) == ("H1", state.sprt.games)
    assert walked.llr == pytest.approx(state.sprt.llr, abs=1e-9)
