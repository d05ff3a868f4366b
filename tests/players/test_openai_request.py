"""What the OpenAI player sends, as a real server receives it: exactly the picture and text
that `go19 dataset export` writes for the position (train/serve consistency), the legal
moves when constrained (superko excluded), the sampling fields, and the API key only in
its header.

Expected values come from the export's own output files, from positions drawn by hand
and from the request bytes the server received, never from the player's code."""

from __future__ import annotations

import base64
import json
import logging
import re
from pathlib import Path

import pytest
import trio

from orchestrator.collect.standings import words
from orchestrator.color import BLACK, WHITE
from orchestrator.coords import to_gtp
from orchestrator.dataset import BuildOptions, build
from orchestrator.events import Event
from orchestrator.export.pipeline import ExportOptions, export
from orchestrator.players.openai import (
    AskSettings,
    OpenAIEndpoint,
    OpenAIPlayer,
    api_key_from_env,
)
from orchestrator.players.openai_wire import request_seed
from orchestrator.prompt import read_template
from orchestrator.render import RenderSettings
from orchestrator.rules.game import Game
from tests.dataset.games import moves, p, write_game
from tests.players.openai_server import LOCALHOST, OpenAIServer, Seen

GAME = ("Q16", "D4", "Q3", "D16", "R10", "pass", "K10", "C3", "C4", "B4")
KOMI = 7.5  # what tests/dataset/games.write_game writes


async def start(nursery: trio.Nursery, server: OpenAIServer) -> str:
    port = await nursery.start(server.serve)
    return f"http://{LOCALHOST}:{port}/v1"


def settings(**changes) -> AskSettings:
    return AskSettings(**{"model": "r5", "template": read_template(None), **changes})


