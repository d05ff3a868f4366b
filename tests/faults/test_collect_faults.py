"""`collect` against a farm of fault servers: each fault alone, then all of them mixed
across endpoints. What the servers injected, counted by client reason, must be
exactly what the recordings say, game by game and in total.

Runs use virtual time (``fault_clock``): a 5 s move deadline or a 15 s backoff costs
no wall time, and an honest answer can never miss its deadline on a loaded machine,
which is what makes the counts exact.
"""

from __future__ import annotations

from collections import Counter
from functools import partial

import pytest
import trio
import trio.testing

from orchestrator.collect.standings import stop_reason
from orchestrator.events import (
    Event,
    PlayerBack,
    PlayerDown,
    PlayerDownTooLong,
    ReplicaChanged,
    RunStop,
    VoidStreak,
)
from orchestrator.players.random_player import RandomPlayer
from orchestrator.serve import serve_go19

from .harness import PLAYER, check_recordings, journal, recorded, run_collect, write_matchup
from .server import ILLEGAL, REASON, REQUEST_FAULTS, Burst, Farm, Plan, Window

MOVE_TIMEOUT = 5.0
LATE = 2 * MOVE_TIMEOUT
EVERY_REASON = {r for r in REASON.values() if r is not None}


async def settled_task_count(farm: Farm) -> int:
    """Living tasks once every late answer is sent and every handler has seen its client
    go, less the accept loops (a flapping server has none while it is down)."""
    await trio.sleep(3 * LATE)  # virtual time (fault_clock): the late answers' own delays
    await trio.testing.wait_all_tasks_blocked()
    return trio.lowlevel.current_statistics().tasks_living - farm.accepting()


def backoff_episodes(log: list[tuple[float, Event]], replica: str
                     ) -> list[list[tuple[float, ReplicaChanged]]]:
    """The replica's failed connects and reconnects, split after each reconnect."""
    episodes: list[list[tuple[float, ReplicaChanged]]] = [[]]
    for t, event in log:
        if isinstance(event, ReplicaChanged) and event.address == replica \
                and event.status in ("backoff", "ok"):
            episodes[-1].append((t, event))
            if event.status == "ok":
                episodes.append([])
    return [e for e in episodes if e]


def check_backoff(log: list[tuple[float, Event]], replica: str) -> int:
    """Every outage of ``replica`` follows the seed's schedule; returns how many ended."""
    episodes = backoff_episodes(log, replica)
    ended = 0
    for episode in episodes:
        failures = [event for _, event in episode if event.status == "backoff"]
        delays = [event.retry_in for event in failures]
        assert delays == [min(1.5 * n, 15.0) for n in range(1, len(delays) + 1)]
        times = [t for t, _ in episode]
        assert all(b - a >= d for a, b, d in zip(times, times[1:], delays, strict=False))
        last = episode[-1][1]
        if last.status == "ok":
            assert (last.failures, last.probes) == (len(failures), 0)
            ended += 1
    return ended


def check_counts(got: Counter, injected: Counter, log: list[tuple[float, Event]]) -> None:
    """Every injected fault is recorded with its reason. Timeouts may be more: a replica
    whose new connections fail is in backoff (the same schedule as refused connects), and
    a request that waits it out can run out of time; that happens only after a failure
    the log shows. Never fewer: a late reply is never the player's own move."""
    assert +Counter({k: n for k, n in got.items() if k != "timeout"}) == \
        +Counter({k: n for k, n in injected.items() if k != "timeout"})
    extra = got["timeout"] - injected["timeout"]
    assert extra >= 0
    if extra:
        assert any(isinstance(e, ReplicaChanged) and e.status == "backoff" for _, e in log)


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
        check_counts(Counter(got.get(player, {})), farm.injected(player), run.log)
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
    assert summary.state.done == games and summary.state.stop is None
    assert summary.dropped_in_flight == 0
    records = check_recordings(run.run_dir, games)
    got = recorded(records)
    for player in ("alpha", "beta"):
        check_counts(got[player], farm.injected(player), run.log)
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


async def test_a_player_whose_requests_all_fail_stops_the_run_with_exit_3(
    tmp_path, fault_clock
) -> None:
    """alpha answers PING (so it passes the preflight) but closes every connection that
    brings a request: every game is void. That run used to end 'stopped early' with exit 0;
    it is a player that cannot be reached, exit 3, and the message says so."""
    farm = Farm()
    async with trio.open_nursery() as nursery:
        await farm.start(nursery, "alpha", Plan({"close-before-reply": 1.0}), seed=1)
        await farm.start(nursery, "beta", Plan(), seed=2)
        matchup = write_matchup(tmp_path, farm, concurrency=4, move_timeout=MOVE_TIMEOUT,
                                void_after=3)
        run = await run_collect(matchup, tmp_path / "rec", games=4)
        nursery.cancel_scope.cancel()
    summary = run.summary
    assert summary.state.done == 0
    assert summary.exit_code == 3
    assert summary.stop_kind == "down"
    stop = summary.state.stop
    assert isinstance(stop, VoidStreak) and stop.unreachable == (
        ("alpha", farm.replicas("alpha")[0]),)
    assert f"cannot connect to alpha at {farm.replicas('alpha')[0]}; " in stop_reason(stop)


