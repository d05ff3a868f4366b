"""`collect --web`: a real collect process, watched in a real browser. A GO19 server in
the test holds its answer at a chosen request, so the page is compared with the
referee's board at a move the test knows, without racing the game."""

from __future__ import annotations

import signal
import subprocess
import sys
from functools import partial
from html import unescape

import pytest
import trio

from tests.web.harness import board_after, skip_without_browser, wait_for

skip_without_browser()

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

from orchestrator.players.heuristic import HeuristicPlayer  # noqa: E402
from orchestrator.serve import serve_go19  # noqa: E402
from orchestrator.sgf import read_games  # noqa: E402

HOLD_AT = 9  # the gated player's 9th request: 8 moves each, so the board is at move 16


class GatedEngine:
    """The heuristic AI, holding its ``HOLD_AT``-th answer of game 1 and its first answer
    of game 2 until the test releases them."""

    def __init__(self) -> None:
        self._inner = HeuristicPlayer("engine", seed=3)
        self.requests = 0
        self.games = 0
        self.release_move = trio.Event()
        self.release_game2 = trio.Event()

    name = "gated"

    async def answer(self, game, number=0, picture=None):
        self.requests += 1
        if not game.board.to_array().any():
            self.games += 1
            if self.games == 2:
                await self.release_game2.wait()
        elif self.games == 1 and self.requests == HOLD_AT:
            await self.release_move.wait()
        return await self._inner.answer(game, number, picture)

    async def aclose(self) -> None:
        return None


MATCHUP = """
[run]
name = "watched"
seed = 5

[players.gated]
kind = "go19"
replicas = ["127.0.0.1:{port}"]

[players.ai]
kind = "heuristic"
level = 1
seed = 4

[pairing]
black = "gated"
white = "ai"
alternate_colors = false

[game]
move_timeout_s = 120
concurrency = 1
"""


def drawn_stones(driver) -> str:
    """The stones the SVG shows (read in one go), as the referee's 361-character string."""
    return driver.execute_script("""
        const cells = Array(361).fill("0");
        for (const c of document.querySelectorAll("#stones circle.stone")) {
          cells[Number(c.dataset.point)] = c.classList.contains("black") ? "1" : "2";
        }
        return cells.join("");""")


def test_collect_web_shows_the_referees_board_live_and_replays_it(loop, driver, tmp_path):
    engine = GatedEngine()
    port, _ = loop.start(partial(serve_go19, engine, "127.0.0.1", 0))
    matchup = tmp_path / "watched.toml"
    matchup.write_text(MATCHUP.format(port=port))
    recordings = tmp_path / "rec"
    collect = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "collect", "--matchup", str(matchup),
         "--games", "2", "--recordings", str(recordings), "--no-dashboard", "--no-report",
         "--web", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = None
        for line in collect.stdout:
            if "watch page: " in line:
                url = line.split("watch page: ")[1].strip()
                break
        assert url, "collect never announced its watch page"
        driver.get(url)
        # The page opens on the newest game in flight, without a click.
        wait_for(driver, lambda d: d.find_element(By.ID, "game-line").text.startswith(
            "game 1 (live)"), "the page did not open on the game in flight")
        row = wait_for(driver, lambda d: d.find_elements(
            By.CSS_SELECTOR, '#live-games tr[data-game="1"]'), "game 1 never listed")
        row[0].click()
        moves = 2 * (HOLD_AT - 1)
        wait_for(driver, lambda d: d.find_element(By.ID, "board").get_attribute("data-move")
                 == str(moves) and "waiting on gated" in d.find_element(By.ID, "turn").text,
                 "the page never showed the held position")
        live = drawn_stones(driver)
        assert live.count("1") + live.count("2") > 0
        assert driver.find_element(By.ID, "verdict").text == "gated vs ai: no rated games yet"

        loop.call(engine.release_move.set)  # game 1 plays out; game 2 holds at its start
        row = wait_for(driver, lambda d: d.find_elements(
            By.CSS_SELECTOR, '#finished-games tr[data-game="1"]'), "game 1 never finished")
        row[0].click()
        game = read_games(next(recordings.glob("*/baduk-*.sgf")).read_bytes())[0]
        wait_for(driver, lambda d: d.find_element(By.ID, "slider-label").text.startswith(
            f"move {len(game.moves)} of {len(game.moves)}"), "no replay of game 1")
        slider = driver.find_element(By.ID, "slider")
        driver.execute_script("const s = arguments[0]; s.value = arguments[1];"
                              "s.dispatchEvent(new Event('input'));", slider, moves)
        wait_for(driver, lambda d: d.find_element(By.ID, "board").get_attribute("data-move")
                 == str(moves))
        assert drawn_stones(driver) == live
        # The estimate of the position the replay rests on, from the server.
        wait_for(driver, lambda d: d.find_element(By.ID, "estimate").text.startswith(
            "Estimate B "), "no estimate for the replayed position")

        # The keyboard steps through it as the slider does.
        total = len(game.moves)
        body = driver.find_element(By.TAG_NAME, "body")
        for key, expected in ((Keys.HOME, 0), (Keys.ARROW_RIGHT, 1), (Keys.ARROW_RIGHT, 2),
                              (Keys.ARROW_LEFT, 1), (Keys.END, total)):
            ActionChains(driver).send_keys_to_element(body, key).perform()
            wait_for(driver, lambda d, n=expected: d.find_element(By.ID, "slider-label").text
                     .startswith(f"move {n} of {total}"), f"{key!r} did not show move {expected}")

        # The referee's board at that move, from the recording: what the page showed live.
        at_move = read_games(next(recordings.glob("*/baduk-*.sgf")).read_bytes())[0]
        assert board_after(at_move, moves) == live
        wait_for(driver, lambda d: any(wld in d.find_element(By.ID, "verdict").text
                                       for wld in ("1–0–0", "0–1–0", "0–0–1")))
        # The terminal dashboard's verdict line: after one decisive game the Elo is
        # infinite, written as the dashboard writes it, never Python's "inf".
        verdict = driver.find_element(By.ID, "verdict").text
        assert verdict.startswith("gated vs ai: ") and " Elo " in verdict, verdict
        assert "inf" not in verdict and ("+∞" in verdict or "−∞" in verdict or
                                         "1–0–0" not in verdict and "0–1–0" not in verdict)
    finally:
        collect.send_signal(signal.SIGINT)
        loop.call(engine.release_game2.set)
        collect.communicate(timeout=60)


