"""Reading run folders: ``run.json``, the ``games.jsonl`` lines and the SGFs they name.

Nothing is computed here. Every problem becomes one warning line naming the file
(and line), and the game or file is left out; nothing raises for bad input.
The layout is the contract in docs/formats.md.

Each game's SGF is read once, by :func:`read_game`: what the report counts (each colour's
own, opening-book and fallback moves, answer times), the journal record a game without a
journal line is rebuilt from, and, replayed when the move-quality section asks
(:meth:`GameSgf.positions`), its positions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.color import BLACK, WHITE
from orchestrator.files import read_sgf_file
from orchestrator.positions import samples
from orchestrator.positions.samples import GameRead
from orchestrator.recordings import (
    JOURNAL,
    RECORD_PROP,
    RUN_FILE,
    VOID_DIR,
    JournalRecord,
    RecordError,
    is_run_dir,
    move_origin,
    read_journal,
    read_run_file,
    record_from_sgf,
    sgf_paths,
)
from orchestrator.sgf import SgfError, SgfGame, SgfMove

__all__ = ["ColorMoves", "GameData", "GameSgf", "RunData", "Warn", "is_run_dir", "load_run",
           "load_runs", "read_game"]

Warn = Callable[[str], None]


@dataclass(frozen=True)
class ColorMoves:
    """What one colour played in a game, from its SGF: moves its own policy chose,
    opening-book moves and fallback moves (``GOXIXSRC`` marks)."""

    own: int = 0
    opening: int = 0
    fallback: int = 0
    latency_ms: tuple[float, ...] = ()  # per-move answer times (GOXIXMS), where recorded


@dataclass(frozen=True)
class GameSgf:
    """A game's SGF as read once (the file's first game)."""

    path: Path
    game: SgfGame

    def positions(self) -> GameRead:
        """The game replayed as the dataset build and ``go19 label`` replay it."""
        return samples.read_game(self.path, self.game)


def read_game(path: Path) -> GameSgf:
    """The one read of a game's SGF in a report; raises :class:`SgfError` (one line)."""
    return GameSgf(path, read_sgf_file(path)[0])


@dataclass(frozen=True)
class GameData:
    line: JournalRecord
    where: str  # "path/games.jsonl:17", for messages
    moves: dict[str, ColorMoves] | None  # by "black"/"white"; None when the SGF is unusable
    sgf: GameSgf | None = None  # None when there is no usable SGF


@dataclass
class RunData:
    path: Path
    run_id: str
    info: dict  # run.json, {} when absent or unreadable
    games: list[GameData] = field(default_factory=list)

    @property
    def matchup(self) -> dict:
        value = self.info.get("matchup")
        return value if isinstance(value, dict) else {}


_ORIGIN_SLOT = {"own": 0, "opening": 1, "fallback": 2}


def _color_moves(moves: Iterable[SgfMove]) -> dict[str, ColorMoves]:
    counts = {BLACK: [0, 0, 0], WHITE: [0, 0, 0]}
    latency: dict[int, list[float]] = {BLACK: [], WHITE: []}
    for move in moves:
        slot = _ORIGIN_SLOT[move_origin(move.source)]
        counts[move.color][slot] += 1
        if move.ms is not None:
            latency[move.color].append(move.ms)
    return {
        name: ColorMoves(own=counts[color][0], opening=counts[color][1],
                         fallback=counts[color][2], latency_ms=tuple(latency[color]))
        for name, color in (("black", BLACK), ("white", WHITE))
    }


def _find_sgf(run_dir: Path, line: JournalRecord) -> Path | None:
    first, second = (run_dir / VOID_DIR, run_dir) if line.void else (run_dir, run_dir / VOID_DIR)
    return next((p / line.sgf for p in (first, second) if (p / line.sgf).is_file()), None)


def _check_moves(path: Path, moves: tuple[SgfMove, ...], line: JournalRecord, where: str,
                 warn: Warn) -> dict[str, ColorMoves]:
    if len(moves) != line.moves:
        warn(f"{path}: {len(moves)} moves, but {where} says {line.moves}; the SGF counts")
    return _color_moves(moves)


