"""Where a build's games come from: the SGF files under the inputs, and what a
provenance manifest says about their source and licence.

Files: an input folder is searched recursively for ``*.sgf`` (any case), sorted
as ``go19 replay`` sorts them; files inside a folder named ``void`` (go19
recordings keep void games there, docs/formats.md) are skipped and counted. A
file reached twice (overlapping inputs) is read once.

Provenance manifest: a TSV whose header names a ``file`` (or ``path``) column, a
``source`` (or ``source_repo``) column and optionally a ``licence`` (or
``license``) column; or JSON mapping each path to ``{"source": ..., "licence": ...}``.
Relative paths are relative to the manifest's folder. Empty cells are unknown.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

from orchestrator.dataset.shards import DatasetError
from orchestrator.recordings import VOID_DIR
from orchestrator.untrusted import BadJson, read_json


@dataclass(frozen=True, slots=True)
class Provenance:
    source: str | None = None
    licence: str | None = None


UNKNOWN = Provenance()


def find_sgf_files(inputs: list[Path]) -> tuple[list[Path], int]:
    """The SGF files to read (resolved paths, input order, each folder sorted) and
    the number of files skipped in ``void`` folders."""
    files: dict[Path, None] = {}
    void = 0
    for path in inputs:
        if path.is_dir():
            found = _folder_sgf_files(path)
        elif path.exists():
            found = [(path.resolve(), path.resolve().parent.name == VOID_DIR)]
        else:
            raise DatasetError(f"{path}: no such file or folder")
        for file, skip in found:
            if skip:
                void += 1
            else:
                files.setdefault(file, None)
    return list(files), void


def _folder_sgf_files(root: Path) -> list[tuple[Path, bool]]:
    """Resolved ``*.sgf`` files under ``root`` (any case) and whether each is inside
    a ``void`` folder, in ``sorted(root.rglob("*"))`` order with ``rglob``'s rules
    (symlinked folders listed, not entered; unreadable folders skipped).

    Why not rglob and ``Path.resolve``: they build several Path objects and lstat
    every component of every file, ~12 % of a build's time on the real corpus.
    Here each folder is resolved once (the folders walked are not symlinks, so a
    child's real path is its parent's plus its name) and only symlinked files go
    through ``realpath``."""
    found: list[tuple[tuple[str, ...], str, bool]] = []

    def walk(folder: str, real: str, parts: tuple[str, ...]) -> None:
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except PermissionError:
            return
        for entry in entries:
            name = entry.name
            if entry.is_symlink():
                # Followed as Path.is_file follows it (False on a dangling or looping
                # link); a symlinked folder is not walked.
                dot = name.rfind(".")
                if 0 < dot < len(name) - 1 and name[dot:].lower() == ".sgf" \
                        and Path(entry.path).is_file():
                    found.append(((*parts, name), os.path.realpath(entry.path),
                                  VOID_DIR in parts))
            elif entry.is_dir(follow_symlinks=False):
                walk(entry.path, os.path.join(real, name), (*parts, name))
            elif entry.is_file(follow_symlinks=False):
                dot = name.rfind(".")
                if 0 < dot < len(name) - 1 and name[dot:].lower() == ".sgf":
                    found.append(((*parts, name), os.path.join(real, name),
                                  VOID_DIR in parts))

    walk(str(root), os.path.realpath(root), ())
    # Path order within one folder is the order of the relative parts' tuples.
    found.sort(key=lambda item: item[0])
    return [(Path(real), in_void) for _, real, in_void in found]


def read_provenance(path: Path) -> dict[Path, Provenance]:
    """Resolved file path -> provenance, from a TSV or JSON manifest."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise DatasetError(f"{path}: not UTF-8 text") from None
    base = path.resolve().parent
    if path.suffix.lower() == ".json":
        rows = _json_rows(path, text)
    else:
        rows = _tsv_rows(path, text)
    return {(base / name).resolve(): prov for name, prov in rows}


def _cell(value: object) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _tsv_rows(path: Path, text: str) -> list[tuple[str, Provenance]]:
    reader = csv.reader(text.splitlines(), delimiter="\t")
    header = [name.strip().lower() for name in next(reader, [])]

    def column(*names: str, required: bool = True) -> int | None:
        for name in names:
            if name in header:
                return header.index(name)
        if required:
            raise DatasetError(f"{path}: header has no {' or '.join(map(repr, names))} column")
        return None

    file_col, source_col = column("file", "path"), column("source", "source_repo")
    assert file_col is not None and source_col is not None  # required: found or raised
    licence_col = column("licence", "license", required=False)
    rows = []
    for number, cells in enumerate(reader, 2):
        if not any(cell.strip() for cell in cells):
            continue
        name = cells[file_col].strip() if file_col < len(cells) else ""
        if not name:
            raise DatasetError(f"{path}: line {number} has no file name")
        source = _cell(cells[source_col]) if source_col < len(cells) else None
        licence = _cell(cells[licence_col]) if licence_col is not None \
            and licence_col < len(cells) else None
        rows.append((name, Provenance(source, licence)))
    return rows


def _json_rows(path: Path, text: str) -> list[tuple[str, Provenance]]:
    try:
        table = read_json(text, None)  # a file the user names, read whole already
    except BadJson as exc:
        raise DatasetError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(table, dict):
        raise DatasetError(f"{path}: expected an object mapping paths to "
                           '{"source": ..., "licence": ...}')
    rows = []
    for name, entry in table.items():
        if not isinstance(entry, dict):
            raise DatasetError(f"{path}: entry {name!r} is not an object")
        licence = entry.get("licence", entry.get("license"))
        rows.append((name, Provenance(_cell(entry.get("source")), _cell(licence))))
    return rows
