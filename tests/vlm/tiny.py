"""The tiny real Qwen2.5-VL of ``go19 tiny-model`` (:mod:`orchestrator.serve.hf.tiny`) and
LoRA adapters that learned one move each, built once and cached on disk.

The adapters are trained on the real output of ``go19 dataset export`` (jsonl) of a real
recorded game from ../shared, answers rewritten: ``a`` always answers Q16, ``b`` D4 (LoRA
on the language model's attention projections only, which every server takes, vLLM
included), ``v`` K10 with LoRA on the vision tower's attention and ``lm_head`` too (so it
must be served in calls of its own). Two adapters are made for other models, to be
refused: ``wide`` (a model with another hidden size: shapes differ) and ``deep`` (one more
layer: tensors left over).

Everything lands in ``~/.cache/go19/vlm/<key>/``, the key a hash of this file, the
builder's, the template, the game and the library versions: a first run pays about a
minute, later runs nothing. The folder is written beside and renamed into place, so an
interrupted build leaves no half cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from orchestrator.serve.hf.tiny import HIDDEN, LAYERS
from tests.conftest import REAL_SGF

GAME = REAL_SGF / "pro19" / "01-2016.12.29-Magist-Pan_Tingyu.sgf"
ANSWERS = {"a": "Q16", "b": "D4", "v": "K10"}
SAMPLES = 64
STEPS = 150
VISION_TARGETS = ["q_proj", "v_proj", "qkv", "lm_head"]  # qkv: the vision tower's attention


@dataclass(frozen=True)
class Tiny:
    root: Path

    @property
    def model(self) -> Path:
        return self.root / "model"

    def adapter(self, name: str) -> Path:
        return self.root / "adapters" / name


def cache_root() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "go19" / "vlm"


def cache_key(hidden: int, layers: int) -> str:
    import peft
    import torch
    import transformers

    from orchestrator.prompt import default_template
    from orchestrator.serve.hf import tiny

    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(Path(tiny.__file__).read_bytes())
    digest.update(default_template().encode())
    digest.update(GAME.read_bytes())
    digest.update(f"{torch.__version__} {transformers.__version__} {peft.__version__}".encode())
    digest.update(f"{hidden}x{layers}".encode())
    return digest.hexdigest()[:16]


def tiny_model(hidden: int = HIDDEN, layers: int = LAYERS) -> Tiny:
    """The cached model and adapters, built first if missing. Another ``hidden`` size or
    number of ``layers`` makes a larger model of the same shape with adapters a and b only
    (for bench/serve_vs_vllm.py: a model whose ``generate`` outweighs preparing a picture)."""
    root = cache_root() / cache_key(hidden, layers)
    if (root / "done").is_file():
        return Tiny(root)
    partial = root.with_name(f"{root.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    _build(Tiny(partial), hidden, layers)
    (partial / "done").write_text("")
    try:
        partial.rename(root)
    except OSError:  # another process finished first: its copy is as good
        shutil.rmtree(partial, ignore_errors=True)
    return Tiny(root)


def _build(tiny: Tiny, hidden: int, layers: int) -> None:
    import torch

    from orchestrator.serve.hf.tiny import LANGUAGE_PROJECTIONS, build, processor, random_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a shared 2-core machine: one thread trains as fast
    try:
        build(tiny.model, hidden=hidden, layers=layers)
        samples = _export_samples(tiny.root / "export")
        tests_own = (hidden, layers) == (HIDDEN, LAYERS)
        for name in ANSWERS if tests_own else ("a", "b"):
            answer = ANSWERS[name]
            targets = VISION_TARGETS if name == "v" else LANGUAGE_PROJECTIONS
            _train(tiny.model, samples, answer, targets).save_pretrained(tiny.adapter(name))
        if tests_own:
            made = processor()
            for name, other_hidden, other_layers in (("wide", 48, 2), ("deep", 32, 3)):
                _untrained(random_model(made, other_hidden, other_layers)).save_pretrained(
                    tiny.adapter(name))
    finally:
        torch.set_num_threads(threads)


def _export_samples(out: Path) -> list[tuple[str, Path]]:
    """(prompt, picture) of the first SAMPLES samples of the real export of GAME."""
    from orchestrator.dataset import BuildOptions, build
    from orchestrator.export.pipeline import ExportOptions, export

    (out / "sgf").mkdir(parents=True)
    shutil.copy(GAME, out / "sgf" / GAME.name)
    build([out / "sgf"], out / "dataset", BuildOptions())
    export(out / "dataset", out / "jsonl", ExportOptions(format="jsonl"))
    samples = []
    for line in (out / "jsonl" / "data" / "train-00000.jsonl").read_text().splitlines():
        record = json.loads(line)
        user = record["messages"][0]["content"]
        assert user.startswith("<image>")  # LLaMA-Factory's form: the picture, then the text
        samples.append((user.removeprefix("<image>"), out / "jsonl" / record["images"][0]))
    return samples[:SAMPLES]


def _train(model_dir: Path, samples: list[tuple[str, Path]], answer: str,
           targets: list[str]):  # type: ignore[no-untyped-def]
    """A LoRA adapter trained, with a plain peft loop, to answer ``answer`` to every sample
    (loss on the answer and its end token only)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(model_dir, local_files_only=True)
    processor.tokenizer.padding_side = "right"
    base = AutoModelForImageTextToText.from_pretrained(model_dir, local_files_only=True)
    model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=targets))
    texts, pictures = [], []
    for prompt, picture in samples:
        chat = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]},
                {"role": "assistant", "content": answer}]
        texts.append(processor.apply_chat_template(chat, tokenize=False))
        pictures.append(Image.open(picture).convert("RGB"))
    answer_len = len(processor.tokenizer(answer + "<|im_end|>", add_special_tokens=False)
                     ["input_ids"])
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    model.train()
    batch_size = 8
    for step in range(STEPS):
        rows = [(step * batch_size + k) % len(texts) for k in range(batch_size)]
        batch = processor(text=[texts[r] for r in rows], images=[pictures[r] for r in rows],
                          return_tensors="pt", padding=True)
        labels = torch.full_like(batch["input_ids"], -100)
        for row in range(batch_size):
            end = int(batch["attention_mask"][row].sum()) - 1  # the template's final "\n"
            labels[row, end - answer_len:end] = batch["input_ids"][row, end - answer_len:end]
        model(**batch, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return model


def _untrained(model):  # type: ignore[no-untyped-def]
    """A LoRA adapter of ``model`` with non-zero weights (it is refused for its shapes, not
    for being empty)."""
    import torch
    from peft import LoraConfig, get_peft_model

    from orchestrator.serve.hf.tiny import LANGUAGE_PROJECTIONS

    peft_model = get_peft_model(model, LoraConfig(r=8, target_modules=LANGUAGE_PROJECTIONS))
    with torch.no_grad():
        for name, parameter in peft_model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(std=0.02)
    return peft_model
