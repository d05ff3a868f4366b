"""`collect` against a farm of fault servers: each fault alone, then all of them mixed
across endpoints. What the servers injected, counted by client reason, must be
exactly what the recordings say, game by game and in total.

Runs use virtual time (``fault_clock``): a 5 s move deadline or a 15 s backoff costs
no wall time, and an honest answer can never miss its deadline on a loaded machine,
which is what makes the counts exact.
"""

from __future__ import annotations

import re

import pytest
import trio
import trio.testing

from .harness import check_recordings, recorded, run_collect, write_matchup
from .server import ILLEGAL, REASON, REQUEST_FAULTS, Burst, Farm, Plan, Window

MOVE_TIMEOUT = 5.0
LATE = 2 * MOVE_TIMEOUT
EVERY_REASON = {r for r in REASON.values() if r is not None}


async def settled_task_count(farm: Farm) -> int:
    """Living tasks once every late answer is sent and every handler has seen its client
    go, less the accept loops (a flapping server has none while it is down)."""
    await trio.sleep(3 * LATE)
    await trio.testing.wait_all_tasks_blocked()
    return trio.lowlevel.current_statistics().tasks_living - farm.accepting()


def backoff_episodes(log: list[tuple[float, str]], replica: str) -> list[list[tuple[float, str]]]:
    """The replica's connection events, split after each reconnect."""
    episodes: list[list[tuple[float, str]]] = [[]]
    for t, line in log:
        if f"{replica}: " in line and ("connect failed" in line or "reconnected" in line):
            episodes[-1].append((t, line.split(f"{replica}: ", 1)[1]))
            if "reconnected" in line:
                episodes.append([])
    return [e for e in episodes if e]


def check_backoff(log: list[tuple[float, str]], replica: str) -> int:
    """Every outage of ``replica`` follows the seed's schedule; returns how many ended."""
    episodes = backoff_episodes(log, replica)
    ended = 0
    for episode in episodes:
        failures = [(t, line) for t, line in episode if line.startswith("connect failed")]
        delays = [float(re.search(r"retry in ([\d.]+) s", line)[1]) for _, line in failures]
        assert delays == [min(1.5 * n, 15.0) for n in range(1, len(delays) + 1)]
        times = [t for t, _ in episode]
        assert all(b - a >= d for a, b, d in zip(times, times[1:], delays, strict=False))
        if episode[-1][1].startswith("reconnected"):
            n = len(failures)
            assert episode[-1][1] == f"reconnected after {n} failed attempt{'s' * (n > 1)}"
            ended += 1
    return ended


def alone(kind: str) -> dict:
    """The farm for one fault: alpha misbehaves, beta is honest."""
    honest = Plan()
    if kind == "refuse":
        # Connections are pooled: error replies make alpha open new ones to refuse. A
        # refusal backs the replica off: its honest sibling serves meanwhile (see below).
        return {"alpha": [Plan({"honest": 85.0, "error": 15.0}, refuse=Burst(0.3, 2)), honest],
                "beta": [honest]}
    if kind == "flap":
        # Time only moves while every game waits on a deadline: beta's hangs make it move.
        return {
            "alpha": [Plan(flap=Window(period=30, duration=8, phase=3)), honest],
            "beta": [Plan({"honest": 90.0, "hang": 10.0})],
        }
    if kind in ILLEGAL:
        return {"alpha": [Plan(eager={kind: 1.0 if kind == "superko" else 0.3})],
                "beta": [honest]}
    # An honest sibling: a replica that breaks a new connection backs off like one that
    # refuses it, and a request waiting that out alone could time out unseen by a server.
    return {"alpha": [Plan({"honest": 88.0, kind: 12.0}, late_s=LATE), honest],
            "beta": [honest]}


