"""One chunk of an export: a range of rows of one dataset shard in, one output shard out.

:func:`export_chunk` is the unit of work, run in worker processes (and by anything else
that distributes work): it takes an :class:`ExportTask` (plain values: paths, the shard's
manifest entry, the game table rows it needs, the options; it pickles) and returns a
:class:`ChunkResult` describing the file it wrote, so the caller needs nothing of this
module's state. It reads its dataset shard itself, checking the shard's sha256 again,
and writes only inside ``out``.

Per sample: the picture is :func:`orchestrator.render.render_png` of the board before the
move, drawn as the player to move saw it (its :class:`~orchestrator.render.RenderSettings`,
see :mod:`.games`: the previous move marked, its size), the bytes the GO19 client sends;
the prompt is the template filled in (:mod:`orchestrator.prompt`); the answer is
:func:`orchestrator.coords.move_to_text` of ``move``.

Formats:

- ``parquet``: ``data/train-NNNNN.parquet``, written in row groups of :data:`ROW_GROUP`
  samples, so a worker holds one row group of pictures at a time. The schema carries the
  Hugging Face ``datasets`` features (``image`` is an ``Image``); PNG bytes are stored
  without parquet compression (deflate already did it), the other columns with zstd.
- ``jsonl``: ``data/train-NNNNN.jsonl``, one object per line, and the PNG files under
  ``images/NNNNN/`` (:data:`IMAGES_PER_FOLDER` per folder, by sample index).
- ``dpo``: preference pairs of the chunk's costly moves (:mod:`.dpo`), parquet or jsonl
  by trainer style; the rejected answer is a move of the player's own policy unless
  ``dpo_include_fallback`` (its SGF's ``GOXIXSRC`` says which moves were not).

Files are written in place inside the export's partial folder; the whole folder is
synced and renamed into place by :mod:`.export` once every chunk is done.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.coords import from_index, move_to_text
from orchestrator.dataset.shards import FIELDS, GameTableRow, read_shard
from orchestrator.export import dpo
from orchestrator.export.games import NO_LAST, GameContext, game_context
from orchestrator.files import sha256_file
from orchestrator.positions.rows import POLICY, SIZE
from orchestrator.prompt import fill, uses_board

try:
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError:  # the `export` extra: only parquet exports need it
    pa = pq = None

ROW_GROUP = 256
IMAGES_PER_FOLDER = 10_000
DATA = "data"
IMAGES = "images"
SIDE_NAMES = {1: "black", 2: "white"}
# Sample fields written as metadata columns; ``board`` is the picture.
META_FIELDS = ("move", "to_play", "move_number", "winner", "game", "ko", "tactical")


@dataclass(frozen=True, slots=True)
class ExportTask:
    """One output shard to write: rows ``rows`` of the dataset shard ``entry``. It pickles
    (worker processes, Ray), and :meth:`as_dict` / :meth:`from_dict` carry it as JSON for
    an executor that takes nothing else."""

    dataset: str  # the dataset folder
    fields: dict  # the dataset manifest's fields
    entry: dict  # the dataset shard's manifest entry
    rows: tuple[int, int]  # first and end row in that shard
    games: dict[int, GameTableRow]  # the game table rows the samples point at
    shard: int  # the output shard's number
    first: int  # the export's index of its first sample
    out: str  # the export folder being written
    format: str  # parquet | jsonl | dpo
    image_px: int | None  # --image-px
    answer: str
    template: str
    min_loss: float  # dpo: pairs from moves that lost at least this many points
    dpo_style: str  # dpo: trl | llamafactory | swift
    dpo_include_fallback: bool = False  # dpo: opening-book and fallback moves as rejected too

    @property
    def samples(self) -> int:
        return self.rows[1] - self.rows[0]

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__} | {
            "rows": list(self.rows),
            "games": {str(number): row.as_dict() | {"file": row.file}
                      for number, row in self.games.items()},
        }

    @classmethod
    def from_dict(cls, task: dict[str, Any]) -> ExportTask:
        return cls(**task | {
            "rows": tuple(task["rows"]),
            "games": {int(number): GameTableRow.from_dict(row)
                      for number, row in task["games"].items()},
        })


@dataclass(frozen=True, slots=True)
class ChunkResult:
    """What one chunk wrote: its entry in the export manifest's shard list (:meth:`as_dict`),
    and for ``dpo`` the counts the manifest adds up."""

    file: str
    samples: int
    bytes: int
    sha256: str
    source_shard: str
    source_rows: tuple[int, int]
    image_px: dict[str, int]  # samples per picture size
    image_px_from: dict[str, int]  # samples per where the size came from
    images_sha256: str | None = None  # jsonl: the sha256 of its PNG files' bytes in order
    not_own: int = 0  # dpo: costly moves left out as not the player's own (manifest counts)
    chosen_known: int = 0  # dpo: pairs with a chosen_loss (labels at more than one visit)

    @property
    def rows_read(self) -> int:
        """The dataset samples the chunk went through (its pairs, for dpo, are fewer): what
        the export's progress counts."""
        return self.source_rows[1] - self.source_rows[0]

    def as_dict(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "file": self.file, "samples": self.samples, "bytes": self.bytes,
            "sha256": self.sha256, "source_shard": self.source_shard,
            "source_rows": list(self.source_rows),
        }
        if self.images_sha256 is not None:
            entry["images_sha256"] = self.images_sha256
        return entry | {"image_px": self.image_px, "image_px_from": self.image_px_from}

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> ChunkResult:
        return cls(**entry | {"source_rows": tuple(entry["source_rows"])})


