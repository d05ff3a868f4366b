"""One batch through the real tiny Qwen2.5-VL and its trained adapters, in this process:
every row gets its own adapter's answer whether adapters share a generate call or not,
the vision-tower adapter runs apart, and per-row decoding (choices, seeds, token limits)
does not depend on the batch a request lands in."""

from __future__ import annotations

import pytest

from orchestrator.coords import from_gtp
from orchestrator.render import render_png
from tests.vlm.tiny import ANSWERS

pytest.importorskip("torch", reason="the vlm extra is not installed")

from orchestrator.players.openai_wire import Completion  # noqa: E402
from orchestrator.serve.hf.generation import BatchRunner  # noqa: E402
from orchestrator.serve.hf.jobs import BASE, Job, RequestError, Sampling  # noqa: E402

PROMPT = "What is the best move?"


def job(adapter: str, picture: bytes | None, **sampling) -> Job:
    content = ([{"type": "image"}] if picture is not None else []) + [
        {"type": "text", "text": PROMPT}]
    return Job(adapter, [{"role": "user", "content": content}], picture,
               Sampling(sampling.pop("max_tokens", 8), **sampling))


@pytest.fixture(scope="module")
def picture() -> bytes:
    import numpy as np

    board = np.zeros((19, 19), np.uint8)
    board.flat[from_gtp("D16", 19)] = 1
    return render_png(board, from_gtp("D16", 19), 512)


def texts(results: list) -> list[str]:
    assert all(isinstance(r, Completion) for r in results), results
    return [r.text for r in results]


@pytest.mark.parametrize("mixing", [True, False], ids=["mixed", "split"])
def test_every_row_gets_its_own_adapters_answer(loaded, picture, mixing) -> None:
    order = ["a", "b", "v", "a", BASE, "b", "v", "b", "a"]
    runner = BatchRunner(loaded, mixing=mixing)
    results, times = runner.run([job(name, picture) for name in order])
    answers = texts(results)
    for name, answer in zip(order, answers, strict=True):
        if name != BASE:
            assert answer == ANSWERS[name]
    assert answers[order.index(BASE)] not in ANSWERS.values()  # untrained: noise, not a move
    # a, b and base share one call when mixing; v touches the vision tower: always its own.
    assert sorted(times.rows) == ([2, 7] if mixing else [1, 2, 3, 3])
    alone = [texts(runner.run([job(name, picture)])[0])[0] for name in ("a", "b", "v", BASE)]
    assert alone == [answers[order.index(name)] for name in ("a", "b", "v", BASE)]


def test_choices_hold_the_answer_to_one_of_them(loaded, picture) -> None:
    runner = BatchRunner(loaded)
    allowed = ("C3", "R17", "pass")
    results, _ = runner.run([job("a", picture, choices=allowed),
                             job(BASE, picture, choices=allowed),
                             job("a", picture, choices=("Q16", "Q1"))])
    got = texts(results)
    assert got[0] in allowed and got[1] in allowed
    assert got[2] == "Q16"  # "Q1" is a prefix of it: the trie lets the adapter go on
    assert all(r.finish_reason == "stop" for r in results)


def test_seeded_sampling_is_the_same_in_any_batch(loaded, picture) -> None:
    runner = BatchRunner(loaded)
    sampled = dict(temperature=1.5, seed=11)
    alone = texts(runner.run([job(BASE, picture, **sampled)])[0])
    crowded = texts(runner.run([job("b", picture), job(BASE, picture, **sampled),
                                job("a", picture, temperature=1.0, seed=3)])[0])
    assert crowded[1] == alone[0]
    other_seed = {texts(runner.run([job(BASE, picture, temperature=1.5, seed=s)])[0])[0]
                  for s in range(4)}
    assert len(other_seed) > 1  # the seed matters: sampling is not greedy in disguise


def test_each_row_stops_at_its_own_token_limit(loaded, picture) -> None:
    results, _ = BatchRunner(loaded).run([job(BASE, picture, max_tokens=3),
                                          job(BASE, picture, max_tokens=8), job("a", picture)])
    short, long, answered = results
    assert isinstance(short, Completion) and isinstance(long, Completion)
    assert (short.completion_tokens, short.finish_reason) == (3, "length")
    assert (long.completion_tokens, long.finish_reason) == (8, "length")
    assert isinstance(answered, Completion) and answered.text == "Q16"
    assert answered.finish_reason == "stop"
    assert answered.completion_tokens == 4  # Q, 1, 6 and the end token, byte-level
    assert answered.prompt_tokens == short.prompt_tokens > 16  # the 16 image tokens and text


def test_a_bad_picture_fails_only_its_own_request(loaded, picture) -> None:
    results, _ = BatchRunner(loaded).run([job("a", b"not a png"), job("b", picture),
                                          job("nobody", picture), job("a", None)])
    assert isinstance(results[0], RequestError) and "cannot be decoded" in str(results[0])
    assert isinstance(results[1], Completion) and results[1].text == "D4"
    assert isinstance(results[2], RequestError) and "no adapter named 'nobody'" in str(results[2])
    assert isinstance(results[3], Completion)  # text only: served, whatever it says



def test_requests_prepared_alone_batch_as_the_processor_pads_them(loaded, picture) -> None:
    from orchestrator.serve.hf.generation import _collate

    runner = BatchRunner(loaded)
    jobs = [job("a", picture), job("b", None), job(BASE, picture, max_tokens=2)]
    jobs[1].messages[0]["content"][0]["text"] = "A longer question, with no picture at all?"
    for each in jobs:
        runner.prepare(each)
    texts = [loaded.processor.apply_chat_template(j.messages, add_generation_prompt=True,
                                                  tokenize=False) for j in jobs]
    whole = loaded.processor(text=texts, images=[picture_image(picture)] * 2, padding=True,
                             return_tensors="pt")
    batch = _collate([j.inputs for j in jobs], loaded.pad_id)
    assert set(batch) == set(whole)
    for key in whole:
        assert batch[key].shape == whole[key].shape, key
        assert bool((batch[key] == whole[key]).all()), key


def picture_image(png: bytes):
    import io

    from PIL import Image

    return Image.open(io.BytesIO(png)).convert("RGB")


def test_requests_prepared_together_get_the_inputs_each_gets_alone(loaded, picture) -> None:
    runner = BatchRunner(loaded)
    together = [job("a", picture), job("b", None), job(BASE, b"not a png"), job("v", picture)]
    together[1].messages[0]["content"][0]["text"] = "A longer question, with no picture at all?"
    errors = runner.prepare_many(together)
    assert [e is None for e in errors] == [True, True, False, True]
    for each in (0, 1, 3):
        alone = job(together[each].adapter, together[each].image)
        alone.messages = together[each].messages
        runner.prepare(alone)
        assert together[each].inputs.keys() == alone.inputs.keys()
        for key, value in alone.inputs.items():
            assert together[each].inputs[key].shape == value.shape, key
            assert bool((together[each].inputs[key] == value).all()), key