def _read_sgf(run_dir: Path, line: JournalRecord, where: str, warn: Warn) -> GameData:
    path = _find_sgf(run_dir, line)
    if path is None:
        warn(f"{where}: game {line.game}: SGF {line.sgf} is missing; "
             "moves asked are estimated from the journal")
        return GameData(line, where, None)
    try:
        sgf = read_game(path)
    except SgfError as exc:
        warn(f"{exc}; moves asked for game {line.game} are estimated from the journal")
        return GameData(line, where, None)
    return GameData(line, where, _check_moves(path, sgf.game.moves, line, where, warn), sgf)


def _rebuild(path: Path, warn: Warn) -> GameData | None:
    """A game whose SGF is in place but whose journal line is not (a run killed between
    the two writes): the line is the copy in the SGF's root."""
    try:
        sgf = read_game(path)
    except SgfError as exc:
        warn(f"{exc}; no {JOURNAL} line either, game left out")
        return None
    game = sgf.game
    try:
        line = record_from_sgf(game)
    except RecordError as exc:
        if RECORD_PROP not in game.root_props:
            warn(f"{path}: no {JOURNAL} line and no {RECORD_PROP} record; game left out")
        else:
            warn(f"{path}: {exc}; game left out")
        return None
    where = f"{path} ({RECORD_PROP})"
    warn(f"{path}: no {JOURNAL} line; using the record in the SGF")
    return GameData(line, where, _check_moves(path, game.moves, line, where, warn), sgf)


def _read_run_file(run_dir: Path, warn: Warn) -> dict:
    path = run_dir / RUN_FILE
    if not path.is_file():
        warn(f"{run_dir}: no {RUN_FILE}; matchup settings (SPRT, pairing) unknown")
        return {}
    try:
        return read_run_file(run_dir)
    except (OSError, UnicodeDecodeError) as exc:
        warn(f"{path}: unreadable ({exc}); matchup settings (SPRT, pairing) unknown")
    except ValueError as exc:
        if str(exc) == "not a JSON object":
            warn(f"{path}: not a JSON object; ignored")
        else:
            warn(f"{path}: unreadable ({exc}); matchup settings (SPRT, pairing) unknown")
    return {}


def load_run(run_dir: Path, warn: Warn) -> RunData:
    """One run folder (the caller checked :func:`is_run_dir`)."""
    info = _read_run_file(run_dir, warn)
    run = RunData(path=run_dir, run_id=str(info.get("run_id") or run_dir.name), info=info)
    journal_path = run_dir / JOURNAL
    if not journal_path.is_file():
        warn(f"{run_dir}: no {JOURNAL} yet; no games")
        return run
    try:
        journal = read_journal(journal_path)
    except OSError as exc:
        warn(f"{journal_path}: cannot read: {exc.strerror or exc}")
        return run
    seen: dict[int, str] = {}
    listed: set[str] = set()
    for entry in journal.lines:
        where = f"{journal_path}:{entry.number}"
        line = entry.record
        if line is None:
            warn(f"{where}: {entry.problem}; line skipped")
            continue
        if line.game in seen:
            warn(f"{where}: game {line.game} already on {seen[line.game]}; line skipped")
            continue
        seen[line.game] = where
        listed.add(line.sgf)
        run.games.append(_read_sgf(run_dir, line, where, warn))
    for path in sgf_paths(run_dir):
        if path.name in listed:
            continue
        game = _rebuild(path, warn)
        if game is not None and game.line.game in seen:
            warn(f"{path}: game {game.line.game} already on {seen[game.line.game]}; left out")
        elif game is not None:
            seen[game.line.game] = game.where
            run.games.append(game)
    return run


def load_runs(paths: Iterable[Path], warn: Warn) -> list[RunData]:
    """Every run folder among ``paths``; anything else is skipped with one note."""
    runs = []
    for path in paths:
        if is_run_dir(path):
            runs.append(load_run(path, warn))
        elif path.exists():
            warn(f"skipping {path}: not a go19 run folder (no {RUN_FILE} or {JOURNAL})")
        else:
            warn(f"skipping {path}: no such folder")
    return runs
