"""``go19 dataset export --format dpo``: preference pairs from the model's own mistakes.

From a dataset built with ``--labels``, one pair per sample whose played move lost at least
``min_loss`` points (the join's ``played_loss``: the mover's score lead before the move
minus after it, KaTrain's definition) and differs from KataGo's move (:func:`pairs`), and,
unless ``dpo_include_fallback``, was the player's own (the chunk checks its SGF's
``GOXIXSRC``: an opening-book or fallback move is not the model's mistake): the prompt is the
SFT export's (the same picture and text), **chosen** is KataGo's move, **rejected** the
played one, spelled as ``--answer`` says. Each pair carries both losses: ``rejected_loss``
(measured) and ``chosen_loss`` (KataGo's value of its own move against the position's, from
labels made with ``--review`` and ``--visits`` > 1; null otherwise, as KataGo searches no
move at one visit: unknown, not 0, and the export's summary says so).

One ``--dpo-style`` per export, the layout its trainer documents:

- ``trl`` (default): parquet, TRL's conversational preference type with images (TRL's
  ``dataset_formats.md``, "vision datasets"): ``images`` (a list of one ``Image``), ``prompt``
  (a user turn ``[{"type": "image"}, {"type": "text", ...}]``), ``chosen`` and ``rejected``
  (one assistant turn each); loads with ``datasets.load_dataset("parquet", ...)``;
- ``llamafactory``: jsonl in ShareGPT form with OpenAI roles, ``messages`` (the user turn
  with ``<image>``), ``chosen`` and ``rejected`` (one assistant message each), ``images``;
  ``dataset_info.json`` registers it with ``"ranking": true``;
- ``swift``: jsonl as ms-swift's RLHF datasets, ``messages`` (the user turn, then the chosen
  answer), ``rejected_response``, ``images``.

The jsonl styles write the pictures under ``images/`` as the SFT jsonl export does.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.coords import from_index, move_to_text
from orchestrator.positions.rows import SIZE

STYLES = ("trl", "llamafactory", "swift")
DEFAULT_MIN_LOSS = 2.0
# What a dataset needs for pairs: the join's fields (go19 dataset build --labels).
NEEDS = ("katago_move", "played_move", "played_loss")
_SIDE = {1: "black", 2: "white"}


def _sizes(sizes: Counter) -> dict[str, int]:
    return {str(px): n for px, n in sorted(sizes.items())}


def extension(style: str) -> str:
    return "parquet" if style == "trl" else "jsonl"


def pairs(arrays: dict[str, np.ndarray], min_loss: float) -> np.ndarray:
    """Row indices of the samples that make a pair: labelled, the played move lost at least
    ``min_loss`` points, and KataGo's move is another one."""
    loss = arrays["played_loss"]
    with np.errstate(invalid="ignore"):
        costly = np.isfinite(loss) & (loss >= min_loss)
    return np.flatnonzero(costly & (arrays["katago_move"] >= 0)
                          & (arrays["katago_move"] != arrays["played_move"]))


def _loss(value: float) -> float | None:
    return round(float(value), 3) if np.isfinite(value) else None


def _pair(samples: Any, i: int) -> dict[str, Any]:
    """One pair's texts and metadata (``samples`` is the chunk's ``_Samples``)."""
    a = samples.arrays

    def spell(index: int) -> str:
        return move_to_text(from_index(int(index), SIZE), SIZE, samples.answer)

    ctx = samples.context(i)
    chosen_loss = a["katago_loss"][i] if "katago_loss" in a else np.nan
    return {
        "prompt": samples.prompt(i),
        "chosen": spell(a["katago_move"][i]), "rejected": spell(a["played_move"][i]),
        "meta": {
            "chosen_loss": _loss(chosen_loss), "rejected_loss": _loss(a["played_loss"][i]),
            "katago_move": int(a["katago_move"][i]), "played_move": int(a["played_move"][i]),
            "score_lead": _loss(a["score_lead"][i]),
            "move_number": int(a["move_number"][i]), "to_play": int(a["to_play"][i]),
            "side": _SIDE[int(a["to_play"][i])], "game": int(a["game"][i]),
            "source": ctx.source, "sgf": ctx.sgf, "run": ctx.run,
        },
    }


def _jsonl_record(style: str, pair: dict[str, Any], image: str) -> dict[str, Any]:
    user = {"role": "user", "content": "<image>" + pair["prompt"]}
    if style == "llamafactory":
        body = {"messages": [user], "chosen": {"role": "assistant", "content": pair["chosen"]},
                "rejected": {"role": "assistant", "content": pair["rejected"]}}
    else:
        body = {"messages": [user, {"role": "assistant", "content": pair["chosen"]}],
                "rejected_response": pair["rejected"]}
    return {**body, "images": [image], **pair["meta"]}


