"""`go19 play` in a real browser: clicks, refusals, the end by two passes, GO19 servers
up, down and late, and self-play in training mode."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from functools import partial

import numpy as np
import pytest

from tests.web.harness import board_after, free_port, skip_without_browser, wait_for

skip_without_browser()

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

from orchestrator.coords import PASS, from_gtp  # noqa: E402
from orchestrator.players.heuristic import HeuristicPlayer  # noqa: E402
from orchestrator.render import render_png  # noqa: E402
from orchestrator.rules import BLACK, WHITE, Game, tromp_taylor  # noqa: E402
from orchestrator.serve import serve_go19  # noqa: E402
from orchestrator.sgf import read_games  # noqa: E402
from orchestrator.web.server import serve_play  # noqa: E402
from tests.web.page import (  # noqa: E402
    board_attr,
    click_point,
    configure,
    move_is,
    point_offset,
    press,
    text,
)


@pytest.fixture
def play(loop, driver, tmp_path):
    """A fresh `go19 play` server and the page open on it; yields the recordings folder."""
    (url, session), stop = loop.start(partial(serve_play, "127.0.0.1", 0, tmp_path / "rec"))
    driver.get(url)
    wait_for(driver, lambda d: "play" in d.find_element(By.TAG_NAME, "body").get_attribute(
        "class") and board_attr(d, "stones"), "the play page never drew its board")
    yield tmp_path / "rec"
    stop()


def start_go19(loop, port: int = 0):
    """A real GO19 server (the heuristic AI) in the test loop: (port, stop)."""
    return loop.start(partial(serve_go19, HeuristicPlayer("engine", seed=7), "127.0.0.1", port))


def test_human_vs_ai_clicks_land_where_the_sgf_says(play, driver):
    configure(driver, "ha", training=True)
    press(driver, "new")
    wait_for(driver, lambda d: "your move" in text(d, "turn"), "no turn for the human")

    dx, dy = point_offset(driver, "Q16")
    ActionChains(driver).move_to_element_with_offset(
        driver.find_element(By.ID, "board"), dx, dy).perform()
    wait_for(driver, lambda d: text(d, "hover") == "Q16", "hover does not name the point")
    click_point(driver, "Q16")
    wait_for(driver, move_is(2), "the AI did not answer the first move")
    assert board_attr(driver, "stones")[from_gtp("Q16", 19)] == "1"

    click_point(driver, "Q16")  # occupied: refused, nothing played
    wait_for(driver, lambda d: "illegal move Q16: occupied" in text(d, "status"))
    assert board_attr(driver, "move") == "2"
    assert "Estimate B" in text(driver, "estimate") and "(komi 2.5)" in text(driver, "estimate")

    click_point(driver, "C3")
    wait_for(driver, move_is(4))
    drawn = board_attr(driver, "stones")
    press(driver, "resign")
    wait_for(driver, lambda d: "Game over: W+R" in text(d, "turn"))
    saved = wait_for(driver, lambda d: d.find_element(By.ID, "saved").text.split("saved ")[-1]
                     if "baduk-" in d.find_element(By.ID, "saved").text else None)
    files = sorted(play.glob("baduk-*.sgf"))
    assert [str(f) for f in files] == [saved]

    game = read_games(files[0].read_bytes())[0]
    assert [(m.color, m.point) for m in game.moves[::2]] == [
        (BLACK, from_gtp("Q16", 19)), (BLACK, from_gtp("C3", 19))]
    assert [m.color for m in game.moves[1::2]] == [WHITE, WHITE]
    assert game.result == "W+R" and game.black_name == "human"
    assert board_after(game) == drawn  # page and SGF agree


def test_two_passes_end_the_game_with_the_referees_count(play, driver):
    configure(driver, "hh")
    press(driver, "new")
    wait_for(driver, lambda d: "Black to play" in text(d, "turn"))
    click_point(driver, "D4")
    wait_for(driver, move_is(1))
    click_point(driver, "Q16")
    wait_for(driver, move_is(2))
    press(driver, "pass")
    wait_for(driver, move_is(3))
    press(driver, "pass")
    wait_for(driver, lambda d: "Scoring" in text(d, "turn"))  # nothing dead on this board
    press(driver, "confirm")
    wait_for(driver, lambda d: "Game over" in text(d, "turn"))

    expected = Game(19, 2.5)
    for vertex in ("D4", "Q16"):
        expected.play(from_gtp(vertex, 19))
    area = tromp_taylor(expected.board, 2.5)
    shown = text(driver, "turn")
    assert shown.startswith(f"Game over: {area.result} (two-passes, 0 dead stones lifted)")
    assert f"area count B {area.black} vs W {area.white}" in shown


def test_human_vs_vlm_live_server_then_stopped_server(loop, play, driver):
    port, stop_server = start_go19(loop)
    configure(driver, "hv", host1="127.0.0.1", port1=port, timeout=10, show_png=True)
    press(driver, "new")
    wait_for(driver, lambda d: "your move" in text(d, "turn"))
    click_point(driver, "D4")
    wait_for(driver, move_is(2), "the GO19 server's move never came")
    assert not driver.find_elements(By.CSS_SELECTOR, ".fallback-mark")
    assert "fallback" not in text(driver, "status")

    # "What the VLM sees": the exact PNG of the request (board after D4, D4 marked).
    wait_for(driver, lambda d: d.execute_script(
        "const i = document.getElementById('vlm-png'); return i.complete && i.naturalWidth;"))
    png_url = driver.find_element(By.ID, "vlm-png").get_attribute("src")
    seen = np.zeros((19, 19), np.uint8)
    seen.flat[from_gtp("D4", 19)] = BLACK
    with urllib.request.urlopen(png_url) as reply:
        assert reply.read() == render_png(seen, from_gtp("D4", 19))

    stop_server()
    press(driver, "new")
    wait_for(driver, lambda d: "your move" in text(d, "turn") and board_attr(d, "move") == "0")
    click_point(driver, "Q16")
    wait_for(driver, move_is(2), "no fallback move after the server went away")
    wait_for(driver, lambda d: "fallback" in text(d, "status")
             and "connection" in text(d, "status"))
    assert driver.find_element(By.ID, "status").get_attribute("class") == "error"
    assert len(driver.find_elements(By.CSS_SELECTOR, ".fallback-mark")) == 1
    label = driver.find_element(By.ID, "server1-label")
    assert "red" in label.get_attribute("class")
    assert label.text.startswith(f"● FAILED 127.0.0.1:{port}")


def test_check_connection_colors_and_reconnect_countdown(loop, play, driver):
    port = free_port()
    configure(driver, "hv", host1="127.0.0.1", port1=port, timeout=2)
    label = driver.find_element(By.ID, "server1-label")
    assert label.text == "● unchecked" and "grey" in label.get_attribute("class")

    press(driver, "check1")
    wait_for(driver, lambda d: "red" in label.get_attribute("class"))
    assert label.text.startswith(f"● FAILED 127.0.0.1:{port}: ")

    configure(driver, "hv", auto_reconnect1=True)
    press(driver, "check1")
    wait_for(driver, lambda d: label.text.startswith("● reconnect wait #1 — ")
             and "amber" in label.get_attribute("class"), "no reconnect countdown")
    assert label.text.endswith(f" s (127.0.0.1:{port})")
    start_go19(loop, port)  # the server comes up late: the next attempt finds it
    wait_for(driver, lambda d: "green" in label.get_attribute("class"), "never reconnected")
    assert label.text.startswith(f"● OK 127.0.0.1:{port} (") and label.text.endswith(" ms)")


def test_vlm_self_play_training_collects_games_that_replay(loop, play, driver):
    port, _ = start_go19(loop)
    configure(driver, "vv", host1="127.0.0.1", port1=port, host2="", port2="",
              training=True, auto_restart=True)
    press(driver, "new")
    wait_for(driver, lambda d: int(text(d, "finished-count")) >= 2, "fewer than 2 games")
    configure(driver, "vv", auto_restart=False)
    wait_for(driver, lambda d: len(list(play.glob("baduk-*.sgf"))) >= 2)

    out = subprocess.run([sys.executable, "-m", "orchestrator.cli", "replay", "--json",
                          str(play)], capture_output=True, text=True, check=True).stdout
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert len(records) >= 2 and all(r["status"] == "ok" for r in records)
    for path in play.glob("baduk-*.sgf"):
        game = read_games(path.read_bytes())[0]
        assert game.black_name == game.white_name == f"vlm-127.0.0.1:{port}"
        assert game.moves[-1].point == PASS and game.moves[-2].point == PASS
