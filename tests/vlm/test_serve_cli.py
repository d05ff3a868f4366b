"""The whole loop on a real model: `go19 serve --engine hf` as a process, with two adapters
on two GO19 ports and the OpenAI port, and a real `collect` of games between them; then
the command's one-line refusals, and that no other command imports torch."""

from __future__ import annotations

import base64
import contextlib
import http.client
import io
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
import sgfmill.sgf
import trio

from orchestrator.cli import main
from orchestrator.collect.run import CollectOptions, collect
from orchestrator.coords import to_gtp
from orchestrator.files import read_sgf_file
from orchestrator.recordings import JOURNAL, read_journal
from orchestrator.render import render_png
from orchestrator.rules.replay import replay
from orchestrator.serve.hf.tiny import LANGUAGE_PROJECTIONS
from tests.conftest import REPO
from tests.vlm.serve_process import CLI, serve_process
from tests.vlm.tiny import ANSWERS, Tiny

SERVING = re.compile(r"serving GO19 on (.*?)(?:; OpenAI API on (\S+))?$")
MATCHUP = """
[run]
name = "vlm"
seed = 5
[players.a]
kind = "go19"
replicas = ["{a}"]
slots = 4
adapter = "tiny Qwen2.5-VL + LoRA a (always Q16)"
[players.b]
kind = "go19"
replicas = ["{b}"]
slots = 4
adapter = "tiny Qwen2.5-VL + LoRA b (always D4)"
[pairing]
black = "a"
white = "b"
alternate_colors = true
[game]
size = 19
komi = 6.5
move_cap = 16
move_timeout_s = 120
concurrency = 4
"""


class Served:
    def __init__(self, process: subprocess.Popen, lines: list[str], stderr: Path) -> None:
        self.process = process
        self.lines = lines
        self.stderr = stderr
        match = SERVING.match(lines[-1])
        assert match, lines
        self.go19 = dict((name, address) for address, name in
                         re.findall(r"(\S+) \((\w+)\)", match.group(1)))
        self.openai = match.group(2)


@pytest.fixture(scope="module")
def served(tiny: Tiny, tmp_path_factory) -> Iterator[Served]:
    stderr = tmp_path_factory.mktemp("serve") / "stderr.txt"
    args = ["--engine", "hf", "--model", str(tiny.model), "--adapter", f"a={tiny.adapter('a')}",
            "--adapter", f"b={tiny.adapter('b')}", "--listen", "a=:0", "--listen", "b=:0",
            "--openai", ":0", "--device", "cpu", "--threads", "1",
            "--log-requests", str(stderr.with_name("requests.jsonl"))]
    with serve_process(args, stderr) as (process, lines):
        yield Served(process, lines, stderr)


def test_start_up_says_device_adapters_and_ports(served: Served) -> None:
    device, a, b, serving = served.lines
    assert device.startswith("device cpu (float32); model ")
    assert "Qwen2_5_VLForConditionalGeneration" in device
    assert re.search(r", in process \d+ of its own$", device)  # --model-process, the default
    for line, name in ((a, "a"), (b, "b")):
        assert line.startswith(f"adapter {name}: rank 8, targets {LANGUAGE_PROJECTIONS}, "
                               "mixed batches; GO19 127.0.0.1:")
        assert line.endswith(served.go19[name])
    assert served.openai.startswith("http://127.0.0.1:") and served.openai.endswith("/v1")


async def test_a_collect_between_two_adapters_of_one_process(served: Served, tmp_path) -> None:
    matchup = tmp_path / "vlm.toml"
    matchup.write_text(MATCHUP.format(a=served.go19["a"], b=served.go19["b"]))
    summary = await collect(CollectOptions(matchup, games=4, recordings=tmp_path / "rec",
                                           dashboard=False), lambda event: None,
                            preflight_log=lambda line: None)
    assert summary.exit_code == 0 and summary.state.done == 4
    records = read_journal(summary.run_dir / JOURNAL).records
    assert len(records) == 4 and {r.black for r in records} == {"a", "b"}
    for record in records:
        (game,) = read_sgf_file(summary.run_dir / record.sgf)
        names = {1: record.black, 2: record.white}
        own_first: dict[str, tuple[str | None, str]] = {}
        for move in game.moves:
            name = names[move.color]
            if name not in own_first:
                own_first[name] = (move.source, to_gtp(move.point, 19))
        # Each adapter's first move is its own policy's and is the move it learned.
        assert own_first == {name: (None, ANSWERS[name]) for name in ("a", "b")}, record.sgf
        assert replay(game).board.stone_count(1) > 0  # replays under go19's rules
        with open(summary.run_dir / record.sgf, "rb") as fh:
            sgf = sgfmill.sgf.Sgf_game.from_bytes(fh.read())
        assert len(sgf.get_main_sequence()) - 1 == record.moves == len(game.moves)
    log = [json.loads(line) for line in
           served.stderr.with_name("requests.jsonl").read_text().splitlines()]
    assert any(request["batch"] > 1 for request in log), "no batch of several requests ran"


