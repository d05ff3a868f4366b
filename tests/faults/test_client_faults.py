"""The GO19 client and pool against the fault server, one fault at a time.

Virtual time (``fault_clock``): a deadline or a backoff costs no wall time, and the
times asserted are the exact instants the schedule says.
"""

from __future__ import annotations

import numpy as np
import pytest
import trio

from orchestrator.collect.referee import GameSpec, RefereeSettings, play_game
from orchestrator.collect.standings import words
from orchestrator.color import BLACK
from orchestrator.events import Event, ReplicaChanged
from orchestrator.players.base import ConnectionFailed, PlayerError, RefusedMove
from orchestrator.players.go19 import Go19Endpoint, Go19Player
from orchestrator.protocol import go19 as wire
from orchestrator.render import RenderSettings
from orchestrator.rules.game import Game

from .server import LOCALHOST, REASON, REQUEST_FAULTS, FaultServer, Plan, Window

ALWAYS_POSSIBLE = [k for k in REQUEST_FAULTS if k not in ("suicide", "superko")]


def nine(stones: dict[int, int] | None = None) -> wire.Request:
    board = np.zeros(81, dtype=np.uint8)
    for point, color in (stones or {}).items():
        board[point] = color
    return wire.Request(9, BLACK, b"", board.tobytes())


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind((LOCALHOST, 0))
        return sock.getsockname()[1]


async def reason_of(endpoint: Go19Endpoint, game: Game, timeout: float = 5.0) -> str | None:
    """What the referee would record for one move: a fallback reason or None."""
    with trio.move_on_after(timeout) as deadline:
        try:
            point = (await Go19Player(endpoint, "p").answer(game)).move()
        except PlayerError as exc:
            return exc.reason
    if deadline.cancelled_caught:
        return "timeout"
    try:
        game.board.check(game.to_play, point)
    except Exception as exc:  # noqa: BLE001 - IllegalMove; its reason is what we compare
        return f"illegal:{exc.reason}"
    return None


@pytest.mark.parametrize("fault", ALWAYS_POSSIBLE)
async def test_each_fault_gives_its_reason(nursery, fault_clock, fault: str) -> None:
    server = FaultServer("s", Plan({fault: 1.0}, late_s=20), seed=1)
    port = await nursery.start(server.serve)
    game = Game(9)
    game.play(40)  # one stone, so that "occupied" has a point
    async with Go19Endpoint([(LOCALHOST, port)], allowed_sizes=(9,)) as endpoint:
        seen = [await reason_of(endpoint, game) for _ in range(3)]
    # close-before-reply on a fresh connection each time (the connection never answered).
    assert seen == [REASON[fault]] * 3
    assert server.injected == {REASON[fault]: 3}


async def test_closing_and_resetting_mid_reply_are_the_same_fault(nursery, fault_clock) -> None:
    """A server process that dies while writing a reply sends FIN or RST depending on
    whether it had unread bytes; either way the connection broke mid-request."""
    outcomes = {}
    for fault in ("close-mid-frame", "reset-mid-frame"):
        port = await nursery.start(FaultServer("s", Plan({fault: 1.0}), seed=1).serve)
        async with Go19Endpoint([(LOCALHOST, port)], allowed_sizes=(9,)) as endpoint:
            with pytest.raises(PlayerError) as caught:
                await endpoint.request(nine())
        outcomes[fault] = caught.value
    assert {type(e) for e in outcomes.values()} == {ConnectionFailed}
    assert "closed inside the move reply" in str(outcomes["close-mid-frame"])


async def test_close_before_reply_on_a_pooled_connection_is_retried_once(
    nursery, fault_clock
) -> None:
    plan = Plan({"honest": 1.0, "close-before-reply": 1.0})
    server = FaultServer("s", plan, seed=3)
    port = await nursery.start(server.serve)
    failures = 0
    # Never down: a run of fresh connections hung up on would count towards it.
    async with Go19Endpoint([(LOCALHOST, port)], allowed_sizes=(9,),
                            max_failures=1000) as endpoint:
        for _ in range(40):
            try:
                await endpoint.request(nine())
            except ConnectionFailed:
                failures += 1
    assert server.retried > 0 and failures > 0
    assert failures == server.injected["connection"]


