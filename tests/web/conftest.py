"""Fixtures of the browser tests (see harness.py): one trio loop and one headless
Chromium per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.web.harness import TrioLoop, headless_chromium


@pytest.fixture(scope="module")
def loop() -> Iterator[TrioLoop]:
    loop = TrioLoop()
    yield loop
    loop.close()


@pytest.fixture(scope="module")
def driver() -> Iterator:
    with headless_chromium() as chrome:
        yield chrome