def data_file(shard: int, fmt: str) -> str:
    return f"{DATA}/train-{shard:05d}.{fmt}"


def image_file(index: int) -> str:
    return f"{IMAGES}/{index // IMAGES_PER_FOLDER:05d}/{index:08d}.png"


def extra_fields(fields: dict) -> dict[str, tuple[np.dtype, tuple[int, ...]]]:
    """The fields a join added (KataGo labels), from a manifest's ``fields``: exported too."""
    return {name: (np.dtype(spec["dtype"]), tuple(spec["shape"]))
            for name, spec in fields.items() if name not in FIELDS}


class _Samples:
    """One chunk's rows and its games' contexts; per sample its picture, prompt, answer."""

    def __init__(self, task: ExportTask) -> None:
        lo, hi = task.rows
        arrays = read_shard(task.dataset, {"fields": task.fields}, task.entry)
        self.arrays = {name: array[lo:hi] for name, array in arrays.items()}
        self.n = hi - lo
        self.games: dict[int, GameContext] = {
            int(game): game_context(row, task.image_px) for game, row in task.games.items()
        }
        self.answer = task.answer
        self.template = task.template
        self.with_board = uses_board(self.template)

    def context(self, i: int) -> GameContext:
        return self.games[int(self.arrays["game"][i])]

    def own_moves(self, rows: np.ndarray) -> np.ndarray:
        """Whether each of ``rows`` is a move of the player's own policy (its SGF has no
        opening or fallback mark on it)."""
        a = self.arrays
        return np.array([self.context(int(i)).origin[int(a["move_number"][i])] == POLICY
                         for i in rows], bool)

    def picture(self, i: int) -> tuple[bytes, int, int]:
        """PNG bytes, size in pixels and the marked point (-1 none) of sample ``i``."""
        a = self.arrays
        ctx = self.context(i)
        render = ctx.render[int(a["to_play"][i]) - 1]
        last = int(ctx.last[int(a["move_number"][i])]) if render.mark_last else NO_LAST
        png = render.picture(a["board"][i], None if last == NO_LAST else last)
        return png, render.image_px, last

    def prompt(self, i: int) -> str:
        a = self.arrays
        return fill(self.template, int(a["to_play"][i]), int(a["move_number"][i]),
                    self.context(i).komi, self.answer, a["board"][i] if self.with_board else None)

    def answer_text(self, i: int) -> str:
        return move_to_text(from_index(int(self.arrays["move"][i]), SIZE), SIZE, self.answer)


def export_chunk(task: ExportTask, progress: Callable[[int], None] | None = None
                 ) -> ChunkResult:
    """Write output shard ``task.shard``: rows ``task.rows`` of dataset shard
    ``task.entry`` (for ``dpo``, the pairs among them); return its manifest entry (file,
    samples, bytes, sha256, counts). ``progress`` (in-process callers) hears the chunk's
    samples gone through so far, every row group (for ``dpo``, the candidates, the pairs'
    rows among them: the count ends at the chunk's rows, not at its pairs)."""
    samples = _Samples(task)
    out = Path(task.out)
    (out / DATA).mkdir(parents=True, exist_ok=True)
    fmt = dpo.extension(task.dpo_style) if task.format == "dpo" else task.format
    path = out / data_file(task.shard, fmt)
    tick = progress or (lambda done: None)
    rows = np.arange(samples.n)
    images_sha256 = None
    not_own = chosen_known = 0
    if task.format == "dpo":
        rows = dpo.pairs(samples.arrays, task.min_loss)
        if not task.dpo_include_fallback:
            own = samples.own_moves(rows)
            not_own = len(rows) - int(np.count_nonzero(own))
            rows = rows[own]
        if "katago_loss" in samples.arrays:
            chosen_known = int(np.count_nonzero(np.isfinite(samples.arrays["katago_loss"][rows])))
        if task.dpo_style == "trl":
            sizes = dpo.write_parquet(path, samples, rows, ROW_GROUP, tick)
        else:
            sizes, images_sha256 = dpo.write_jsonl(path, out, samples, rows, task.first,
                                                   task.dpo_style, image_file, tick)
    elif task.format == "parquet":
        sizes = _write_parquet(path, samples, task.fields, tick)
    else:
        sizes, images_sha256 = _write_jsonl(path, out, samples, task.first, tick)
    px_from: Counter = Counter()
    for i in rows:
        ctx = samples.context(int(i))
        px_from[ctx.px_from[int(samples.arrays["to_play"][i]) - 1]] += 1
    return ChunkResult(
        file=path.relative_to(out).as_posix(), samples=len(rows),
        bytes=path.stat().st_size, sha256=sha256_file(path),
        source_shard=task.entry["file"], source_rows=task.rows,
        image_px=sizes, image_px_from=dict(px_from), images_sha256=images_sha256,
        not_own=not_own, chosen_known=chosen_known,
    )


