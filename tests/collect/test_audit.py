"""The serving audit against a real loopback server that mixes models on purpose: its base
model answers as adapter b whenever its request shares the server with others, as vLLM
0.32's CPU build does (tests/vllm finds it on the real one). The audit must name exactly
that model and whose answer it gave, pass the adapters that keep their own answers, and
stop a run with --strict-audit.

Each answer waits one virtual second (the loopback clock jumps only once nothing is in
flight), so the mixed batch's requests are all on the server before any is answered."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from orchestrator.collect.audit import (
    BATCHED_ROUNDS,
    MIXED_COPIES,
    PROBE_PLIES,
    ServingAuditFailed,
    audit_servers,
)
from orchestrator.collect.matchup import load_matchup
from tests.players.openai_server import LOCALHOST, OpenAIServer

MATCHUP = """
[players.base]
kind = "openai"
base_urls = ["{url}"]
model = "base"
constrain = "choice"
[players.a]
kind = "openai"
base_urls = ["{url}"]
model = "a"
constrain = "choice"
[players.b]
kind = "openai"
base_urls = ["{url}"]
model = "b"
constrain = "choice"
[pairing]
black = "base"
white = "a"
"""
OWN_CHOICE = {"a": 0, "b": 1, "base": 2}  # which of the legal moves each model answers


def mixing_server(unmixed: int = 0) -> OpenAIServer:
    """``unmixed``: the base model's first requests in company that still answer its own
    (a server that did not batch them with the others)."""
    server = OpenAIServer(models=["base", "a", "b"], delay_s=1.0)
    in_company = 0

    def reply(request: dict) -> str:
        nonlocal in_company
        choices = request["structured_outputs"]["choice"]
        model = request["model"]
        if model == "base" and server.most_running > 1:  # in company: b's answer
            in_company += 1
            if in_company > unmixed:
                model = "b"
        return choices[OWN_CHOICE[model]]

    server.reply = reply
    return server


async def audited(tmp_path: Path, nursery: trio.Nursery, strict: bool = False,
                  unmixed: int = 0) -> tuple[list, list[str], str]:
    port = await nursery.start(mixing_server(unmixed).serve)
    url = f"http://{LOCALHOST}:{port}/v1"
    path = tmp_path / "mixed.toml"
    path.write_text(MATCHUP.format(url=url))
    said: list[str] = []
    findings = await audit_servers(load_matchup(path), said.append, strict=strict)
    return findings, said, url


async def test_the_model_that_answers_as_another_is_named(tmp_path, nursery,
                                                          loopback_clock) -> None:
    findings, said, url = await audited(tmp_path, nursery)
    assert [(f.model, f.like, f.changed, f.probes) for f in findings] == [("base", "b", 3, 3)]
    (line,) = said
    assert line.startswith(f"warning: serving audit: {url}: base answers as b when batched "
                           "with a, b (3 of 3 probe positions; alone ")


async def test_strict_audit_stops_before_anything_is_recorded(tmp_path, nursery,
                                                              loopback_clock) -> None:
    with pytest.raises(ServingAuditFailed, match=r"base answers as b when batched with a, b "
                       r".*; --strict-audit: nothing recorded$"):
        await audited(tmp_path, nursery, strict=True)


async def test_a_mixed_round_the_server_did_not_batch_is_sent_again(tmp_path, nursery,
                                                                    loopback_clock) -> None:
    # Every copy of the first mixed round's base probes was answered as if alone (on a
    # busy machine vLLM answered each before the others arrived): the next round finds it.
    findings, said, url = await audited(tmp_path, nursery,
                                        unmixed=len(PROBE_PLIES) * MIXED_COPIES)
    assert [(f.model, f.like, f.changed, f.probes) for f in findings] == [("base", "b", 3, 3)]
    assert said[0].startswith(f"warning: serving audit: {url}: base answers as b ")


async def test_a_server_that_never_batched_them_passes_after_every_round(
        tmp_path, nursery, loopback_clock) -> None:
    findings, said, url = await audited(tmp_path, nursery,
                                        unmixed=BATCHED_ROUNDS * MIXED_COPIES * len(PROBE_PLIES))
    assert findings == []
    assert said == [f"● serving audit: {url}: a, b, base answer alike alone and batched "
                    "together (3 probe positions)"]
