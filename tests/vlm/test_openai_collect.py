"""The `kind = "openai"` player end to end on real servers: a real `go19 serve --engine hf`
process with the tiny model's two adapters behind one OpenAI port, a real `collect` between
two `kind = "openai"` players on that port (answers routed by `model`), `constrain =
"choice"` honoured, tokens and replies in the SGF (read back by sgfmill) and the report,
`go19 ping` on the port, and a model the server does not serve stopping the preflight."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import sgfmill.sgf

from orchestrator.collect.audit import audit_servers
from orchestrator.collect.matchup import load_matchup
from orchestrator.collect.run import CollectOptions, collect
from orchestrator.coords import to_gtp
from orchestrator.files import read_sgf_file
from orchestrator.recordings import JOURNAL, read_journal
from orchestrator.sgf import REPLY_PROP
from tests.conftest import REPO
from tests.report.synth import report_json
from tests.vlm.serve_process import CLI, serve_process
from tests.vlm.tiny import ANSWERS, Tiny

SERVING = re.compile(r"serving OpenAI API on (\S+)$")
MATCHUP = """
[run]
name = "oai"
seed = 3
[players.a]
kind = "openai"
base_urls = ["{url}"]
model = "a"
slots = 4
constrain = "{constrain}"
keep_reply = "all"
[players.b]
kind = "openai"
base_urls = ["{url}"]
model = "{model_b}"
slots = 4
keep_reply = "fallbacks"
[pairing]
black = "a"
white = "b"
[game]
size = 19
komi = 6.5
move_cap = {move_cap}
move_timeout_s = 120
concurrency = 4
"""
Q16 = "(;GM[1]FF[4]SZ[19];B[pd])"  # the opening occupies a's answer
AUDITED = """
[players.base]
kind = "openai"
base_urls = ["{url}"]
model = "base"
[players.a]
kind = "openai"
base_urls = ["{url}"]
model = "a"
[players.b]
kind = "openai"
base_urls = ["{url}"]
model = "b"
[pairing]
black = "base"
white = "a"
"""


@pytest.fixture(scope="module")
def openai_url(tiny: Tiny, tmp_path_factory) -> Iterator[str]:
    stderr = tmp_path_factory.mktemp("serve") / "stderr.txt"
    args = ["--engine", "hf", "--model", str(tiny.model), "--adapter", f"a={tiny.adapter('a')}",
            "--adapter", f"b={tiny.adapter('b')}", "--openai", "127.0.0.1:0",
            "--device", "cpu", "--threads", "1"]
    with serve_process(args, stderr) as (_, lines):
        match = SERVING.match(lines[-1])
        assert match, lines
        yield match.group(1)


def matchup(tmp_path: Path, url: str, *, constrain: str = "none", model_b: str = "b",
            move_cap: int = 6, opening: bool = False) -> Path:
    text = MATCHUP.format(url=url, constrain=constrain, model_b=model_b, move_cap=move_cap)
    if opening:
        (tmp_path / "open").mkdir()
        (tmp_path / "open" / "q16.sgf").write_text(Q16)
        text += "[openings]\nsgf_dir = \"open\"\nplies = 1\n"
    path = tmp_path / "oai.toml"
    path.write_text(text)
    return path


async def run(path: Path, tmp_path: Path, games: int) -> tuple[Path, list[str]]:
    said: list[str] = []
    summary = await collect(CollectOptions(path, games=games, recordings=tmp_path / "rec",
                                           dashboard=False), lambda event: None,
                            preflight_log=said.append)
    assert summary.exit_code == 0 and summary.state.done == games
    return summary.run_dir, said


def sgfmill_replies(path: Path) -> list[dict | None]:
    """Every move node's REPLY_PROP as sgfmill (an independent reader) reads it."""
    game = sgfmill.sgf.Sgf_game.from_bytes(path.read_bytes())
    return [json.loads(node.get(REPLY_PROP)) if node.has_property(REPLY_PROP) else None
            for node in game.get_main_sequence()[1:]]