# -- the end of a run and its one verdict line (issue 26, bugs 4 and 5) ------------------------

SHORT_RUN = """
[run]
name = "short"
seed = 8

[players.strong]
kind = "go19"
replicas = ["127.0.0.1:{port}"]

[players.weak]
kind = "heuristic"
level = 0
seed = 2

[pairing]
black = "strong"
white = "weak"

[game]
move_cap = 40
concurrency = 2

[stop.sprt]
elo0 = 0
elo1 = 50
"""


@pytest.fixture(scope="module")
def ended_run(loop, driver, tmp_path_factory):
    """A 4-game collect watched from its first game until it has exited."""
    tmp = tmp_path_factory.mktemp("short")
    port, _ = loop.start(partial(serve_go19, HeuristicPlayer("engine", seed=6), "127.0.0.1", 0))
    matchup = tmp / "short.toml"
    matchup.write_text(SHORT_RUN.format(port=port))
    collect = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "collect", "--matchup", str(matchup),
         "--games", "4", "--recordings", str(tmp / "rec"), "--reports", str(tmp / "reports"),
         "--no-dashboard", "--web", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = next(line.split("watch page: ")[1].strip() for line in collect.stdout
               if "watch page: " in line)
    driver.get(url)
    wait_for(driver, lambda d: "watch" in d.find_element(By.TAG_NAME, "body")
             .get_attribute("class"))
    collect.communicate(timeout=120)
    assert collect.returncode == 0
    (run_dir,) = (tmp / "rec").iterdir()
    return run_dir, tmp / "reports" / run_dir.name


def test_the_watch_page_shows_the_end_of_the_run(ended_run, driver):
    run_dir, report = ended_run
    over = wait_for(driver, lambda d: d.find_elements(By.ID, "over") and
                    d.find_element(By.ID, "over").text, "the page never said the run is over")
    assert over.startswith("run over: 4/4 games"), over
    assert "retrying" not in driver.find_element(By.ID, "link-state").text
    assert str(report / "report.html") in over  # where it is on disk
    assert driver.find_element(By.ID, "progress").text.startswith("4/4 games")


def test_the_report_link_opens_the_report_after_collect_has_exited(ended_run, driver):
    """Issue 30: the link was a file:// URL, which a browser does not follow from an
    http page; the page is now sent the report and opens its own copy."""
    _, report = ended_run
    wait_for(driver, lambda d: d.find_elements(By.ID, "report-link"))
    first = driver.current_window_handle
    driver.find_element(By.ID, "report-link").click()
    wait_for(driver, lambda d: len(d.window_handles) == 2, "the link opened nothing")
    driver.switch_to.window(next(h for h in driver.window_handles if h != first))
    try:
        expected = (report / "report.html").read_text(encoding="utf-8")
        title = unescape(expected.split("<title>", 1)[1].split("</title>", 1)[0])
        wait_for(driver, lambda d: d.title == title, f"no report titled {title!r}")
        heading = driver.find_element(By.TAG_NAME, "h1").text
        assert heading and heading in expected
        assert driver.find_elements(By.CSS_SELECTOR, ".verdict")  # the report's first box
    finally:
        driver.close()
        driver.switch_to.window(first)


def test_the_watch_headline_is_the_dashboards_one_verdict_line(ended_run, driver):
    run_dir, _ = ended_run
    from orchestrator.collect.matchup import Matchup
    from orchestrator.collect.standings import verdict_text
    from orchestrator.collect.state import RunState
    from orchestrator.collect.stopping import StopRules, head_to_head_live
    from orchestrator.recordings import read_journal, read_run_file

    records = read_journal(run_dir / "games.jsonl").records
    rules = StopRules(Matchup.model_validate(read_run_file(run_dir)["matchup"]))
    for record in records:
        rules.add(record)
    stop = rules.status("sprt")
    assert stop is not None
    h = head_to_head_live(records, "strong", "weak", [stop])
    expected = verdict_text(h, RunState(run_dir.name, 4, ["strong", "weak"])).plain
    wait_for(driver, lambda d: d.find_elements(By.ID, "verdict")
             and d.find_element(By.ID, "verdict").text == expected,
             f"no verdict line {expected!r}")
    header = driver.find_element(By.TAG_NAME, "header").text
    assert header.count("strong vs weak") == 1, header
    assert header.count("LLR") == 1, header
