"""The run folder, once: what ``collect`` writes and ``report``, ``dataset`` and
``label`` read (docs/formats.md is the contract this module implements).

A run folder holds ``run.json`` (the matchup and target), one SGF per finished game
(``baduk-<UTC stamp>-<game>.sgf``; void games under ``void/``) and ``games.jsonl``,
one :class:`JournalRecord` per line. Each SGF carries its own journal record in the
root property :data:`RECORD_PROP`, so a lost line can be rebuilt from the SGF.

The same model writes and reads a record; a whole game is its record and its moves
(:class:`GameRecord`, the moves typed by :mod:`orchestrator.move_record`, which also owns
the words an SGF uses for who chose a move). The words for who won
(:data:`WINNER_NAMES`) are here, and so is the one way a record becomes a rated game
(:func:`rated_game`) and pairs of players become counts (:func:`head_to_head`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

from orchestrator.color import BLACK, WHITE
from orchestrator.move_record import MoveRecord
from orchestrator.move_record import move_origin as move_origin  # report/load reads marks
from orchestrator.ratings.elo import Pentanomial, Wdl
from orchestrator.ratings.outcomes import (
    GameOutcome,
    Winner,
    pentanomial_from_games,
    split_by_color,
)
from orchestrator.render import RenderSettings
from orchestrator.sgf import SgfGame
from orchestrator.untrusted import read_json

RUN_FILE = "run.json"
MAX_RUN_FILE_BYTES = 16 << 20  # a matchup and a few counts
JOURNAL = "games.jsonl"
VOID_DIR = "void"
CORRUPT_DIR = "corrupt"  # unreadable SGFs that resume moved aside
SGF_GLOB = "baduk-*.sgf"
RECORD_PROP = "GOXIXREC"  # the SGF root's copy of its journal record

# Colour of the winner (0: a draw, None: no result) to the journal's ``winner``; the
# names themselves are the ratings' :data:`~orchestrator.ratings.outcomes.Winner`.
WINNER_NAMES: dict[int | None, Winner | None] = dict(
    zip((BLACK, WHITE, 0, None), (*get_args(Winner), None), strict=True)
)


def utc_stamp(ts: float) -> str:
    """The UTC stamp of run ids and SGF names: ``20250101-120000``."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y%m%d-%H%M%S")


