"""`kind = "openai"` in a matchup, against the real misbehaving HTTP server
(tests/players/openai_server.py): every field validated with one line per mistake, the
preflight's model list and trial move, and a real collect whose records keep the seeds,
tokens and what the model said (the tests with a real model are tests/vlm's)."""

from __future__ import annotations

import contextlib
import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import sgfmill.sgf
import trio
from rich.console import Console

from orchestrator.collect.dashboard import Dashboard
from orchestrator.collect.matchup import MatchupError, OpenAIPlayerSpec, load_matchup
from orchestrator.collect.preflight import (
    EndpointsUnreachable,
    PreflightInputError,
    check_endpoints,
)
from orchestrator.collect.run import CollectOptions, collect
from orchestrator.collect.standings import words
from orchestrator.events import GameRecorded, ReplicaChanged
from orchestrator.players.openai_wire import request_seed
from orchestrator.recordings import JOURNAL, read_journal
from orchestrator.sgf import REPLY_PROP
from tests.players.openai_server import LOCALHOST, OpenAIServer
from tests.report.synth import report_json

PLAYER = """
[run]
seed = 7
[players.r5]
kind = "openai"
base_urls = ["{url}"]
model = "{model}"
slots = 2
image_px = 128
answer = "gtp"
temperature = 0.0
seed = 11
max_tokens = 8
constrain = "none"
keep_reply = "fallbacks"
{extra}
[players.ai]
kind = "heuristic"
level = 0
[pairing]
black = "r5"
white = "ai"
[game]
size = 9
move_cap = 8
move_timeout_s = 5
connect_timeout_s = 2
concurrency = 2
"""


@contextlib.contextmanager
def reserved_port() -> Iterator[int]:
    """A loopback port bound but not listening: its connects are refused."""
    sock = socket.socket()
    sock.bind((LOCALHOST, 0))
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def write(tmp_path: Path, url: str = "http://127.0.0.1:8000/v1", model: str = "r5",
          extra: str = "") -> Path:
    path = tmp_path / "m.toml"
    path.write_text(PLAYER.format(url=url, model=model, extra=extra))
    return path


