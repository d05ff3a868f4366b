"""A server that misbehaves on purpose (tests/players/openai_server.py): each misbehaviour
becomes its fallback reason through the referee's own `ask`, nothing hangs past the
move's deadline, the next request is answered, and a whole game goes on.

The server is reached in memory through the client's ``Transport`` seam (h11 on both
sides, exactly as over a socket), on a virtual clock: a timeout is the deadline's, not
the machine's. A reset needs a real socket and gets one; the hostile modes that need the
real network are tests/players/test_openai_hostile.py."""

from __future__ import annotations

from collections import Counter

import pytest
import trio
import trio.testing

from orchestrator.collect.referee import GameSpec, RefereeSettings, ask, play_game
from orchestrator.move_record import KEPT_CHARS, Origin
from orchestrator.players.heuristic import HeuristicPlayer
from orchestrator.players.openai import AskSettings, OpenAIEndpoint, OpenAIPlayer
from orchestrator.players.openai_http import MAX_REPLY_BYTES
from orchestrator.prompt import read_template
from orchestrator.rules.game import Game
from tests.dataset.games import p
from tests.players.openai_server import HUGE_BYTES, LOCALHOST, OpenAIServer

DEADLINE_S = 0.5  # of a move that must time out (virtual time)
GUARD_S = 20.0  # nothing here may take this long: a hang fails instead of blocking
URL = "http://memory.test:8000/v1"  # in memory: never resolved

FAULTS = [
    ("error-500", "error", "HTTP 500: CUDA out of memory"),
    ("error-404", "error", "HTTP 404: The model `r5` does not exist."),
    ("garbage-json", "protocol", "not JSON"),
    ("no-choices", "protocol", "no choices in the reply"),
    ("huge-reply", "protocol", f"reply over the {MAX_REPLY_BYTES}-byte bound"),
    ("huge-declared", "protocol", f"over the {MAX_REPLY_BYTES}-byte bound"),
    ("not-http", "protocol", "not an HTTP reply"),
    ("deep-json", "protocol", "not JSON (nested deeper than 200 levels)"),
    ("close", "connection", "closed the connection without replying"),
]
HANGS = ["endless-body", "slow-header"]


@pytest.fixture
def virtual_clock() -> trio.testing.MockClock:
    """In memory nothing is in flight while every task waits: the clock may jump at once."""
    return trio.testing.MockClock(autojump_threshold=0)


def settings(**changes) -> AskSettings:
    return AskSettings(**{"model": "r5", "template": read_template(None), **changes})


def in_memory(nursery: trio.Nursery, server: OpenAIServer) -> OpenAIEndpoint:
    return OpenAIEndpoint([URL], "r5", transport=server.transport(nursery))


def no_crash(exc: Exception) -> None:
    raise AssertionError(f"the player raised something that is not a player fault: {exc!r}")


async def _fault_then_answer(endpoint: OpenAIEndpoint, server: OpenAIServer, url: str,
                             fault: str, reason: str, message: str) -> None:
    player = OpenAIPlayer(endpoint, settings(), "r5")
    server.queue(fault)
    answer = await player.answer(Game())
    assert answer.point is None and answer.fault is not None
    assert answer.fault.reason == reason
    assert message in str(answer.fault) and url in str(answer.fault)
    assert "\n" not in str(answer.fault)
    server.queue(fault)
    asked = await ask(player, Game(), 10.0, no_crash)  # the referee's own call
    assert (asked.point, asked.failure) == (None, reason)
    honest = await ask(player, Game(), 10.0, no_crash)
    assert (honest.point, honest.failure) == (p("Q16"), None)
    (stats,) = endpoint.replica_stats()
    assert server.faults == [fault, fault, "answer"]
    assert (stats.errors, stats.status, stats.consecutive_failures) == (2, "ok", 0)


@pytest.mark.parametrize("fault, reason, message", FAULTS)
async def test_each_fault_is_its_reason_and_the_next_move_is_answered(
        nursery, virtual_clock, fault, reason, message) -> None:
    server = OpenAIServer()
    with trio.fail_after(GUARD_S):
        async with in_memory(nursery, server) as endpoint:
            await _fault_then_answer(endpoint, server, URL, fault, reason, message)


async def test_a_reset_is_a_connection_fault_on_a_real_socket(nursery) -> None:
    server = OpenAIServer()
    url = f"http://{LOCALHOST}:{await nursery.start(server.serve)}/v1"
    with trio.fail_after(GUARD_S):
        async with OpenAIEndpoint([url], "r5") as endpoint:
            await _fault_then_answer(endpoint, server, url, "reset", "connection", "")


