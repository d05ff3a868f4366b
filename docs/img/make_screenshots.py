"""Regenerate the screenshots in this folder (the README links them):

    .venv/bin/python docs/img/make_screenshots.py [--only dashboard|web] [REPORT_HTML]

The dashboard is rendered from tests/collect/dashboard_scene.py (a run caught mid-way:
one replica down, one slow, a burst of superko fallbacks) with rich's recording
console at 80x24 and 160x50, exported as SVG and photographed by headless Chromium.
With REPORT_HTML, the report's first screen is photographed too.

The browser pages (`go19 play`, `collect --web`) are driven in headless Chromium as the
browser tests drive them, against real GO19 servers and a real collect process, and
photographed at 1280x800 (every scene), 1920x1080 and 390x844 (a phone: the panel
below the board; the main scenes). Needs the web and test extras."""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

from rich.console import Console

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from orchestrator.collect.dashboard import Dashboard  # noqa: E402
from tests.collect.dashboard_scene import scene  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SIZES = {"": (1280, 800), "-1920x1080": (1920, 1080), "-390x844": (390, 844)}
EVERY_SIZE = ("play-human-vs-vlm", "play-count", "watch-live", "watch-replay")


def shoot(url: str, out: Path, width: int, height: int) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={profile}", f"--window-size={width},{height}",
             f"--screenshot={out}", url],
            check=True, capture_output=True, timeout=120)


def dashboard(width: int, height: int) -> None:
    console = Console(record=True, width=width, height=height, force_terminal=True,
                      color_system="truecolor", file=open("/dev/null", "w"))  # noqa: SIM115
    collector = scene()
    dash = Dashboard(console, collector.recent)
    dash.attach(collector)
    console.print(dash.render())
    svg = console.export_svg(title=f"go19 collect — {width}x{height}")
    w, h = (float(v) for v in re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups())
    page = HERE / f".dashboard-{width}x{height}.html"
    page.write_text(f'<html><body style="margin:0;background:#fff">{svg}</body></html>')
    shoot(page.as_uri(), HERE / f"dashboard-{width}x{height}.png", int(w), int(h))
    page.unlink()


# -- the browser pages ---------------------------------------------------------------------

OPENING = ("Q16", "D4", "Q3", "D16", "R10", "C10", "K4", "K16", "F3", "O17", "C6", "R6")

WATCHED = """
[run]
name = "screenshot"
seed = 11
games = 6

[players.r5]
kind = "go19"
replicas = ["127.0.0.1:{port}"]
slots = 2
adapter = "heuristic-l2 (stand-in)"

[players.r4]
kind = "heuristic"
level = 1
seed = 3

[pairing]
black = "r5"
white = "r4"

[game]
concurrency = 2
"""


