"""Dataset files: shards of samples as ``.npz``, the game table, ``manifest.json``;
writing (rows copied into preallocated arrays, one file per full shard) and
reading back with every shard's sha256 checked against the manifest.

A dataset folder holds ``manifest.json`` (options, counts, the shard list with
sizes and hashes, ``sgf_root``), ``games.jsonl`` (the game table: line ``i`` describes
game ``i``; a sample's ``game`` field is that line number; its SGF ``path`` is relative
to ``sgf_root``) and ``shard-NNNNN.npz``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator import npz_shards
from orchestrator.files import read_manifest as read_json_manifest
from orchestrator.positions.rows import SIZE, Positions
from orchestrator.recordings import is_run_dir

MANIFEST = "manifest.json"
GAMES = "games.jsonl"
FORMAT = "go19-dataset/1"

# Per sample: name -> (dtype, shape of one sample).
FIELDS: dict[str, tuple[np.dtype, tuple[int, ...]]] = {
    "board": (np.dtype(np.uint8), (SIZE, SIZE)),  # before the move: 0 empty, 1 B, 2 W
    "to_play": (np.dtype(np.uint8), ()),  # 1 black, 2 white
    "move": (np.dtype(np.int16), ()),  # row * 19 + col, 361 = pass
    "move_number": (np.dtype(np.int16), ()),  # 1-based
    "winner": (np.dtype(np.uint8), ()),  # 1 black, 2 white, 0 draw or unknown
    "ko": (np.dtype(np.int16), ()),  # the board's ko point, -1 for none
    "tactical": (np.dtype(np.uint8), ()),  # Tactics bits: capture 1, atari 2, escape 4
    "game": (np.dtype(np.int32), ()),  # line of games.jsonl
}


# The fields a sample takes from its Positions row (winner and game come per game).
_POSITION_FIELDS = ("board", "to_play", "move", "move_number", "ko", "tactical")


class DatasetError(ValueError):
    """A dataset (or a build's input) that cannot be used; ``str()`` is one line
    naming the file."""


@dataclass(frozen=True, slots=True)
class GameTableRow:
    """One line of the game table (``games.jsonl``; line ``i`` is game ``i``): every game
    a build read, kept or not, and why. ``run``, ``game`` and ``players`` are there for
    go19 recordings only (``GOXIXRUN``, ``GOXIXGAME``, and ``{"black": …, "white": …}``
    from ``GOXIXB``/``GOXIXW``, as the SGF has them)."""

    path: str  # as written: relative to the manifest's sgf_root (older datasets: as given)
    file: str  # where the SGF is now (load_games: path under sgf_root); not written
    game_index: int | None  # None: the file could not be read at all
    sha1: str | None
    status: str  # ok | rejected | void | skipped
    reason: str | None
    detail: str | None
    at_move: int | None
    black: str
    white: str
    result: str
    winner: int  # 1 black, 2 white, 0 draw or unknown
    moves: int
    samples: int
    source: str | None
    licence: str | None
    run: str | None = None
    game: str | None = None
    players: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The line as written: every field but ``file``, the recordings' three only when
        set."""
        row = {name: getattr(self, name) for name in _ROW_FIELDS}
        for name in _RECORDING_FIELDS:
            value = getattr(self, name)
            if value is not None:
                row[name] = value
        return row

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> GameTableRow:
        """A line as written with its ``file`` added (load_games), or a row's
        ``as_dict() | {"file": ...}`` carried as JSON."""
        given: dict[str, Any] = {name: row[name] for name in _ROW_FIELDS}
        return cls(**given, file=row["file"], run=row.get("run"), game=row.get("game"),
                   players=row.get("players"))


_RECORDING_FIELDS = ("run", "game", "players")
_ROW_FIELDS = tuple(name for name in GameTableRow.__dataclass_fields__
                    if name not in (*_RECORDING_FIELDS, "file"))


class ShardWriter:
    """Samples into ``shard-NNNNN.npz`` files of ``shard_size`` samples each (the
    last one smaller). Rows are copied into arrays allocated once, so memory stays
    at one shard whatever the dataset's size."""

    def __init__(self, folder: Path, shard_size: int, compress: bool = True,
                 extra_fields: Mapping[str, tuple[np.dtype, tuple[int, ...]]] | None = None
                 ) -> None:
        self.folder = folder
        self.shard_size = shard_size
        self.compress = compress
        self.shards: list[dict] = []
        # extra_fields: per-sample arrays from a join (e.g. KataGo labels), after FIELDS.
        self._rows = {name: np.empty((shard_size, *shape), dtype)
                      for name, (dtype, shape) in {**FIELDS, **(extra_fields or {})}.items()}
        self._n = 0

    @property
    def samples(self) -> int:
        return sum(entry["samples"] for entry in self.shards) + self._n

    def add(self, positions: Positions, winner: int, game: int,
            extra: Mapping[str, np.ndarray] | None = None,
            rows: np.ndarray | None = None) -> None:
        """Append ``positions``' rows (those at the ascending indices ``rows``, when
        given) as samples of ``game``: each field is copied once, from the positions
        straight into the shard arrays. ``extra``: a join's fields, one row per sample."""
        total = len(positions) if rows is None else len(rows)
        offset = 0
        if rows is not None and total and rows[-1] - rows[0] == total - 1:
            # A run of consecutive rows (dedup dropped only opening moves, say): slices.
            offset = int(rows[0])
            rows = None
        arrays = self._rows
        done = 0
        while done < total:
            count = min(total - done, self.shard_size - self._n)
            dst = slice(self._n, self._n + count)
            if rows is None:
                src = slice(offset + done, offset + done + count)
                for name in _POSITION_FIELDS:
                    arrays[name][dst] = getattr(positions, name)[src]
            else:
                at = rows[done:done + count]
                for name in _POSITION_FIELDS:
                    # mode="clip": no bounds-checking copy (rows are in range).
                    np.take(getattr(positions, name), at, axis=0, out=arrays[name][dst],
                            mode="clip")
            arrays["winner"][dst] = winner
            arrays["game"][dst] = game
            for name, values in (extra or {}).items():
                arrays[name][dst] = values[done:done + count]
            self._n += count
            done += count
            if self._n == self.shard_size:
                self.flush()

    def flush(self) -> None:
        """Write the rows gathered so far as one shard (nothing if there are none)."""
        if not self._n:
            return
        name = f"shard-{len(self.shards):05d}.npz"
        # Deflated as np.savez_compressed does, but at a fast level (npz_shards.DEFLATE:
        # 15 bytes per sample with isal, 14 with zlib, 374 stored).
        written = npz_shards.write_shard(
            self.folder / name, {key: rows[:self._n] for key, rows in self._rows.items()},
            npz_shards.DEFLATE if self.compress else None,
        )
        self.shards.append({
            "file": name, "samples": self._n, "bytes": written.bytes, "sha256": written.sha256,
        })
        self._n = 0


# -- reading ---------------------------------------------------------------------


def read_manifest(folder: str | os.PathLike[str]) -> dict:
    path = Path(folder) / MANIFEST
    manifest = read_json_manifest(path, FORMAT, DatasetError, "a go19 dataset")
    entries = manifest.get("shards")
    games = manifest.get("games")
    if not isinstance(entries, list) \
            or not all(npz_shards.entry_ok(e, _SHARD_KEYS) for e in entries) \
            or not npz_shards.entry_ok(games, _GAMES_KEYS):
        raise DatasetError(f"{path}: shard list or game table entry missing or malformed")
    seen: set[str] = set()
    for entry in entries:
        if entry["file"] in seen:
            raise DatasetError(f"{path}: {entry['file']} is listed twice")
        seen.add(entry["file"])
    counted = (manifest.get("counts") or {}).get("samples")
    total = sum(entry["samples"] for entry in entries)
    if isinstance(counted, int) and counted != total:
        raise DatasetError(f"{path}: its shards hold {total} samples, counts.samples says "
                           f"{counted}")
    _fields(manifest, path)
    return manifest


_SHARD_KEYS = {"file": str, "samples": int, "bytes": int, "sha256": str}
_GAMES_KEYS = {"file": str, "sha256": str}


def _fields(manifest: dict, path: Path) -> dict[str, tuple[np.dtype, tuple[int, ...]]]:
    """The manifest's per-sample fields: :data:`FIELDS` plus any a join added."""
    try:
        fields = {name: (np.dtype(spec["dtype"]), tuple(int(n) for n in spec["shape"]))
                  for name, spec in manifest["fields"].items()}
    except (AttributeError, KeyError, TypeError, ValueError):
        fields = {}
    if any(fields.get(name) != spec for name, spec in FIELDS.items()):
        raise DatasetError(f"{path}: 'fields' missing or not those of {FORMAT}")
    return fields


def read_shard(folder: str | os.PathLike[str], manifest: dict, entry: dict
               ) -> dict[str, np.ndarray]:
    """One shard's arrays, every field of the manifest, from its entry in the
    manifest's shard list, after checking its size and sha256."""
    fields = _fields(manifest, Path(folder) / MANIFEST)
    return npz_shards.read_shard(Path(folder) / entry["file"], entry, entry["samples"], fields,
                                 DatasetError, "the manifest")


def iter_shards(folder: str | os.PathLike[str]) -> Iterator[dict[str, np.ndarray]]:
    """Each shard's arrays, in order, after checking its sha256."""
    manifest = read_manifest(folder)
    for entry in manifest["shards"]:
        yield read_shard(folder, manifest, entry)


def load(folder: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The whole dataset as one array per field (every shard's sha256 checked):
    :data:`FIELDS`, and the fields a join added (e.g. KataGo labels)."""
    fields = _fields(read_manifest(folder), Path(folder) / MANIFEST)
    parts: dict[str, list[np.ndarray]] = {name: [] for name in fields}
    for arrays in iter_shards(folder):
        for name, array in arrays.items():
            parts[name].append(array)
    return {
        name: np.concatenate(parts[name]) if parts[name] else np.empty((0, *shape), dtype)
        for name, (dtype, shape) in fields.items()
    }


def load_games(folder: str | os.PathLike[str]) -> list[GameTableRow]:
    """The game table (``games.jsonl``), checked against the manifest's sha256; each row's
    ``file`` is where its SGF is now (:func:`sgf_file`)."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    entry = manifest["games"]
    path = folder / entry["file"]
    data = npz_shards.verified_bytes(path, entry["sha256"], DatasetError, "the manifest")
    try:
        rows = [json.loads(line) for line in data.decode("utf-8").splitlines()]
        return [GameTableRow.from_dict(row | {"file": sgf_file(folder, manifest, row["path"])})
                for row in rows]
    except (ValueError, KeyError, TypeError) as exc:
        raise DatasetError(f"{path}: not a game table ({exc!r})") from None


def sgf_root(inputs: Sequence[Path]) -> Path:
    """The folder a dataset's SGF paths are relative to: the deepest one holding every
    input (resolved; a file input counts by its folder, a run folder of go19's, or a file
    in one, by the folder holding it: a game's path always names its run, whether the
    build was given the run or the recordings folder)."""
    folders = []
    for given in inputs:
        folder = given.resolve() if given.is_dir() else given.resolve().parent
        folders.append(str(folder.parent if is_run_dir(folder) else folder))
    return Path(os.path.commonpath(folders)) if folders else Path.cwd()


def relative_sgf_path(path: str, root: Path) -> str:
    """How the game table spells an SGF's path: relative to ``root`` (POSIX; ``..``
    first for a file reached through a symlink that leads out of it)."""
    return Path(os.path.relpath(path, root)).as_posix()


def sgf_file(folder: str | os.PathLike[str], manifest: Mapping[str, Any], path: str) -> str:
    """Where the SGF of a game-table ``path`` is: under the manifest's ``sgf_root``
    (relative to the dataset folder, so a dataset moved with its inputs still finds
    them); a dataset built before ``sgf_root`` stored the paths as given, taken as they are."""
    root = manifest.get("sgf_root")
    if not isinstance(root, str) or Path(path).is_absolute():
        return path
    return os.path.normpath(Path(folder).resolve() / root / path)
