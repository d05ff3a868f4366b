"""Fixtures for the fault tests."""

from __future__ import annotations

import pytest
import trio.testing


@pytest.fixture
def fault_clock() -> trio.testing.MockClock:
    """Virtual time for runs against in-process fault servers: deadlines and backoff
    cost no wall time, and an honest answer never misses its deadline however loaded
    the machine is (loopback bytes arrive within the send, so the clock only jumps
    when every task waits on a timer or on the recorder's thread)."""
    return trio.testing.MockClock(autojump_threshold=0.002)
