"""Reading run folders: ``run.json``, the ``games.jsonl`` lines and the SGFs they name.

Nothing is computed here. Every problem becomes one warning line naming the file
(and line), and the game or file is left out; nothing raises for bad input.
The layout is the contract in docs/formats.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.rules.board import BLACK, WHITE
from orchestrator.sgf import SgfError, SgfMove, read_games

RUN_FILE = "run.json"
JOURNAL = "games.jsonl"
VOID_DIR = "void"
RECORD_PROP = "GOXIXREC"  # the SGF root's copy of its journal line (docs/formats.md)

Warn = Callable[[str], None]


class _Line(BaseModel):
    # Unknown keys are allowed: newer writers may add fields the report does not use.
    model_config = ConfigDict(extra="ignore", frozen=True)


class OpeningInfo(_Line):
    id: str = ""
    plies: int = Field(0, ge=0)
    pair: int | None = None


class LatencySummary(_Line):
    n: int = Field(0, ge=0)
    p50: float | None = None
    p95: float | None = None
    max: float | None = None


class JournalLine(_Line):
    """One ``games.jsonl`` line, checked once here so the statistics get plain values."""

    run: str
    game: int
    sgf: str
    void: bool
    black: str
    white: str
    players: dict[str, dict] = Field(default_factory=dict)
    size: int
    komi: float
    result: str = ""
    winner: Literal["black", "white", "draw"] | None
    reason: str
    score: float | None = None
    moves: int = Field(ge=0)
    opening: OpeningInfo | None = None
    fallbacks: dict[str, dict[str, int]] = Field(default_factory=dict)
    illegal: dict[str, int] = Field(default_factory=dict)
    latency_ms: dict[str, LatencySummary] = Field(default_factory=dict)
    started: str = ""
    finished: str = ""


@dataclass(frozen=True)
class ColourMoves:
    """What one colour played in a game, from its SGF: moves its own policy chose,
    opening-book moves and fallback moves (``GO19SRC`` marks)."""

    own: int = 0
    opening: int = 0
    fallback: int = 0
    latency_ms: tuple[float, ...] = ()  # per-move answer times (GOXIXMS), where recorded


@dataclass(frozen=True)
class GameData:
    line: JournalLine
    where: str  # "path/games.jsonl:17", for messages
    moves: dict[str, ColourMoves] | None  # by "black"/"white"; None when the SGF is unusable


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


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and ((path / RUN_FILE).is_file() or (path / JOURNAL).is_file())


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(part) for part in err["loc"]) or "(line)"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {err['msg']}{more}"


def _colour_moves(moves: Iterable[SgfMove]) -> dict[str, ColourMoves]:
    counts = {BLACK: [0, 0, 0], WHITE: [0, 0, 0]}
    latency: dict[int, list[float]] = {BLACK: [], WHITE: []}
    for move in moves:
        slot = 0 if move.source is None else 1 if move.source == "opening" else 2
        counts[move.color][slot] += 1
        if move.ms is not None:
            latency[move.color].append(move.ms)
    return {
        "black": ColourMoves(*counts[BLACK], tuple(latency[BLACK])),
        "white": ColourMoves(*counts[WHITE], tuple(latency[WHITE])),
    }


def _find_sgf(run_dir: Path, line: JournalLine) -> Path | None:
    first, second = (run_dir / VOID_DIR, run_dir) if line.void else (run_dir, run_dir / VOID_DIR)
    return next((p / line.sgf for p in (first, second) if (p / line.sgf).is_file()), None)


def _check_moves(path: Path, moves: tuple[SgfMove, ...], line: JournalLine, where: str,
                 warn: Warn) -> dict[str, ColourMoves]:
    if len(moves) != line.moves:
        warn(f"{path}: {len(moves)} moves, but {where} says {line.moves}; the SGF counts")
    return _colour_moves(moves)


def _read_sgf(run_dir: Path, line: JournalLine, where: str, warn: Warn) -> dict | None:
    path = _find_sgf(run_dir, line)
    if path is None:
        warn(f"{where}: game {line.game}: SGF {line.sgf} is missing; "
             "moves asked are estimated from the journal")
        return None
    try:
        games = read_games(path)
    except SgfError as exc:
        warn(f"{exc}; moves asked for game {line.game} are estimated from the journal")
        return None
    return _check_moves(path, games[0].moves, line, where, warn)


def _rebuild(path: Path, warn: Warn) -> GameData | None:
    """A game whose SGF is in place but whose journal line is not (a run killed between
    the two writes): the line is the copy in the SGF's root."""
    try:
        game = read_games(path)[0]
        line = JournalLine.model_validate_json(game.root_props[RECORD_PROP])
    except SgfError as exc:
        warn(f"{exc}; no {JOURNAL} line either, game left out")
        return None
    except KeyError:
        warn(f"{path}: no {JOURNAL} line and no {RECORD_PROP} record; game left out")
        return None
    except ValidationError as exc:
        warn(f"{path}: {RECORD_PROP}: {_first_error(exc)}; game left out")
        return None
    where = f"{path} ({RECORD_PROP})"
    warn(f"{path}: no {JOURNAL} line; using the record in the SGF")
    return GameData(line, where, _check_moves(path, game.moves, line, where, warn))


def _read_run_file(run_dir: Path, warn: Warn) -> dict:
    path = run_dir / RUN_FILE
    if not path.is_file():
        warn(f"{run_dir}: no {RUN_FILE}; matchup settings (SPRT, pairing) unknown")
        return {}
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        warn(f"{path}: unreadable ({exc}); matchup settings (SPRT, pairing) unknown")
        return {}
    if not isinstance(info, dict):
        warn(f"{path}: not a JSON object; ignored")
        return {}
    return info


def load_run(run_dir: Path, warn: Warn) -> RunData:
    """One run folder (the caller checked :func:`is_run_dir`)."""
    info = _read_run_file(run_dir, warn)
    run = RunData(path=run_dir, run_id=str(info.get("run_id") or run_dir.name), info=info)
    journal = run_dir / JOURNAL
    if not journal.is_file():
        warn(f"{run_dir}: no {JOURNAL} yet; no games")
        return run
    try:
        raw = journal.read_bytes()
    except OSError as exc:
        warn(f"{journal}: cannot read: {exc.strerror or exc}")
        return run
    seen: dict[int, str] = {}
    listed: set[str] = set()
    for number, text in enumerate(raw.split(b"\n"), 1):
        if not text.strip():
            continue
        where = f"{journal}:{number}"
        try:
            line = JournalLine.model_validate_json(text)
        except ValidationError as exc:
            problem = (
                "not valid JSON" if exc.errors()[0]["type"] == "json_invalid"
                else _first_error(exc)
            )
            warn(f"{where}: {problem}; line skipped")
            continue
        if line.game in seen:
            warn(f"{where}: game {line.game} already on {seen[line.game]}; line skipped")
            continue
        seen[line.game] = where
        listed.add(line.sgf)
        run.games.append(GameData(line, where, _read_sgf(run_dir, line, where, warn)))
    for folder in (run_dir, run_dir / VOID_DIR):
        for path in sorted(folder.glob("*.sgf")):
            if path.name in listed:
                continue
            game = _rebuild(path, warn)
            if game is not None and game.line.game in seen:
                warn(f"{path}: game {game.line.game} already on {seen[game.line.game]}; "
                     "left out")
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