def iso(ts: float) -> str:
    """A record's ``started``/``finished``: UTC to the second, ``2025-01-01T12:00:00Z``."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def sgf_name(stamp: str, game: int, copy: int = 1) -> str:
    """The SGF file name of game number ``game`` finished at UTC ``stamp``; ``copy`` 2, 3 …
    names another game of the same stamp and number (``…-00001-2.sgf``, the play page's
    saves from servers started in the same second)."""
    suffix = "" if copy == 1 else f"-{copy}"
    return f"baduk-{stamp}-{game:05d}{suffix}.sgf"


# -- the journal record ----------------------------------------------------------


class _Part(BaseModel):
    # Unknown keys are kept: a newer writer's fields survive a resume that rewrites
    # the journal, and readers that do not know them ignore them.
    model_config = ConfigDict(extra="allow", frozen=True)


class OpeningInfo(_Part):
    id: str = ""
    plies: int = Field(0, ge=0)
    pair: int | None = None


class LatencySummary(_Part):
    n: int = Field(0, ge=0)
    p50: float | None = None
    p95: float | None = None
    max: float | None = None


class PlayerMeta(_Part):
    """Who played one side, as its game's record keeps it (``players`` of a journal record,
    ``GOXIXB``/``GOXIXW`` in the SGF). Each kind of player writes the fields it has and
    only those: a record reads back as it was written.

    What a model saw travels here too, so that a training export rebuilds it from the game
    alone: ``render``, how its pictures were drawn (GO19 players); ``prompt_sha256``, the
    sha256 of the prompt template it was asked with, and ``answer``, how its answers spell
    a move (``gtp``, ``sgf``, ``rowcol``: :data:`orchestrator.coords.MOVE_TEXTS`), for
    players that prompt a model themselves."""

    kind: str = ""  # go19 | gtp | heuristic | random | human, …
    adapter: str | None = None
    model: str | None = None
    endpoint: str | None = None  # the replicas, "host:port,host:port"
    embedded: dict | None = None  # a GO19 server started inside collect: its settings
    replicas: list[str] | None = None
    command: str | None = None  # a GTP engine's command line
    level: int | None = None
    seed: int | None = None
    render: RenderSettings | None = None
    prompt_sha256: str | None = None
    answer: str | None = None
    # An OpenAI-compatible player's sampling and what its records keep of the replies.
    temperature: float | None = None
    max_tokens: int | None = None
    constrain: str | None = None
    keep_reply: str | None = None  # none | fallbacks | all

    @model_serializer(mode="wrap")
    def _as_given(self, handler: SerializerFunctionWrapHandler) -> dict:
        """Only the fields a writer gave (and unknown ones), in their order."""
        given = self.model_fields_set | set(self.model_extra or ())
        return {key: value for key, value in handler(self).items() if key in given}

    def as_dict(self) -> dict:
        return self.model_dump(mode="json")


class TokenCounts(_Part):
    """A player's tokens in one game, from its replies' ``usage``: ``moves`` the replies
    that gave both counts, the sums over them; null sums where none did (older records
    wrote 0 there, with ``moves`` 0)."""

    moves: int = Field(0, ge=0)
    prompt: int | None = Field(None, ge=0)
    completion: int | None = Field(None, ge=0)


class ReplyNote(_Part):
    """What a model said on a move it did not get to play (a fallback): its reply and
    reasoning texts, bounded (:data:`~orchestrator.move_record.KEPT_CHARS`)."""

    move: int = Field(ge=1)
    reason: str
    reply: str | None = None
    reasoning: str | None = None


# Fields a record writes only when they say something: a run without model players
# writes its lines as before.
class Resignation(_Part):
    """Where KataGo's win rate resigned a side (or, in a holdout game, would have): the
    side, the move after which its ``resign_turns``-th low turn came, its win rate there."""

    color: Literal["B", "W"]
    move: int = Field(ge=0)
    winrate: float
    threshold: float
    turns: int = Field(ge=1)


class Adjudication(_Part):
    """What adjudication did in one game (docs/adjudication.md): resigned a side, or held
    the game out and noted where it would have resigned and whether that side lost; at the
    end of play, the plain area count beside the count without KataGo's dead stones (the
    result is the adjudicated one; ``flipped`` when the winners differ); ``off`` says why
    adjudication stopped partway (KataGo lagging or gone), once."""

    resign: Resignation | None = None
    holdout: bool = False
    would_resign: Resignation | None = None
    false_resign: bool | None = None
    area_result: str | None = None
    adjudicated_result: str | None = None
    dead_stones: int | None = None
    flipped: bool = False
    off: str | None = None
    # A play-page game scored by its players: who proposed the dead stones ("katago" or
    # "estimate") and whether a player changed the proposal before confirming.
    proposed_by: str | None = None
    players_changed: bool = False


_OPTIONAL = ("tokens", "replies", "adjudication")


class JournalRecord(_Part):
    """One finished game, as a ``games.jsonl`` line and as the SGF's :data:`RECORD_PROP`.

    Field order is the order written. ``slot`` and ``handicap`` may be absent in
    recordings made before they were written."""

    run: str
    game: int
    slot: int | None = None
    sgf: str
    void: bool
    black: str
    white: str
    players: dict[str, PlayerMeta] = Field(default_factory=dict)
    size: int
    komi: float
    handicap: int = 0
    result: str = ""
    winner: Winner | None
    reason: str
    score: float | None = None
    moves: int = Field(ge=0)
    opening: OpeningInfo | None = None
    fallbacks: dict[str, dict[str, int]] = Field(default_factory=dict)
    illegal: dict[str, int] = Field(default_factory=dict)
    latency_ms: dict[str, LatencySummary] = Field(default_factory=dict)
    tokens: dict[str, TokenCounts] = Field(default_factory=dict)
    replies: dict[str, list[ReplyNote]] = Field(default_factory=dict)
    adjudication: Adjudication | None = None
    started: str = ""
    finished: str = ""

    def as_dict(self) -> dict:
        data = self.model_dump(mode="json")
        for key in _OPTIONAL:
            if not data.get(key):
                data.pop(key, None)
        return data

    def to_json(self) -> str:
        """The record as written: compact JSON, one line, no newline."""
        return json.dumps(self.as_dict(), separators=(",", ":"))


class RecordError(ValueError):
    """A journal line or SGF record that is not a :class:`JournalRecord`; one line."""


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    if err["type"] == "json_invalid":
        return "not valid JSON"
    where = ".".join(str(part) for part in err["loc"]) or "(line)"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {err['msg']}{more}"


def parse_record(text: str | bytes) -> JournalRecord:
    """One journal line (or SGF record); :class:`RecordError` says what is wrong."""
    try:
        return JournalRecord.model_validate_json(text)
    except ValidationError as exc:
        raise RecordError(_first_error(exc)) from None


def record_from_sgf(game: SgfGame) -> JournalRecord:
    """The journal record an SGF go19 wrote carries in its root."""
    text = game.root_props.get(RECORD_PROP)
    if text is None:
        raise RecordError(f"no {RECORD_PROP} record")
    try:
        return parse_record(text)
    except RecordError as exc:
        raise RecordError(f"{RECORD_PROP}: {exc}") from None


@dataclass(frozen=True, slots=True)
class GameRecord:
    """One finished game as the recordings keep it: its journal record (the ``games.jsonl``
    line, the SGF's :data:`RECORD_PROP`) and its moves in order.

    The referee's outcome becomes one (``collect.referee.RefereedGame.record``); collect's
    recorder and the play page's training save only write it (its SGF, then its line), and
    readers get it back from the SGF (:func:`game_record_from_sgf`, or with the game's
    positions :func:`orchestrator.positions.recorded.read_recorded_game`), the same but for
    the moves' reply details (:class:`~orchestrator.move_record.MoveRecord`)."""

    journal: JournalRecord
    moves: tuple[MoveRecord, ...]


def game_record_from_sgf(game: SgfGame) -> GameRecord:
    """The game an SGF go19 wrote holds: its :data:`RECORD_PROP` record and its moves.
    Raises :class:`RecordError` when the record is missing or not one."""
    return GameRecord(record_from_sgf(game), tuple(map(MoveRecord.from_sgf, game.moves)))


@dataclass(frozen=True)
class JournalLine:
    number: int  # 1-based line number, for messages
    record: JournalRecord | None
    problem: str | None = None  # why ``record`` is None


@dataclass(frozen=True)
class Journal:
    """Every non-blank line of ``games.jsonl``; ``whole`` is False when the file
    ends inside a line (a write cut short by a kill or a full disk)."""

    lines: list[JournalLine] = field(default_factory=list)
    whole: bool = True

    @property
    def records(self) -> list[JournalRecord]:
        return [line.record for line in self.lines if line.record is not None]


def read_journal(path: Path) -> Journal:
    """``games.jsonl`` line by line; a missing file is an empty journal. Raises OSError
    only when the file is there but cannot be read."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Journal()
    lines = []
    for number, text in enumerate(raw.split(b"\n"), 1):
        if not text.strip():
            continue
        try:
            lines.append(JournalLine(number, parse_record(text)))
        except RecordError as exc:
            lines.append(JournalLine(number, None, str(exc)))
    return Journal(lines, whole=not raw or raw.endswith(b"\n"))


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and ((path / RUN_FILE).is_file() or (path / JOURNAL).is_file())


def read_run_file(run_dir: Path) -> dict:
    """``run.json``; raises OSError or ValueError (not JSON, not an object)."""
    info = read_json((run_dir / RUN_FILE).read_bytes(), MAX_RUN_FILE_BYTES)
    if not isinstance(info, dict):
        raise ValueError("not a JSON object")
    return info


@dataclass(frozen=True, slots=True)
class RunName:
    """What a run folder is called: ``id`` as its run.json says (the name it was made
    with), ``folder`` the name it has now (a moved or copied run keeps its id)."""

    id: str
    folder: str

    @classmethod
    def of(cls, run_dir: Path) -> RunName:
        try:
            run_id = read_run_file(run_dir).get("run_id")
        except (OSError, ValueError):
            run_id = None
        return cls(run_id if isinstance(run_id, str) else run_dir.name, run_dir.name)


# -- records to rated games ------------------------------------------------------


def rated_game(record: JournalRecord) -> GameOutcome | None:
    """The game as the ratings count it, or None: void, a player against itself, or
    no result. Games of a paired opening carry ``(run, pair)`` as their pair key."""
    if record.void or record.winner is None or record.black == record.white:
        return None
    pair = None
    if record.opening is not None and record.opening.pair is not None:
        pair = (record.run, record.opening.pair)
    return GameOutcome(record.black, record.white, record.winner, pair)


def rated_games(records: Iterable[JournalRecord]) -> list[GameOutcome]:
    return [game for game in map(rated_game, records) if game is not None]


def head_to_head(games: Iterable[GameOutcome], player: str, opponent: str) -> Pentanomial | Wdl:
    """``player``'s counts against ``opponent``: pentanomial pairs when any game came
    from a paired opening, else W/L/D."""
    games = list(games)
    if any(g.pair is not None for g in games):
        return pentanomial_from_games(games, player, opponent)
    return split_by_color(games, player, opponent).overall


def sgf_paths(run_dir: Path) -> Iterator[Path]:
    """Every recorded SGF of the run, void ones last."""
    for folder in (run_dir, run_dir / VOID_DIR):
        yield from sorted(folder.glob(SGF_GLOB))