def web_scenes(out: Path) -> None:
    from selenium.webdriver.common.by import By

    from orchestrator.players.heuristic import HeuristicPlayer
    from orchestrator.serve import serve_go19
    from orchestrator.web.server import serve_play
    from tests.web.harness import TrioLoop, free_port, headless_chromium, wait_for
    from tests.web.page import board_attr, click_point, configure, press, text

    def photograph(driver, name: str) -> None:
        """The scene at 1280x800, and at the other sizes for the main scenes."""
        for suffix, (width, height) in SIZES.items():
            if suffix and name not in EVERY_SIZE:
                continue
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                "width": width, "height": height, "deviceScaleFactor": 1,
                "mobile": width < 500})
            driver.execute_script("return new Promise(r => requestAnimationFrame(() => "
                                  "requestAnimationFrame(r)))")
            driver.save_screenshot(str(out / f"{name}{suffix}.png"))
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})

    def moves(driver) -> int:
        return int(board_attr(driver, "move") or 0)

    def human_moves(driver, count: int) -> None:
        played = 0
        for vertex in OPENING:
            if played == count:
                break
            wait_for(driver, lambda d: "your move" in text(d, "turn"),
                     f"no turn for the human: {text(driver, 'turn')!r}, "
                     f"{text(driver, 'status')!r}, {text(driver, 'pending')!r}")
            before = moves(driver)
            click_point(driver, vertex)
            wait_for(driver, lambda d, b=before: moves(d) > b or "illegal" in text(d, "status"))
            played += moves(driver) > before

    def hover(driver, vertex: str) -> None:
        from selenium.webdriver.common.action_chains import ActionChains

        from tests.web.page import point_offset

        dx, dy = point_offset(driver, vertex)
        ActionChains(driver).move_to_element_with_offset(
            driver.find_element(By.ID, "board"), dx, dy).perform()

    def tick(driver, element_id: str, on: bool) -> None:
        box = driver.find_element(By.ID, element_id)
        if box.is_selected() != on:
            box.click()

    loop = TrioLoop()
    with tempfile.TemporaryDirectory() as tmp, headless_chromium(1280, 800) as driver:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
        (url, _), _ = loop.start(partial(serve_play, "127.0.0.1", 0, Path(tmp) / "play"))
        driver.get(url)
        wait_for(driver, lambda d: board_attr(d, "stones"))

        configure(driver, "ha")
        press(driver, "new")
        human_moves(driver, 9)
        hover(driver, "O3")
        photograph(driver, "play-human-vs-ai")

        port, stop = loop.start(partial(serve_go19, HeuristicPlayer("engine", seed=2),
                                        "127.0.0.1", 0))
        configure(driver, "hv", host1="127.0.0.1", port1=port, adapter1="", timeout=10)
        tick(driver, "show-png", True)
        press(driver, "check1")
        wait_for(driver, lambda d: "green" in d.find_element(By.ID, "server1-label")
                 .get_attribute("class"))
        press(driver, "new")
        human_moves(driver, 6)
        wait_for(driver, lambda d: d.execute_script(
            "const i = document.getElementById('vlm-png'); return i.complete && i.naturalWidth;"))
        photograph(driver, "play-human-vs-vlm")

        stop()
        tick(driver, "show-png", False)
        configure(driver, "hv", auto_reconnect1=True)
        press(driver, "new")
        human_moves(driver, 3)
        wait_for(driver, lambda d: "reconnect wait" in d.find_element(By.ID, "server1-label").text)
        photograph(driver, "play-server-down")

        slow, _ = loop.start(partial(serve_go19, HeuristicPlayer("engine", seed=5), "127.0.0.1", 0,
                                     delay_ms=30))
        configure(driver, "av", port1=slow, auto_reconnect1=False, colour="white",
                  adapter1="heuristic-l2")
        press(driver, "new")
        wait_for(driver, lambda d: "AI vs VLM" in text(d, "players") and moves(d) >= 60)
        tick(driver, "numbers", True)
        photograph(driver, "play-ai-vs-vlm")
        tick(driver, "numbers", False)

        fast, _ = loop.start(partial(serve_go19, HeuristicPlayer("engine", seed=8), "127.0.0.1", 0))
        configure(driver, "vv", host1="127.0.0.1", port1=fast, adapter1="heuristic-l2",
                  host2="", port2="", training=False, auto_restart=False)
        press(driver, "new")
        wait_for(driver, lambda d: "Game over" in text(d, "turn"))
        photograph(driver, "play-count")

        configure(driver, "vv", port1=slow, training=True, auto_restart=True, stop_after=3)
        press(driver, "new")
        wait_for(driver, lambda d: "VLM vs VLM" in text(d, "players") and moves(d) >= 90)
        photograph(driver, "play-vlm-vs-vlm")
        configure(driver, "vv", training=False, auto_restart=False)

        watch_scenes(loop, driver, Path(tmp), photograph, free_port, wait_for, text, moves)
    loop.close()


def watch_scenes(loop, driver, tmp: Path, photograph, free_port, wait_for, text, moves) -> None:
    from selenium.webdriver.common.by import By

    from orchestrator.players.heuristic import HeuristicPlayer
    from orchestrator.serve import serve_go19

    port, _ = loop.start(partial(serve_go19, HeuristicPlayer("engine", seed=1), "127.0.0.1", 0,
                                 slots=2, delay_ms=40))
    matchup = tmp / "screenshot.toml"
    matchup.write_text(WATCHED.format(port=port))
    collect = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "collect", "--matchup", str(matchup),
         "--recordings", str(tmp / "rec"), "--no-dashboard", "--no-report",
         "--web", f"127.0.0.1:{free_port()}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = next(line.split("watch page: ")[1].strip() for line in collect.stdout
                   if "watch page: " in line)
        driver.get(url)
        wait_for(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#finished-games tbody tr"))
                 >= 2 and len(d.find_elements(By.CSS_SELECTOR, "#live-games tbody tr")) == 2)
        row = driver.find_elements(By.CSS_SELECTOR, "#live-games tbody tr")[-1]
        row.click()
        # The games table is refreshed once a second: wait for it to be near the board.
        wait_for(driver, lambda d: "(live)" in text(d, "players") and moves(d) >= 60
                 and moves(d) - int(row.find_elements(By.TAG_NAME, "td")[3].text) <= 3)
        photograph(driver, "watch-live")
        driver.find_elements(By.CSS_SELECTOR, "#finished-games tbody tr")[-1].click()
        wait_for(driver, lambda d: "(finished)" in text(d, "players"))
        slider = driver.find_element(By.ID, "slider")
        driver.execute_script("const s = arguments[0]; s.value = Math.floor(s.max * 0.6);"
                              "s.dispatchEvent(new Event('input'));", slider)
        wait_for(driver, lambda d: d.find_element(By.ID, "estimate").text.startswith("Estimate B"))
        photograph(driver, "watch-replay")
    finally:
        collect.send_signal(signal.SIGINT)
        collect.communicate(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description="regenerate docs/img")
    parser.add_argument("--only", choices=("dashboard", "web"))
    parser.add_argument("report", nargs="?", help="a report.html to photograph")
    args = parser.parse_args()
    if args.only in (None, "dashboard"):
        dashboard(80, 24)
        dashboard(160, 50)
    if args.only in (None, "web"):
        web_scenes(HERE)
    if args.report:
        shoot(Path(args.report).resolve().as_uri(), HERE / "report-first-screen.png", 1280, 900)


if __name__ == "__main__":
    main()