def test_every_field_of_the_issue_loads(tmp_path: Path) -> None:
    (tmp_path / "r5.txt").write_text("Play {side}. Answer as {answer_format}.")
    spec = load_matchup(write(tmp_path, extra='api_key_env = "MY_KEY"\nprompt = "r5.txt"'))
    r5 = spec.players["r5"]
    assert isinstance(r5, OpenAIPlayerSpec)
    assert (r5.base_urls, r5.model, r5.slots, r5.image_px, r5.max_tokens, r5.seed) == (
        ["http://127.0.0.1:8000/v1"], "r5", 2, 128, 8, 11)
    assert r5.prompt == (tmp_path / "r5.txt").resolve() and r5.api_key_env == "MY_KEY"


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda t: t.replace("http://127.0.0.1:8000/v1", "ftp://x/v1"),
     "players.r5.base_urls[0]: bad URL 'ftp://x/v1': expected http://HOST:PORT/PATH"),
    (lambda t: t.replace('constrain = "none"', 'constrain = "guided"'),
     "players.r5.constrain: 'guided': expected one of none, choice, regex"),
    (lambda t: t.replace('keep_reply = "fallbacks"', 'keep_reply = "some"'),
     "players.r5.keep_reply: 'some': expected one of none, fallbacks, all"),
    (lambda t: t.replace('answer = "gtp"', 'answer = "xy"'),
     "players.r5.answer: 'xy': expected one of gtp, sgf, rowcol"),
    (lambda t: t.replace("max_tokens = 8", "max_tokens = 0"), "players.r5.max_tokens"),
    (lambda t: t.replace("slots = 2", "slot = 2"),
     "players.r5.slot: unknown key; did you mean slots?"),
    (lambda t: t.replace("image_px = 128", "image_px = 32"), "players.r5.image_px"),
    (lambda t: t + '\n[players.r5.x]\n', "players.r5"),
    (lambda t: t.replace('keep_reply = "fallbacks"', 'prompt = "nowhere.txt"'),
     "players.r5.prompt: "),
])
def test_each_mistake_is_one_line_naming_the_key(tmp_path: Path, edit, expected) -> None:
    path = write(tmp_path)
    path.write_text(edit(path.read_text()))
    with pytest.raises(MatchupError) as caught:
        load_matchup(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    assert expected in message, message


async def serving(nursery: trio.Nursery, server: OpenAIServer) -> str:
    port = await nursery.start(server.serve)
    return f"http://{LOCALHOST}:{port}/v1"


async def test_a_model_not_listed_stops_the_preflight_naming_what_is(nursery, tmp_path) -> None:
    url = await serving(nursery, OpenAIServer(models=["base", "lora_r4"]))
    said: list[str] = []
    with pytest.raises(EndpointsUnreachable) as caught:
        await check_endpoints(load_matchup(write(tmp_path, url)), 0, said.append)
    assert f"{url}: model 'r5' is not served; it lists base, lora_r4" in str(caught.value)
    assert said[0].startswith(f"● FAILED r5 {url}: model 'r5' is not served; it lists base")


async def test_the_trial_move_is_on_the_line_and_a_failing_one_is_a_warning(
        nursery, tmp_path) -> None:
    server = OpenAIServer(reply="E5")
    url = await serving(nursery, server)
    said: list[str] = []
    await check_endpoints(load_matchup(write(tmp_path, url)), 0, said.append)
    assert said[0].startswith(f"● OK r5 {url}: lists r5; trial move E5 in ")
    # The trial asked exactly what a game's first move asks: the picture and the prompt.
    (trial,) = [seen.json for seen in server.seen if seen.method == "POST"]
    assert trial["model"] == "r5" and trial["max_tokens"] == 8
    server.queue("error-500")
    said.clear()
    await check_endpoints(load_matchup(write(tmp_path, url)), 0, said.append)
    assert said[0].startswith(f"● OK r5 {url}: lists r5; warning: the trial move failed: ")
    assert "HTTP 500" in said[0]


async def test_an_api_key_variable_not_set_is_an_input_error(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("GO19_TEST_NO_KEY", raising=False)
    matchup = load_matchup(write(tmp_path, extra='api_key_env = "GO19_TEST_NO_KEY"'))
    with pytest.raises(PreflightInputError, match="players.r5.api_key_env names "
                       "GO19_TEST_NO_KEY, but that environment variable is not set"):
        await check_endpoints(matchup, 0, lambda line: None)


async def test_a_collect_keeps_seeds_tokens_and_what_was_said(nursery, tmp_path) -> None:
    server = OpenAIServer(reply="E5", usage=(900, 2))  # E5 is soon occupied
    url = await serving(nursery, server)
    summary = await collect(CollectOptions(write(tmp_path, url), games=2,
                                           recordings=tmp_path / "rec", dashboard=False),
                            lambda event: None, preflight_log=lambda line: None)
    assert summary.exit_code == 0
    records = read_journal(summary.run_dir / JOURNAL).records
    asked = [seen.json for seen in server.seen if seen.method == "POST"][1:]  # not the trial
    # Each request's seed is derived from (player seed, run seed, game, move).
    expected = {request_seed(11, 7, r.game, move) for r in records for move in
                range(1, r.moves + 1)}
    assert {body["seed"] for body in asked} <= expected and len(asked) > 2
    for record in records:
        meta = record.players["r5"]
        assert (meta.kind, meta.model, meta.replicas, meta.answer, meta.keep_reply) == (
            "openai", "r5", [url], "gtp", "fallbacks")
        assert meta.render is not None and meta.render.image_px == 128
        assert meta.prompt_sha256 and len(meta.prompt_sha256) == 64
        tokens = record.tokens["r5"]
        assert tokens.prompt == 900 * tokens.moves and tokens.completion == 2 * tokens.moves
        assert "ai" not in record.tokens and "ai" not in record.replies
        fallbacks = sum(record.fallbacks["r5"].values())
        assert fallbacks and [n.reply for n in record.replies["r5"]] == ["E5"] * fallbacks
        sgf = sgfmill.sgf.Sgf_game.from_bytes((summary.run_dir / record.sgf).read_bytes())
        nodes = sgf.get_main_sequence()[1:]
        replies = [json.loads(n.get(REPLY_PROP)) for n in nodes if n.has_property(REPLY_PROP)]
        assert len(replies) == tokens.moves and all(r["tokens"] == [900, 2] for r in replies)
        assert sum("reply" in r for r in replies) == fallbacks  # fallbacks only
        assert "api_key" not in (summary.run_dir / record.sgf).read_text()
    # The report: tokens per move and per game, and what the model said on its fallbacks.
    report = report_json([summary.run_dir], tmp_path / "report")
    tokens = report["players"]["r5"]["tokens"]
    assert tokens["prompt_per_move"] == 900 and tokens["completion_per_move"] == 2
    assert tokens["games"] == 2 and tokens["prompt_per_game"] == 900 * tokens["moves"] / 2
    assert "tokens" not in report["players"]["ai"]
    for game in report["games"]:
        assert [n["reply"] for n in game["said"]["r5"]] == ["E5"] * game["fallbacks"]["r5"]
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "| r5 | " in markdown.split("## Tokens")[1].split("## Games")[0]
    assert "r5 said 'E5' (move " in markdown.split("## Games")[1]
    html = (tmp_path / "report" / "report.html").read_text()
    assert "<h2>Tokens</h2>" in html and "r5 said &#x27;E5&#x27;" in html


async def test_a_server_without_usage_leaves_null_counts_everywhere(nursery, tmp_path) -> None:
    """Issue 34, item 3: no `usage` in the replies is null in the SGF's GOXIXREPLY, in the
    journal's per-game sums (it was 0 prompt and 0 completion tokens) and in the report
    (it was 0.0 tokens a game), never a count of 0."""
    url = await serving(nursery, OpenAIServer(reply="E5", usage=None))
    summary = await collect(CollectOptions(write(tmp_path, url), games=1,
                                           recordings=tmp_path / "rec", dashboard=False),
                            lambda event: None, preflight_log=lambda line: None)
    assert summary.exit_code == 0
    (record,) = read_journal(summary.run_dir / JOURNAL).records
    line = json.loads((summary.run_dir / JOURNAL).read_text())
    assert line["tokens"]["r5"] == {"moves": 0, "prompt": None, "completion": None}
    assert record.tokens["r5"].prompt is None
    sgf = sgfmill.sgf.Sgf_game.from_bytes((summary.run_dir / record.sgf).read_bytes())
    replies = [json.loads(n.get(REPLY_PROP)) for n in sgf.get_main_sequence()[1:]
               if n.has_property(REPLY_PROP)]
    assert replies and all(r["tokens"] == [None, None] for r in replies)
    report = report_json([summary.run_dir], tmp_path / "report")
    tokens = report["players"]["r5"]["tokens"]
    assert (tokens["games"], tokens["moves"], tokens["prompt"]) == (0, 0, None)
    assert tokens["prompt_per_game"] is None and tokens["completion_per_move"] is None
    markdown = (tmp_path / "report" / "report.md").read_text()
    row = next(r for r in markdown.split("## Tokens")[1].splitlines() if r.startswith("| r5"))
    assert row.split("|")[2:8] == [" 0 ", " 0 ", " – ", " – ", " – ", " – "]


async def _screen_after_a_game(path: Path, tmp_path: Path, events: list | None = None
                               ) -> tuple[int, list[str]]:
    """A 2-game collect of ``path``; the dashboard's text once the first game is recorded."""
    recorded = trio.Event()
    screen: list[str] = []

    def on_event(event: object) -> None:
        if events is not None:
            events.append(event)
        if isinstance(event, GameRecorded):
            recorded.set()

    async def view(collector) -> None:
        await recorded.wait()
        console = Console(record=True, width=160, height=40, force_terminal=False)
        dash = Dashboard(console)
        dash.attach(collector)
        console.print(dash.render())
        screen.extend(console.export_text().splitlines())

    summary = await collect(CollectOptions(path, games=2, recordings=tmp_path / "rec",
                                           dashboard=False, wait_endpoints_s=0),
                            on_event, view=view, preflight_log=lambda line: None)
    return summary.exit_code, screen


async def test_the_dashboard_shows_each_base_url_as_a_replica(nursery, tmp_path) -> None:
    """One live base URL and one that refuses connections: both are rows of the dashboard
    with their status, as GO19 replicas are, and the games go to the live one."""
    live = await serving(nursery, OpenAIServer(reply="E5"))
    with reserved_port() as dead_port:
        dead = f"http://{LOCALHOST}:{dead_port}/v1"
        path = write(tmp_path, live)
        path.write_text(path.read_text().replace(f'["{live}"]', f'["{dead}", "{live}"]'))
        exit_code, screen = await _screen_after_a_game(path, tmp_path)
    assert exit_code == 0
    # (The address column is cut to the terminal: the rows are told apart by status.)
    rows = [line for line in screen if re.search(rf"\br5\s+http://{LOCALHOST}:", line)]
    assert len(rows) == 2, screen
    assert sum(" ok " in row for row in rows) == 1
    assert sum(("backoff" in row or "down" in row) for row in rows) == 1, rows


async def test_a_throttled_base_url_waits_on_the_dashboard_and_in_the_log(
        nursery, tmp_path) -> None:
    """A server answering 429 with ``Retry-After: 60`` after its trial request: its row
    says ``throttled``, the log says for how long, and the games go to the other one."""
    busy = OpenAIServer(reply="E5", retry_after="60")
    busy.queue("answer", *["throttle"] * 50)  # the preflight's trial is answered
    live = await serving(nursery, OpenAIServer(reply="E5"))
    held = await serving(nursery, busy)
    path = write(tmp_path, live)
    path.write_text(path.read_text().replace(f'["{live}"]', f'["{held}", "{live}"]'))
    events: list = []
    exit_code, screen = await _screen_after_a_game(path, tmp_path, events)
    assert exit_code == 0
    rows = [line for line in screen if re.search(rf"\br5\s+http://{LOCALHOST}:", line)]
    assert len(rows) == 2 and sum(" ok " in row for row in rows) == 1, screen
    (row,) = [row for row in rows if "throttled" in row]
    assert re.search(r"throttled [56]\ds", row), row
    said = [words(e) for e in events if isinstance(e, ReplicaChanged)]
    assert said == [f"r5: {held}: throttled (HTTP 429: rate limit exceeded (retry after "
                    "60 s)); no request for 60 s"]
    assert busy.faults == ["answer", "throttle"]  # one refusal, then nothing for 60 s
