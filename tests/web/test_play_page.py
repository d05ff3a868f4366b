"""The play page as a new user met it (issue 26): each test is one thing that went wrong,
in a real browser against a real `go19 play` and real GO19 servers."""

from __future__ import annotations

import json
from functools import partial

import pytest
import trio

from tests.web.harness import free_port, skip_without_browser, wait_for

skip_without_browser()

from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

from orchestrator.coords import PASS, from_gtp  # noqa: E402
from orchestrator.players.base import Answer  # noqa: E402
from orchestrator.players.heuristic import HeuristicPlayer  # noqa: E402
from orchestrator.rules import Game, tromp_taylor  # noqa: E402
from orchestrator.serve import serve_go19  # noqa: E402
from orchestrator.serve.engines import EngineError  # noqa: E402
from orchestrator.sgf import read_games  # noqa: E402
from orchestrator.sgf.model import BLACK_PLAYER_PROP, WHITE_PLAYER_PROP  # noqa: E402
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


def drawn(driver) -> bool:
    body = driver.find_element(By.TAG_NAME, "body").get_attribute("class")
    return "play" in body and "connecting" not in body and bool(board_attr(driver, "stones"))


@pytest.fixture
def play(loop, driver, tmp_path):
    """A fresh `go19 play` and the page open on it; yields (recordings folder, URL)."""
    (url, _), stop = loop.start(partial(serve_play, "127.0.0.1", 0, tmp_path / "rec"))
    driver.get(url)
    wait_for(driver, drawn, "the play page never drew its board")
    yield tmp_path / "rec", url
    stop()
    for handle in driver.window_handles[1:]:  # tabs a test opened
        driver.switch_to.window(handle)
        driver.close()
    driver.switch_to.window(driver.window_handles[0])


def start_go19(loop, engine=None):
    return loop.start(partial(serve_go19, engine or HeuristicPlayer("engine", seed=7),
                              "127.0.0.1", 0))


def selected(driver, element_id: str) -> str:
    return Select(driver.find_element(By.ID, element_id)).first_selected_option.get_attribute(
        "value")


def ticked(driver, element_id: str) -> bool:
    return driver.find_element(By.ID, element_id).is_selected()


# -- bug 1: the form is the server's --------------------------------------------------------

def test_after_a_restart_the_page_shows_the_servers_defaults(loop, driver, tmp_path):
    (url, _), stop = loop.start(partial(serve_play, "127.0.0.1", 0, tmp_path))
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    driver.get(url)
    wait_for(driver, drawn)
    configure(driver, "hh", training=True)
    press(driver, "new")
    wait_for(driver, lambda d: "human vs human" in text(d, "players"))

    stop()  # go19 play restarts on the same port, back at its defaults
    wait_for(driver, lambda d: "connecting" in d.find_element(By.TAG_NAME, "body")
             .get_attribute("class"), "the page never noticed the server went away")
    _, stop_again = loop.start(partial(serve_play, "127.0.0.1", port, tmp_path))
    try:
        wait_for(driver, drawn, "the page never reconnected")
        wait_for(driver, lambda d: selected(d, "mode") == "ha" and not ticked(d, "training"),
                 "the reconnected page kept its old form: games would silently not be saved")
    finally:
        stop_again()


def test_a_second_tab_shows_the_mode_another_tab_chose(play, driver):
    _, url = play
    first = driver.current_window_handle
    driver.switch_to.new_window("tab")
    driver.get(url)
    wait_for(driver, drawn)
    second = driver.current_window_handle

    driver.switch_to.window(first)
    configure(driver, "hh", training=True)
    press(driver, "new")
    wait_for(driver, lambda d: "human vs human" in text(d, "players"))
    driver.switch_to.window(second)
    wait_for(driver, lambda d: selected(d, "mode") == "hh" and ticked(d, "training"),
             "the second tab kept a stale mode")


# -- bug 2: komi ------------------------------------------------------------------------------

