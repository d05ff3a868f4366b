"""What an SGF file holds for go19: games' main lines as typed values, go19's private
property names, and the one-line errors for files it cannot use."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from orchestrator.color import BLACK, WHITE

# go19's private properties (docs/formats.md). Letters only: "XIX" is the 19 of GO19.
RUN_PROP = "GOXIXRUN"
GAME_PROP = "GOXIXGAME"
END_PROP = "GOXIXEND"
BLACK_PLAYER_PROP = "GOXIXB"
WHITE_PLAYER_PROP = "GOXIXW"
VOID_PROP = "GOXIXVOID"
ADJ_PROP = "GOXIXADJ"  # what [adjudicate] did in the game (JSON)
SOURCE_PROP = "GOXIXSRC"
LATENCY_PROP = "GOXIXMS"  # milliseconds the player took to answer this move
REPLY_PROP = "GOXIXREPLY"  # a model's reply to this move: tokens, and its text if kept (JSON)

MAX_SIZE = 52  # FF[4]: columns and rows are a-z then A-Z

_WINNER_RE = re.compile(r"\s*([BW])\s*\+", re.I)


# -- errors ----------------------------------------------------------------------


class SgfError(ValueError):
    """A file, or a game in it, that go19 cannot use.

    ``reason`` is a short tag for summaries (as :class:`~orchestrator.rules.IllegalMove`'s
    and a player fault's); ``detail`` is one line saying what is wrong and where; ``path``
    is the file when known (the reader gets bytes: the caller that opened the file names
    it).
    """

    reason = "unreadable"

    def __init__(self, detail: str, path: str | None = None) -> None:
        self.detail = " ".join(detail.split())
        self.path = path
        super().__init__(self.detail)

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}" if self.path else self.detail


class Unreadable(SgfError):
    """The file could not be read at all (missing, a folder, no permission)."""

    reason = "unreadable"

    @classmethod
    def from_os_error(cls, exc: OSError, path: object) -> Unreadable:
        return cls(f"cannot read: {exc.strerror or exc}", str(path))


class EmptyFile(SgfError):
    reason = "empty"


class TooLarge(SgfError):
    """A file over the size a reader allows (``--max-file-mib``): refused unread."""

    reason = "too-large"


class Unparseable(SgfError):
    reason = "unparseable"


class Truncated(SgfError):
    reason = "truncated"


class NotSupported(SgfError):
    """Valid SGF that is not a game go19 can play: another game, a board size the
    rules do not support, a rectangular board."""

    reason = "not-supported"


class NotNineteen(NotSupported):
    reason = "not-19x19"


class CorruptCoordinate(SgfError):
    """A point that does not exist on the board; ``move`` is its 1-based move number,
    None for a setup point (``node`` says where)."""

    reason = "corrupt-coordinate"

    def __init__(self, detail: str, move: int | None = None, node: int | None = None) -> None:
        self.move = move
        self.node = node
        super().__init__(detail)


# -- data model ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SgfMove:
    color: int  # BLACK or WHITE
    point: int  # PASS for a pass
    source: str | None = None  # SOURCE_PROP: None when the player's own policy chose it
    comment: str | None = None  # the node's C[]
    ms: float | None = None  # LATENCY_PROP: how long the player took to answer, if recorded
    reply: str | None = None  # REPLY_PROP: the JSON text, as written


@dataclass(frozen=True, slots=True)
class Setup:
    """Stones placed (AB/AW) or removed (AE) without playing, after ``before_move``
    moves have been played. ``node`` is where the reader found it on the main line
    (0 = root): layout, not game content, so equality ignores it."""

    before_move: int
    black: tuple[int, ...] = ()
    white: tuple[int, ...] = ()
    empty: tuple[int, ...] = ()
    node: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class SgfGame:
    """One game's main line. ``root_props`` holds the decoded text of every root
    property (first value) except the point lists and moves; ``sha1`` (of the
    file's bytes) and ``game_index`` (within the file) say where it came from and
    take no part in equality."""

    size: int = 19
    komi: float = 0.0
    handicap: int = 0
    rules: str = ""
    result: str = ""
    black_name: str = ""
    white_name: str = ""
    date: str = ""
    root_props: dict[str, str] = field(default_factory=dict)
    setup: tuple[Setup, ...] = ()
    moves: tuple[SgfMove, ...] = ()
    sha1: str = field(default="", compare=False)
    game_index: int = field(default=0, compare=False)

    @property
    def has_setup(self) -> bool:
        return bool(self.setup)

    @property
    def winner(self) -> int:
        """BLACK or WHITE from ``RE`` values like ``B+R``, ``W+3.5``, ``B+Time``; 0 for a
        draw, no result, or anything that does not name a winner with ``+``."""
        match = _WINNER_RE.match(self.result)
        if match is None:
            return 0
        return BLACK if match.group(1).upper() == "B" else WHITE
