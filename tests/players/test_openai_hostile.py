"""The hostile servers of docs/reliability.md over real loopback sockets: every answer says
which request it answers (``answers seed S``, the request's own sampling seed), and every
reply the player keeps must be its own request's, whatever else the server sends.

Requests go two at a time, each with a seed of its own (a game number of its own), as
games share an endpoint; ``bench/openai_hostile.py`` counts the same over whole games, on
main and here."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from orchestrator.collect.standings import words
from orchestrator.events import Event, ReplicaChanged
from orchestrator.players.base import Answer, ProtocolViolation
from orchestrator.players.openai import AskSettings, OpenAIEndpoint, OpenAIPlayer
from orchestrator.players.openai_http import check_model, list_models
from orchestrator.players.openai_wire import request_seed
from orchestrator.prompt import read_template
from orchestrator.rules.game import Game
from tests.players.openai_server import (
    DEEP_JSON,
    LOCALHOST,
    OpenAIServer,
    answers_seed,
    choose_by_seed,
)

REQUESTS = 12
GUARD_S = 30.0


def tagged(**changes) -> OpenAIServer:
    return OpenAIServer(reply=choose_by_seed, tag_replies=True, **changes)


async def url_of(nursery: trio.Nursery, server: OpenAIServer) -> str:
    return f"http://{LOCALHOST}:{await nursery.start(server.serve)}/v1"


async def ask_all(endpoint: OpenAIEndpoint, count: int = REQUESTS
                  ) -> list[tuple[int, Answer]]:
    """``count`` requests, two at a time, game ``n`` for the n-th: (n, its answer)."""
    player = OpenAIPlayer(endpoint, AskSettings("r5", read_template(None),
                                                constrain="choice"), "vlm")
    answers: list[tuple[int, Answer]] = []
    limiter = trio.CapacityLimiter(2)

    async def one(number: int) -> None:
        async with limiter:
            answers.append((number, await player.answer(Game(9), number)))

    with trio.fail_after(GUARD_S):
        async with trio.open_nursery() as nursery:
            for number in range(count):
                nursery.start_soon(one, number)
    return sorted(answers, key=lambda pair: pair[0])


def not_their_own(answers: list[tuple[int, Answer]]) -> list[tuple[int, str | None]]:
    """The answers kept that are not their request's: (game, what the reply says)."""
    return [(number, a.details.reasoning) for number, a in answers
            if a.details is not None
            and a.details.reasoning != answers_seed(request_seed(0, 0, number, 1))]


def faults(answers: list[tuple[int, Answer]]) -> list[str]:
    return [a.fault.reason for _, a in answers if a.fault is not None]


@pytest.mark.parametrize("stray_every, delay_s", [(1, 0.0), (5, 0.0), (1, 0.05)],
                         ids=["same-write", "every-5th", "delayed"])
async def test_an_unrequested_completion_is_never_a_moves_reply(
        nursery, stray_every, delay_s) -> None:
    server = tagged(stray_every=stray_every, stray_delay_s=delay_s)
    async with OpenAIEndpoint([await url_of(nursery, server)], "r5",
                              slots_per_replica=2) as endpoint:
        answers = await ask_all(endpoint)
    assert server.strays == REQUESTS // stray_every  # the server did misbehave
    assert not_their_own(answers) == []
    assert faults(answers) == []


async def test_a_content_length_one_byte_short_costs_no_other_request(nursery) -> None:
    """Each reply reads whole, one byte left behind it: that byte must not become the
    start of another request's reply (on main: every second request a protocol fault)."""
    server = tagged()
    server.queue(*["short-length"] * REQUESTS)
    async with OpenAIEndpoint([await url_of(nursery, server)], "r5",
                              slots_per_replica=2) as endpoint:
        answers = await ask_all(endpoint)
    assert server.faults == ["short-length"] * REQUESTS
    assert not_their_own(answers) == [] and faults(answers) == []


