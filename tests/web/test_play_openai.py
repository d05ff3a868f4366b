"""The play page's server rows with an OpenAI-compatible base URL and a model (issue 24), in
a real browser against a real `go19 play` and the real misbehaving-on-demand HTTP server
of tests/players: the row's check lists the model, two rows on one port play two models,
and a base URL without a model is refused with one line."""

from __future__ import annotations

from functools import partial

import pytest

from tests.web.harness import skip_without_browser, wait_for

skip_without_browser()

from orchestrator.web.server import serve_play  # noqa: E402
from tests.players.openai_server import DEEP_JSON, LOCALHOST, OpenAIServer  # noqa: E402
from tests.web.page import board_attr, configure, press, text  # noqa: E402


@pytest.fixture
def page(loop, driver, tmp_path):
    (url, _), stop = loop.start(partial(serve_play, "127.0.0.1", 0, tmp_path / "rec"))
    driver.get(url)
    wait_for(driver, lambda d: bool(board_attr(d, "stones")), "the play page never drew")
    yield
    stop()


def answers_by_model(request: dict) -> str:
    return {"r5": "Q16", "r4": "D4"}[request["model"]]


def test_two_rows_on_one_port_play_the_two_models(loop, driver, page):
    server = OpenAIServer(models=["base", "r5", "r4"], reply=answers_by_model)
    port, stop = loop.start(server.serve)
    base = f"http://{LOCALHOST}:{port}/v1"
    try:
        configure(driver, "vv", host1=base, model1="r5", host2=base, model2="r4")
        press(driver, "check1")
        wait_for(driver, lambda d: text(d, "server1-label").startswith(
            f"● OK {base}: serves r5"), "the row's check did not list the model")
        press(driver, "new")
        wait_for(driver, lambda d: int(board_attr(d, "move") or 0) >= 2, "no moves played")
        assert "r5" in text(driver, "players") and "r4" in text(driver, "players")
        asked = [seen.json for seen in server.seen if seen.method == "POST"]
        first = {body["model"]: body for body in reversed(asked)}
        assert set(first) == {"r5", "r4"}  # each row asks its own model on the one port
        assert first["r5"]["messages"][0]["content"][0]["image_url"]["url"].startswith(
            "data:image/png;base64,")
        configure(driver, "vv", model1="zz")
        press(driver, "check1")
        wait_for(driver, lambda d: "model 'zz' is not served; it lists base, r5, r4" in
                 text(d, "server1-label"), "a model not served was not said")
    finally:
        configure(driver, "hh")
        press(driver, "new")
        stop()


def test_a_base_url_without_a_model_lists_the_models_and_plays_no_game(loop, driver, page):
    server = OpenAIServer(models=["base", "r5", "r4"])
    port, stop = loop.start(server.serve)
    base = f"http://{LOCALHOST}:{port}/v1"
    try:
        configure(driver, "av", host1=base, model1="")
        press(driver, "check1")
        wait_for(driver, lambda d: text(d, "server1-label").startswith(f"● OK {base}: 3 models"),
                 "the row's check did not count the models")
        press(driver, "new")
        wait_for(driver, lambda d: "server 1 is an OpenAI base URL: give the model" in
                 text(d, "status"), "a base URL without a model was not refused")
        assert not [seen for seen in server.seen if seen.method == "POST"]
    finally:
        configure(driver, "hh")
        stop()


def test_a_row_check_answered_with_deep_json_fails_the_row_not_the_page(loop, driver, page):
    """200 KB of ``[`` as a server row's model list: the standard library's reader raised
    RecursionError, which ended `go19 play` (59 lines); now the row says FAILED and the
    page goes on (a second check of a healthy server answers)."""
    deep = OpenAIServer(models_body=DEEP_JSON)
    healthy = OpenAIServer(models=["base", "r5"])
    (deep_port, stop_deep), (port, stop) = loop.start(deep.serve), loop.start(healthy.serve)
    bad, good = f"http://{LOCALHOST}:{deep_port}/v1", f"http://{LOCALHOST}:{port}/v1"
    try:
        configure(driver, "vv", host1=bad, model1="r5", host2=good, model2="r5")
        press(driver, "check1")
        wait_for(driver, lambda d: text(d, "server1-label").startswith(
            f"● FAILED {bad}: not JSON (nested deeper than 200 levels)"),
            "the row's check did not fail in one line")
        press(driver, "check2")
        wait_for(driver, lambda d: text(d, "server2-label").startswith(f"● OK {good}: serves r5"),
                 "the page stopped answering after the deep reply")
    finally:
        configure(driver, "hh")
        stop_deep()
        stop()