async def test_a_collect_routes_each_player_to_its_adapter(openai_url: str, tmp_path) -> None:
    run_dir, said = await run(matchup(tmp_path, openai_url), tmp_path, 2)
    # The preflight's lines: each replica lists its model and a trial move was asked.
    assert any(line.startswith(f"● OK a {openai_url}: lists a; trial move Q16 in ")
               for line in said), said
    assert any(f"b {openai_url}: lists b; trial move D4 in " in line for line in said), said
    assert f"● serving audit: {openai_url}: a, b answer alike alone and batched together " \
           "(3 probe positions)" in said
    records = read_journal(run_dir / JOURNAL).records
    assert {r.black for r in records} == {"a", "b"}
    for record in records:
        assert record.players["a"].kind == "openai" and record.players["a"].model == "a"
        assert record.players["a"].replicas == [openai_url]
        assert record.players["a"].prompt_sha256 and record.players["a"].answer == "gtp"
        game = read_sgf_file(run_dir / record.sgf)[0]
        names = {1: record.black, 2: record.white}
        first: dict[str, tuple[str | None, str]] = {}
        for move in game.moves:
            first.setdefault(names[move.color], (move.source, to_gtp(move.point, 19)))
        assert first == {name: (None, ANSWERS[name]) for name in ("a", "b")}, record.sgf
        replies = sgfmill_replies(run_dir / record.sgf)
        assert len(replies) == record.moves and all(r is not None for r in replies)
        for move, reply in zip(game.moves, replies, strict=True):
            assert reply["tokens"][0] > 0 and reply["tokens"][1] > 0
            if names[move.color] == "a":  # keep_reply = "all": every reply's text
                assert reply["reply"] == "Q16"
            elif move.source is None:  # b keeps the texts of its fallbacks only
                assert "reply" not in reply
        for name in ("a", "b"):
            tokens = record.tokens[name]
            assert tokens.moves == sum(names[m.color] == name for m in game.moves)
            assert tokens.prompt > 0 and tokens.completion >= tokens.moves


async def test_choice_keeps_a_legal_and_the_report_shows_tokens_and_words(
        openai_url: str, tmp_path) -> None:
    path = matchup(tmp_path, openai_url, constrain="choice", move_cap=8, opening=True)
    run_dir, _ = await run(path, tmp_path, 2)
    records = read_journal(run_dir / JOURNAL).records
    for record in records:
        # Q16 is taken by the opening: a, constrained to the legal moves, still plays its
        # own moves; b (unconstrained) answers D4 where it stands and falls back.
        assert not record.illegal["a"] and not record.fallbacks["a"], record
        assert record.illegal["b"] >= 1
        game = read_sgf_file(run_dir / record.sgf)[0]
        own_a = [m for m in game.moves if m.source is None and
                 {1: record.black, 2: record.white}[m.color] == "a"]
        assert own_a and to_gtp(own_a[0].point, 19) != "Q16"
        notes = record.replies["b"]
        assert notes and all(note.reply == "D4" and note.reason == "illegal:occupied"
                             for note in notes)
    report = report_json([run_dir], tmp_path / "report")
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "tokens/move" in markdown
    assert "b said 'D4'" in markdown
    assert report["players"]["a"]["tokens"]["moves"] > 0


async def test_the_serving_audit_finds_nothing_on_go19s_server(openai_url: str,
                                                              tmp_path) -> None:
    """The base model and two adapters, alone and in one mixed batch: every answer is the
    request's own model's, so the audit passes (vLLM's base model fails it: tests/vllm)."""
    path = tmp_path / "audited.toml"
    path.write_text(AUDITED.format(url=openai_url))
    said: list[str] = []
    assert await audit_servers(load_matchup(path), said.append, strict=True) == []
    assert said == [f"● serving audit: {openai_url}: a, b, base answer alike alone and "
                    "batched together (3 probe positions)"]


def test_go19_ping_lists_and_checks_the_models(openai_url: str) -> None:
    listed = subprocess.run([*CLI, "ping", openai_url], cwd=REPO, capture_output=True,
                            text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    head, *names = listed.stdout.splitlines()
    assert head.startswith(f"● OK {openai_url}: ") and set(names) >= {"  a", "  b"}
    served = subprocess.run([*CLI, "ping", openai_url, "--model", "b"], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert served.returncode == 0 and served.stdout.startswith(f"● OK {openai_url}: serves b")
    missing = subprocess.run([*CLI, "ping", openai_url, "--model", "zz"], cwd=REPO,
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1
    assert "FAILED" in missing.stdout and "model 'zz' is not served; it lists " in missing.stdout


def test_a_model_not_served_stops_the_preflight_with_exit_3(openai_url: str, tmp_path) -> None:
    path = matchup(tmp_path, openai_url, model_b="lora_typo")
    result = subprocess.run([*CLI, "collect", "--matchup", str(path), "--games", "1",
                             "--recordings", str(tmp_path / "rec"), "--no-dashboard",
                             "--no-report"], cwd=REPO, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 3, result.stderr
    assert "model 'lora_typo' is not served; it lists " in result.stderr
    assert re.search(r"it lists [^;]*\ba\b", result.stderr) and ", b" in result.stderr
    assert not (tmp_path / "rec").exists()
