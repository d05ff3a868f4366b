"""A request's inputs as the server makes them (:mod:`orchestrator.serve.hf.preparing`):
pictures of requests that arrived together through the image processor in one call, the
text side kept per (text, layout), in this process or in a worker process; every tensor
exactly what the processor makes for that request alone."""

from __future__ import annotations

import io
import os
import signal

import pytest
from PIL import Image

from orchestrator.players.go19 import board_png
from orchestrator.render import RenderSettings
from orchestrator.rules.replay import replay_positions
from orchestrator.sgf.reader import read_games
from tests.conftest import REAL_SGF

pytest.importorskip("torch", reason="the vlm extra is not installed")

import torch  # noqa: E402

from orchestrator.serve.hf.jobs import RequestError  # noqa: E402
from orchestrator.serve.hf.preparing import (  # noqa: E402
    PreparePool,
    Preparer,
)

GAME = REAL_SGF / "pro19" / "01-2016.12.29-Magist-Pan_Tingyu.sgf"
QUESTIONS = ("Black to play. What is the best move?", "White to play. What is the best move?")


@pytest.fixture(scope="module")
def items(loaded) -> list[tuple[str, bytes | None]]:
    """Chat texts and pictures as requests bring them: positions of a real game at two
    picture sizes (two layouts), two prompts, one request without a picture."""
    game = read_games(GAME.read_bytes())[0]
    pictures = [board_png(live, RenderSettings(image_px=px))
                for live, _, number in replay_positions(game) if number in (1, 30, 90)
                for px in (512, 384)]
    texts = []
    for question in QUESTIONS:
        for image in (True, False):
            content = ([{"type": "image"}] if image else []) + [
                {"type": "text", "text": question}]
            texts.append(loaded.processor.apply_chat_template(
                [{"role": "user", "content": content}], add_generation_prompt=True,
                tokenize=False))
    made = [(texts[2 * ((k // 2) % 2)], png) for k, png in enumerate(pictures)]
    made.insert(3, (texts[1], None))
    return made


def alone(processor, text: str, png: bytes | None) -> dict[str, torch.Tensor]:
    """The processor's own tensors for one request, from the picture as PIL decodes it."""
    picture = None if png is None else Image.open(io.BytesIO(png)).convert("RGB")
    return dict(processor(text=[text], images=picture, return_tensors="pt"))


def assert_same(made, expected) -> None:
    assert not isinstance(made, RequestError), made
    assert list(made) == list(expected)
    for key, value in expected.items():
        assert made[key].dtype == value.dtype, key
        assert torch.equal(made[key], value), key


def test_inputs_are_the_processors_for_each_request_alone(loaded, items) -> None:
    preparer = Preparer(loaded.processor)
    first = preparer.make(items)
    again = preparer.make(items[::-1])[::-1]  # every text side from the cache now
    assert preparer.text_misses == 5  # two prompts x two layouts, and the text alone
    assert preparer.text_hits == 2 * len(items) - 5
    for text, png in items:
        expected = alone(loaded.processor, text, png)
        assert_same(first.pop(0), expected)
        assert_same(again.pop(0), expected)


def test_a_bad_picture_is_its_own_requests_error(loaded, items) -> None:
    made = Preparer(loaded.processor).make([items[0], (items[0][0], b"not a png"), items[1]])
    assert isinstance(made[1], RequestError) and "cannot be decoded" in str(made[1])
    assert_same(made[0], alone(loaded.processor, *items[0]))
    assert_same(made[2], alone(loaded.processor, *items[1]))


def test_a_worker_process_makes_the_same_inputs_and_a_dead_one_is_replaced(
        tiny, loaded, items) -> None:
    pool = PreparePool(tiny.model, 1)
    try:
        pool.wait_ready()
        made = pool.make(items + [(items[0][0], b"not a png")])
        for (text, png), inputs in zip(items, made, strict=False):
            assert_same(inputs, alone(loaded.processor, text, png))
        assert isinstance(made[-1], RequestError) and "cannot be decoded" in str(made[-1])
        (worker,) = {future.result() for future in pool._ready}
        os.kill(worker, signal.SIGKILL)
        lost = pool.make(items[:2])
        assert all(isinstance(r, RequestError) and "prepare worker stopped" in str(r)
                   for r in lost)
        assert_same(pool.make(items[:1])[0], alone(loaded.processor, *items[0]))
    finally:
        pool.close()
