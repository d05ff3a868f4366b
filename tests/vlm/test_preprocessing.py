"""The image processor the hf server uses (transformers' torchvision one) against the PIL
one, on board pictures of real games: the same patch grid, pixels within one 8-bit level,
and the same greedy answers from the tiny model and its adapters."""

from __future__ import annotations

import io

import pytest

from orchestrator.players.go19 import board_png
from orchestrator.render import RenderSettings
from orchestrator.rules.replay import replay_positions
from orchestrator.sgf.reader import read_games
from tests.conftest import REAL_SGF
from tests.vlm.tiny import ANSWERS

pytest.importorskip("torch", reason="the vlm extra is not installed")

import torch  # noqa: E402
from PIL import Image  # noqa: E402
from transformers import Qwen2VLImageProcessor, Qwen2VLImageProcessorPil  # noqa: E402

from orchestrator.players.openai_wire import Completion  # noqa: E402
from orchestrator.serve.hf.generation import BatchRunner  # noqa: E402
from orchestrator.serve.hf.jobs import BASE, Job, Sampling  # noqa: E402

GAMES = ["01-2016.12.29-Magist-Pan_Tingyu.sgf", "03-2016.12.29-Ding_Shixiong-Magist.sgf"]
MOVES = (1, 60, 140)  # the empty board, the middle game, a crowded board
SIZES = (512, 384)  # the default render, and one the tiny config grids 6x6 instead of 8x8
PROMPT = "What is the best move?"

# One 8-bit level of the resized picture after normalising: the largest step, in the
# channel with the smallest std (green, 0.2613), is 1 / (255 * 0.2613) = 0.01501.
STD = (0.26862954, 0.26130258, 0.27577711)
ONE_LEVEL = 1 / (255 * min(STD))


@pytest.fixture(scope="module")
def pictures() -> list[bytes]:
    """Positions of two real professional games, drawn as a VLM player sends them."""
    drawn = []
    for name in GAMES:
        game = read_games((REAL_SGF / "pro19" / name).read_bytes())[0]
        for live, _, number in replay_positions(game):
            if number in MOVES:
                drawn += [board_png(live, RenderSettings(image_px=px)) for px in SIZES]
    assert len(drawn) == len(GAMES) * len(MOVES) * len(SIZES)
    return drawn


def rgb(png: bytes) -> Image.Image:
    return Image.open(io.BytesIO(png)).convert("RGB")


def test_the_server_uses_the_torchvision_processor(loaded) -> None:
    """The server's AutoProcessor leaves the choice to transformers (no ``backend`` or
    ``use_fast``), whose default is torchvision when it is installed: what the tests
    below check is what the server runs."""
    assert type(loaded.processor.image_processor) is Qwen2VLImageProcessor


def test_fast_pixels_are_within_one_level_of_the_slow_ones(tiny, pictures) -> None:
    """Measured on these 12 pictures with the tiny model's config (512 px to 112, 384 to
    84): max |fast - slow| = 0.015008, exactly one 8-bit level (ONE_LEVEL) in the green
    channel, on 0.03-0.2 % of the values. The two bicubic resizes (torchvision's antialias
    kernel, Pillow's) round a few edge pixels of the stones and lines to neighbouring
    levels; rescale and normalise then agree to float32 rounding. (A real Qwen2.5-VL's
    config, 512 px to 504, measured 0.030 - two levels - on 0.1 %: not this test's.)"""
    fast = Qwen2VLImageProcessor.from_pretrained(tiny.model, local_files_only=True)
    slow = Qwen2VLImageProcessorPil.from_pretrained(tiny.model, local_files_only=True)
    for png in pictures:
        a = fast(images=rgb(png), return_tensors="pt")
        b = slow(images=rgb(png), return_tensors="pt")
        assert torch.equal(a["image_grid_thw"], b["image_grid_thw"])
        difference = (a["pixel_values"] - b["pixel_values"]).abs()
        assert difference.max().item() <= ONE_LEVEL * 1.0001
        # a resize that shifted every pixel by one level would pass the line above
        assert (difference > 1e-5).float().mean().item() < 0.01


def test_either_processors_pixels_get_the_same_answers(tiny, loaded, pictures) -> None:
    """Greedy answers of the untrained base (the most sensitive to a pixel: its answer is
    noise), a and b (language model adapters) and v (vision tower adapter) on the same
    inputs, pixel values from the server's processor or from the PIL one."""
    slow = Qwen2VLImageProcessorPil.from_pretrained(tiny.model, local_files_only=True)
    runner = BatchRunner(loaded)
    messages = [{"role": "user", "content": [{"type": "image"},
                                             {"type": "text", "text": PROMPT}]}]
    text = loaded.processor.apply_chat_template(messages, add_generation_prompt=True,
                                                tokenize=False)
    answers: dict[str, list[str | None]] = {}
    for kind in ("fast", "slow"):
        jobs = []
        for png in pictures:
            inputs = dict(loaded.processor(text=[text], images=rgb(png), return_tensors="pt"))
            if kind == "slow":
                made = slow(images=rgb(png), return_tensors="pt")
                assert torch.equal(made["image_grid_thw"], inputs["image_grid_thw"])
                inputs["pixel_values"] = made["pixel_values"]
            for adapter in (BASE, "a", "b", "v"):
                job = Job(adapter, messages, png, Sampling(6))
                job.prompt, job.inputs = text, inputs
                jobs.append(job)
        results, _ = runner.run(jobs)
        assert all(isinstance(result, Completion) for result in results), results
        answers[kind] = [result.text for result in results]  # type: ignore[union-attr]
    assert answers["fast"] == answers["slow"]
    assert set(answers["fast"][1::4]) == {ANSWERS["a"]}  # the adapters still answer theirs
