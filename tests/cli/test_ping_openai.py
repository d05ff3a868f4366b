"""`go19 ping` of OpenAI-compatible base URLs against the real HTTP server of tests/players
(the command run in a worker thread of this process, the servers on the test's loop): the
models listed one a line, `--model` served or not (exit 1 with the names served), a GO19
endpoint and a base URL in one call, a bad URL refused in one line."""

from __future__ import annotations

from functools import partial

import trio

from orchestrator.players.random_player import RandomPlayer
from orchestrator.serve import serve_go19
from tests.conftest import go19_here
from tests.players.openai_server import DEEP_JSON, LOCALHOST, OpenAIServer


async def ping(*args: str) -> tuple[int, str, str]:
    done = await trio.to_thread.run_sync(partial(go19_here, "ping", *args))
    return done.returncode, done.stdout, done.stderr


async def test_a_base_url_lists_its_models_or_checks_one(nursery) -> None:
    port = await nursery.start(OpenAIServer(models=["base", "lora_r5"]).serve)
    url = f"http://{LOCALHOST}:{port}/v1"
    status, out, _ = await ping(url)
    head, *names = out.splitlines()
    assert status == 0 and head.startswith(f"● OK {url}: 2 models (")
    assert names == ["  base", "  lora_r5"]
    status, out, _ = await ping(url, "--model", "lora_r5")
    assert status == 0 and out.startswith(f"● OK {url}: serves lora_r5 (")
    status, out, _ = await ping(url, "--model", "lora_r4")
    assert status == 1
    assert out.startswith(f"● FAILED {url}: model 'lora_r4' is not served; it lists base, "
                          "lora_r5 (")


async def test_a_go19_endpoint_and_a_base_url_in_one_call(nursery) -> None:
    http = await nursery.start(OpenAIServer().serve)
    go19 = await nursery.start(partial(serve_go19, RandomPlayer("engine", seed=1), LOCALHOST, 0))
    status, out, _ = await ping(f"{LOCALHOST}:{go19}", f"http://{LOCALHOST}:{http}/v1",
                                "--model", "r5")
    lines = out.splitlines()
    assert status == 0 and len(lines) == 2
    assert lines[0].startswith(f"● OK {LOCALHOST}:{go19} (")
    assert lines[1].startswith(f"● OK http://{LOCALHOST}:{http}/v1: serves r5 (")


async def test_a_bad_url_is_one_line_and_exit_2() -> None:
    status, out, err = await ping("ftp://host/v1")
    assert (status, out) == (2, "")
    assert err == ("ping: bad endpoint 'ftp://host/v1': bad URL 'ftp://host/v1': expected "
                   "http://HOST:PORT/PATH or https://...\n")


async def test_a_model_list_of_deep_json_is_one_failed_line(nursery) -> None:
    """200 KB of ``[`` for ``GET /v1/models``: one FAILED line (ping's failure status, 1),
    where the standard library's reader raised RecursionError (48 lines, a traceback)."""
    port = await nursery.start(OpenAIServer(models_body=DEEP_JSON).serve)
    url = f"http://{LOCALHOST}:{port}/v1"
    status, out, err = await ping(url, "--model", "r5")
    assert (status, err) == (1, "")
    (line,) = out.splitlines()
    assert line.startswith(f"● FAILED {url}: not JSON (nested deeper than 200 levels): [[[")
