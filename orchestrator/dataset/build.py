"""``go19 dataset build``: SGF files in, shards of per-move training samples out.

Pipeline, per game, in input order (files as :mod:`.sources` lists them, games
in file order, moves in game order):

1. **read and replay** (:mod:`orchestrator.positions.samples`, in ``workers``
   processes: :mod:`.reading`): every move of
   every 19x19 game that replays legally to its end, with the board before it.
   Rejections carry ``go19 replay``'s reason. Void games are skipped.
2. **keep** the game, or skip it: fewer than ``min_moves`` moves, or (with
   ``require_provenance``) no known source and licence.
3. **targets**: drop moves that were not the player's policy (opening book,
   fallback) unless ``include_fallback``; with ``winner_only`` the loser's moves
   (and every move of a game without a winner); with ``tactics_only`` moves with
   no tactics bits. Dropped moves were still played on the board.
4. **stages**: extra ``Stage`` callables, in order, then a ``Join``'s stage: the
   hooks for per-position joins keyed by the game's SGF ``sha1``, ``game_index``
   and ``positions.move_number`` (KataGo labels, :mod:`orchestrator.label.join`).
   A stage may drop rows or replace ``move``; a join's ``values`` add per-sample
   fields to the shards for the rows finally kept.
5. **dedup** (unless disabled): drop positions (stones, side to move, ko point)
   already in the dataset or earlier in the game; the first in input order wins.
6. **pick** at most ``max_per_game``: spread evenly over the game, or with
   ``tactical_bias`` half (rounded up) drawn at random among tactical positions
   and the rest spread evenly over the others.

Steps 2-6 run in the main process, so the output is the same for any worker
count. Every game read (rejected, void and skipped ones too) gets a line in the
game table; samples point at their game's line.

Passes are kept as targets (``move = 361``): passing at the end is part of
playing a game out, and a policy must learn when to pass.

Speed: steps 3-6 narrow one index array into the game's rows, and the rows finally kept
are copied once, straight into the shard arrays (``Positions`` copies only for stages
and a join, which take and return them). Dedup runs on :mod:`.fastdedup`'s compiled
index where numba is installed (the ``fast`` extra), the same answers as :mod:`.dedup`'s.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from orchestrator import __version__
from orchestrator.coords import PASS, to_index
from orchestrator.dataset.dedup import SeenPositions
from orchestrator.dataset.options import BuildOptions
from orchestrator.dataset.reading import read_all
from orchestrator.dataset.selection import pick, targets
from orchestrator.dataset.shards import (
    FIELDS,
    FORMAT,
    GAMES,
    MANIFEST,
    DatasetError,
    GameTableRow,
    ShardWriter,
    relative_sgf_path,
    sgf_root,
)
from orchestrator.dataset.sources import UNKNOWN, Provenance, find_sgf_files, read_provenance
from orchestrator.files import (
    atomic_write,
    partial_dir,
    publish_dir,
    relative_path,
    sha256_file,
)
from orchestrator.positions.rows import SIZE, Positions
from orchestrator.positions.samples import GameRead
from orchestrator.recordings import WINNER_NAMES
from orchestrator.rules.tactics import Tactics
from orchestrator.words import plural

if TYPE_CHECKING:
    from orchestrator.dataset import fastdedup


# A per-game step after the built-in target filters: given the game and its
# remaining rows, return the rows to keep (a subset, perhaps with ``move`` replaced).
Stage = Callable[[GameRead, Positions], Positions]


class Join(Protocol):
    """Per-position fields from elsewhere (KataGo labels: orchestrator.label.join): its
    ``stage`` runs after the other stages, ``values`` gives the extra ``fields`` of the
    rows finally kept, ``summary`` goes into the manifest as ``labels``."""

    @property
    def fields(self) -> Mapping[str, tuple[np.dtype, tuple[int, ...]]]: ...

    def stage(self, game: GameRead, positions: Positions) -> Positions: ...
    def values(self, game: GameRead, positions: Positions) -> dict[str, np.ndarray]: ...
    def summary(self) -> dict: ...


@dataclass
class Counts:
    files: int = 0
    void_files: int = 0
    games: int = 0  # one per game read, or per file that could not be read (as go19 replay)
    games_ok: int = 0  # replayed to the end
    games_kept: int = 0  # ... and not skipped
    rejected: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    winners: Counter = field(default_factory=Counter)
    provenance: Counter = field(default_factory=Counter)
    positions: int = 0  # moves of the kept games
    excluded: Counter = field(default_factory=Counter)
    duplicates: int = 0
    not_picked: int = 0
    samples: int = 0
    tactical: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict:
        out = {}
        for name in (f.name for f in dataclasses.fields(self)):
            value = getattr(self, name)
            if isinstance(value, Counter):
                value = {key: n for key, n in sorted(value.items()) if n}
            out[name] = value
        return out


def _seen_positions() -> SeenPositions | fastdedup.SeenPositions:
    """The dedup index: compiled where numba is installed (the ``fast`` extra; the same
    masks, :mod:`.fastdedup`), else the reference."""
    from orchestrator.dataset import fastdedup  # imports numba: only for a build that dedups

    return fastdedup.SeenPositions() if fastdedup.ENABLED else SeenPositions()


# json.dumps(row, ensure_ascii=False) builds an encoder per call; one encoder, same text.
_ROW_ENCODER = json.JSONEncoder(ensure_ascii=False)
# Tactics bit -> counts.tactical name; every sample's bits are counted once per value.
_FLAGS = [(int(flag), str(flag.name).lower()) for flag in Tactics if flag]
_TACTICAL_BATCH = 256


def _within(rows: np.ndarray | None, sub: np.ndarray) -> np.ndarray:
    """The rows at indices ``sub`` of the selection ``rows`` (None: all of them)."""
    return sub if rows is None else rows[sub]


class _Builder:
    def __init__(self, folder: Path, options: BuildOptions,
                 provenance: dict[Path, Provenance], stages: Sequence[Stage],
                 join: Join | None = None, root: Path | None = None) -> None:
        self.options = options
        self.root = root or Path.cwd()  # the game table's SGF paths are relative to it
        self.provenance = provenance
        # Looked up by the game's path as text first: no Path() per game (the same
        # entry, as Path(str(key)) == key), then as a Path for spellings that differ.
        self._provenance_text = {str(key): value for key, value in provenance.items()}
        self.stages = [*stages, join.stage] if join is not None else stages
        self.join = join
        self.counts = Counts()
        self.writer = ShardWriter(folder, options.shard_size, options.compress,
                                  join.fields if join is not None else None)
        self.seen = _seen_positions() if options.dedup else None
        self.table = open(folder / GAMES, "w", encoding="utf-8")
        self.rows = 0
        # Samples per tactics value (the uint8 bits), turned into counts.tactical by
        # sync_counts(): the samples' bits are gathered and counted by one bincount
        # per TACTICAL_BATCH games instead of a count per flag and game.
        self._tactical = np.zeros(256, np.int64)
        self._tactical_rows: list[np.ndarray] = []

    def _provenance(self, path: str) -> Provenance:
        found = self._provenance_text.get(path)
        return found if found is not None else self.provenance.get(Path(path), UNKNOWN)

    def add(self, game: GameRead) -> None:
        counts = self.counts
        counts.games += 1
        prov = self._provenance(game.path) if self.provenance else UNKNOWN
        status, reason, samples = game.status, game.reason, 0
        if status == "rejected":
            counts.rejected[reason] += 1
        elif status == "ok":
            counts.games_ok += 1
            if game.moves < self.options.min_moves:
                status, reason = "skipped", "short"
            elif self.options.require_provenance and (prov.source is None or prov.licence is None):
                status, reason = "skipped", "no-provenance"
        if status in ("void", "skipped"):
            counts.skipped[reason or status] += 1
        if status == "ok":
            counts.games_kept += 1
            counts.winners[WINNER_NAMES[game.winner] if game.winner else "unknown"] += 1
            counts.provenance["known source" if prov.source else "unknown source"] += 1
            counts.provenance["known licence" if prov.licence else "unknown licence"] += 1
            samples = self._samples(game)
        self._row(game, status, reason, prov, samples)

    def _samples(self, game: GameRead) -> int:
        """Select the game's samples and write them. The selection is one index array
        into the game's rows (``None``: every row), narrowed by each step and copied once,
        straight into the shards; rows become a new ``Positions`` only for stages and
        a join, which need one."""
        positions = game.positions
        assert positions is not None
        counts = self.counts
        counts.positions += len(positions)
        keep = targets(game, positions, self.options, counts.excluded)
        rows = None if keep is None else np.flatnonzero(keep)
        if self.stages:
            if rows is not None:
                positions, rows = positions.take(rows), None
            for stage in self.stages:
                before = len(positions)
                positions = stage(game, positions)
                counts.excluded["stages"] += before - len(positions)
        n = len(positions) if rows is None else len(rows)
        admit = self.options.max_per_game is None  # every fresh row is kept
        if self.seen is not None and n:
            keys = positions.key if rows is None else positions.key[rows]
            # Kept fresh rows are added at once (admit) or, with picks, after the pick.
            fresh = self.seen.admit(keys) if admit else np.flatnonzero(self.seen.fresh(keys))
            counts.duplicates += n - len(fresh)
            if len(fresh) < n:
                rows, keys, n = _within(rows, fresh), keys[fresh], len(fresh)
        picked = None if admit else self._pick(game, positions, rows, n)
        if picked is not None:
            rows, n = _within(rows, picked), len(picked)
            if self.seen is not None:
                keys = keys[picked]
        if self.seen is not None and not admit and n:
            self.seen.add(keys)
        if self.join is not None:
            if rows is not None:
                positions, rows = positions.take(rows), None
            self.writer.add(positions, game.winner, self.rows,
                            self.join.values(game, positions))
        else:
            self.writer.add(positions, game.winner, self.rows, rows=rows)
        counts.samples += n
        if n:
            tactical = self._tactical_rows
            # A copy either way: a stage may hand out views of buffers it reuses.
            bits = positions.tactical.copy() if rows is None else positions.tactical[rows]
            tactical.append(bits)
            if len(tactical) >= _TACTICAL_BATCH:
                self._count_tactical()
        return n

    def _count_tactical(self) -> None:
        if self._tactical_rows:
            self._tactical += np.bincount(np.concatenate(self._tactical_rows), minlength=256)
            self._tactical_rows.clear()

    def _pick(self, game: GameRead, positions: Positions, rows: np.ndarray | None,
              n: int) -> np.ndarray | None:
        """Indices into ``rows`` of the ``max_per_game`` picked; None to keep them all."""
        limit = self.options.max_per_game
        assert limit is not None
        if n <= limit:
            return None
        rng = random.Random(f"{self.options.seed}:{game.sha1}:{game.game_index}")
        self.counts.not_picked += n - limit
        tactical = positions.tactical if rows is None else positions.tactical[rows]
        return pick(tactical, limit, self.options.tactical_bias, rng)

    def sync_counts(self) -> Counts:
        """``counts``, with ``tactical`` brought up to date."""
        self._count_tactical()
        tactical = self.counts.tactical
        tactical.clear()
        for value, n in enumerate(self._tactical.tolist()):
            if n and value:
                tactical["any"] += n
                for bit, name in _FLAGS:
                    if value & bit:
                        tactical[name] += n
        return self.counts

    def _row(self, game: GameRead, status: str, reason: str | None, prov: Provenance,
             samples: int) -> None:
        row = GameTableRow(
            path=relative_sgf_path(game.path, self.root), file=game.path,
            game_index=game.game_index,
            sha1=game.sha1, status=status, reason=reason, detail=game.detail,
            at_move=game.at_move, black=game.black, white=game.white, result=game.result,
            winner=game.winner, moves=game.moves, samples=samples, source=prov.source,
            licence=prov.licence, run=game.run, game=game.game, players=game.players,
        )
        self.table.write(_ROW_ENCODER.encode(row.as_dict()) + "\n")
        self.rows += 1

    def finish(self) -> None:
        self.sync_counts()
        self.writer.flush()
        self.table.flush()
        os.fsync(self.table.fileno())
        self.table.close()

    def close(self) -> None:
        self.table.close()


class EmptyDataset(DatasetError):
    """``build(refuse_empty=True)`` found no sample to write; ``counts`` says what the
    inputs held. Nothing was written."""

    def __init__(self, counts: Counts) -> None:
        super().__init__(f"no samples from {plural(counts.files, 'file')} "
                         f"({plural(counts.games, 'game')})")
        self.counts = counts


def _check_out(out: Path, force: bool) -> None:
    if not out.exists():
        return
    if not out.is_dir():
        raise DatasetError(f"{out}: exists and is not a folder")
    if not any(out.iterdir()):
        return
    if not force:
        raise DatasetError(f"{out}: exists and is not empty (use --force to replace it)")
    if not (out / MANIFEST).is_file():
        raise DatasetError(f"{out}: not a go19 dataset (no {MANIFEST}); --force replaces "
                           "only a previous dataset")


def _manifest(builder: _Builder, folder: Path, inputs: list[Path],
              provenance: str | os.PathLike[str] | None, options: BuildOptions,
              join: Join | None) -> dict:
    """``manifest.json`` of a finished build (the caller adds ``build`` and ``labels``)."""
    return {
        "format": FORMAT,
        "go19_version": __version__,
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        # Every path relative to the dataset folder: it moves with its inputs.
        "inputs": [relative_path(p, folder) for p in inputs],
        "sgf_root": relative_path(builder.root, folder),
        "provenance_manifest": relative_path(provenance, folder)
        if provenance is not None else None,
        "options": dataclasses.asdict(options),
        "pass_move": to_index(PASS, SIZE),
        "fields": {name: {"dtype": dtype.name, "shape": list(shape)} for name, (
            dtype, shape) in {**FIELDS, **(join.fields if join else {})}.items()},
        "counts": builder.counts.as_dict(),
        "dedup": {"enabled": options.dedup,
                  "key": "64-bit Zobrist hash of stones ^ key(side to move, ko point)",
                  "index_bytes": builder.seen.nbytes if builder.seen is not None else 0},
        "games": {"file": GAMES, "rows": builder.rows,
                  "sha256": sha256_file(folder / GAMES)},
        "shards": builder.writer.shards,
    }


def build(
    inputs: Iterable[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    options: BuildOptions = BuildOptions(),
    *,
    provenance: str | os.PathLike[str] | None = None,
    workers: int = 1,
    force: bool = False,
    stages: Sequence[Stage] = (),
    progress: Callable[[Counts], None] | None = None,
    join: Join | None = None,
    refuse_empty: bool = False,
    reader: Callable[[Sequence[str]], Iterable[GameRead]] | None = None,
    on_rejected: Callable[[GameRead], None] | None = None,
) -> dict:
    """Build a dataset folder at ``out`` from SGF files and folders; return its manifest.

    ``on_rejected`` hears each game (or unreadable file) the build rejects, as it goes.
    Raises :class:`DatasetError` (one line) for unusable input or output paths.
    Nothing appears at ``out`` until the build is complete, nor at all when
    ``refuse_empty`` and no sample was kept (:class:`EmptyDataset`).
    """
    if options.require_provenance and provenance is None:
        raise DatasetError("--require-provenance needs --source-manifest FILE: without one "
                           "no game's source and licence are known")
    paths_in = [Path(p) for p in inputs]
    out = Path(out)
    started = time.monotonic()
    _check_out(out, force)
    files, void_files = find_sgf_files(paths_in)
    table = read_provenance(Path(provenance)) if provenance is not None else {}
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_dir(out)
    partial.mkdir()
    builder = _Builder(partial, options, table, stages, join, sgf_root(paths_in))
    try:
        builder.counts.files, builder.counts.void_files = len(files), void_files
        paths = [str(f) for f in files]  # reader: step 1 elsewhere (orchestrator.cluster)
        games = read_all(paths, workers, options.max_file_bytes) if reader is None \
            else reader(paths)
        for n, game in enumerate(games, 1):
            builder.add(game)
            if game.status == "rejected" and on_rejected is not None:
                on_rejected(game)
            if progress is not None and n % 1000 == 0:
                progress(builder.sync_counts())
        builder.finish()
        if refuse_empty and builder.counts.samples == 0:
            raise EmptyDataset(builder.counts)
        manifest = _manifest(builder, partial, paths_in, provenance, options, join)
        manifest["build"] = {"workers": workers,
                             "seconds": round(time.monotonic() - started, 3)}
        if join is not None:
            manifest["labels"] = join.summary()
            if isinstance(manifest["labels"].get("folder"), str):
                manifest["labels"]["folder"] = relative_path(manifest["labels"]["folder"],
                                                             partial)
        atomic_write(partial / MANIFEST,
                     (json.dumps(manifest, indent=1, ensure_ascii=False) + "\n").encode())
        publish_dir(partial, out)
    except BaseException:
        builder.close()
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return manifest

