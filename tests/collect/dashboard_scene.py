"""A collector caught mid-run, built from real state objects (RunState, LiveGame,
Game, ReplicaStats, the matchup's Sprt), for rendering the dashboard without a run:
r5 against r4 on three replicas each, one of r4's replicas down and one slow, a
burst of superko fallbacks, eight games in flight. Used by the layout tests and by
docs/img/screenshots.py."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from types import SimpleNamespace

from orchestrator.collect.matchup import Sprt
from orchestrator.collect.players import PlayerHandle
from orchestrator.collect.referee import GameSpec, LiveGame
from orchestrator.collect.standings import RecentEvents
from orchestrator.collect.state import RunState
from orchestrator.collect.stopping import RuleTally, StopRule
from orchestrator.events import Fallback, GameRecorded, ReplicaChanged
from orchestrator.players.go19 import ReplicaStats
from orchestrator.recordings import JournalRecord, PlayerMeta
from orchestrator.rules.board import IllegalMove
from orchestrator.rules.game import Game

FAILING_REPLICA = "10.0.0.7:5019"
SLOW_REPLICA = "10.0.0.8:5019"
META = {
    "r5": dict(kind="go19", adapter="lora_mix_qwen_r5", model="Qwen3-VL-8B"),
    "r4": dict(kind="go19", adapter="lora_mix_qwen_r4", model="Qwen3-VL-8B"),
}


def replica(address: str, status: str = "ok", latency: float = 900.0, **kw) -> ReplicaStats:
    rng = random.Random(address)
    values = dict(retry_at=None, in_flight=1, idle_connections=1, requests=800, errors=0,
                  timeouts=0, reconnects=0, consecutive_failures=0, last_attempt=None,
                  last_error=None,
                  latency_ms=tuple(latency * (0.7 + 0.6 * rng.random()) for _ in range(200)))
    values.update(kw)
    return ReplicaStats(address=address, status=status, **values)


@dataclass
class FakeEndpoint:
    """Stands in for Go19Endpoint: only what the dashboard reads, a snapshot."""

    replicas: list[ReplicaStats] = field(default_factory=list)

    def replica_stats(self) -> list[ReplicaStats]:
        return self.replicas


def record(n: int, black: str, white: str, winner: str, pair: int | None) -> JournalRecord:
    return JournalRecord.model_validate({
        "run": "r5_vs_r4-20260101-000000", "game": n, "slot": n - 1, "sgf": f"{n}.sgf",
        "void": False, "black": black, "white": white, "players": {}, "size": 19,
        "komi": 7.5, "result": "B+3.5" if winner == "black" else "W+3.5", "winner": winner,
        "reason": "two-passes", "score": 3.5 if winner == "black" else -3.5, "moves": 240,
        "opening": None if pair is None else {"id": f"o{pair}", "plies": 8, "pair": pair},
        "fallbacks": {"r4": {"illegal:superko": 2, "timeout": 1} if n % 3 == 0 else {},
                      "r5": {"timeout": 1} if n % 7 == 0 else {}},
        "latency_ms": {},
    })


def scene(games: int = 212, paired: bool = True, in_flight: int = 8, more_replicas: int = 0):
    """The collector the dashboard reads; ``more_replicas`` healthy ones for each player."""
    rng = random.Random(7)
    state = RunState(run_id="r5_vs_r4-20260101-000000", target=400, players=["r4", "r5"])
    state.started_at -= 3600 * 1.5
    recent = RecentEvents()  # the dashboard's (Dashboard(console, collector.recent))
    state.subscribe(recent.on_event)
    sprt = StopRule(RuleTally("sprt", "r5", "r4", Sprt()), 2 if paired else 1)
    for n in range(1, games + 1):
        black, white = ("r5", "r4") if n % 2 else ("r4", "r5")
        r5_wins = rng.random() < 0.56
        winner = "black" if (black == "r5") == r5_wins else "white"
        state.add_record(record(n, black, white, winner, (n - 1) // 2 if paired else None))
        sprt.add(state.records[-1])
    state.sprt = sprt.tally.status()  # as the collector keeps it
    for n in range(games + 1, games + 1 + in_flight):
        black, white = ("r5", "r4") if n % 2 else ("r4", "r5")
        game = Game(19, 7.5)
        for _ in range(20 + 7 * (n % 9)):
            for _attempt in range(20):
                try:
                    game.play(rng.randrange(361))
                    break
                except IllegalMove:
                    continue
        state.live[n] = LiveGame(number=n, spec=GameSpec(n - 1, black, white), game=game,
                                 waiting_on=white if n % 2 else black)
    if games:
        state.emit(GameRecorded(state.records[-1]))
    for k in range(31):
        state.emit(Fallback(games + 2, 100 + k, "r4", "illegal:superko"))
    for failures, delay in ((4, 6.0), (5, 7.5)):
        state.emit(ReplicaChanged(FAILING_REPLICA, "backoff", delay, "connection refused",
                                  failures, player="r4"))
    state.emit(ReplicaChanged(FAILING_REPLICA, "down", 9.0, "connection refused", 6,
                              player="r4"))
    endpoints = {
        "r5": FakeEndpoint([replica("10.0.0.4:5019"), replica("10.0.0.5:5019"),
                            replica("10.0.0.6:5019")]),
        "r4": FakeEndpoint([
            replica(FAILING_REPLICA, "down", in_flight=0, errors=14, reconnects=3,
                    consecutive_failures=5, last_error="connection refused"),
            replica(SLOW_REPLICA, latency=4000.0, timeouts=6),
            replica("10.0.0.9:5019"),
        ]),
    }
    for name, endpoint in endpoints.items():
        endpoint.replicas += [replica(f"10.1.{len(name)}.{k}:5019") if name == "r4" else
                              replica(f"10.2.0.{k}:5019") for k in range(more_replicas)]
    players = {
        name: PlayerHandle(name, None, PlayerMeta(**META[name], endpoint=",".join(
            r.address for r in endpoints[name].replicas)), endpoint=endpoints[name])
        for name in ("r4", "r5")
    }
    matchup = SimpleNamespace(pairing=SimpleNamespace(black="r5", white="r4"),
                              stop=SimpleNamespace(sprt=Sprt()))
    return SimpleNamespace(state=state, players=players, matchup=matchup, recent=recent)