def test_an_empty_komi_is_refused_with_the_reason(play, driver):
    _, url = play
    configure(driver, "hh", komi="")
    press(driver, "new")
    wait_for(driver, lambda d: "bad setting komi" in text(d, "status"),
             "an empty komi was not refused")
    assert driver.find_element(By.ID, "status").get_attribute("class") == "error"
    assert "(komi 2.5)" in text(driver, "estimate")
    driver.get(url)  # a later tab: the server's komi, not 0
    wait_for(driver, drawn)
    wait_for(driver, lambda d: d.find_element(By.ID, "komi").get_attribute("value") == "2.5")


# -- bug 3: what the VLM sees -------------------------------------------------------------------

def test_what_the_vlm_sees_says_no_request_yet(loop, play, driver):
    port, _ = start_go19(loop)
    configure(driver, "hv", host1="127.0.0.1", port1=port, timeout=10, show_png=True)
    press(driver, "new")
    wait_for(driver, lambda d: "your move" in text(d, "turn"))
    wait_for(driver, lambda d: text(d, "vlm-view") == "no request yet",
             "no 'no request yet' before the first request")
    click_point(driver, "D4")
    wait_for(driver, move_is(2))
    wait_for(driver, lambda d: d.execute_script(
        "const i = document.getElementById('vlm-png');"
        "return i.offsetParent !== null && i.complete && i.naturalWidth > 0;"))
    press(driver, "new")  # a new game has sent no request yet either
    wait_for(driver, lambda d: board_attr(d, "move") == "0" and "your move" in text(d, "turn"))
    wait_for(driver, lambda d: text(d, "vlm-view") == "no request yet",
             "the new game showed the old game's picture")


# -- bug 6: the count at the end ------------------------------------------------------------------

def test_two_passes_show_the_area_count_marked_on_the_board(play, driver):
    configure(driver, "hh")
    press(driver, "new")
    wait_for(driver, lambda d: "Black to play" in text(d, "turn"))
    # Black walls off the corner A1–B2; White has one stone far away.
    moves = ["A3", "Q16", "B3", None, "C3", None, "C2", None, "C1", None, None]
    expected = Game(19, 2.5)
    for n, vertex in enumerate(moves, 1):
        if vertex is None:
            press(driver, "pass")
        else:
            click_point(driver, vertex)
        expected.play(PASS if vertex is None else from_gtp(vertex, 19))
        wait_for(driver, lambda d, n=n: board_attr(d, "move") == str(n))
    wait_for(driver, lambda d: "Scoring" in text(d, "turn"))  # no stone is dead here
    press(driver, "confirm")
    wait_for(driver, lambda d: "Game over" in text(d, "turn"))
    area = tromp_taylor(expected.board, 2.5)
    assert (area.black, area.white, area.result) == (9, 1, "B+5.5")

    line = text(driver, "estimate")
    assert line.startswith("Count B 9 vs W 3.5 (komi 2.5) — B +5.5"), line
    black = {int(e.get_attribute("data-point")) for e in
             driver.find_elements(By.CSS_SELECTOR, "#board .territory.black")}
    assert black == {from_gtp(v, 19) for v in ("A1", "A2", "B1", "B2")}
    assert not driver.find_elements(By.CSS_SELECTOR, "#board .territory.white")
    dame = driver.find_elements(By.CSS_SELECTOR, "#board .dame")
    assert len(dame) == 361 - 6 - 4  # every other empty point reaches both colours


# -- bug 8: the form runs ahead of the game -----------------------------------------------------

def test_a_changed_form_says_new_game_to_apply(play, driver):
    configure(driver, "ha")
    press(driver, "new")
    wait_for(driver, lambda d: "your move" in text(d, "turn"))
    Select(driver.find_element(By.ID, "mode")).select_by_value("hh")
    wait_for(driver, lambda d: "new game to apply" in text(d, "pending"),
             "the changed mode was not announced as pending")
    assert "human vs human" in text(driver, "pending")
    assert "human vs AI" in text(driver, "players")  # the game on the board is still that one
    press(driver, "new")
    wait_for(driver, lambda d: "human vs human" in text(d, "players"))
    assert text(driver, "pending") == ""