def write_jsonl(path: Path, out: Path, samples: Any, rows: np.ndarray, first: int,
                style: str, image_file: Callable[[int], str],
                tick: Callable[[int], None]) -> tuple[dict[str, int], str]:
    """The llamafactory and swift styles: one line per pair, its PNG under ``images/``
    (numbered from ``first``, the chunk's first sample in the export). Returns the pairs
    per picture size and the sha256 of the PNG files' bytes in order."""
    pngs = hashlib.sha256()
    sizes: Counter = Counter()
    with open(path, "wb") as fh:
        for i in rows:
            png, px, _ = samples.picture(int(i))
            name = image_file(first + int(i))
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(png)
            pngs.update(png)
            sizes[px] += 1
            record = _jsonl_record(style, _pair(samples, int(i)), name)
            fh.write(json.dumps(record, ensure_ascii=False).encode() + b"\n")
            tick(int(i) + 1)  # the candidates gone through, as the export's total counts
        fh.flush()  # the export syncs its whole folder once before publishing it
    return _sizes(sizes), pngs.hexdigest()


_META_TYPES = {"chosen_loss": "float32", "rejected_loss": "float32", "katago_move": "int16",
               "played_move": "int16", "score_lead": "float32", "move_number": "int32",
               "to_play": "uint8", "side": "string", "game": "int32", "source": "string",
               "sgf": "string", "run": "string"}


def _trl_schema(pa: Any) -> Any:
    text = pa.struct([("type", pa.string()), ("text", pa.string())])
    turns = pa.list_(pa.struct([("role", pa.string()), ("content", pa.list_(text))]))
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    string = {"dtype": "string", "_type": "Value"}
    turn_feature = [{"role": string, "content": [{"type": string, "text": string}]}]
    columns = [("images", pa.list_(image), [{"_type": "Image"}]),
               ("prompt", turns, turn_feature), ("chosen", turns, turn_feature),
               ("rejected", turns, turn_feature)]
    columns += [(name, pa.type_for_alias(kind), {"dtype": kind, "_type": "Value"})
                for name, kind in _META_TYPES.items()]
    features = {name: feature for name, _, feature in columns}
    metadata = {"huggingface": json.dumps({"info": {"features": features}})}
    return pa.schema([(name, kind) for name, kind, _ in columns], metadata=metadata)


def _answer(text: str) -> list[dict]:
    return [{"role": "assistant", "content": [{"type": "text", "text": text}]}]


def write_parquet(path: Path, samples: Any, rows: np.ndarray, row_group: int,
                  tick: Callable[[int], None]) -> dict[str, int]:
    """The trl style: one parquet file, pictures inside, row groups of ``row_group``.
    Returns the pairs per picture size."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _trl_schema(pa)
    sizes: Counter = Counter()
    with open(path, "wb") as fh:
        writer = pq.ParquetWriter(fh, schema, compression="zstd", use_dictionary=False)
        for lo in range(0, len(rows), row_group):
            batch: dict[str, list] = {name: [] for name in schema.names}
            for i in rows[lo:lo + row_group]:
                png, px, _ = samples.picture(int(i))
                sizes[px] += 1
                pair = _pair(samples, int(i))
                batch["images"].append([{"bytes": png, "path": None}])
                batch["prompt"].append([{"role": "user", "content": [
                    {"type": "image", "text": None}, {"type": "text", "text": pair["prompt"]}]}])
                batch["chosen"].append(_answer(pair["chosen"]))
                batch["rejected"].append(_answer(pair["rejected"]))
                for name, value in pair["meta"].items():
                    batch[name].append(value)
            writer.write_table(pa.Table.from_pydict(batch, schema=schema))
            tick(int(rows[min(lo + row_group, len(rows)) - 1]) + 1)  # candidates gone through
        writer.close()
        fh.flush()  # the export syncs its whole folder once before publishing it
    return _sizes(sizes)


def dataset_info(name: str) -> dict:
    """LLaMA-Factory's ``dataset_info.json`` entry of an ``llamafactory`` export."""
    return {name: {
        "file_name": "data", "formatting": "sharegpt", "ranking": True,
        "columns": {"messages": "messages", "chosen": "chosen", "rejected": "rejected",
                    "images": "images"},
        "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                 "assistant_tag": "assistant"},
    }}