def image_and_text(seen: Seen) -> tuple[bytes, str]:
    (message,) = seen.json["messages"]
    assert message["role"] == "user"
    image, text = message["content"]
    assert image["type"] == "image_url" and text["type"] == "text"
    url = image["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    return base64.b64decode(url.removeprefix("data:image/png;base64,"), validate=True), \
        text["text"]


@pytest.mark.parametrize("spelling, prompt_file", [
    ("gtp", None),
    ("sgf", "{side} to play move {move_number} (komi {komi}), {answer_format}:\n{board}\n"),
    ("rowcol", 'Quotes survive: "url":"@image@" {side_letter} {{"json": "no"}}'),
])
async def test_the_request_is_the_exported_sample(nursery, tmp_path: Path, spelling,
                                                  prompt_file) -> None:
    """Play a recorded game's positions to the player and export the same game: every
    request carries the export's PNG bytes and the export's prompt text."""
    write_game(tmp_path / "sgf" / "a.sgf", moves(*GAME), result="W+R")
    build([tmp_path / "sgf"], tmp_path / "ds", BuildOptions(dedup=False))
    path = None
    if prompt_file is not None:
        path = tmp_path / "prompt.txt"
        path.write_text(prompt_file, encoding="utf-8")
    template = read_template(path)  # what `go19 dataset export --prompt FILE` reads
    export(tmp_path / "ds", tmp_path / "ex", ExportOptions(
        format="jsonl", answer=spelling, image_px=160, template=template))
    samples = [json.loads(line) for f in sorted((tmp_path / "ex" / "data").glob("*.jsonl"))
               for line in f.read_text().splitlines()]
    assert len(samples) == len(GAME)

    server = OpenAIServer()
    url = await start(nursery, server)
    async with OpenAIEndpoint([url], "r5") as endpoint:
        player = OpenAIPlayer(endpoint, settings(template=template, answer=spelling,
                                                 render=RenderSettings(160)), "r5")
        game = Game(19, KOMI)
        for vertex in GAME:
            await player.answer(game)
            game.play(p(vertex) if vertex != "pass" else -1)
    for seen, sample in zip(server.seen, samples, strict=True):
        png, text = image_and_text(seen)
        user = sample["messages"][0]["content"]
        assert "<image>" + text == user
        assert png == (tmp_path / "ex" / sample["images"][0]).read_bytes()


def ko_game() -> tuple[Game, int]:
    """Black to play just after White took a ko: retaking at E4 would repeat the position
    before the capture (positional superko), every other empty point is legal."""
    game = Game(9, 7.5)
    game.setup(black=[p(v, 9) for v in ("C4", "D5", "D3", "E4")],
               white=[p(v, 9) for v in ("E5", "F4", "E3")], to_play=WHITE)
    game.play(p("D4", 9))  # captures E4
    assert game.to_play == BLACK and game.board[p("E4", 9)] == 0
    return game, p("E4", 9)


@pytest.mark.parametrize("constrain", ["none", "choice", "regex"])
async def test_constrain_sends_the_legal_moves_without_superko(nursery, constrain) -> None:
    server = OpenAIServer()
    url = await start(nursery, server)
    game, ko = ko_game()
    empties = [q for q in range(81) if game.board[q] == 0]
    legal = {to_gtp(q, 9) for q in empties if q != ko} | {"pass"}
    async with OpenAIEndpoint([url], "r5") as endpoint:
        player = OpenAIPlayer(endpoint, settings(constrain=constrain), "r5")
        answer = await player.answer(game)
    (seen,) = server.seen
    body = seen.json
    assert not {"guided_choice", "guided_regex", "guided_decoding_backend"} & body.keys()
    if constrain == "choice":
        choices = body["structured_outputs"]["choice"]
        assert len(choices) == len(set(choices)) and set(choices) == legal
        assert to_gtp(ko, 9) not in choices
        assert "regex" not in body
        assert answer.point is not None  # the server's answer: the first choice
    elif constrain == "regex":
        pattern = re.compile(body["regex"])
        spelled = {to_gtp(q, 9) for q in range(81)} | {"pass"}
        assert {text for text in spelled if pattern.fullmatch(text)} == legal
        assert "structured_outputs" not in body
    else:
        assert "structured_outputs" not in body and "regex" not in body


async def test_sampling_fields_and_a_seed_per_run_game_and_move(nursery) -> None:
    server = OpenAIServer()
    url = await start(nursery, server)
    async with OpenAIEndpoint([url], "lora_mix_qwen_r5") as endpoint:
        player = OpenAIPlayer(endpoint, settings(model="lora_mix_qwen_r5", temperature=0.7,
                                                 seed=11, max_tokens=9), "r5", run=3)
        game = Game(19, 6.5)
        await player.answer(game, number=4)
        await player.answer(game, number=4)  # a rerun of the same request
        await player.answer(game, number=5)
        game.play(p("Q16"))
        await player.answer(game, number=4)
    bodies = [seen.json for seen in server.seen]
    assert [(b["model"], b["temperature"], b["max_tokens"]) for b in bodies] == \
        [("lora_mix_qwen_r5", 0.7, 9)] * 4
    seeds = [b["seed"] for b in bodies]
    assert seeds[0] == seeds[1] == request_seed(11, 3, 4, 1)
    assert len({seeds[0], seeds[2], seeds[3]}) == 3
    assert seeds[3] == request_seed(11, 3, 4, 2)
    assert all(0 <= s < 2**31 for s in seeds)
    assert request_seed(11, 3, 4, 1) != request_seed(12, 3, 4, 1) != request_seed(11, 2, 4, 1)


async def test_api_key_travels_only_in_its_header(nursery, monkeypatch, caplog) -> None:
    secret = "sk-go19-test-0123456789abcdef"
    monkeypatch.setenv("GO19_TEST_OPENAI_KEY", secret)
    caplog.set_level(logging.DEBUG)
    server = OpenAIServer(api_key=secret)
    url = await start(nursery, server)
    events: list[Event] = []
    key = api_key_from_env("GO19_TEST_OPENAI_KEY")
    async with OpenAIEndpoint([url], "r5", api_key=key, on_event=events.append) as endpoint:
        player = OpenAIPlayer(endpoint, settings(), "r5")
        answered = await player.answer(Game())
        texts = [repr(endpoint), str(endpoint), repr(endpoint.link), repr(endpoint.link.client),
                 repr(endpoint.replica_stats()), repr(player.settings), repr(answered)]
    async with OpenAIEndpoint([url], "r5") as keyless:
        refused = await OpenAIPlayer(keyless, settings(), "r5").answer(Game())
    assert answered.fault is None and answered.point == p("Q16")
    assert server.seen[0].headers["authorization"] == f"Bearer {secret}"
    assert "authorization" not in server.seen[1].headers
    assert refused.fault is not None and refused.fault.reason == "error"
    assert "HTTP 401: Unauthorized" in str(refused.fault)
    texts += [repr(events), *(words(e) or "" for e in events), str(refused.fault), caplog.text]
    assert not [t for t in texts if secret in t]
    with pytest.raises(ValueError, match="GO19_TEST_OPENAI_UNSET"):
        api_key_from_env("GO19_TEST_OPENAI_UNSET")
    assert api_key_from_env(None) is None
