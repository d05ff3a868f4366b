"""What `load` refuses, in one line naming the folder, and how it classes adapters (the
real tiny model and adapters, in this process)."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("torch", reason="the vlm extra is not installed")

from orchestrator.serve.hf.loading import LoadError, describe, load  # noqa: E402
from orchestrator.serve.hf.tiny import LANGUAGE_PROJECTIONS  # noqa: E402


def refusal(*args, **kwargs) -> str:
    with pytest.raises(LoadError) as caught:
        load(*args, **kwargs)
    text = str(caught.value)
    assert "\n" not in text
    return text


def test_adapters_are_classed_by_where_their_lora_modules_are(loaded) -> None:
    a, b, v = (loaded.adapters[name] for name in "abv")
    assert (a.rank, a.targets, a.mixable) == (8, LANGUAGE_PROJECTIONS, True)
    assert b.mixable
    assert not v.mixable
    assert v.why_not_mixable == "2 of its LoRA modules are outside the language model"
    assert loaded.names == ["base", "a", "b", "v"]


def test_the_model_is_described_by_its_own_parameters_not_its_adapters(tiny, loaded) -> None:
    from transformers import AutoModelForImageTextToText

    plain = AutoModelForImageTextToText.from_pretrained(tiny.model, local_files_only=True)
    assert describe(loaded).parameters == sum(p.numel() for p in plain.parameters())


def test_a_config_transformers_cannot_load_is_one_line(tiny, tmp_path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(tiny.model, broken)
    (broken / "config.json").write_text('{"model_type": "no_such_model"}')
    text = refusal(broken, {}, "cpu")
    assert text.startswith(f"--model {broken}: transformers cannot load it: ")


def test_adapters_of_other_models_and_non_adapters_are_refused(tiny, tmp_path) -> None:
    deep = refusal(tiny.model, {"d": tiny.adapter("deep")}, "cpu")
    assert deep == (f"--adapter d={tiny.adapter('deep')}: does not fit {tiny.model} (trained on "
                    "an unnamed model): 14 of its 42 tensors match no module of this model")
    wide = refusal(tiny.model, {"w": tiny.adapter("wide")}, "cpu")
    assert wide.startswith(f"--adapter w={tiny.adapter('wide')}: does not fit ")
    assert "size mismatch for " in wide and "torch.Size([8, 48])" in wide
    (tmp_path / "empty").mkdir()
    empty = refusal(tiny.model, {"e": tmp_path / "empty"}, "cpu")
    assert empty.startswith(f"--adapter e={tmp_path / 'empty'}: not a peft adapter folder")


def test_an_adapter_missing_a_lora_tensor_is_refused(tiny, tmp_path) -> None:
    """One module's lora_A left out of the file: peft keeps that module's random init,
    and the adapter would answer as it was never trained to."""
    from safetensors.torch import load_file, save_file

    cut = tmp_path / "cut"
    shutil.copytree(tiny.adapter("a"), cut)
    weights = load_file(cut / "adapter_model.safetensors")
    gone = "base_model.model.model.language_model.layers.0.self_attn.q_proj.lora_A.weight"
    del weights[gone]
    save_file(weights, cut / "adapter_model.safetensors")
    text = refusal(tiny.model, {"a": cut}, "cpu")
    assert text.startswith(f"--adapter a={cut}: does not fit {tiny.model} ")
    assert text.endswith(": its file has 27 of the 28 LoRA tensors of the modules it targets")


def test_adapters_with_short_names_load_without_peft_key_warnings(tiny) -> None:
    """peft matches an adapter's name inside key paths, so "a" and "b" made it print every
    key of theirs as missing at each start of the server, though they loaded whole."""
    import warnings

    import torch

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load(tiny.model, {name: tiny.adapter(name) for name in "ab"}, "cpu")
    assert [str(w.message) for w in caught if "adapter keys" in str(w.message)] == []
    from safetensors.torch import load_file

    saved = load_file(tiny.adapter("a") / "adapter_model.safetensors")
    layer = dict(loaded.model.named_modules())[
        "base_model.model.model.language_model.layers.0.self_attn.q_proj"]
    assert torch.equal(layer.lora_A["a"].weight, saved[
        "base_model.model.model.language_model.layers.0.self_attn.q_proj.lora_A.weight"])


def test_a_cuda_device_that_is_not_there_is_refused() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    text = refusal("unused", {}, "cuda:0")
    assert text.startswith("--device cuda:0: torch ") and text.endswith("sees no CUDA device")
