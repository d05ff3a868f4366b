"""`collect --web --review`: the watch page shows the live review's quality line, the one the
plain log prints (a real collect process, the CPU KataGo of `make katago`, headless
Chromium)."""

from __future__ import annotations

import subprocess
import sys

from tests.collect.test_collect_review import short_demo
from tests.label.conftest import requires_katago
from tests.web.harness import skip_without_browser, wait_for

skip_without_browser()

from selenium.webdriver.common.by import By  # noqa: E402


@requires_katago
def test_the_watch_page_shows_the_quality_line(driver, tmp_path):
    collect = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "collect", "--matchup",
         str(short_demo(tmp_path)), "--games", "2", "--recordings", str(tmp_path / "rec"),
         "--no-report", "--no-dashboard", "--review", "--web", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert collect.stdout is not None
        url = next(line.split("watch page: ")[1].strip() for line in collect.stdout
                   if "watch page: " in line)
        driver.get(url)
        shown = wait_for(driver, lambda d: (text := d.find_element(By.ID, "quality").text)
                         .startswith("move quality over") and text,
                         "the watch page never showed the quality line")
        rest, _ = collect.communicate(timeout=300)
    finally:
        if collect.poll() is None:
            collect.kill()
            collect.communicate()
    assert collect.returncode == 0, rest
    line, _, status = shown.rpartition(" (")
    assert status.startswith("review ")
    reviewed = [entry.split("): ", 1)[1] for entry in rest.splitlines()
                if " reviewed (" in entry]
    assert line in reviewed, (line, reviewed)