def ask_openai(served: Served, adapter: str) -> tuple[int, dict]:
    png = render_png(np.zeros((19, 19), np.uint8), None, 512)
    body = json.dumps({"model": adapter, "max_tokens": 8, "temperature": 0, "messages": [
        {"role": "user", "content": [
            {"type": "image_url",
             "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()}},
            {"type": "text", "text": "Your move?"}]}]})
    parts = urlsplit(served.openai)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    try:
        connection.request("POST", parts.path + "/chat/completions", body,
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


async def test_the_openai_port_answers_as_the_adapter_named(served: Served) -> None:
    status, reply = await trio.to_thread.run_sync(ask_openai, served, "a")
    assert status == 200 and reply["choices"][0]["message"]["content"] == "Q16"


def test_go19_ping_works_on_every_port(served: Served) -> None:
    result = subprocess.run([*CLI, "ping", *served.go19.values()], cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("● OK") == 2


def test_a_model_process_that_dies_fails_its_batch_and_a_new_one_loads(
        served: Served) -> None:
    """The model runs in a process of its own, named at start; killed, the batch it held
    is answered at once with a 500 that says so, a new one loads the model, and the next
    request gets its adapter's answer again. (Last of the tests on ``served``: it replaces
    its model.)"""
    match = re.search(r", in process (\d+) of its own$", served.lines[0])
    assert match, served.lines[0]
    os.kill(int(match.group(1)), signal.SIGKILL)
    status, reply = ask_openai(served, "b")
    assert (status, reply["error"]["code"]) == (500, 500)
    assert reply["error"]["message"] == ("the model's process stopped (exit code -9); "
                                         "a new one is loading the model")
    status, reply = ask_openai(served, "b")
    assert status == 200 and reply["choices"][0]["message"]["content"] == ANSWERS["b"]
    assert served.process.poll() is None


def run_serve(*args: str, python: list[str] | None = None,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``go19 serve --engine hf ARGS``: the refusals end before a port opens, so they run in
    this process (its torch imported once, not once a refusal); ``python`` runs a process."""
    argv = ["serve", "--engine", "hf", *args]
    if python is not None:
        return subprocess.run([*python, *argv], cwd=REPO, capture_output=True, text=True,
                              timeout=300, env=None if env is None else {**os.environ, **env})
    out, err = io.StringIO(), io.StringIO()
    saved = {name: os.environ.get(name) for name in env or {}}
    os.environ.update(env or {})
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(argv)
            except SystemExit as exit_:  # argparse's refusals
                status = exit_.code if isinstance(exit_.code, int) else 2
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())


def test_refusals_are_one_line_and_exit_2(tiny: Tiny, tmp_path) -> None:
    missing = run_serve("--model", str(tmp_path / "nowhere"), "--listen", "base=:0")
    assert (missing.returncode, missing.stdout) == (2, "")
    assert missing.stderr == f"serve: --model {tmp_path / 'nowhere'}: no such folder\n"
    unknown = run_serve("--model", str(tiny.model), "--adapter", f"a={tiny.adapter('a')}",
                        "--listen", "z=:0")
    assert unknown.returncode == 2
    assert unknown.stderr == ("serve: --listen 'z=:0': no adapter named 'z' (adapters: a; "
                              "'base' is the model without adapter)\n")
    port = run_serve("--model", str(tiny.model), "--port", "5019")
    assert port.returncode == 2 and port.stderr.startswith("serve: --engine hf takes --listen")
    classic = subprocess.run([*CLI, "serve", "--engine", "random", "--max-batch", "4"],
                             cwd=REPO, capture_output=True, text=True, timeout=60)
    assert (classic.returncode, classic.stderr) == (
        2, "serve: --max-batch is an option of --engine hf\n")


def test_a_fact_a_go19_request_does_not_carry_is_refused_at_start(tiny: Tiny, tmp_path) -> None:
    """A GO19 request has the board and the side to move: a template showing the move number
    is refused, one showing the komi needs --komi; the OpenAI port alone fills nothing."""
    numbered = tmp_path / "numbered.txt"
    numbered.write_text("{side} plays move {move_number}.")
    refused = run_serve("--model", str(tiny.model), "--prompt", str(numbered),
                        "--listen", "base=:0", "--komi", "6.5")
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (f"serve: {numbered} shows {{move_number}}, which a GO19 request "
                              "does not carry (it has only the board and the side to move): "
                              "remove it from the template, and export with the same "
                              "template\n")
    komi = tmp_path / "komi.txt"
    komi.write_text("{side} to play, komi {komi}.")
    unknown = run_serve("--model", str(tiny.model), "--prompt", str(komi), "--listen", "base=:0")
    assert unknown.returncode == 2
    assert unknown.stderr == (f"serve: {komi} shows {{komi}}, which a GO19 request does not "
                              "carry: give --komi K, the komi of the games this server "
                              "plays\n")
    # Past the template, these stop at the device (no CUDA here): the template was taken.
    for args in (("--prompt", str(komi), "--listen", "base=:0", "--komi", "6.5"),
                 ("--prompt", str(numbered), "--openai", ":0")):
        taken = run_serve("--model", str(tiny.model), *args, "--device", "cuda:9")
        assert taken.returncode == 2 and taken.stderr.startswith("serve: --device cuda:9"), \
            taken.stderr


@pytest.mark.parametrize("where", ["--model-process", "--no-model-process"])
def test_an_adapter_of_another_model_is_refused_before_any_port_opens(tiny: Tiny,
                                                                     where: str) -> None:
    """The same line whether the model loads in a process of its own or in this one."""
    result = run_serve("--model", str(tiny.model), "--adapter", f"a={tiny.adapter('a')}",
                       "--adapter", f"w={tiny.adapter('wide')}", "--listen", "a=:0",
                       "--device", "cpu", where)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"serve: --adapter w={tiny.adapter('wide')}: does not fit ")
    assert "size mismatch" in line


def test_without_the_extra_the_command_says_what_to_install(tiny: Tiny) -> None:
    blocked = [sys.executable, "-c", "import sys; sys.modules['torch'] = None; "
               "from orchestrator.cli import main; sys.exit(main(sys.argv[1:]))"]
    result = run_serve("--model", str(tiny.model), "--listen", "base=:0", python=blocked)
    assert result.returncode == 2
    assert result.stderr == ("serve: --engine hf needs the vlm extra: .venv/bin/pip install "
                             "-e '.[vlm]' (on a GPU box, the CUDA build of torch first: "
                             "docs/vlm.md); torch is missing\n")


def test_other_commands_never_import_torch() -> None:
    probe = ("import sys, contextlib, io\n"
             "from orchestrator.cli import build_parser\n"
             "for argv in (['--help'], ['serve', '--help'], ['collect', '--help']):\n"
             "    quiet = contextlib.redirect_stdout(io.StringIO())\n"
             "    with contextlib.suppress(SystemExit), quiet:\n"
             "        build_parser().parse_args(argv)\n"
             "print(sorted(m for m in ('torch', 'transformers', 'peft') if m in sys.modules))\n")
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                            text=True, timeout=60)
    assert result.stdout == "[]\n", result.stderr


def test_a_keyless_openai_port_off_loopback_is_warned_before_anything_loads(
        tiny: Tiny, tmp_path, monkeypatch) -> None:
    """The warning comes once the command line is read (a large model loads for minutes);
    a prompt file that is not there then stops the start, before torch is imported."""
    monkeypatch.delenv("GO19_API_KEY", raising=False)
    start = ["--model", str(tiny.model), "--prompt", str(tmp_path / "none.txt")]
    warned = run_serve(*start, "--openai", "0.0.0.0:0")
    assert warned.returncode == 2
    first, *rest = warned.stderr.splitlines()
    assert first == ("serve: warning: the OpenAI API on 0.0.0.0:0 has no key: anyone who can "
                     "reach it uses the model and every adapter; give --api-key or "
                     "$GO19_API_KEY")
    assert rest and "warning" not in " ".join(rest)
    for quiet in (run_serve(*start, "--openai", "0.0.0.0:0", "--api-key", "k"),
                  run_serve(*start, "--openai", "127.0.0.1:0"),
                  run_serve(*start, "--openai", "0.0.0.0:0", env={"GO19_API_KEY": "k"})):
        assert quiet.returncode == 2 and "warning" not in quiet.stderr, quiet.stderr
    misplaced = run_serve(*start, "--listen", "base=:0", "--api-key", "k")
    assert (misplaced.returncode, misplaced.stderr) == (
        2, "serve: --api-key is for the OpenAI API: give --openai [HOST:]PORT\n")


def test_tiny_model_writes_a_folder_transformers_loads(tmp_path) -> None:
    out = tmp_path / "tiny"
    made = subprocess.run([*CLI, "tiny-model", str(out)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    assert made.stdout == f"tiny Qwen2.5-VL (117 k parameters) in {out}\n"
    from transformers import AutoConfig, AutoProcessor

    config = AutoConfig.from_pretrained(out, local_files_only=True)
    assert config.model_type == "qwen2_5_vl" and config.text_config.head_dim == 32
    processor = AutoProcessor.from_pretrained(out, local_files_only=True)
    assert processor.tokenizer.convert_tokens_to_ids("<|image_pad|>") == config.image_token_id
    (tmp_path / "file").write_text("")
    refused = subprocess.run([*CLI, "tiny-model", str(tmp_path / "file")], cwd=REPO,
                             capture_output=True, text=True, timeout=60)
    assert (refused.returncode, refused.stderr) == (
        2, f"tiny-model: {tmp_path / 'file'}: exists and is not a folder\n")
