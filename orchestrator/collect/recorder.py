"""Recordings, the single source of truth: one SGF per finished game plus one
line in ``games.jsonl``, written so that a kill at any moment leaves only whole
games, and repaired on resume.

Order of writes for a game: the SGF (temp file, fsync, rename, fsync folder),
then its journal line (append, fsync; a line a full disk cut short is cut off
again). The SGF carries the journal record in its root (``GOXIXREC``), so a
journal line lost to a kill or a full disk is rebuilt from the SGF on resume,
and a line whose SGF is missing is dropped (that game is replayed). Nothing
else is ever rewritten in place.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator import __version__
from orchestrator.collect.referee import RefereedGame
from orchestrator.collect.sgf_record import game_sgf
from orchestrator.events import JournalRepaired
from orchestrator.files import append_line, atomic_write, read_sgf_file
from orchestrator.recordings import (
    CORRUPT_DIR,
    JOURNAL,
    RUN_FILE,
    VOID_DIR,
    JournalRecord,
    PlayerMeta,
    RecordError,
    read_journal,
    record_from_sgf,
    sgf_paths,
    utc_stamp,
)
from orchestrator.sgf import SgfError

__all__ = ["JOURNAL", "RUN_FILE", "Recorder", "RecordingError", "append_line",
           "prepare_run_dir", "resume_run", "utc_stamp", "write_run_file"]


class RecordingError(OSError):
    """The recordings folder cannot be written (disk full, permissions)."""


@dataclass
class ResumeReport:
    records: list[JournalRecord] = field(default_factory=list)
    rebuilt: list[str] = field(default_factory=list)  # SGFs whose journal line was rebuilt
    dropped: list[str] = field(default_factory=list)  # journal lines without an SGF
    quarantined: list[str] = field(default_factory=list)  # unreadable SGFs moved aside
    temp_removed: int = 0

    @property
    def repaired(self) -> bool:
        return bool(self.rebuilt or self.dropped or self.quarantined or self.temp_removed)

    def repairs(self) -> list[JournalRepaired]:
        out = [JournalRepaired("rebuilt", name) for name in self.rebuilt]
        out += [JournalRepaired("dropped", what) for what in self.dropped]
        out += [JournalRepaired("quarantined", name) for name in self.quarantined]
        if self.temp_removed:
            out.append(JournalRepaired("temp-removed", str(self.temp_removed)))
        return out


def prepare_run_dir(run_dir: Path) -> None:
    (run_dir / VOID_DIR).mkdir(parents=True, exist_ok=True)


def write_run_file(run_dir: Path, info: dict) -> None:
    atomic_write(run_dir / RUN_FILE, (json.dumps(info, indent=2) + "\n").encode())


class Recorder:
    """Writes the run's finished games; ``players_meta`` goes into every record."""

    def __init__(self, run_dir: Path, players_meta: Mapping[str, PlayerMeta]) -> None:
        self.run_dir = run_dir
        self.run_id = run_dir.name
        self.players_meta = dict(players_meta)
        self.journal_path = run_dir / JOURNAL

    def save(self, outcome: RefereedGame) -> JournalRecord:
        """Write one finished game and return its journal record. Raises RecordingError."""
        game = outcome.record(self.run_id, self.players_meta)
        record = game.journal
        folder = self.run_dir / VOID_DIR if record.void else self.run_dir
        sgf_bytes = game_sgf(game, __version__)
        try:
            atomic_write(folder / record.sgf, sgf_bytes)
            append_line(self.journal_path, record.to_json() + "\n")
        except OSError as exc:
            raise RecordingError(
                f"cannot write recordings in {self.run_dir}: {exc.strerror or exc}"
            ) from exc
        return record


def resume_run(run_dir: Path) -> ResumeReport:
    """Read back what a previous (possibly killed) run left in ``run_dir`` and repair it."""
    report = ResumeReport()
    for tmp in [*run_dir.glob(".*.tmp"), *(run_dir / VOID_DIR).glob(".*.tmp")]:
        tmp.unlink()
        report.temp_removed += 1
    on_disk = {path.name: path for path in sgf_paths(run_dir)}
    by_sgf: dict[str, JournalRecord] = {}
    journal_path = run_dir / JOURNAL
    journal = read_journal(journal_path)
    # A cut or unreadable line is rewritten: its SGF rebuilds it below.
    rewrite = not journal.whole or len(journal.records) < len(journal.lines)
    for record in journal.records:
        if record.sgf not in on_disk:
            report.dropped.append(f"game {record.game} ({record.sgf})")
            rewrite = True
        elif record.sgf not in by_sgf:
            by_sgf[record.sgf] = record
        else:
            rewrite = True  # a duplicate line: keep the first
    for name, path in on_disk.items():
        if name in by_sgf:
            continue
        rebuilt = _record_from_sgf(path)
        if rebuilt is None:
            corrupt = run_dir / CORRUPT_DIR
            corrupt.mkdir(exist_ok=True)
            os.replace(path, corrupt / name)
            report.quarantined.append(name)
        else:
            by_sgf[name] = rebuilt
            report.rebuilt.append(name)
        rewrite = True
    records = sorted(by_sgf.values(), key=lambda r: r.game)
    if rewrite:
        atomic_write(journal_path, "".join(r.to_json() + "\n" for r in records).encode())
    report.records = records
    return report


def _record_from_sgf(path: Path) -> JournalRecord | None:
    try:
        record = record_from_sgf(read_sgf_file(path)[0])
    except (SgfError, RecordError):
        return None
    return record if record.sgf == path.name else None
