"""A label folder: ``shard-NNNNN.npz`` files of per-position KataGo labels and the
``labels.json`` manifest (the contract is docs/labels.md).

Writing: finished games are buffered and written as one shard when the buffer holds
``shard_positions`` positions or ``flush_seconds`` have passed, then the manifest is
rewritten; both writes are atomic, and a game is ``ok`` in the manifest only once its
shard is listed there, so a run killed at any point leaves whole games. Resuming keeps
every ``ok`` game and asks again for the others.

Reading (:class:`LabelSet`): the manifest, then every shard with its sha256 checked, all
in memory (about 1.5 kB a position; 2 kB with ownership) with an index by game.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator import __version__, npz_shards
from orchestrator.files import atomic_write, relative_path
from orchestrator.files import read_manifest as read_json_manifest
from orchestrator.label.games import LabelGame, game_ident
from orchestrator.positions.rows import AREA
from orchestrator.recordings import RunName

FORMAT = "go19-labels/1"
MANIFEST = "labels.json"

# Per position: name -> (dtype, shape of one position).
FIELDS: dict[str, tuple[np.dtype, tuple[int, ...]]] = {
    "sha1": (np.dtype("S40"), ()),  # the SGF file's sha1 (hex, ASCII)
    "game_index": (np.dtype(np.int32), ()),  # game within the file
    "move_number": (np.dtype(np.int32), ()),  # 1-based: the position before this move
    "to_play": (np.dtype(np.uint8), ()),  # 1 black, 2 white
    "key": (np.dtype(np.uint64), ()),  # the dataset build's dedup key of the position
    "history": (np.dtype(np.uint8), ()),  # 0: sent as a bare board after mid-game setup
    "policy": (np.dtype(np.float32), (AREA + 1,)),  # raw policy, pass last, -1 illegal
    "best_move": (np.dtype(np.int16), ()),  # coords index: row * 19 + col, 361 = pass
    "winrate": (np.dtype(np.float32), ()),  # Black's
    "score_lead": (np.dtype(np.float32), ()),  # Black's lead in points
    "visits": (np.dtype(np.int32), ()),
}
OWNERSHIP: dict[str, tuple[np.dtype, tuple[int, ...]]] = {
    "ownership": (np.dtype(np.float32), (AREA,)),  # +1 Black's, -1 White's
}
# Folders labelled for ``go19 review`` (settings ``review``): their last row per game is
# the position after the last labelled move, and this field rides along.
REVIEW: dict[str, tuple[np.dtype, tuple[int, ...]]] = {
    "best_score_lead": (np.dtype(np.float32), ()),  # Black's, after KataGo's move (searched)
}


class LabelError(ValueError):
    """A label folder (or a run's settings) that cannot be used; ``str()`` is one line."""


def fields(ownership: bool, review: bool = False) -> dict[str, tuple[np.dtype, tuple[int, ...]]]:
    return {**FIELDS, **(OWNERSHIP if ownership else {}), **(REVIEW if review else {})}


def empty_labels(game: LabelGame, ownership: bool,
                 review: bool = False) -> dict[str, np.ndarray]:
    """A game's label arrays, identity filled in, values NaN / -1 until answered."""
    n = game.positions
    blank = {"i": -1, "u": 0, "f": np.nan}
    arrays = {name: np.full((n, *shape), blank[dtype.kind], dtype) if dtype.kind in blank
              else np.empty((n, *shape), dtype)
              for name, (dtype, shape) in fields(ownership, review).items()}
    arrays["sha1"][:] = (game.sha1 or "").encode("ascii")
    arrays["game_index"][:] = game.game_index or 0
    arrays["move_number"][:] = np.arange(1, n + 1)
    arrays["to_play"][:] = game.to_play
    arrays["key"][:] = game.key
    for segment in game.segments:
        arrays["history"][segment.first:segment.first + segment.rows] = segment.history
    return arrays


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class LabelWriter:
    """The label folder of one run; create with :meth:`open`."""

    def __init__(self, folder: Path, manifest: dict[str, Any], *,
                 shard_positions: int, flush_seconds: float) -> None:
        self.folder = folder
        self.manifest = manifest
        self.shard_positions = shard_positions
        self.flush_seconds = flush_seconds
        self._entries: dict[str, dict[str, Any]] = {e["ident"]: e for e in manifest["games"]}
        self._buffer: list[tuple[dict[str, Any], dict[str, np.ndarray]]] = []
        self._buffered = 0
        self._last_flush = time.monotonic()

    @classmethod
    def open(cls, folder: str | os.PathLike[str], settings: Mapping[str, Any],
             inputs: Iterable[str], *, resume: bool, shard_positions: int = 8192,
             flush_seconds: float = 30.0, run: RunName | None = None) -> LabelWriter:
        """A new label folder at ``folder`` (which must be absent or empty), or with
        ``resume`` the one there, whose settings must equal ``settings``. ``run``: the
        folder labels that run's games only (``RUN_DIR/labels``); one holding another
        run's labels is refused, before anything is written."""
        folder = Path(folder)
        path = folder / MANIFEST
        if folder.is_symlink() and not folder.exists():
            raise LabelError(f"{folder}: a symbolic link to {os.readlink(folder)}, which does "
                             "not exist; create that folder or remove the link")
        if path.exists():
            if not resume:
                raise LabelError(f"{folder}: already holds labels (use --resume to go on, "
                                 "or another --out)")
            manifest = read_manifest(folder)
            if manifest["settings"] != dict(settings):
                raise LabelError(f"{folder}: labelled with other settings "
                                 f"{manifest['settings']}; resume with the same ones")
            if run is not None:
                _check_run(folder, manifest, run)
        else:
            if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
                raise LabelError(f"{folder}: exists and holds no {MANIFEST}; choose another "
                                 "--out")
            folder.mkdir(parents=True, exist_ok=True)
            manifest = {
                "format": FORMAT, "go19_version": __version__, "created": _now(),
                "updated": None, "inputs": [], "engine": None,
                "settings": dict(settings),
                "fields": {name: {"dtype": dtype.str, "shape": list(shape)} for name, (
                    dtype, shape) in fields(bool(settings.get("ownership")),
                                            bool(settings.get("review"))).items()},
                "counts": {}, "runs": [], "games": [], "shards": [],
            }
        if run is not None:
            manifest["run"] = run.id
        # Paths relative to the label folder (older folders: as given, kept as they are).
        manifest["inputs"] = sorted({*manifest["inputs"],
                                     *(relative_path(p, folder) for p in inputs)})
        writer = cls(folder, manifest, shard_positions=shard_positions,
                     flush_seconds=flush_seconds)
        writer.flush()  # the folder is a label folder from now on, even if the run dies
        return writer

    # -- games ------------------------------------------------------------------------

    def labelled(self) -> set[str]:
        """Identities of the games already labelled (``ok`` in the manifest)."""
        return {ident for ident, e in self._entries.items() if e["status"] == "ok"}

    def record(self, game: LabelGame, status: str, reason: str | None = None,
               detail: str | None = None, warnings: Iterable[str] = ()) -> None:
        """A game without labels: not used by the build, or rejected by KataGo."""
        self._put(self._entry(game, status, reason, detail, warnings, positions=0))

    def add(self, game: LabelGame, arrays: dict[str, np.ndarray],
            warnings: Iterable[str] = ()) -> None:
        """A labelled game; it reaches the manifest as ``ok`` with its shard."""
        entry = self._entry(game, "ok", None, None, warnings, positions=game.positions)
        self._buffer.append((entry, arrays))
        self._buffered += game.positions
        if (self._buffered >= self.shard_positions
                or time.monotonic() - self._last_flush >= self.flush_seconds):
            self.flush()

    def set_engine(self, engine: Mapping[str, Any]) -> None:
        previous = self.manifest["engine"]
        if previous is not None and previous.get("model_names") != engine.get("model_names"):
            raise LabelError(f"{self.folder}: labelled with model {previous['model_names']}, "
                             f"not {engine['model_names']}; resume with the same model")
        self.manifest["engine"] = self._portable(engine)

    def _portable(self, engine: Mapping[str, Any]) -> dict[str, Any]:
        """The engine's files relative to the label folder: no path of the machine's own
        in the manifest (KataGo names a net by the path it was given)."""
        out = dict(engine)
        for key in ("binary", "model", "config"):
            if isinstance(out.get(key), str):
                out[key] = relative_path(out[key], self.folder)
        out["models"] = [
            {**m, "name": relative_path(m["name"], self.folder)}
            if isinstance(m, dict) and isinstance(m.get("name"), str) and Path(m["name"]).exists()
            else m for m in out.get("models") or ()]
        return out

    def add_run(self, run: Mapping[str, Any]) -> None:
        self.manifest["runs"].append(dict(run))

    def _entry(self, game: LabelGame, status: str, reason: str | None, detail: str | None,
               warnings: Iterable[str], positions: int) -> dict[str, Any]:
        path = relative_path(game.path, self.folder)  # as the manifest's other paths
        entry: dict[str, Any] = {"ident": game_ident(game.sha1, game.game_index, path),
                                 "path": path, "game_index": game.game_index,
                 "sha1": game.sha1, "status": status, "reason": reason, "detail": detail,
                 "moves": game.moves, "positions": positions, "shard": None}
        warnings = sorted(set(warnings))
        if warnings:
            entry["warnings"] = warnings
        return entry

    def _put(self, entry: dict[str, Any]) -> None:
        old = self._entries.get(entry["ident"])
        if old is not None and old["status"] == "ok":
            return  # labelled earlier (resume, or the same file twice): keep those labels
        self._entries[entry["ident"]] = entry

    # -- files ------------------------------------------------------------------------

    def flush(self) -> None:
        """Write the buffered games as one shard (if any), then the manifest."""
        if self._buffer:
            name = f"shard-{len(self.manifest['shards']):05d}.npz"
            arrays = {key: np.concatenate([a[key] for _, a in self._buffer])
                      for key in self._buffer[0][1]}
            written = npz_shards.write_shard(self.folder / name, arrays)
            self.manifest["shards"].append({
                "file": name, "positions": self._buffered, "bytes": written.bytes,
                "sha256": written.sha256,
            })
            for entry, _ in self._buffer:
                entry["shard"] = name
                self._put(entry)
            self._buffer.clear()
            self._buffered = 0
        self._write_manifest()
        self._last_flush = time.monotonic()

    def _write_manifest(self) -> None:
        manifest = self.manifest
        entries = list(self._entries.values())
        manifest["games"] = entries
        manifest["updated"] = _now()
        manifest["counts"] = counts(entries)
        text = json.dumps(manifest, indent=1, ensure_ascii=False) + "\n"
        atomic_write(self.folder / MANIFEST, text.encode())


def _check_run(folder: Path, manifest: Mapping[str, Any], run: RunName) -> None:
    """Refuse a folder labelling another run: its ``run``, or for a folder written before
    it was kept, the name of its one input (a run folder)."""
    held = manifest.get("run")
    if held is None:
        inputs = manifest.get("inputs") or []
        names = {Path(i).name for i in inputs if Path(i).name not in ("", ".", "..")}
        if len(inputs) != 1 or len(names) != 1:
            return  # no run named: nothing to compare
        (held,) = names
    if held not in (run.id, run.folder):
        raise LabelError(f"{folder}: holds the labels of run {held}, not of run {run.id}; "
                         f"label run {run.id} into a folder of its own")


def counts(entries: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    by_status: Counter = Counter()
    reasons: Counter = Counter()
    positions = 0
    for e in entries:
        by_status[e["status"]] += 1
        if e["status"] != "ok":
            reasons[f"{e['status']}:{e['reason']}"] += 1
        positions += e["positions"]
    return {"games": sum(by_status.values()), "status": dict(sorted(by_status.items())),
            "reasons": dict(sorted(reasons.items())), "positions": positions}


# -- reading ---------------------------------------------------------------------------


_SHARD_KEYS = {"file": str, "positions": int, "sha256": str}


def read_manifest(folder: str | os.PathLike[str]) -> dict[str, Any]:
    path = Path(folder) / MANIFEST
    manifest = read_json_manifest(path, FORMAT, LabelError, "a go19 label folder")
    shards, games = manifest.get("shards"), manifest.get("games")
    if not isinstance(shards, list) or not isinstance(games, list) or not all(
        npz_shards.entry_ok(s, _SHARD_KEYS) for s in shards
    ) or not all(isinstance(g, dict) and isinstance(g.get("ident"), str)
                 and isinstance(g.get("status"), str) for g in games):
        raise LabelError(f"{path}: shard list or game list missing or malformed")
    return manifest


def read_shard(folder: Path, entry: Mapping[str, Any],
               expected: Mapping[str, tuple[np.dtype, tuple[int, ...]]]) -> dict[str, np.ndarray]:
    return npz_shards.read_shard(folder / entry["file"], entry, entry["positions"], expected,
                                 LabelError, MANIFEST)


@dataclass(frozen=True, slots=True)
class GameLabels:
    """One game's labels; ``row(move_number)`` is the index of that position, or -1."""

    arrays: dict[str, np.ndarray]

    def rows(self, move_numbers: np.ndarray) -> np.ndarray:
        """Row per move number (-1 where the position has no label)."""
        numbers = self.arrays["move_number"]
        at = np.searchsorted(numbers, move_numbers)
        found = (at < len(numbers)) & (numbers[np.minimum(at, len(numbers) - 1)] == move_numbers)
        return np.where(found, at, -1)


class LabelSet:
    """Every label of a folder, in memory, looked up by game."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.manifest = read_manifest(self.folder)
        settings = self.manifest.get("settings") or {}
        self.ownership = bool(settings.get("ownership"))
        # review: each game's last row is the position after its last labelled move
        self.review = bool(settings.get("review"))
        expected = fields(self.ownership, self.review)
        parts = [read_shard(self.folder, e, expected) for e in self.manifest["shards"]]
        if parts:
            self.arrays = {name: np.concatenate([p[name] for p in parts]) for name in expected}
        else:
            self.arrays = {name: np.empty((0, *shape), dtype)
                           for name, (dtype, shape) in expected.items()}
        self._index = self._build_index()

    def _build_index(self) -> dict[str, np.ndarray]:
        sha1 = self.arrays["sha1"]
        index = self.arrays["game_index"]
        order = np.lexsort((self.arrays["move_number"], index, sha1))
        out: dict[str, np.ndarray] = {}
        if not len(order):
            return out
        keys = np.char.add(np.char.add(sha1[order], b":"),
                           index[order].astype("S11"))
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        for start, end in zip(starts, [*starts[1:], len(order)], strict=True):
            out[keys[start].decode("ascii")] = order[start:end]
        return out

    def __len__(self) -> int:
        return len(self.arrays["sha1"])

    def game(self, sha1: str | None, game_index: int | None) -> GameLabels | None:
        rows = self._index.get(game_ident(sha1, game_index, ""))
        if rows is None:
            return None
        return GameLabels({name: array[rows] for name, array in self.arrays.items()})