async def test_a_void_streak_of_timeouts_exits_4(tmp_path, fault_clock) -> None:
    """Every game void for a reason other than the connection: stopped early, exit 4."""
    farm = Farm()
    async with trio.open_nursery() as nursery:
        await farm.start(nursery, "alpha", Plan({"hang": 1.0}), seed=1)
        await farm.start(nursery, "beta", Plan(), seed=2)
        matchup = write_matchup(tmp_path, farm, concurrency=4, move_timeout=MOVE_TIMEOUT,
                                void_after=2)
        run = await run_collect(matchup, tmp_path / "rec", games=4)
        nursery.cancel_scope.cancel()
    summary = run.summary
    assert (summary.state.done, summary.exit_code, summary.stop_kind) == (0, 4, "void")
    stop = summary.state.stop
    assert isinstance(stop, VoidStreak) and stop.games == 10 and not stop.unreachable
    assert stop.fallbacks[0][0] == "alpha" and stop.fallbacks[0][1][0][0] == "timeout"
    assert stop_reason(stop).startswith("10 void games in a row (fallbacks alpha: timeout ")


def down_events(run) -> tuple[float, float | None]:
    """When the run saw alpha go down, and when it saw it back (None: never)."""
    down = next(t for t, e in run.log if isinstance(e, PlayerDown) and e.player == "alpha")
    back = next((t for t, e in run.log if isinstance(e, PlayerBack) and e.player == "alpha"),
                None)
    return down, back


class CountingEngine(RandomPlayer):
    """Random moves; ``tired`` is set once it has answered ``answers`` requests."""

    def __init__(self, answers: int) -> None:
        super().__init__("counting", seed=1)
        self.left = answers
        self.tired = trio.Event()

    async def answer(self, game, number=0, picture=None):
        self.left -= 1
        if self.left <= 0:
            self.tired.set()
        return await super().answer(game, number, picture)


async def outage_server(
    answers: int, down_for: float | None, *, task_status: trio.TaskStatus[int]
) -> None:
    """A GO19 server answering in 0.5 s that stops listening (connects refused) once it
    has answered ``answers`` requests, and listens again on the same port ``down_for``
    seconds later. The outage starts at a state of the run, not at a time: the recorder's
    thread makes virtual time jump."""
    engine = CountingEngine(answers)

    def serve(port: int):
        return partial(serve_go19, engine, "127.0.0.1", port, slots=8, delay_ms=500,
                       allowed_sizes=(9,))

    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve(0))
        task_status.started(port)
        await engine.tired.wait()
        nursery.cancel_scope.cancel()
    if down_for is None:
        await trio.sleep_forever()
    await trio.sleep(down_for)
    await serve(port)()


async def outage_run(tmp_path, up_after: float | None, down_pause: float, games: int):
    farm = Farm()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(outage_server, 100, up_after)
        await farm.start(nursery, "beta", Plan(), seed=2)
        matchup = write_matchup(tmp_path, farm, concurrency=4, move_timeout=MOVE_TIMEOUT,
                                move_cap=60, void_after=40, down_pause=down_pause,
                                black="alpha", white="beta")
        text = matchup.read_text()
        matchup.write_text(text + PLAYER.format(name="alpha", replicas=f'"127.0.0.1:{port}"',
                                                slots=4))
        run = await run_collect(matchup, tmp_path / "rec", games=games)
        nursery.cancel_scope.cancel()
    return run, f"127.0.0.1:{port}"


async def test_games_pause_while_a_player_is_down_and_go_on_when_it_is_back(
    tmp_path, fault_clock
) -> None:
    """alpha's only replica refuses connects for 200 s: it is marked down, its games wait
    (they used to be voided one after another, then the run stopped with exit 3), and
    when a background probe finds it back, they go on to the end."""
    run, _ = await outage_run(tmp_path, up_after=200, down_pause=600, games=24)
    summary = run.summary
    assert (summary.exit_code, summary.state.done, summary.dropped_in_flight) == (0, 24, 0)
    down, back = down_events(run)
    assert back is not None and back - down > 150  # it waited out the outage
    records = check_recordings(run.run_dir, 24)
    assert not any(r["void"] for r in records)


async def test_a_player_down_longer_than_down_pause_stops_the_run_with_exit_3(
    tmp_path, fault_clock
) -> None:
    run, where = await outage_run(tmp_path, up_after=None, down_pause=90, games=200)
    summary = run.summary
    assert summary.exit_code == 3
    assert summary.state.stop == PlayerDownTooLong("alpha", where, 90.0)
    assert stop_reason(summary.state.stop) == (
        f"player alpha is down ({where}) for 90 s; resume with --resume once it is back"
    )
    down, back = down_events(run)
    stopped = next(t for t, e in run.log if isinstance(e, RunStop))
    assert back is None and 90 <= stopped - down < 91
    assert 0 < summary.dropped_in_flight <= 4  # the paused games, replayed on --resume
    assert not any(r["void"] for r in journal(run.run_dir))
