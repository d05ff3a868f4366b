"""The OpenAI player's replicas over real loopback HTTP: GO19's pool policy (slots,
least-loaded pick, failing over, down after 6 failed connects) with ``GET /v1/models`` as
the probe that brings a replica back, and the model listing for the preflight.

The backoff waits run on a virtual clock that jumps only after 0.1 s of real idleness
(nothing is in flight then); everything else waits for a state."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from orchestrator.collect.standings import words
from orchestrator.events import Event, ReplicaChanged
from orchestrator.players.base import ConnectionFailed, EndpointDown
from orchestrator.players.openai import AskSettings, OpenAIEndpoint, OpenAIPlayer
from orchestrator.players.openai_http import list_models, model_missing
from orchestrator.prompt import read_template
from orchestrator.rules.game import Game
from tests.dataset.games import p
from tests.players.openai_server import LOCALHOST, OpenAIServer
from tests.serve.conftest import closed_port

# Seconds between connect attempts: 1.5 * n after the n-th consecutive failure.
ATTEMPTS = [0.0, 1.5, 4.5, 9.0, 15.0, 22.5]


def url(port: int) -> str:
    return f"http://{LOCALHOST}:{port}/v1"


def player(endpoint: OpenAIEndpoint) -> OpenAIPlayer:
    return OpenAIPlayer(endpoint, AskSettings("r5", read_template(None)), "r5")


async def test_a_dead_replica_is_skipped_without_a_fallback(nursery) -> None:
    server = OpenAIServer()
    live = url(await nursery.start(server.serve))
    dead = url(closed_port())
    events: list[Event] = []
    async with OpenAIEndpoint([dead, live], "r5", on_event=events.append,
                              name="r5") as endpoint:
        answers = [await player(endpoint).answer(Game()) for _ in range(4)]
        stats = {s.address: s for s in endpoint.replica_stats()}
    assert [(a.point, a.fault) for a in answers] == [(p("Q16"), None)] * 4
    assert all(a.details is not None and a.details.replica == live for a in answers)
    assert (stats[dead].status, stats[dead].errors, stats[dead].last_error) == \
        ("backoff", 1, "connection refused")
    assert (stats[live].status, stats[live].requests) == ("ok", 4)
    assert events == [ReplicaChanged(dead, "backoff", 1.5, "connection refused", 1,
                                     player="r5")]
    assert words(events[0]) == f"r5: {dead}: connect failed (connection refused); retry in 1.5 s"


async def test_slots_bound_the_requests_in_flight_and_the_least_loaded_takes_the_next(
        nursery) -> None:
    gate = trio.Event()
    servers = [OpenAIServer(gate=gate), OpenAIServer(gate=gate)]
    urls = [url(await nursery.start(s.serve)) for s in servers]
    done: list[int | None] = []
    async with OpenAIEndpoint(urls, "r5", slots_per_replica=3) as endpoint:
        async with trio.open_nursery() as games:
            for _ in range(10):
                games.start_soon(lambda: _ask(endpoint, done))
            for server in servers:
                await server.wait_for(lambda s=server: s.running == 3)
            assert endpoint.queued == 4
            assert [s.in_flight for s in endpoint.replica_stats()] == [3, 3]
            gate.set()
    assert done == [p("Q16")] * 10
    assert [s.most_running for s in servers] == [3, 3]
    assert sum(len(s.seen) for s in servers) == 10


async def _ask(endpoint: OpenAIEndpoint, done: list[int | None]) -> None:
    done.append((await player(endpoint).answer(Game())).point)


async def test_down_after_six_failed_connects_and_back_when_the_model_is_listed(
        nursery, loopback_clock) -> None:
    port = closed_port()
    events: list[Event] = []
    async with OpenAIEndpoint([url(port)], "r5", on_event=events.append,
                              nursery=nursery) as endpoint:
        failed_at = []
        for _ in range(6):
            answer = await player(endpoint).answer(Game())
            assert answer.fault is not None and answer.fault.reason == "connection"
            failed_at.append(trio.current_time())
        assert failed_at == ATTEMPTS
        assert isinstance(answer.fault, EndpointDown) and endpoint.is_down()
        assert events[-1] == ReplicaChanged(url(port), "down", 9.0, "connection refused", 6)
        assert words(events[-1]) == \
            f"{url(port)}: down after 6 failed connects (connection refused)"

        # The server comes back without the adapter: the probe keeps the replica down.
        server = OpenAIServer(models=["base"])
        await nursery.start(server.serve, port)
        # A probe is sent only once the one before was answered and judged: the second
        # one proves that the first found the model missing.
        await server.wait_for(lambda: sum(s.path.endswith("/models") for s in server.seen) == 2)
        (stats,) = endpoint.replica_stats()
        assert stats.status == "down"
        assert stats.last_error == "model 'r5' is not served; it lists base"
        assert not server.faults  # no chat request reached it while down

        server.models.append("r5")
        with trio.fail_after(60):
            await endpoint.wait_up()
        answer = await player(endpoint).answer(Game())
    assert (answer.point, answer.fault) == (p("Q16"), None)
    back = events[-1]
    assert isinstance(back, ReplicaChanged) and (back.status, back.probe) == ("ok", "lists r5")
    assert words(back).startswith(f"{url(port)}: back up, lists r5 after ")
    assert words(back).endswith("; in use again")


async def test_models_listing_for_the_preflight(nursery) -> None:
    server = OpenAIServer(models=["Qwen/Qwen3-VL-8B-Instruct", "lora_mix_qwen_r4"])
    live = url(await nursery.start(server.serve))
    names = await list_models(live)
    assert names == ["Qwen/Qwen3-VL-8B-Instruct", "lora_mix_qwen_r4"]
    assert model_missing("lora_mix_qwen_r4", live, names) is None
    assert model_missing("lora_mix_qwen_r5", live, names) == (
        f"{live}: model 'lora_mix_qwen_r5' is not served; it lists "
        "Qwen/Qwen3-VL-8B-Instruct, lora_mix_qwen_r4")
    assert model_missing("x", live, []) == f"{live}: model 'x' is not served; it lists " \
        "no model at all"
    dead = url(closed_port())
    with pytest.raises(ConnectionFailed, match="connection refused"):
        await list_models(dead)

    keyed = OpenAIServer(api_key="k")
    guarded = url(await nursery.start(keyed.serve))
    assert await list_models(guarded, api_key="k") == ["base", "r5"]
    with pytest.raises(Exception, match="HTTP 401: Unauthorized"):
        await list_models(guarded)


async def test_a_models_listing_that_never_comes_is_bounded() -> None:
    with trio.socket.socket() as sock:  # accepts connections (backlog), never answers
        await sock.bind((LOCALHOST, 0))
        sock.listen(8)
        silent = url(sock.getsockname()[1])
        with trio.fail_after(10), pytest.raises(ConnectionFailed,
                                                 match="no answer within 0.2 s"):
            await list_models(silent, timeout=0.2)


async def test_a_dropped_request_is_not_counted_as_a_timeout(nursery) -> None:
    """As for GO19 (tests/serve/test_backoff_pool.py): a request cut off by its deadline is
    the replica's timeout; one cancelled before its deadline (a second Ctrl-C dropping the
    games in flight) says nothing about the replica. The deadline is real and short: the
    request is real I/O."""
    server = OpenAIServer(gate=trio.Event())  # holds every answer
    live = url(await nursery.start(server.serve))
    async with OpenAIEndpoint([live], "r5", slots_per_replica=4) as endpoint:
        with trio.move_on_after(0.5) as deadline:
            await player(endpoint).answer(Game())
        assert deadline.cancelled_caught
        (stats,) = endpoint.replica_stats()
        assert stats.timeouts == 1

        async def dropped(task_status=trio.TASK_STATUS_IGNORED) -> None:
            with trio.move_on_after(600):  # a deadline it never reaches
                task_status.started()
                await player(endpoint).answer(Game())

        async with trio.open_nursery() as games:
            for _ in range(3):
                await games.start(dropped)
            await server.wait_for(lambda: server.running == 4)  # the first one's too
            games.cancel_scope.cancel()  # as collect drops the games in flight
        (stats,) = endpoint.replica_stats()
    assert (stats.timeouts, stats.errors, stats.requests) == (1, 0, 4)
