"""Waiting for a state of what is under test by polling it: for states with no event to
wait on (another process's files and exit, a collector's counters). The limits only stop
a hang; nothing here waits for a stretch of wall time."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

import trio


def wait_for(holds: Callable[[], bool], what: str, *, limit: float = 60.0,
             process: subprocess.Popen | None = None, interval: float = 0.01) -> None:
    """Return once ``holds()``; fail naming ``what`` if ``process`` (when given) exits
    first, or after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while not holds():
        if process is not None:
            assert process.poll() is None, \
                f"the process exited ({process.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} after {limit:g} s"
        time.sleep(interval)


async def until(holds: Callable[[], bool], what: str, *,
                limit: float = 120.0, interval: float = 0.01) -> None:
    """:func:`wait_for` inside trio, on real time (under a MockClock the limit would pass
    in virtual seconds while the loop idles)."""
    with trio.move_on_after(limit) as scope:
        while not holds():
            await trio.sleep(interval)
    assert not scope.cancelled_caught, f"no {what} after {limit:g} s"
