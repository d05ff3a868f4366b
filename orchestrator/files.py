"""File writes that matter: whole or not at all.

A write goes to a temporary file beside its target, is flushed to disk, and is
renamed over the target (then the folder is synced), so a kill or a full disk at
any moment leaves either the old file or the new one, never a part.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
