"""tests/vlm: the `vlm` extra (torch, torchvision, transformers, peft) and the real SGF
corpus are needed; without them every test here skips with one reason."""

from __future__ import annotations

import importlib.util
import os

import pytest

from tests.conftest import REAL_SGF, skip_folder

MISSING = [name for name in ("torch", "torchvision", "transformers", "peft", "tokenizers")
           if importlib.util.find_spec(name) is None]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = None
    if MISSING:
        reason = (f"the vlm extra is not installed ({', '.join(MISSING)} missing): "
                  "pip install torch==2.14.1 torchvision==0.29.1 && pip install -e '.[vlm]'")
    elif not REAL_SGF.is_dir():
        reason = f"real SGF corpus not found at {REAL_SGF}: the adapters train on its export"
    skip_folder(items, "vlm", reason)


@pytest.fixture(scope="session")
def tiny():
    from tests.vlm.tiny import tiny_model

    return tiny_model()


@pytest.fixture(scope="session")
def loaded(tiny):
    """The tiny model with adapters a, b (language model) and v (vision tower too), in
    this process."""
    import torch

    from orchestrator.serve.hf.loading import load

    torch.set_num_threads(1)  # a tiny model on a shared machine: more threads only contend
    return load(tiny.model, {name: tiny.adapter(name) for name in ("a", "b", "v")}, "cpu")


class Gate:
    """The real batch runner behind a gate: the first batch holds the model (in its worker
    thread) until ``release`` is set, so tests can act while the model is busy."""

    def __init__(self, runner) -> None:
        import threading

        self.runner = runner
        self.entered = threading.Event()
        self.release = threading.Event()

    def run(self, jobs):
        self.entered.set()
        self.release.wait(60)
        return self.runner.run(jobs)


# An EPS file whose PostScript never ends (`{ } loop`), 150 bytes: what Pillow's
# Image.open hands Ghostscript when it is let open any format.
EPS_LOOP = (b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 512 512\n"
            b"%%Title: a board that never finishes drawing\n%%EndComments\n"
            b"{ } loop\n%%EOF\n").ljust(150, b"%")
assert len(EPS_LOOP) == 150


@pytest.fixture
def ghostscript(tmp_path, monkeypatch):
    """A `gs` first on PATH that writes down each start (and exits 1, so that nothing
    hangs if it is started): the file it writes must stay absent. Pillow looks for gs
    once per process; it is made to look again."""
    from PIL import EpsImagePlugin

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    started = tmp_path / "gs-started"
    script = bin_dir / "gs"
    script.write_text(f"#!/bin/sh\necho \"$@\" >> {started}\nexit 1\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(EpsImagePlugin, "gs_binary", None)
    return started