async def test_a_connection_the_server_closes_before_replying_costs_no_request(
        nursery) -> None:
    """The keep-alive race: a server that closes an idle connection as a request arrives
    on it. Every request has a connection of its own, so none arrives on a closing one."""
    server = tagged(close_reused=True)
    async with OpenAIEndpoint([await url_of(nursery, server)], "r5",
                              slots_per_replica=2) as endpoint:
        answers = await ask_all(endpoint)
    assert not_their_own(answers) == [] and faults(answers) == []
    assert len(server.seen) == REQUESTS  # and none was sent twice


async def test_a_429_holds_that_replica_and_the_others_take_its_load(nursery) -> None:
    busy, calm = tagged(retry_after="30"), tagged()  # a hold longer than the test
    busy.queue(*["throttle"] * REQUESTS)
    events: list[Event] = []
    urls = [await url_of(nursery, busy), await url_of(nursery, calm)]
    async with OpenAIEndpoint(urls, "r5", slots_per_replica=2, on_event=events.append,
                              name="r5") as endpoint:
        answers = await ask_all(endpoint)
        stats = {s.address: s for s in endpoint.replica_stats()}
        now = trio.current_time()
    assert not_their_own(answers) == [] and faults(answers) == []
    assert busy.faults == ["throttle"]  # one refused request, then none until Retry-After
    assert len(calm.seen) == REQUESTS  # the refused one too, at once
    held = stats[urls[0]]
    assert held.status == "throttled" and held.retry_at is not None and held.retry_at > now
    (event,) = events
    assert event == ReplicaChanged(urls[0], "throttled", 30.0,
                                   "HTTP 429: rate limit exceeded (retry after 30 s)",
                                   player="r5")
    assert words(event) == (f"r5: {urls[0]}: throttled (HTTP 429: rate limit exceeded "
                            "(retry after 30 s)); no request for 30 s")


async def test_a_lone_throttled_replica_is_waited_for_within_the_deadline(
        nursery, loopback_clock) -> None:
    server = tagged(retry_after="3")
    server.queue("unavailable", "answer", "throttle", "throttle")
    async with OpenAIEndpoint([await url_of(nursery, server)], "r5") as endpoint:
        player = OpenAIPlayer(endpoint, AskSettings("r5", read_template(None)), "vlm")
        asked = trio.current_time()
        waited = await player.answer(Game())  # 503, 3 s, then answered
        waited_s = trio.current_time() - asked
        twice = await player.answer(Game())  # 429, 3 s, 429 again: its own fault
    assert waited.fault is None and waited.details is not None
    assert 3.0 <= waited_s < 3.5
    assert server.faults == ["unavailable", "answer", "throttle", "throttle"]
    assert twice.fault is not None and twice.fault.reason == "error"
    assert str(twice.fault).endswith("HTTP 429: rate limit exceeded (retry after 3 s)")


async def test_deep_json_anywhere_is_a_protocol_fault_in_one_line(nursery) -> None:
    server = tagged(models_body=DEEP_JSON)
    server.queue("deep-json")
    url = await url_of(nursery, server)
    async with OpenAIEndpoint([url], "r5") as endpoint:
        answers = await ask_all(endpoint, 3)
    (deep,) = [a for _, a in answers if a.fault is not None]
    rest = [(n, a) for n, a in answers if a is not deep]
    assert deep.fault is not None and deep.fault.reason == "protocol"
    assert str(deep.fault).startswith(f"{url}: not JSON (nested deeper than 200 levels): [[[")
    assert len(str(deep.fault)) < 300 and not_their_own(rest) == []
    with pytest.raises(ProtocolViolation, match="nested deeper than 200 levels"):
        await list_models(url)
    ok, reason, _, names = await check_model(url, "r5")  # the play page's and ping's check
    assert (ok, names) == (False, []) and reason.startswith("not JSON (nested deeper")
