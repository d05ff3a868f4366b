"""Screenshots of every mode for docs/img: ``python -m tests.web.screenshots [docs/img]``.

Drives the real page in headless Chromium against real GO19 servers, as the browser
tests do; not collected by pytest (it asserts nothing, it shows)."""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402, I001
from selenium.webdriver.common.by import By  # noqa: E402

from orchestrator.serve import HeuristicEngine, serve_go19  # noqa: E402
from orchestrator.web.server import serve_play  # noqa: E402
from tests.web.harness import TrioLoop, free_port, headless_chromium, wait_for
from tests.web.page import board_attr, click_point, configure, point_offset, press, text  # noqa: E402

OPENING = ("Q16", "D4", "Q3", "D16", "R10", "C10", "K4", "K16", "F3", "O17", "C6", "R6")


def moves(driver) -> int:
    return int(board_attr(driver, "move") or 0)


def human_moves(driver, count: int) -> None:
    """Play ``count`` moves for the human from OPENING, skipping points already taken."""
    played = 0
    for vertex in OPENING:
        if played == count:
            break
        if "your move" not in text(driver, "turn"):
            wait_for(driver, lambda d: "your move" in text(d, "turn"))
        before = moves(driver)
        click_point(driver, vertex)
        wait_for(driver, lambda d, b=before: moves(d) > b or "illegal" in text(d, "status"))
        played += moves(driver) > before


def hover(driver, vertex: str) -> None:
    dx, dy = point_offset(driver, vertex)
    ActionChains(driver).move_to_element_with_offset(
        driver.find_element(By.ID, "board"), dx, dy).perform()


def play_scenes(loop: TrioLoop, driver, out: Path, recordings: Path) -> None:
    (url, _), _ = loop.start(partial(serve_play, "127.0.0.1", 0, recordings))
    driver.get(url)
    wait_for(driver, lambda d: board_attr(d, "stones"))

    configure(driver, "ha")
    press(driver, "new")
    human_moves(driver, 9)
    hover(driver, "O3")
    driver.save_screenshot(str(out / "play-human-vs-ai.png"))

    configure(driver, "hh")
    press(driver, "new")
    human_moves(driver, 8)
    press(driver, "pass")
    wait_for(driver, lambda d: "White to play" in text(d, "turn"))
    press(driver, "pass")
    wait_for(driver, lambda d: "Game over" in text(d, "turn"))
    driver.save_screenshot(str(out / "play-human-vs-human-end.png"))

    port, stop = loop.start(partial(serve_go19, HeuristicEngine(seed=2), "127.0.0.1", 0))
    configure(driver, "hv", host1="127.0.0.1", port1=port, timeout=10, show_png=True)
    press(driver, "check1")
    wait_for(driver, lambda d: "green" in d.find_element(By.ID, "server1-label")
             .get_attribute("class"))
    press(driver, "new")
    human_moves(driver, 6)
    wait_for(driver, lambda d: d.execute_script(
        "const i = document.getElementById('vlm-png'); return i.complete && i.naturalWidth;"))
    driver.save_screenshot(str(out / "play-human-vs-vlm.png"))

    stop()
    configure(driver, "hv", auto_reconnect1=True, show_png=False)
    press(driver, "new")
    human_moves(driver, 3)
    wait_for(driver, lambda d: "reconnect wait" in d.find_element(By.ID, "server1-label").text)
    driver.save_screenshot(str(out / "play-server-down.png"))

    slow, _ = loop.start(partial(serve_go19, HeuristicEngine(seed=5), "127.0.0.1", 0,
                                 delay_ms=30))
    configure(driver, "av", port1=slow, auto_reconnect1=False, color="white")
    press(driver, "new")
    wait_for(driver, lambda d: "AI vs VLM" in text(d, "players") and moves(d) >= 50)
    driver.save_screenshot(str(out / "play-ai-vs-vlm.png"))

    configure(driver, "vv", port1=slow, host2="", port2="", training=True, auto_restart=True)
    press(driver, "new")
    wait_for(driver, lambda d: "VLM vs VLM" in text(d, "players") and moves(d) >= 90)
    driver.save_screenshot(str(out / "play-vlm-vs-vlm.png"))
    configure(driver, "vv", training=False, auto_restart=False)


MATCHUP = """
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


def watch_scenes(loop: TrioLoop, driver, out: Path, recordings: Path) -> None:
    port, _ = loop.start(partial(serve_go19, HeuristicEngine(seed=1), "127.0.0.1", 0,
                                 slots=2, delay_ms=10))
    matchup = recordings / "screenshot.toml"
    matchup.write_text(MATCHUP.format(port=port))
    collect = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "collect", "--matchup", str(matchup),
         "--recordings", str(recordings), "--no-dashboard", "--no-report",
         "--web", f"127.0.0.1:{free_port()}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = next(line.split("watch page: ")[1].strip() for line in collect.stdout
                   if "watch page: " in line)
        driver.get(url)
        wait_for(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#finished-games tbody tr"))
                 >= 2 and len(d.find_elements(By.CSS_SELECTOR, "#live-games tbody tr")) == 2)
        driver.find_elements(By.CSS_SELECTOR, "#live-games tbody tr")[0].click()
        wait_for(driver, lambda d: "(live)" in text(d, "players") and moves(d) >= 60)
        driver.save_screenshot(str(out / "watch-live.png"))
        driver.find_elements(By.CSS_SELECTOR, "#finished-games tbody tr")[-1].click()
        wait_for(driver, lambda d: "(finished)" in text(d, "players"))
        slider = driver.find_element(By.ID, "slider")
        driver.execute_script("const s = arguments[0]; s.value = Math.floor(s.max * 0.6);"
                              "s.dispatchEvent(new Event('input'));", slider)
        driver.save_screenshot(str(out / "watch-replay.png"))
    finally:
        collect.send_signal(signal.SIGINT)
        collect.communicate(timeout=60)


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/img")
    out.mkdir(parents=True, exist_ok=True)
    loop = TrioLoop()
    with tempfile.TemporaryDirectory() as tmp, headless_chromium(1360, 1000) as driver:
        play_scenes(loop, driver, out, Path(tmp) / "play")
        watch_scenes(loop, driver, out, Path(tmp))
    loop.close()
    print(f"screenshots in {out}")


if __name__ == "__main__":
    main()
