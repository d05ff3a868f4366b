"""A real `go19 serve --engine hf` process for the end-to-end tests: started, read up
to its "serving …" line, stopped after."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import REPO

CLI = [sys.executable, "-m", "orchestrator.cli"]


@contextmanager
def serve_process(args: list[str], stderr: Path
                  ) -> Iterator[tuple[subprocess.Popen, list[str]]]:
    """``go19 serve ARGS`` with its stderr in ``stderr``: the process and its stdout lines
    up to the one that says what it serves."""
    with open(stderr, "wb") as err:
        process = subprocess.Popen([*CLI, "serve", *args], cwd=REPO, stdout=subprocess.PIPE,
                                   stderr=err, text=True)
    timer = threading.Timer(300, process.kill)  # a server that never comes up fails, not hangs
    timer.start()
    lines: list[str] = []
    try:
        while not lines or not lines[-1].startswith("serving"):
            line = process.stdout.readline()
            assert line, f"serve exited before serving: {lines} {stderr.read_text()[-2000:]}"
            lines.append(line.rstrip("\n"))
    finally:
        timer.cancel()
    try:
        yield process, lines
    finally:
        process.terminate()
        process.wait(30)
        process.stdout.close()