def _sync(fh: io.BufferedWriter) -> None:
    fh.flush()
    os.fsync(fh.fileno())


# -- jsonl -------------------------------------------------------------------------


def _write_jsonl(path: Path, out: Path, samples: _Samples, first: int,
                 tick: Callable[[int], None]) -> tuple[dict[str, int], str]:
    """The samples per picture size, and the sha256 of the PNG files' bytes in order."""
    pngs = hashlib.sha256()
    sizes: Counter = Counter()
    folder = None
    with open(path, "wb") as fh:
        for i in range(samples.n):
            png, px, last = samples.picture(i)
            name = image_file(first + i)
            image = out / name
            if image.parent != folder:
                folder = image.parent
                folder.mkdir(parents=True, exist_ok=True)
            image.write_bytes(png)
            pngs.update(png)
            sizes[px] += 1
            record = {
                "messages": [
                    {"role": "user", "content": "<image>" + samples.prompt(i)},
                    {"role": "assistant", "content": samples.answer_text(i)},
                ],
                "images": [name],
                **_metadata(samples, i, px, last, scalars_only=True),
            }
            fh.write(json.dumps(record, ensure_ascii=False).encode() + b"\n")
            if (i + 1) % ROW_GROUP == 0:
                tick(i + 1)
        _sync(fh)
    return _sizes(sizes), pngs.hexdigest()


def _sizes(sizes: Counter) -> dict[str, int]:
    return {str(px): n for px, n in sorted(sizes.items())}


def _metadata(samples: _Samples, i: int, px: int, last: int, scalars_only: bool) -> dict:
    a = samples.arrays
    ctx = samples.context(i)
    meta: dict = {"answer": samples.answer_text(i)}
    for name in META_FIELDS:
        meta[name] = int(a[name][i])
    meta.update(side=SIDE_NAMES[meta["to_play"]], last_move=last, image_px=px,
                source=ctx.source, sgf=ctx.sgf, run=ctx.run)
    for name, array in a.items():
        if name in FIELDS or (scalars_only and array.ndim > 1):
            continue
        value = array[i]
        meta[name] = value.tolist() if array.ndim > 1 else (
            float(value) if array.dtype.kind == "f" else int(value))
    return meta


# -- parquet -----------------------------------------------------------------------


def _write_parquet(path: Path, samples: _Samples, fields: dict,
                   tick: Callable[[int], None]) -> dict[str, int]:
    """The samples per picture size."""
    schema = parquet_schema(fields)
    sizes: Counter = Counter()
    with open(path, "wb") as fh:
        writer = pq.ParquetWriter(
            fh, schema, compression=_compression(schema), use_dictionary=False,
            write_statistics=[n for n in schema.names if n not in ("image", "messages")],
        )
        for table, batch_sizes in _tables(samples, schema):
            writer.write_table(table, row_group_size=ROW_GROUP)
            sizes.update(batch_sizes)
            tick(sizes.total())
        writer.close()
        _sync(fh)
    return _sizes(sizes)


def _compression(schema) -> dict[str, str]:
    """zstd for every leaf column but the PNG bytes, which deflate already packed."""
    buffer = io.BytesIO()
    pq.write_table(schema.empty_table(), buffer)
    leaves = pq.ParquetFile(buffer).schema
    return {leaves.column(i).path: "NONE" if leaves.column(i).path == "image.bytes" else "ZSTD"
            for i in range(len(leaves))}


def _arrow_type(dtype: np.dtype, shape: tuple[int, ...]):
    scalar = pa.from_numpy_dtype(dtype)
    return scalar if not shape else pa.list_(scalar, int(np.prod(shape)))


