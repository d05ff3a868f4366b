"""The scoring phase on the real page (issue 32): a human-vs-human game clicked to two
passes in headless Chromium against a real `go19 play`; the proposed dead stone marked,
toggled by a click, the count confirmed, the saved game read back by sgfmill."""

from __future__ import annotations

import json
from functools import partial

import pytest

from tests.web.harness import skip_without_browser, wait_for

skip_without_browser()

import sgfmill.sgf  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

from orchestrator.coords import from_gtp  # noqa: E402
from orchestrator.web.server import serve_play  # noqa: E402
from tests.web.page import board_attr, click_point, configure, press, text  # noqa: E402
from tests.web.test_scoring import CORNER  # noqa: E402

B2 = from_gtp("B2", 19)


@pytest.fixture
def play(loop, driver, tmp_path):
    """A fresh `go19 play` and the page open on it; yields the recordings folder."""
    (url, _), stop = loop.start(partial(serve_play, "127.0.0.1", 0, tmp_path / "rec"))
    driver.get(url)
    wait_for(driver, lambda d: "connecting" not in d.find_element(By.TAG_NAME, "body")
             .get_attribute("class") and board_attr(d, "stones"))
    yield tmp_path / "rec"
    stop()


def marked_dead(driver) -> set[int]:
    """The points the board crosses out, which must be its faded stones too. Both are read
    in one script: two queries could straddle a render (crosses before it, faded stones
    after) and see a board the page never showed."""
    crosses, faded = driver.execute_script(
        "const points = sel => [...document.querySelectorAll(sel)]"
        ".map(e => Number(e.getAttribute('data-point')));"
        "return [points('#board .dead-mark'), points('#board .stone.dead')];")
    assert set(crosses) == set(faded)
    return set(crosses)


def test_the_dead_stone_is_marked_toggled_and_the_count_confirmed(play, driver):
    configure(driver, "hh", komi=6.5, training=True)
    press(driver, "new")
    wait_for(driver, lambda d: "Black to play" in text(d, "turn")
             and board_attr(d, "move") == "0")
    for n, vertex in enumerate(CORNER, 1):
        if vertex is None:
            press(driver, "pass")
        else:
            click_point(driver, vertex)
        wait_for(driver, lambda d, n=n: board_attr(d, "move") == str(n), f"move {n}")

    wait_for(driver, lambda d: "Scoring" in text(d, "turn"), "no scoring phase")
    wait_for(driver, lambda d: marked_dead(d) == {B2}, "B2 is not marked dead")
    assert driver.find_element(By.ID, "confirm").is_displayed()
    assert not driver.find_element(By.ID, "pass").is_displayed()
    assert not driver.find_elements(By.CSS_SELECTOR, "#board .ghost[visibility=visible]")
    # By hand: Black 5 stones and A1 A2 B1 B2 once B2 is lifted; White Q16, + 6.5.
    assert text(driver, "estimate").startswith("Count B 9 vs W 7.5 (komi 6.5) — B +1.5")

    click_point(driver, "B2")  # alive after all: the stones as they stand
    wait_for(driver, lambda d: not marked_dead(d)
             and text(d, "status") == "1 white stone at B2 marked alive")
    assert text(driver, "estimate").startswith("Count B 5 vs W 8.5 (komi 6.5) — W +3.5")
    click_point(driver, "C2")  # a stone of Black's wall: the whole string
    wait_for(driver, lambda d: len(marked_dead(d)) == 5)
    click_point(driver, "C1")
    click_point(driver, "B2")
    wait_for(driver, lambda d: marked_dead(d) == {B2}
             and text(d, "status") == "1 white stone at B2 marked dead")

    press(driver, "confirm")
    wait_for(driver, lambda d: "Game over" in text(d, "turn"))
    assert text(driver, "turn") == ("Game over: B+1.5 (two-passes, 1 dead stone lifted) — "
                                    "area count B 9 vs W 1 + komi 6.5 = 7.5; as the stones "
                                    "stood W+3.5")
    assert not driver.find_element(By.ID, "confirm").is_displayed()
    assert marked_dead(driver) == {B2}  # the confirmed count stays drawn
    wait_for(driver, lambda d: "baduk-" in text(d, "saved"))
    (path,) = play.glob("baduk-*.sgf")
    root = sgfmill.sgf.Sgf_game.from_bytes(path.read_bytes()).get_root()
    assert root.get("RE") == "B+1.5"
    adjudication = json.loads(root.get("GOXIXADJ"))
    assert (adjudication["area_result"], adjudication["dead_stones"]) == ("W+3.5", 1)