async def test_a_stray_reply_is_never_read_as_the_next_answer(nursery, fault_clock) -> None:
    """The server answers, then sends a stray pass. The next request on that connection
    would read the pass as its answer: the pooled connection must be dropped instead."""
    server = FaultServer("s", Plan({"double-reply": 1.0}), seed=1)
    port = await nursery.start(server.serve)
    async with Go19Endpoint([(LOCALHOST, port)], allowed_sizes=(9,)) as endpoint:
        await endpoint.request(nine())
        while not server.strays:  # sent over loopback: in the client's socket once sent
            await trio.sleep(0.01)
        second = nine({40: BLACK})
        reply = await endpoint.request(second)
        (replica,) = endpoint.replica_stats()
    board, point = server.answered[-1]
    assert board == second.board  # the server's answer to this very request...
    assert reply == wire.MoveReply(*divmod(point, 9))  # ...is what the client got
    assert server.connections == 2 and replica.reconnects == 1 and replica.errors == 0


async def test_error_reply_closes_the_connection(nursery, fault_clock) -> None:
    server = FaultServer("s", Plan({"error": 1.0}), seed=1)
    port = await nursery.start(server.serve)
    async with Go19Endpoint([(LOCALHOST, port)], allowed_sizes=(9,)) as endpoint:
        for _ in range(3):
            with pytest.raises(RefusedMove, match="p: injected fault: model not loaded"):
                (await Go19Player(endpoint, "p").answer(Game(9))).move()
    assert server.connections == 3


async def test_suicide_and_superko_are_computed_from_the_board(nursery, fault_clock) -> None:
    # Black to play: A9 (point 0) is surrounded by white stones with two liberties each.
    stones = {1: 2, 9: 2, 2: 2, 10: 2}
    game = Game(9)
    game.setup(white=list(stones), to_play=BLACK)
    server = FaultServer("s", Plan({"suicide": 1.0}), seed=1)
    port = await nursery.start(server.serve)
    async with Go19Endpoint([(LOCALHOST, port)], allowed_sizes=(9,)) as endpoint:
        assert await reason_of(endpoint, game) == "illegal:suicide"
    # Superko needs the game's history, which the server pieces together from the
    # positions it was asked about: here every position of a game that ends in a ko.
    server = FaultServer("s", Plan({"superko": 1.0}), seed=1)
    port = await nursery.start(server.serve)
    game = Game(9)
    async with Go19Endpoint([(LOCALHOST, port)], allowed_sizes=(9,)) as endpoint:
        for point in KO_SEQUENCE:
            assert await reason_of(endpoint, game) is None  # no repeat possible yet: honest
            game.play(point)
        # Black has just taken the ko at C8; White retaking at B8 would repeat a position.
        assert await reason_of(endpoint, game) == "illegal:superko"
    assert server.injected == {"illegal:superko": 1}


# B B9, W C9, B A8, W D8, B B7, W C7, B J1 (elsewhere), W B8, B C8 takes the ko.
KO_SEQUENCE = [1, 2, 9, 12, 19, 20, 80, 10, 11]


async def test_backoff_events_then_down(fault_clock) -> None:
    events: list[tuple[float, Event]] = []
    port = free_port()
    async with Go19Endpoint(
        [(LOCALHOST, port)], allowed_sizes=(9,), name="p",
        on_event=lambda event: events.append((trio.current_time(), event)),
    ) as endpoint:
        for _ in range(6):
            with pytest.raises(ConnectionFailed):
                await endpoint.request(nine())
    where = f"p: 127.0.0.1:{port}"
    assert [(t, words(e)) for t, e in events] == [
        (0.0, f"{where}: connect failed (connection refused); retry in 1.5 s"),
        (1.5, f"{where}: connect failed (connection refused); retry in 3 s"),
        (4.5, f"{where}: connect failed (connection refused); retry in 4.5 s"),
        (9.0, f"{where}: connect failed (connection refused); retry in 6 s"),
        (15.0, f"{where}: connect failed (connection refused); retry in 7.5 s"),
        (22.5, f"{where}: down after 6 failed connects (connection refused)"),
    ]


