"""``go19 dataset export``: a built dataset as training data a VLM trainer reads as is.

Each sample becomes the picture the model sees when it plays (go19's renderer, the bytes
the GO19 client sends for that position), a prompt (a template, :mod:`.prompt`) and the
answer (``move`` spelled by :func:`orchestrator.coords.move_to_text`). Two formats:
``parquet`` for Hugging Face ``datasets`` / TRL, ``jsonl`` for LLaMA-Factory (ShareGPT)
and ms-swift; and ``dpo``, preference pairs of a labelled dataset's costly moves for the
three trainers (:mod:`.dpo`). docs/formats.md ("Exports") is the contract.

Steps: read the dataset's manifest and game table and check every shard's sha256 (before
anything is written); cut each dataset shard into chunks of at most ``shard_size`` rows,
one output shard each; run :func:`.chunk.export_chunk` on the chunks in
``workers`` processes (results in order, so the output is the same for any count); write
``manifest.json`` (and for jsonl ``dataset_info.json``); sync and rename the folder into
place. Nothing appears at ``out`` until the export is complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from orchestrator import __version__
from orchestrator.coords import MOVE_TEXTS
from orchestrator.dataset.shards import (
    MANIFEST,
    DatasetError,
    iter_shards,
    load_games,
    read_manifest,
)
from orchestrator.export import dpo
from orchestrator.export.chunk import (
    DATA,
    IMAGES_PER_FOLDER,
    ChunkResult,
    ExportTask,
    export_chunk,
    pq,
)
from orchestrator.files import atomic_write, partial_dir, publish_dir, relative_path
from orchestrator.prompt import PromptError, check_template, default_template
from orchestrator.render import DEFAULT_IMAGE_PX, RenderError, point_center
from orchestrator.workers import pool as worker_pool

FORMAT = "go19-export/1"
FORMATS = ("parquet", "jsonl", "dpo")
DEFAULT_SHARD_SIZE = IMAGES_PER_FOLDER
DATASET_INFO = "dataset_info.json"
# Called with the samples written so far (and the total) while the export runs.
Progress = Callable[[int, int], None]
# Runs the tasks (workers, a callback hearing samples written so far): results in order.
Runner = Callable[[list[ExportTask], int, Callable[[int], None]], Iterator[ChunkResult]]


@dataclass(frozen=True)
class ExportOptions:
    format: str = "parquet"
    image_px: int | None = None  # None: what each recording's player saw, else the default
    answer: str = "gtp"
    template: str = ""  # the prompt template's text; empty: the shipped default
    prompt_file: str | None = None  # where the template came from, for the manifest
    shard_size: int = DEFAULT_SHARD_SIZE
    min_loss: float = dpo.DEFAULT_MIN_LOSS  # dpo: the played move lost at least this
    dpo_style: str = "trl"  # dpo: the trainer's layout, one of dpo.STYLES
    # dpo: also opening-book and fallback moves as the rejected answer (off: only the
    # player's own moves, the model's mistakes; a fallback is the heuristic AI's move)
    dpo_include_fallback: bool = False

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise DatasetError(f"export format must be one of {', '.join(FORMATS)}, "
                               f"not {self.format!r}")
        if self.dpo_style not in dpo.STYLES:
            raise DatasetError(f"dpo style must be one of {', '.join(dpo.STYLES)}, "
                               f"not {self.dpo_style!r}")
        if self.answer not in MOVE_TEXTS:
            raise DatasetError(f"answer spelling must be one of {', '.join(MOVE_TEXTS)}, "
                               f"not {self.answer!r}")
        if self.shard_size < 1:
            raise DatasetError(f"shard size must be at least 1, not {self.shard_size}")
        if self.image_px is not None:
            try:
                point_center(0, 19, self.image_px)  # the renderer's own size check
            except RenderError as exc:
                raise DatasetError(f"--image-px: {exc}") from None
        if not self.template:
            object.__setattr__(self, "template", default_template().strip())
        try:
            check_template(self.template, self.prompt_file or "prompt template")
        except PromptError as exc:
            raise DatasetError(str(exc)) from None
        if pq is None and (self.format == "parquet" or self.format == "dpo"
                           and self.dpo_style == "trl"):
            raise DatasetError("parquet export needs pyarrow: .venv/bin/pip install -e "
                               "'.[export]' (or use --format jsonl, or --dpo-style "
                               "llamafactory/swift)")


def _check_out(out: Path, force: bool) -> None:
    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return
    if not out.is_dir():
        raise DatasetError(f"{out}: exists and is not a folder")
    if not force:
        raise DatasetError(f"{out}: exists and is not empty (use --force to replace it)")
    if not (out / MANIFEST).is_file():
        raise DatasetError(f"{out}: not a go19 export (no {MANIFEST}); --force replaces only "
                           "a previous export")


def _chunks(folder: Path, manifest: dict, shard_size: int
            ) -> list[tuple[dict, int, int, np.ndarray]]:
    """(dataset shard entry, first row, end row, the rows' game numbers) per output shard,
    reading (and so checking the sha256 of) every shard before the first chunk is used."""
    chunks = []
    for entry, arrays in zip(manifest["shards"], iter_shards(folder), strict=True):
        games = arrays["game"]
        for lo in range(0, entry["samples"], shard_size):
            hi = min(lo + shard_size, entry["samples"])
            chunks.append((entry, lo, hi, np.unique(games[lo:hi])))
    return chunks


def plan(folder: Path, out: Path, options: ExportOptions) -> tuple[dict, list[ExportTask]]:
    """The dataset's manifest and the export's tasks for :func:`export_chunk`."""
    manifest = read_manifest(folder)
    missing = [name for name in dpo.NEEDS if name not in manifest["fields"]]
    if options.format == "dpo" and missing:
        raise DatasetError(f"{folder}: --format dpo needs a dataset built with --labels from "
                           f"labels that know each move's loss (no {', '.join(missing)}): "
                           "go19 review RUN_DIR, then go19 dataset build RUN_DIR --labels "
                           "RUN_DIR/labels --out DIR")
    table = load_games(folder)
    tasks = []
    first = 0
    for shard, (entry, lo, hi, games) in enumerate(_chunks(folder, manifest, options.shard_size)):
        try:
            rows = {int(g): table[g] for g in games}
        except IndexError:
            raise DatasetError(f"{folder / entry['file']}: a sample points past the game "
                               f"table ({len(table)} games)") from None
        tasks.append(ExportTask(
            dataset=str(folder.resolve()), fields=manifest["fields"], entry=entry,
            rows=(lo, hi), games=rows, shard=shard, first=first, out=str(out.resolve()),
            format=options.format, image_px=options.image_px, answer=options.answer,
            template=options.template, min_loss=options.min_loss, dpo_style=options.dpo_style,
            dpo_include_fallback=options.dpo_include_fallback,
        ))
        first += hi - lo
    return manifest, tasks


def _counting_from(before: int, done: Callable[[int], None]) -> Callable[[int], None]:
    """``done`` hearing a chunk's own count of samples, ``before`` added."""
    return lambda n: done(before + n)


def run_tasks(tasks: list[ExportTask], workers: int,
              done: Callable[[int], None] = lambda n: None) -> Iterator[ChunkResult]:
    """:func:`export_chunk` over ``tasks``, results in task order; ``done`` hears the
    dataset samples gone through so far (per row group in one process, per chunk with a
    pool), which end at the tasks' total also for ``dpo``, whose pairs are fewer."""
    written = 0
    if workers <= 1 or len(tasks) <= 1:
        for task in tasks:
            result = export_chunk(task, _counting_from(written, done))
            written += result.rows_read
            done(written)
            yield result
        return
    with worker_pool(min(workers, len(tasks))) as pool:
        for result in pool.imap(export_chunk, tasks):
            written += result.rows_read
            done(written)
            yield result


def dataset_info(name: str) -> dict:
    """The LLaMA-Factory ``dataset_info.json`` entry of a jsonl export (ShareGPT, OpenAI
    roles); image paths are relative to the export folder (its ``dataset_dir``)."""
    return {name: {
        "file_name": DATA, "formatting": "sharegpt",
        "columns": {"messages": "messages", "images": "images"},
        "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                 "assistant_tag": "assistant"},
    }}


def _json(value: object) -> bytes:
    return (json.dumps(value, indent=1, ensure_ascii=False) + "\n").encode()


def export(
    dataset: str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: ExportOptions | None = None,
    *,
    workers: int = 1,
    force: bool = False,
    progress: Progress | None = None,
    runner: Runner | None = None,
) -> dict:
    """Export the dataset folder ``dataset`` to ``out``; return the export's manifest.

    ``runner`` replaces the local process pool (:func:`run_tasks`), e.g. to spread the
    :func:`export_chunk` tasks over a cluster; it must yield their results in task order.

    Raises :class:`DatasetError` (one line) for an unusable dataset, game or output path.
    """
    # Built per call, not as a default: ExportOptions() checks for pyarrow, and merely
    # importing this module (every go19 command does) must work without it.
    options = options if options is not None else ExportOptions()
    folder, out = Path(dataset), Path(out)
    started = time.monotonic()
    _check_out(out, force)
    source_manifest = folder / MANIFEST
    manifest_sha = hashlib.sha256(source_manifest.read_bytes()).hexdigest() \
        if source_manifest.is_file() else None
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_dir(out)
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    try:
        manifest, tasks = plan(folder, partial, options)
        total = sum(t.samples for t in tasks)
        shards = []
        sizes: Counter = Counter()
        px_from: Counter = Counter()
        not_own = chosen_known = 0
        report = (lambda n: progress(n, total)) if progress is not None else (lambda n: None)
        for result in (runner or run_tasks)(tasks, workers, report):
            shards.append(result.as_dict())
            sizes.update({int(k): n for k, n in result.image_px.items()})
            px_from.update(result.image_px_from)
            not_own += result.not_own
            chosen_known += result.chosen_known
        games = len({g for t in tasks for g in t.games})
        counts: dict[str, object] = {
            "samples": sum(entry["samples"] for entry in shards), "shards": len(shards),
            "games": games, "image_px": {str(k): n for k, n in sorted(sizes.items())},
            "image_px_from": dict(sorted(px_from.items()))}
        if options.format == "dpo":
            counts["candidates"] = total  # the samples the pairs were drawn from
            counts["not_own"] = not_own  # costly, but opening-book or fallback moves
            counts["chosen_loss"] = chosen_known  # pairs whose chosen_loss is known
        record = {
            "format": FORMAT, "go19_version": __version__,
            "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "source": {
                # Relative to the export folder, as every path an export writes.
                "dataset": relative_path(folder, out), "manifest_sha256": manifest_sha,
                "games_sha256": manifest["games"]["sha256"],
                "shards": [{"file": e["file"], "sha256": e["sha256"]} for e in manifest["shards"]],
            },
            "options": {name: value for name, value in asdict(options).items()
                        if name != "template"} | {"workers": workers, "prompt_file": (
                            None if options.prompt_file is None
                            else relative_path(options.prompt_file, out))},
            "template": options.template,
            "image": {"renderer": "orchestrator.render.render_png", "last_move": "marked",
                      "default_image_px": DEFAULT_IMAGE_PX},
            "counts": counts,
            "shards": shards,
            "seconds": round(time.monotonic() - started, 3),
        }
        if options.format == "jsonl":
            atomic_write(partial / DATASET_INFO, _json(dataset_info(f"go19_{out.name}")))
        if options.format == "dpo" and options.dpo_style == "llamafactory":
            atomic_write(partial / DATASET_INFO, _json(dpo.dataset_info(f"go19_{out.name}")))
        atomic_write(partial / MANIFEST, _json(record))
        # Thousands of PNG files: one sync of everything, not an fsync per file.
        os.sync()
        publish_dir(partial, out)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return record
