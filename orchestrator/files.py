"""File I/O shared by every job.

Writes that matter are whole or not at all: a write goes to a temporary file beside
its target, is flushed to disk, and is renamed over the target (then the folder is
synced), so a kill or a full disk at any moment leaves either the old file or the new
one, never a part. Reads: JSON manifests and SGF files, with one-line errors.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from orchestrator.sgf import SgfGame, TooLarge, Unreadable, read_games
from orchestrator.sgf.grammar import Node, main_lines
from orchestrator.untrusted import BadJson, read_json
from orchestrator.words import plural

MiB = 1 << 20
# What one SGF file may cost to read: its bytes, its text, and nodes that keep only what
# is read (orchestrator/sgf/grammar.py), a few times its size at most. Real records are
# kilobytes; a collection of thousands of games a few MiB.
MAX_SGF_BYTES = 64 * MiB
MAX_MANIFEST_BYTES = 1024 * MiB  # labels.json holds some 300 bytes a game


@contextmanager
def atomic_writer(path: Path) -> Iterator[BinaryIO]:
    """A binary file to stream into; it becomes ``path`` only when the block ends
    without an exception (then flushed, fsynced, renamed, the folder fsynced)."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write(path: Path, data: bytes) -> None:
    with atomic_writer(path) as fh:
        fh.write(data)


def append_line(path: Path, line: str) -> None:
    """Append one line whole or not at all: a full disk can take part of a write, and
    that part is cut off again before the error goes up (unbuffered, so nothing is left
    to be flushed after the cut)."""
    data = memoryview(line.encode())
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        start = os.fstat(fd).st_size
        try:
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
        except OSError:
            os.ftruncate(fd, start)
            raise
    finally:
        os.close(fd)


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish_dir(partial: Path, out: Path) -> None:
    """Put the finished folder ``partial`` in place as ``out`` in one rename (a previous
    non-empty ``out`` moves aside first and is removed after; an empty one is replaced)."""
    old = None
    if out.exists() and any(out.iterdir()):
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, old)
    elif out.exists():
        out.rmdir()
    os.replace(partial, out)
    fsync_dir(out.parent)  # the rename is what publishes the folder: make it durable
    if old is not None:
        shutil.rmtree(old)


def partial_dir(out: Path) -> Path:
    """Where a folder is built before :func:`publish_dir` puts it at ``out``: beside it,
    hidden, named after this process (``.NAME.partial-PID``)."""
    return out.with_name(f".{out.name}.partial-{os.getpid()}")


def sweep_partials(out: Path) -> str | None:
    """Remove the partial folders of ``out`` left by processes that are gone (killed
    before they could clean up: a new run has another PID, so nothing else would); one
    line saying what went, or None. A folder whose PID is alive is another run's."""
    removed, total = [], 0
    for partial in sorted(out.parent.glob(f".{glob.escape(out.name)}.partial-*")):
        pid = partial.name.rsplit("-", 1)[1]
        if not pid.isdigit() or _alive(int(pid)) or not partial.is_dir():
            continue
        total += sum(f.stat().st_size for f in partial.rglob("*") if f.is_file())
        shutil.rmtree(partial, ignore_errors=True)
        removed.append(f"{partial.name} (PID {pid} is gone)")
    if not removed:
        return None
    return (f"removed {plural(len(removed), 'stale partial folder')}: {', '.join(removed)}; "
            f"{total / MiB:.1f} MiB")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def relative_path(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> str:
    """How a manifest spells a path: relative (POSIX) to ``folder``, the one that holds the
    manifest, both resolved first; so a folder moved with what it names still finds it, and
    nothing of the machine's layout is written (``..`` where the path lies outside)."""
    return Path(os.path.relpath(Path(path).resolve(), Path(folder).resolve())).as_posix()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def read_manifest(path: Path, fmt: str, error: type[Exception], what: str) -> dict:
    """A JSON manifest whose ``format`` is ``fmt``; anything else raises ``error`` with
    one line naming the file (``what`` says what the folder should have been)."""
    try:
        size = path.stat().st_size
        if size > MAX_MANIFEST_BYTES:  # checked before a byte is read
            raise BadJson(f"{size} bytes, over the {MAX_MANIFEST_BYTES}-byte bound")
        manifest = read_json(path.read_bytes(), None)
    except FileNotFoundError:
        raise error(f"{path}: not found (is {path.parent} {what}?)") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    except BadJson as exc:
        raise error(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != fmt:
        raise error(f"{path}: not a {fmt} manifest")
    return manifest


def read_sgf_file(path: str | os.PathLike[str], *, require_size: int | None = None,
                  lines: Callable[[str], list[list[Node]]] = main_lines,
                  max_bytes: int | None = MAX_SGF_BYTES) -> list[SgfGame]:
    """Every game of an SGF file; raises an :class:`~orchestrator.sgf.SgfError` naming
    the file (:class:`~orchestrator.sgf.Unreadable` when it cannot be read at all,
    :class:`~orchestrator.sgf.TooLarge`, unread, when it is over ``max_bytes``).
    ``lines`` is :func:`~orchestrator.sgf.read_games`' step 2."""
    try:
        with open(path, "rb", buffering=0) as fh:  # one read: no buffer to set up
            size = os.fstat(fh.fileno()).st_size
            if max_bytes is not None and size > max_bytes:
                raise TooLarge(f"{size / MiB:.1f} MiB, over the limit of {max_bytes / MiB:g} "
                               "MiB a file may have (--max-file-mib)", os.fspath(path))
            data = fh.readall()
    except OSError as exc:
        raise Unreadable.from_os_error(exc, os.fspath(path)) from None
    return read_games(data, require_size=require_size, path=os.fspath(path),
                      lines=lines)
