"""A tiny real Qwen2.5-VL made here, with nothing downloaded: ``go19 tiny-model DIR``.

A random model from a config (two layers with one attention head of 32, a two-block vision
tower; about 117 k parameters), a byte-level BPE tokenizer built with ``tokenizers``
(every byte a token, no merges, the chat template's special tokens added), the real
Qwen2-VL image and video processors and Qwen's chat template, saved with
``save_pretrained``: the folder loads through ``AutoProcessor`` /
``AutoModelForImageTextToText`` like any Qwen2.5-VL folder, so ``go19 serve --engine hf``
and vLLM serve it, and LoRA adapters trained on a go19 export (a few hundred steps on the
CPU) learn to answer a move. Its generation config is Qwen2.5-VL-Instruct's (sampling
defaults, repetition penalty), which a server must override to decode greedily. Random
weights: it plays no Go, it answers what it learns.

Pictures are scaled to at most 112x112 pixels, 16 image tokens after the 2x2 merge, which
keeps requests cheap; the same seed makes the same weights.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.files import partial_dir, publish_dir

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
           "<|image_pad|>", "<|video_pad|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
    "{{ message['content'] }}<|im_end|>\n{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
HIDDEN = 32
LAYERS = 2
# The language model's projections (attention and MLP), as peft's regex over module names:
# LoRA targets that every server takes (vLLM takes LoRA on the language model's projections
# only, not on lm_head or the vision tower, whose MLP has projections of the same names).
LANGUAGE_PROJECTIONS = (r".*\.language_model\.layers\.\d+\.(self_attn\.(q|k|v|o)_proj"
                        r"|mlp\.(gate|up|down)_proj)")


def processor() -> Any:
    """The tokenizer (built here) and Qwen2-VL's image and video processors, as one."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import (
        PreTrainedTokenizerFast,
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    core = Tokenizer(models.BPE(vocab={ch: i for i, ch in enumerate(alphabet)}, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens(SPECIAL)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>", chat_template=CHAT_TEMPLATE)
    images = Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=112 * 112)
    return Qwen2_5_VLProcessor(image_processor=images, tokenizer=tokenizer,
                               video_processor=Qwen2VLVideoProcessor(),
                               chat_template=CHAT_TEMPLATE)


def random_model(made_processor: Any, hidden: int = HIDDEN, layers: int = LAYERS) -> Any:
    """A random Qwen2.5-VL for ``made_processor``'s tokenizer (torch's current seed)."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    tokenizer = made_processor.tokenizer
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in SPECIAL}
    config = Qwen2_5_VLConfig(
        text_config={
            "vocab_size": len(tokenizer), "hidden_size": hidden, "intermediate_size": 2 * hidden,
            # One head of 32: vLLM's CPU attention takes head sizes of 32 and more only.
            "num_hidden_layers": layers, "num_attention_heads": 1, "num_key_value_heads": 1,
            "head_dim": hidden, "max_position_embeddings": 2048,
            "rope_parameters": {"rope_type": "default", "mrope_section": _mrope(hidden),
                                "rope_theta": 10000.0},
            "bos_token_id": ids["<|endoftext|>"], "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"],
        },
        vision_config={"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 4,
                       "out_hidden_size": hidden, "fullatt_block_indexes": [1],
                       "window_size": 112, "patch_size": 14, "spatial_merge_size": 2,
                       "temporal_patch_size": 2},
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
    )
    model = Qwen2_5_VLForConditionalGeneration(config)
    # Qwen2.5-VL-Instruct's shipped generation_config.json, sampling defaults and all.
    model.generation_config.update(
        bos_token_id=ids["<|endoftext|>"], pad_token_id=ids["<|endoftext|>"],
        eos_token_id=[ids["<|im_end|>"], ids["<|endoftext|>"]], do_sample=True,
        repetition_penalty=1.05, temperature=0.1, top_p=0.001, top_k=1)
    return model


def _mrope(head_dim: int) -> list[int]:
    """Qwen2.5-VL's rotary sections (time, height, width), summing to half the head:
    [16, 24, 24] of 128 in the released models, scaled."""
    half = head_dim // 2
    time = half // 4
    return [time, (half - time) // 2, half - time - (half - time) // 2]


def build(out: Path, seed: int = 0, hidden: int = HIDDEN, layers: int = LAYERS) -> int:
    """The tiny model's folder at ``out``, published whole (built beside it, then renamed;
    a non-empty ``out`` is replaced); its parameter count. ``hidden`` and ``layers`` make
    a larger one of the same shape (bench/serve_vs_vllm.py's ``BENCH_MODEL``)."""
    import torch
    from transformers.utils import logging

    logging.disable_progress_bar()  # one folder of two small files: no bar to watch
    torch.manual_seed(seed)
    made = processor()
    model = random_model(made, hidden, layers)
    partial = partial_dir(out)
    partial.mkdir(parents=True)
    model.save_pretrained(partial)
    made.save_pretrained(partial)
    publish_dir(partial, out)
    return sum(p.numel() for p in model.parameters())
