"""Names people know: a player's TOML key with its adapter and model (or engine), from
the metadata collect records for it (``players`` in games.jsonl, ``PlayerHandle.meta``)."""

from __future__ import annotations

from collections.abc import Mapping

MAX_COMMAND = 32


def describe(meta: Mapping) -> str:
    """What a player is: ``lora_mix_qwen_r5 (Qwen3-VL-8B)``, ``gnugo --level 10``, …;
    empty when the metadata says nothing more than the key."""
    kind = meta.get("kind")
    if kind == "go19":
        adapter, model = meta.get("adapter"), meta.get("model")
        embedded = meta.get("embedded")
        if adapter and model:
            return f"{adapter} ({model})"
        if adapter or model:
            return str(adapter or model)
        if isinstance(embedded, Mapping):
            return f"embedded {embedded.get('engine', 'engine')} L{embedded.get('level', '?')}"
        return ""
    if kind == "gtp" and meta.get("command"):
        words = str(meta["command"]).split()
        text = " ".join([words[0].rsplit("/", 1)[-1], *(w for w in words[1:]
                                                        if w not in ("--mode", "gtp"))])
        return text if len(text) <= MAX_COMMAND else text[: MAX_COMMAND - 1] + "…"
    if kind == "heuristic":
        return f"heuristic L{meta.get('level', '?')}"
    if kind == "random":
        return "random mover"
    return ""


def label(name: str, meta: Mapping) -> str:
    """``r5 · lora_mix_qwen_r5 (Qwen3-VL-8B)``, or the key alone."""
    text = describe(meta)
    return f"{name} · {text}" if text and text != name else name