@pytest.mark.parametrize("fault", HANGS)
async def test_a_reply_that_never_comes_is_a_timeout_at_the_deadline(
        nursery, virtual_clock, fault) -> None:
    server = OpenAIServer()
    with trio.fail_after(GUARD_S):
        async with in_memory(nursery, server) as endpoint:
            player = OpenAIPlayer(endpoint, settings(), "r5")
            server.queue(fault)
            asked_at = trio.current_time()
            asked = await ask(player, Game(), DEADLINE_S, no_crash)
            returned = trio.current_time() - asked_at
            assert (asked.point, asked.failure) == (None, "timeout")
            assert returned == DEADLINE_S
            await server.wait_for(lambda: server.left == 1)  # the request's connection closed
            honest = await ask(player, Game(), 10.0, no_crash)
            assert (honest.point, honest.failure) == (p("Q16"), None)
        (stats,) = endpoint.replica_stats()
    assert (stats.timeouts, stats.status) == (1, "ok")


async def test_no_move_in_the_reply_is_unparsed_and_reasoning_is_not_the_answer(
        nursery, virtual_clock) -> None:
    server = OpenAIServer(reply="I would rather not say", reasoning="Q16 is the vital point")
    async with in_memory(nursery, server) as endpoint:
        player = OpenAIPlayer(endpoint, settings(), "r5")
        unparsed = await player.answer(Game())
        server.reply = lambda request: None  # "content": null beside the reasoning
        empty = await player.answer(Game())
        server.reply = "**D4**, because Q16 is taken"
        server.reasoning_field = "reasoning"  # vLLM's name since it dropped the other
        chatty = await player.answer(Game())
        asked = await ask(player, Game(), 10.0, no_crash)
    assert unparsed.fault is not None and unparsed.fault.reason == "unparsed"
    assert "unparsed: I would rather not say" in str(unparsed.fault)
    assert unparsed.details is not None and unparsed.details.reply == "I would rather not say"
    assert unparsed.details.reasoning == "Q16 is the vital point"
    assert empty.fault is not None and empty.fault.reason == "unparsed"
    assert empty.details is not None and empty.details.reply is None
    assert (chatty.point, chatty.fault) == (p("D4"), None)
    assert chatty.details is not None and chatty.details.reasoning == "Q16 is the vital point"
    assert (asked.point, asked.failure) == (p("D4"), None)


async def test_the_details_of_a_reply_are_kept_bounded(nursery, virtual_clock) -> None:
    long_reply = "x" * 4990 + " then Q16"
    server = OpenAIServer(reply=long_reply, reasoning="r" * 3000, usage=(1500, 2048))
    url = URL
    async with in_memory(nursery, server) as endpoint:
        answer = await OpenAIPlayer(endpoint, settings(), "r5").answer(Game())
    details = answer.details
    assert answer.point == p("Q16") and details is not None
    assert (details.replica, details.prompt_tokens, details.completion_tokens) == \
        (url, 1500, 2048)
    assert details.finish_reason == "stop" and details.latency_ms >= 0
    assert details.reply == long_reply[:KEPT_CHARS] and details.reply_chars == len(long_reply)
    assert details.reasoning == "r" * KEPT_CHARS and details.reasoning_chars == 3000


async def test_a_game_goes_on_through_every_fault(nursery, virtual_clock) -> None:
    """The model plays Black through every misbehaviour in turn; each is one fallback of
    its reason at its move, and the game ends by the rules, not void."""
    script = [f for f, _, _ in FAULTS] + HANGS
    reasons = {f: r for f, r, _ in FAULTS} | {f: "timeout" for f in HANGS}
    server = OpenAIServer()
    server.queue(*script)
    rules = RefereeSettings(size=9, komi=7.0, move_cap=60, move_timeout_s=DEADLINE_S,
                            void_after=len(script))
    with trio.fail_after(GUARD_S * 2):
        async with in_memory(nursery, server) as endpoint:
            # constrain = "choice": the server answers the first legal move it is offered.
            vlm = OpenAIPlayer(endpoint, settings(constrain="choice"), "vlm")
            players = {"vlm": vlm, "ai": HeuristicPlayer("ai", seed=1)}
            game = await play_game(GameSpec(0, "vlm", "ai"), 1, players, rules)
    assert game.reason in ("two-passes", "move-cap")
    assert game.fallbacks["vlm"] == Counter(reasons[f] for f in script)
    black = [(m.origin, m.reason) for m in game.moves if m.color == 1]
    assert black[:len(script)] == [(Origin.FALLBACK, reasons[f]) for f in script]
    assert all(said == (Origin.OWN, None) for said in black[len(script):])
    assert len(black) > len(script)  # and it went on playing its own moves


def test_the_huge_replies_are_over_the_bound() -> None:
    assert HUGE_BYTES > MAX_REPLY_BYTES
