"""Helpers for the browser tests: headless Chromium driven by Selenium against the real page, served
in-process by Hypercorn on a loopback port, next to real GO19 servers.

The servers run in a trio event loop on a background thread (Selenium is
synchronous); tests reach into that loop with :meth:`TrioLoop.call`. Every wait
is a WebDriverWait on page state, never a sleep.
"""

from __future__ import annotations

import importlib.util
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import trio

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
WAIT_S = 30  # the longest any page state may take to appear on a busy machine


def _missing() -> str | None:
    for module, extra in (("starlette", "web"), ("hypercorn", "web"), ("selenium", "test")):
        if importlib.util.find_spec(module) is None:
            return f"{module} not installed (pip install -e '.[{extra}]')"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            return f"{path} not found (Debian packages chromium and chromium-driver)"
    return None


def skip_without_browser() -> None:
    """Skip the calling test module, saying why, when the browser or the extras are absent."""
    reason = _missing()
    if reason:
        pytest.skip(reason, allow_module_level=True)



class TrioLoop:
    """A trio run on a thread with a nursery that outlives each call."""

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self.nursery: trio.Nursery | None = None
        self._thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True)
        self._thread.start()
        self._ready.wait()

    async def _main(self) -> None:
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            self._token = trio.lowlevel.current_trio_token()
            self._ready.set()
            await trio.sleep_forever()

    def call(self, fn: Callable, *args):
        """Run ``await fn(*args)`` (or ``fn(*args)`` if sync) in the loop; return its value."""
        async def run():
            result = fn(*args)
            return await result if hasattr(result, "__await__") else result
        return trio.from_thread.run(run, trio_token=self._token)

    def start(self, fn: Callable, *args):
        """``nursery.start(fn, *args)`` in the loop, as its own cancellable task; returns
        (started value, cancel function)."""
        scope_box: list[trio.CancelScope] = []

        async def starter(task_status=trio.TASK_STATUS_IGNORED):
            with trio.CancelScope() as scope:
                scope_box.append(scope)
                async with trio.open_nursery() as inner:
                    value = await inner.start(fn, *args)
                    task_status.started(value)

        value = self.call(self.nursery.start, starter)
        return value, lambda: trio.from_thread.run_sync(scope_box[0].cancel,
                                                        trio_token=self._token)

    def close(self) -> None:
        trio.from_thread.run_sync(self.nursery.cancel_scope.cancel, trio_token=self._token)
        self._thread.join(10)


@contextmanager
def headless_chromium(width: int = 1400, height: int = 1000) -> Iterator:
    """Debian's Chromium under chromedriver, headless, with a fresh profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="go19-chromium-")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                 f"--window-size={width},{height}"):
        options.add_argument(flag)
    chrome = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield chrome
    finally:
        chrome.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_for(driver, predicate: Callable, message: str = ""):
    """The predicate's first truthy value; fails with ``message`` after WAIT_S."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT_S, poll_frequency=0.05).until(
        lambda d: predicate(d), message)


def free_port() -> int:
    """A loopback port nothing listens on right now (bound once, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def board_after(record, moves: int | None = None) -> str:
    """The referee's stones after the first ``moves`` moves of an SGF game (all: None)."""
    from orchestrator.rules import Game

    game = Game(record.size, record.komi)
    for move in record.moves[:moves]:
        game.play(move.point, move.color)
    return "".join(map(str, game.board.stones))