def _feature(dtype: np.dtype, shape: tuple[int, ...]) -> dict:
    value = {"dtype": np.dtype(dtype).name, "_type": "Value"}
    if not shape:
        return value
    return {"feature": value, "length": int(np.prod(shape)), "_type": "Sequence"}


_STRING = {"dtype": "string", "_type": "Value"}


def _columns(fields: dict) -> list[tuple[str, object, dict]]:
    """(name, arrow type, datasets feature) of every column after ``image`` and ``messages``."""
    columns: list[tuple[str, object, dict]] = [("answer", pa.string(), _STRING)]
    for name in META_FIELDS:
        dtype, shape = FIELDS[name]
        columns.append((name, _arrow_type(dtype, shape), _feature(dtype, shape)))
    columns += [
        ("side", pa.string(), _STRING),
        ("last_move", pa.int16(), _feature(np.dtype(np.int16), ())),
        ("image_px", pa.int16(), _feature(np.dtype(np.int16), ())),
        ("source", pa.string(), _STRING), ("sgf", pa.string(), _STRING),
        ("run", pa.string(), _STRING),
    ]
    for name, (dtype, shape) in extra_fields(fields).items():
        columns.append((name, _arrow_type(dtype, shape), _feature(dtype, shape)))
    return columns


def parquet_schema(fields: dict):
    """The export's arrow schema, with the ``datasets`` features in its metadata (the
    list-style feature spelling, which datasets 2.x to 5.x all read)."""
    text = pa.struct([("type", pa.string()), ("text", pa.string())])
    message = pa.struct([("role", pa.string()), ("content", pa.list_(text))])
    columns = [
        ("image", pa.struct([("bytes", pa.binary()), ("path", pa.string())]),
         {"_type": "Image"}),
        ("messages", pa.list_(message),
         [{"role": _STRING, "content": [{"type": _STRING, "text": _STRING}]}]),
        *_columns(fields),
    ]
    features = {name: feature for name, _, feature in columns}
    metadata = {"huggingface": json.dumps({"info": {"features": features}})}
    return pa.schema([(name, kind) for name, kind, _ in columns], metadata=metadata)


def _messages(prompts: list[str], answers: list[str]):
    """TRL's vision chat form, built column-wise: per sample a user turn
    ``[{"type": "image"}, {"type": "text", "text": prompt}]`` and an assistant turn
    ``[{"type": "text", "text": answer}]``."""
    n = len(prompts)
    texts: list[str | None] = [None] * (3 * n)
    texts[1::3] = prompts
    texts[2::3] = answers
    parts = pa.StructArray.from_arrays(
        [pa.array(["image", "text", "text"] * n), pa.array(texts, pa.string())],
        names=["type", "text"])
    k = np.arange(2 * n + 1)
    content = pa.ListArray.from_arrays(pa.array(3 * (k // 2) + 2 * (k % 2), pa.int32()), parts)
    turns = pa.StructArray.from_arrays([pa.array(["user", "assistant"] * n), content],
                                       names=["role", "content"])
    return pa.ListArray.from_arrays(pa.array(np.arange(0, 2 * n + 1, 2), pa.int32()), turns)


def _tables(samples: _Samples, schema) -> Iterator[tuple[object, Counter]]:
    a = samples.arrays
    for lo in range(0, samples.n, ROW_GROUP):
        rows = range(lo, min(lo + ROW_GROUP, samples.n))
        pictures = [samples.picture(i) for i in rows]
        prompts = [samples.prompt(i) for i in rows]
        answers = [samples.answer_text(i) for i in rows]
        contexts = [samples.context(i) for i in rows]
        image = pa.StructArray.from_arrays(
            [pa.array([p[0] for p in pictures], pa.binary()), pa.nulls(len(rows), pa.string())],
            names=["bytes", "path"])
        sl = slice(rows.start, rows.stop)
        values: dict[str, object] = {
            "image": image, "messages": _messages(prompts, answers), "answer": answers,
            "side": [SIDE_NAMES[int(t)] for t in a["to_play"][sl]],
            "last_move": [p[2] for p in pictures], "image_px": [p[1] for p in pictures],
            "source": [c.source for c in contexts], "sgf": [c.sgf for c in contexts],
            "run": [c.run for c in contexts],
        }
        for name in schema.names:
            if name not in values:
                array = a[name][sl]
                values[name] = list(array.reshape(len(array), -1)) if array.ndim > 1 else array
        arrays = [pa.array(values[name], schema.field(name).type)
                  if not isinstance(values[name], pa.Array) else values[name]
                  for name in schema.names]
        yield pa.Table.from_arrays(arrays, schema=schema), Counter(p[1] for p in pictures)
