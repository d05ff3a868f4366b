"""``.npz`` shards listed in a JSON manifest: the file layer under dataset folders
(``manifest.json``) and label folders (``labels.json``).

A shard is one ``.npz`` of per-row arrays, written atomically (temp file, fsync,
rename, folder fsync, through :func:`orchestrator.files.atomic_writer`) and listed
in its manifest with its file name, row count, size and sha256. The zip container is
written here rather than by ``zipfile``, which takes only zlib and copies each array:
the arrays stream, in place, through ISA-L's deflate where ``isal`` is installed
(``go19[fast]``, ~6x zlib's speed), zlib's otherwise; ``np.load`` reads either.

Reading checks the entry's shape, the bytes against the sha256, and every expected
field's dtype and shape before anything is used. What the rows mean is the caller's
business.
"""

from __future__ import annotations

import hashlib
import io
import struct
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from orchestrator.files import atomic_writer

isal_zlib: ModuleType | None
try:  # go19[fast]: ISA-L's deflate
    import isal.isal_zlib

    isal_zlib = isal.isal_zlib
except ImportError:
    isal_zlib = None

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


@dataclass(frozen=True, slots=True)
class Deflate:
    """A deflate implementation (raw streams, zlib's API) and the level shards use with it."""

    name: str
    level: int
    compressobj: Callable[..., Any]
    crc32: Callable[..., int]


# Levels measured on the real corpus's shards (131,667 samples, 47.5 MB of boards; CPU s
# to deflate all the arrays, min of 7, and bytes per sample): zlib 1 0.100 s at 18.9
# bytes, 3 0.121 s at 13.9, 6 (savez_compressed) 0.277 s at 6.8; isal (ISA-L's igzip) 0
# 0.016 s at 18.5, 1 0.017 s at 15.1, 2 the same time at 15.0, 3 0.097 s at 14.4;
# crc32 zlib 0.012 s, isal 0.002 s. Whole write_shard: zipfile at zlib 3 (before)
# 0.140 s, here at zlib 3 0.136 s, at isal 1 0.023 s, stored 0.06 s (374 bytes).
# Consecutive boards of a game differ by a stone or two: even fast levels find that.
# Once ISA-L's vector code has run in a thread, zlib's deflate and OpenSSL's sha256 run
# there ~1.3-1.7x slower on AVX-512 machines (upper vector state left dirty): with isal
# installed zlib no longer deflates shards, and a build's sha256 sees only deflated bytes.
ZLIB = Deflate("zlib", 3, zlib.compressobj, zlib.crc32)
ISAL = Deflate("isal", 1, isal_zlib.compressobj, isal_zlib.crc32) if isal_zlib else None
DEFLATE = ISAL or ZLIB  # what compressed shards use: isal where installed (go19[fast])

_CHUNK = 1 << 18  # bytes of an array deflated per call: memory stays small, calls few
_DOS_DATE = (0 << 9) | (1 << 5) | 1  # 1980-01-01, 00:00: the same arrays, the same bytes
_VERSION = 45  # 4.5, what reading zip64 needs
_DATA_DESCRIPTOR = 0x08  # flag bit 3: CRC and sizes follow the data
_STORED, _DEFLATED = 0, 8
_IN_ZIP64 = 0xFFFFFFFF  # a 4-byte field's value: "see the zip64 extra field"


def write_shard(path: Path, arrays: Mapping[str, np.ndarray],
                deflate: Deflate | None = None) -> Written:
    """``arrays`` as one ``.npz`` at ``path`` (member ``NAME.npy`` per array, as
    ``np.savez`` names them), whole or not at all; deflated with ``deflate``
    (:data:`DEFLATE` is the fast one installed), stored when None."""
    if not arrays:  # np.load takes a zip for a pickle unless it starts with a member
        raise ValueError(f"{path}: a shard needs at least one array")
    with atomic_writer(path) as fh:
        hashing = _Hashing(fh)
        _write_zip(hashing, arrays, deflate)
    return Written(hashing.size, hashing.digest.hexdigest())


def _write_zip(out: _Hashing, arrays: Mapping[str, np.ndarray], deflate: Deflate | None
               ) -> None:
    """The zip container, written front to back (the output is a stream: no seeking
    back), zip64 throughout so that one layout serves every size (PKWARE's APPNOTE 4.3,
    4.5.3; what ``zipfile`` writes to a stream with ``force_zip64``):

    per member, a local file header (CRC and sizes unknown yet: flag bit 3, sizes
    0xFFFFFFFF pointing to a zip64 extra field of zeros), the member's bytes, then a
    zip64 data descriptor with the CRC and the 8-byte sizes; after the last member the
    central directory (one entry per member: the real CRC, sizes and offset in its
    zip64 extra field), the zip64 end record, its locator, and the classic end record.
    """
    method = _STORED if deflate is None else _DEFLATED
    crc32 = (deflate or DEFLATE).crc32
    central = []
    for key, value in arrays.items():
        name = f"{key}.npy".encode()
        offset = out.size
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, _VERSION, _DATA_DESCRIPTOR, method,
                              0, _DOS_DATE, 0, _IN_ZIP64, _IN_ZIP64, len(name), 20)
                  + name + struct.pack("<HHQQ", 1, 16, 0, 0))
        start = out.size
        crc, size = _write_npy(out, value, deflate, crc32)
        packed = out.size - start
        out.write(struct.pack("<IIQQ", 0x08074B50, crc, packed, size))
        central.append(
            struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 3 << 8 | _VERSION, _VERSION,
                        _DATA_DESCRIPTOR, method, 0, _DOS_DATE, crc, _IN_ZIP64, _IN_ZIP64,
                        len(name), 28, 0, 0, 0, 0o600 << 16, _IN_ZIP64)  # unix, rw-------
            + name + struct.pack("<HHQQQ", 1, 24, size, packed, offset))
    directory = out.size
    for entry in central:
        out.write(entry)
    count, length, end64 = len(central), out.size - directory, out.size
    out.write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 3 << 8 | _VERSION, _VERSION, 0, 0,
                          count, count, length, directory))
    out.write(struct.pack("<IIQI", 0x07064B50, 0, end64, 1))
    # The classic record's fields saturate; readers then take the zip64 record's.
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(count, 0xFFFF),
                          min(count, 0xFFFF), min(length, _IN_ZIP64), min(directory, _IN_ZIP64), 0))


def _write_npy(out: _Hashing, value: np.ndarray, deflate: Deflate | None,
               crc32: Callable[..., int]) -> tuple[int, int]:
    """One array as ``.npy`` bytes (numpy's header, then the C-order data read in
    place, chunk by chunk), deflated or not; the CRC-32 and size of the ``.npy``."""
    array = np.asarray(value, order="C")
    if array.dtype.hasobject:
        raise ValueError("object arrays cannot be written to a shard (they need pickle)")
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, np.lib.format.header_data_from_array_1_0(array))
    data = array.reshape(-1).view(np.uint8)  # a view: no copy of the array
    packer = deflate.compressobj(deflate.level, _DEFLATED, -15) if deflate else None
    crc, size = 0, 0
    for piece in (header.getbuffer(), *(data[i:i + _CHUNK] for i in range(0, len(data), _CHUNK))):
        crc = crc32(piece, crc)
        size += len(piece)
        out.write(packer.compress(piece) if packer else piece)
    if packer:
        out.write(packer.flush())
    return crc, size


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