# -- bug 9: four small ones ---------------------------------------------------------------------

def test_the_hover_stone_has_the_colour_to_play(play, driver):
    configure(driver, "hh")
    press(driver, "new")
    wait_for(driver, lambda d: "Black to play" in text(d, "turn"))
    click_point(driver, "D4")
    wait_for(driver, lambda d: "White to play" in text(d, "turn"))
    dx, dy = point_offset(driver, "Q16")
    ActionChains(driver).move_to_element_with_offset(
        driver.find_element(By.ID, "board"), dx, dy).perform()
    wait_for(driver, lambda d: text(d, "hover") == "Q16")
    ghost = driver.find_element(By.CSS_SELECTOR, "#board .ghost")
    assert ghost.is_displayed()
    assert ghost.get_attribute("data-color") == "white"


class Silent:
    """A GO19 engine that never answers."""

    name = "silent"

    async def answer(self, game, number=0, picture=None):
        await trio.sleep_forever()

    async def aclose(self) -> None:
        return None


def test_a_cancelled_vlm_reply_is_news_not_an_error(loop, play, driver):
    port, _ = start_go19(loop, Silent())
    configure(driver, "hv", host1="127.0.0.1", port1=port, timeout=600)
    press(driver, "new")
    wait_for(driver, lambda d: "your move" in text(d, "turn"))
    click_point(driver, "Q16")
    wait_for(driver, lambda d: d.find_element(By.ID, "cancel").is_enabled())
    press(driver, "cancel")
    wait_for(driver, lambda d: "cancelled" in text(d, "status"))
    assert driver.find_element(By.ID, "status").get_attribute("class") != "error"


def test_the_fallback_mark_reads_apart_from_the_last_move_mark(play, driver):
    configure(driver, "hv", host1="127.0.0.1", port1=free_port(), timeout=5)
    press(driver, "new")
    wait_for(driver, lambda d: "your move" in text(d, "turn"))
    click_point(driver, "Q16")
    wait_for(driver, move_is(2), "no fallback move")
    (mark,) = driver.find_elements(By.CSS_SELECTOR, "#board .fallback-mark")
    (last,) = driver.find_elements(By.CSS_SELECTOR, "#board .last")
    assert mark.get_attribute("data-point") == last.get_attribute("data-point")
    assert mark.tag_name != last.tag_name  # another shape
    red, green, blue = (int(c) for c in driver.execute_script(
        "return getComputedStyle(arguments[0]).fill;", mark)[4:-1].split(","))
    # The VLM's picture marks its last move with a red dot: the fallback mark is no red.
    assert not (red > 150 and green < 100 and blue < 100), (red, green, blue)


def test_the_saved_line_goes_when_training_is_turned_off(play, driver):
    configure(driver, "ha", training=True)
    press(driver, "new")
    wait_for(driver, lambda d: "your move" in text(d, "turn"))
    press(driver, "resign")
    wait_for(driver, lambda d: "baduk-" in text(d, "saved"))
    configure(driver, "ha", training=False)
    wait_for(driver, lambda d: text(d, "saved") == "", "the saved line stayed")


# -- bug 10: stop after N, adapter names --------------------------------------------------------

def test_auto_restart_stops_after_n_games_named_by_the_adapter(loop, play, driver):
    recordings, _ = play
    port, _ = start_go19(loop)
    configure(driver, "vv", host1="127.0.0.1", port1=port, adapter1="lora-r5", host2="",
              port2="", training=True, auto_restart=True, stop_after=2)
    press(driver, "new")
    wait_for(driver, lambda d: "stopped after 2 games" in text(d, "status"),
             "auto-restart never stopped")
    files = sorted(recordings.glob("baduk-*.sgf"))
    assert len(files) == 2 and text(driver, "finished-count") == "2"
    for path in files:
        game = read_games(path.read_bytes())[0]
        assert game.black_name == game.white_name == "lora-r5"
        meta = json.loads(game.root_props[BLACK_PLAYER_PROP])
        assert meta["kind"] == "go19" and meta["adapter"] == "lora-r5"
        assert meta["endpoint"] == f"127.0.0.1:{port}"
        assert json.loads(game.root_props[WHITE_PLAYER_PROP]) == meta


