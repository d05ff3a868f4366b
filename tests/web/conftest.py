"""Fixtures of the browser tests (see harness.py): one trio loop and one headless
Chromium per test module."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator

import pytest

from tests.web.harness import CHROMEDRIVER, CHROMIUM, TrioLoop


@pytest.fixture(scope="module")
def loop() -> Iterator[TrioLoop]:
    loop = TrioLoop()
    yield loop
    loop.close()


@pytest.fixture(scope="module")
def driver() -> Iterator:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="go19-chromium-")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                 "--window-size=1400,1000"):
        options.add_argument(flag)
    chrome = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield chrome
    finally:
        chrome.quit()
        shutil.rmtree(profile, ignore_errors=True)