@pytest.mark.parametrize("kind", [*REQUEST_FAULTS, "refuse", "flap"])
async def test_each_fault_alone_is_recorded_as_injected(tmp_path, fault_clock, kind) -> None:
    farm = Farm()
    async with trio.open_nursery() as nursery:
        for player, plans in alone(kind).items():
            for i, plan in enumerate(plans):
                await farm.start(nursery, player, plan, seed=11 + i)
        # Kos come late in random games: the superko run plays longer and more games.
        games, cap = (12, 150) if kind == "superko" else (4, 60)
        matchup = write_matchup(tmp_path, farm, concurrency=4, move_timeout=MOVE_TIMEOUT,
                                move_cap=cap, void_after=40)
        run = await run_collect(matchup, tmp_path / "rec", games=games)
        nursery.cancel_scope.cancel()
    records = check_recordings(run.run_dir, games)
    got = recorded(records)
    for player in farm.servers:
        assert got.get(player, {}) == +farm.injected(player), player
    done = farm.faults()
    if kind == "flap":
        assert done == {"honest": done["honest"], "hang": done["hang"]}
        assert check_backoff(run.log, farm.replicas("alpha")[0]) >= 1
    else:
        assert done[kind] > 0  # it did happen
        if kind != "close-before-reply":  # on a used connection that one is retried
            assert got["alpha"][REASON.get(kind, "connection")] == done[kind]


def mixed_farm_plans() -> dict[str, list[Plan]]:
    """Every fault, mixed at random on four replicas of two players. Each player keeps
    one replica that never refuses or breaks a new connection, so it never backs off and
    every request reaches some server."""
    share = {kind: 16.0 / len(REQUEST_FAULTS) for kind in REQUEST_FAULTS}
    mix = {"honest": 84.0, **share}
    eager = {"superko": 0.5, "suicide": 0.05}
    steady = Plan(mix, eager=eager, late_s=LATE, keeps_new_connections=True)
    return {
        "alpha": [
            steady,
            Plan(mix, eager=eager, late_s=LATE, flap=Window(period=40, duration=12, phase=7)),
        ],
        "beta": [
            Plan(mix, eager=eager, late_s=LATE, refuse=Burst(0.05, 3)),
            steady,
        ],
    }


async def mixed_run(tmp_path, games: int, concurrency: int, void_after: int = 15):
    farm = Farm()
    async with trio.open_nursery() as nursery:
        for player, plans in mixed_farm_plans().items():
            for i, plan in enumerate(plans):
                await farm.start(nursery, player, plan, seed=100 * len(farm.servers) + i)
        baseline = await settled_task_count(farm)
        matchup = write_matchup(tmp_path, farm, concurrency=concurrency, move_cap=80,
                                move_timeout=MOVE_TIMEOUT, void_after=void_after)
        run = await run_collect(matchup, tmp_path / "rec", games=games)
        # collect returned: nothing of it may still be running (only the servers are).
        assert await settled_task_count(farm) == baseline
        nursery.cancel_scope.cancel()
    summary = run.summary
    assert summary.state.done == games and summary.state.stop_reason is None
    assert summary.dropped_in_flight == 0
    records = check_recordings(run.run_dir, games)
    got = recorded(records)
    for player in ("alpha", "beta"):
        assert got[player] == +farm.injected(player), player
    assert check_backoff(run.log, farm.replicas("alpha")[1]) >= 1
    return farm, records, run


async def test_mixed_faults_across_endpoints(tmp_path, fault_clock) -> None:
    farm, _, _ = await mixed_run(tmp_path, games=30, concurrency=8)
    seen = set(farm.injected("alpha")) | set(farm.injected("beta"))
    assert seen >= EVERY_REASON - {"illegal:superko"}


@pytest.mark.slow
async def test_mixed_faults_across_endpoints_150_games(tmp_path, fault_clock) -> None:
    farm, records, run = await mixed_run(tmp_path, games=150, concurrency=16, void_after=10)
    injected = farm.injected("alpha") + farm.injected("beta")
    assert set(injected) == EVERY_REASON
    assert set(farm.faults()) >= {*REQUEST_FAULTS, "refuse", "honest"}
    assert any(r["void"] for r in records)  # void games happened and were replayed
    print(f"\nmixed run: {len(records)} games recorded ({sum(r['void'] for r in records)} void), "
          f"faults {dict(farm.faults())}, by reason {dict(injected)}, "
          f"flap episodes {check_backoff(run.log, farm.replicas('alpha')[1])}")