# -- issue 30: the first hour's rough edges -----------------------------------------------------

class Failing:
    """A GO19 engine that answers every request with an error frame."""

    name = "failing"

    async def answer(self, game, number=0, picture=None) -> Answer:
        return Answer(None, EngineError("no model loaded"))

    async def aclose(self) -> None:
        return None


def test_auto_restart_stops_on_a_streak_of_void_games_and_says_so(loop, play, driver):
    """VLM vs VLM whose every answer fails: training mode, auto-restart and stop after 2
    used to play void games for ever (the 2 count finished games only)."""
    from orchestrator.collect.collector import MAX_VOID_STREAK

    recordings, _ = play
    port, _ = start_go19(loop, Failing())
    configure(driver, "vv", host1="127.0.0.1", port1=port, adapter1="", host2="", port2="",
              training=True, auto_restart=True, stop_after=2)
    press(driver, "new")
    wait_for(driver, lambda d: "auto-restart stopped" in text(d, "status"),
             "auto-restart never stopped")
    status = driver.find_element(By.ID, "status")
    assert status.get_attribute("class") == "error"
    assert status.text.startswith(f"auto-restart stopped: {MAX_VOID_STREAK} void games in a "
                                  f"row (fallbacks vlm-127.0.0.1:{port}: error "), status.text
    assert text(driver, "void-count") == f"(void {MAX_VOID_STREAK})"
    assert text(driver, "finished-count") == "0"
    assert len(list((recordings / "void").glob("*.sgf"))) == MAX_VOID_STREAK


def test_a_refused_move_is_forgotten_once_a_move_is_made(play, driver):
    """The red refusal used to stay through the passes that followed, and "Game over"
    (now the scoring phase, then "Game over")."""
    configure(driver, "hh")
    press(driver, "new")
    wait_for(driver, lambda d: "Black to play" in text(d, "turn"))
    steps = [("Q16", 1, ""), ("Q16", 1, "illegal move Q16: occupied"), ("pass", 2, ""),
             ("pass", 3, "")]
    for action, moves, status in steps:
        if action == "pass":
            press(driver, "pass")
        else:
            click_point(driver, action)
        wait_for(driver, lambda d, m=moves, s=status: board_attr(d, "move") == str(m)
                 and text(d, "status") == s, f"after {action}: not move {moves}, {status!r}")
    wait_for(driver, lambda d: "Scoring" in text(d, "turn"))
    press(driver, "confirm")
    wait_for(driver, lambda d: "Game over" in text(d, "turn"))
    assert text(driver, "status") == ""


def test_cancel_vlm_response_shows_only_where_a_vlm_plays(play, driver):
    for mode, name, shown in (("hh", "human vs human", False), ("ha", "human vs AI", False),
                              ("hv", "human vs VLM", True)):
        if mode == "hv":
            configure(driver, mode, host1="127.0.0.1", port1=free_port(), timeout=5)
        else:
            configure(driver, mode)
        press(driver, "new")
        wait_for(driver, lambda d, name=name: name in text(d, "players")
                 and "your move" in text(d, "turn"))
        assert driver.find_element(By.ID, "cancel").is_displayed() is shown, mode


def test_the_pending_line_names_a_missing_model(play, driver):
    configure(driver, "ha")
    press(driver, "new")
    wait_for(driver, lambda d: "your move" in text(d, "turn"))
    configure(driver, "hv", host1="http://127.0.0.1:9/v1", model1="")
    wait_for(driver, lambda d: "server 1 http://127.0.0.1:9/v1" in text(d, "pending"))
    pending = text(driver, "pending")
    assert "model 1 (none)" in pending and " ," not in pending, pending