async def test_a_replica_in_backoff_never_delays_a_request(nursery, fault_clock) -> None:
    """Requests that picked the dead replica while it looked fine must not wait out the
    backoff another request just started: the live replica is free."""
    port = await nursery.start(FaultServer("s", Plan(), seed=1).serve)
    done_at = []
    async with Go19Endpoint(
        [(LOCALHOST, free_port()), (LOCALHOST, port)], slots_per_replica=4, allowed_sizes=(9,)
    ) as endpoint:

        async def one() -> None:
            await endpoint.request(nine())
            done_at.append(trio.current_time())

        async with trio.open_nursery() as clients:
            for _ in range(6):
                clients.start_soon(one)
    assert done_at == [0.0] * 6


async def test_a_replica_comes_back_on_its_own_schedule(nursery, fault_clock) -> None:
    """A flapping replica beside a healthy one is tried again when its backoff ends,
    and is used again once it is back."""
    flapping = FaultServer("flap", Plan(flap=Window(period=1000, duration=8, phase=2)), seed=1)
    steady = FaultServer("steady", Plan(), seed=2)
    ports = [await nursery.start(flapping.serve), await nursery.start(steady.serve)]
    events: list[tuple[float, ReplicaChanged]] = []
    async with Go19Endpoint(
        [(LOCALHOST, p) for p in ports], allowed_sizes=(9,),
        on_event=lambda event: events.append((trio.current_time(), event)),
    ) as endpoint:
        for _ in range(60):
            await endpoint.request(nine())
            await trio.sleep(0.25)
        (flap_stats, _) = endpoint.replica_stats()
    first, last = events[0][1], events[-1][1]
    assert (first.status, first.retry_in, first.error) == ("backoff", 1.5, "connection refused")
    assert (last.status, last.probes) == ("ok", 0)  # reconnected, never down
    failed_at = [t for t, event in events if event.status == "backoff"]
    assert last.failures == len(failed_at)
    # Each attempt waited at least its backoff: 1.5 s, then 3 s, then 4.5 s ...
    gaps = [b - a for a, b in zip(failed_at, failed_at[1:], strict=False)]
    assert all(gap >= 1.5 * (i + 1) for i, gap in enumerate(gaps))
    assert 10.0 <= events[-1][0] <= 10.0 + 1.5 * len(failed_at)
    assert flap_stats.status == "ok" and flapping.requests > 8


async def test_late_replies_never_count_as_moves_under_load(nursery) -> None:
    """The probe's scenario on the real clock: a server that answers half the requests
    just after the deadline (timeout + 5 ms), many games at once. Whatever the machine's
    load, no move slower than the timeout is the player's own, and every late answer is
    a timeout fallback (a busy machine may add timeouts of its own, never remove one)."""
    timeout = 0.2
    server = FaultServer("s", Plan({"honest": 1.0, "late": 1.0}, late_s=timeout + 0.005),
                         seed=5)
    port = await nursery.start(server.serve)
    settings = RefereeSettings(size=9, move_cap=8, move_timeout_s=timeout, void_after=99)
    games = []
    async with Go19Endpoint([(LOCALHOST, port)], slots_per_replica=32,
                            allowed_sizes=(9,)) as endpoint:
        players = {n: Go19Player(endpoint, n, RenderSettings(image_px=64)) for n in ("a", "b")}

        async def one(number: int) -> None:
            games.append(await play_game(GameSpec(number, "a", "b"), number, players, settings))

        async with trio.open_nursery() as tables:
            for number in range(32):
                tables.start_soon(one, number)
    own = [m.ms for g in games for m in g.moves if m.source is None]
    timeouts = sum(m.source == "fallback:timeout" for g in games for m in g.moves)
    print(f"\n32 games at once: {len(own)} own moves (slowest {max(own, default=0):.0f} ms), "
          f"{timeouts} timeout fallbacks for {server.injected['timeout']} late replies")
    assert len(games) == 32 and server.injected["timeout"] > 0
    assert all(ms < timeout * 1000.0 for ms in own)
    assert timeouts >= server.injected["timeout"]
