"""``.npz`` shards listed in a JSON manifest: the file layer under dataset folders
(``manifest.json``) and label folders (``labels.json``).

A shard is one ``.npz`` of per-row arrays, written atomically (temp file, fsync,
rename, folder fsync, through :func:`orchestrator.files.atomic_writer`) and listed
in its manifest with its file name, row count, size and sha256. Reading checks the
entry's shape, the bytes against the sha256, and every expected field's dtype and
shape before anything is used. What the rows mean is the caller's business.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from orchestrator.files import atomic_writer

Fields = Mapping[str, tuple[np.dtype, tuple[int, ...]]]  # name -> (dtype, shape of one row)


@dataclass(frozen=True, slots=True)
class Written:
    """What a manifest lists about a shard just written."""

    bytes: int
    sha256: str


class _Hashing(io.RawIOBase):
    """Passes writes to ``out`` and hashes them, so a shard is not read back to be hashed."""

    def __init__(self, out) -> None:
        self.out = out
        self.digest = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.out.write(data)


def write_shard(path: Path, arrays: Mapping[str, np.ndarray], level: int | None = None
                ) -> Written:
    """``arrays`` as one ``.npz`` at ``path``, whole or not at all. ``level`` is the
    deflate level (None stores, as ``np.savez`` does)."""
    method = zipfile.ZIP_STORED if level is None else zipfile.ZIP_DEFLATED
    with atomic_writer(path) as fh:
        hashing = _Hashing(fh)
        # zipfile seeks back to patch headers when it may; through a stream it writes
        # data descriptors instead, which every zip reader (and np.load) accepts.
        with zipfile.ZipFile(hashing, "w", method, compresslevel=level) as npz:
            for name, rows in arrays.items():
                with npz.open(f"{name}.npy", "w", force_zip64=True) as out:
                    np.lib.format.write_array(out, np.asarray(rows), allow_pickle=False)
    return Written(hashing.size, hashing.digest.hexdigest())


def entry_ok(entry: object, keys: Mapping[str, type]) -> bool:
    """A manifest entry with these typed keys whose ``file`` names a plain file in the
    folder (no path, not hidden: a manifest cannot point outside its folder)."""
    return isinstance(entry, dict) and all(
        isinstance(entry.get(name), kind) for name, kind in keys.items()
    ) and isinstance(entry.get("file"), str) and "/" not in entry["file"] \
        and not entry["file"].startswith(".")


def verified_bytes(path: Path, sha256: str, error: type[Exception], manifest: str,
                   size: int | None = None) -> bytes:
    """The file's bytes, after checking them against its manifest entry."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    if (size is not None and len(data) != size) or hashlib.sha256(data).hexdigest() != sha256:
        raise error(f"{path}: sha256 does not match {manifest} (corrupt or changed)")
    return data


def read_shard(path: Path, entry: Mapping, rows: int, fields: Fields,
               error: type[Exception], manifest: str) -> dict[str, np.ndarray]:
    """One shard's arrays (every one of ``fields``, ``rows`` long), after checking the
    bytes against ``entry``'s sha256 (and size, when the entry has one). Every problem
    raises ``error`` with one line naming the file; ``manifest`` says what it was
    checked against ("the manifest", "labels.json")."""
    data = verified_bytes(path, entry["sha256"], error, manifest, entry.get("bytes"))
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in fields if name in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise error(f"{path}: not a readable .npz: {exc}") from None
    for name, (dtype, shape) in fields.items():
        array = arrays.get(name)
        if array is None or array.dtype != dtype or array.shape != (rows, *shape):
            raise error(f"{path}: field {name!r} missing or not {dtype} {(rows, *shape)}")
    return arrays
