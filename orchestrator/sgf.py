"""SGF in and out: the main line of every game in a file, replayed under our rules,
and the FF[4] files go19 writes.

Reading happens in three steps, each with one job:

1. **Text.** The file's bytes become one ``str``: a byte-order mark decides first,
   then the declared ``CA[]``, then UTF-8, then the best of GB18030, EUC-KR
   (CP949), Shift_JIS (CP932) and Latin-1 (see :func:`decode_text`). Decoding the
   whole file before tokenising matters: Shift_JIS and GBK use ``\\`` and ``]`` as
   the second byte of some characters, which a byte-level parser misreads as
   SGF escapes (``encoding/nihon-kiin.sgf`` ends ``PB[...]`` with such a ``ソ``).
2. **Main line.** One regex splits the text into tokens; only the nodes before the
   first ``)`` of each game tree are kept, which is exactly the first-child-each-time
   line; later variations are only skipped over. Property names lose their lower
   case letters (FF[1-3] ``SiZe`` is ``SZ``).
3. **Game.** Root properties become typed fields; ``B``/``W``/``AB``/``AW``/``AE``
   letters become points once (:mod:`orchestrator.coords`); nothing later sees letters.

Choices where real files disagree with the standard:

- no ``SZ`` means 19; boards up to 52x52 read (FF[4]'s a-z then A-Z), though the
  rules replay only up to 25x25; ``tt`` is a pass on boards up to 19x19, like ``B[]``,
  and a real point on larger ones (the writer always writes a pass as ``[]``);
- ``|KM| >= 100`` is Fox's komi x100 (``KM[750]`` = 7.5, ``KM[375]`` = 3.75): no real
  komi is that large; ``KM[6,5]`` is 6.5; no or unreadable komi is 0; a non-integer
  ``HA`` (``HA[7.5]``) is 0;
- setup (``AB``/``AW``/``AE``) may sit in any main-line node and takes effect there,
  before that node's move (a node with both is old-style but seen);
- several values where one is expected (``CA[UTF-8][UTF-8]``): the first counts;
- property names may contain digits when read (lenient), never when written: SGF
  identifiers are upper-case letters only and sgfmill, Sabaki and others stop at a digit.

Every unusable file raises one :class:`SgfError` subclass whose ``str()`` is one line;
nothing else escapes :func:`read_games`.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache

from orchestrator import __version__
from orchestrator.coords import PASS, CoordinateError, from_sgf, to_gtp, to_sgf
from orchestrator.rules import BLACK, WHITE, Game, IllegalMove

# go19's private properties (docs/formats.md). Letters only: "XIX" is the 19 of GO19.
RUN_PROP = "GOXIXRUN"
GAME_PROP = "GOXIXGAME"
END_PROP = "GOXIXEND"
BLACK_PLAYER_PROP = "GOXIXB"
WHITE_PLAYER_PROP = "GOXIXW"
VOID_PROP = "GOXIXVOID"
SOURCE_PROP = "GOXIXSRC"
LATENCY_PROP = "GOXIXMS"  # milliseconds the player took to answer this move

MAX_SIZE = 52  # FF[4]: columns and rows are a-z then A-Z
REPLAY_MAX_SIZE = 25  # what the rules Board supports


# -- errors ----------------------------------------------------------------------


class SgfError(ValueError):
    """A file, or a game in it, that go19 cannot use.

    ``reason`` is one line saying what is wrong and where; ``kind`` is a short
    category for summaries; ``path`` is the file when known.
    """

    kind = "unreadable"

    def __init__(self, reason: str, path: str | None = None) -> None:
        self.reason = " ".join(reason.split())
        self.path = path
        super().__init__(self.reason)

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}" if self.path else self.reason


class Unreadable(SgfError):
    """The file could not be read at all (missing, a folder, no permission)."""

    kind = "unreadable"


class EmptyFile(SgfError):
    kind = "empty"


class Unparseable(SgfError):
    kind = "unparseable"


class Truncated(SgfError):
    kind = "truncated"


class NotSupported(SgfError):
    """Valid SGF that is not a game go19 can play: another game, a board size the
    rules do not support, a rectangular board."""

    kind = "not-supported"


class NotNineteen(NotSupported):
    kind = "not-19x19"


class CorruptCoordinate(SgfError):
    """A point that does not exist on the board; ``move`` is its 1-based move number,
    None for a setup point (``node`` says where)."""

    kind = "corrupt-coordinate"

    def __init__(self, reason: str, move: int | None = None, node: int | None = None) -> None:
        self.move = move
        self.node = node
        super().__init__(reason)


class IllegalMoveInRecord(SgfError):
    """A recorded move our rules reject. ``move`` is its 1-based number and ``rule``
    the :class:`~orchestrator.rules.IllegalMove` reason (occupied, suicide, superko,
    off-board)."""

    def __init__(self, move: int, rule: str, reason: str, path: str | None = None) -> None:
        self.move = move
        self.rule = rule
        self.kind = f"illegal:{rule}"
        super().__init__(reason, path)


class IllegalSetup(SgfError):
    """Setup stones that leave a group without liberties."""

    kind = "illegal-setup"


# -- data model ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SgfMove:
    color: int  # BLACK or WHITE
    point: int  # PASS for a pass
    source: str | None = None  # SOURCE_PROP: None when the player's own policy chose it
    comment: str | None = None  # the node's C[]
    ms: float | None = None  # LATENCY_PROP: how long the player took to answer, if recorded


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

    def to_bytes(self) -> bytes:
        return write_sgf(self)


# -- step 1: bytes to text ---------------------------------------------------------

_BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
# No look-behind for "not part of a longer name": it would cost re its literal
# prefix search, 100x slower; _declared_codec checks the byte before instead.
_CA_RE = re.compile(rb"CA\s*\[\s*([A-Za-z0-9_.:-]{1,40})\s*\]")
# Decode a label's codec as its usual superset: files labelled GB2312 hold GBK
# characters, EUC-KR ones CP949, Shift_JIS ones CP932; ASCII says nothing.
_SUPERSETS = {
    "gb2312": "gb18030", "gbk": "gb18030", "euc_kr": "cp949",
    "shift_jis": "cp932", "ascii": "utf-8",
}
_FALLBACKS = ("utf-8", "gb18030", "cp949", "cp932", "iso8859-1")
_SINGLE_BYTE_LATIN = ("iso8859-1", "cp1252", "iso8859-15")


def _declared_codec(data: bytes) -> str | None:
    for match in _CA_RE.finditer(data):
        if match.start() == 0 or not 65 <= data[match.start() - 1] <= 90:
            break
    else:
        return None
    try:
        name = codecs.lookup(match.group(1).decode("ascii")).name
        name = _SUPERSETS.get(name, name)
        # Only a codec that keeps SGF's punctuation ASCII can be meant: not UTF-16/32
        # without a BOM, not EBCDIC, not rot13 or base64 (which are not text codecs).
        if "(;[]\\AZaz".encode(name) == b"(;[]\\AZaz":
            return name
    except (LookupError, UnicodeError):
        pass
    return None


def _plausible(text: str, codec: str) -> float:
    """Share of non-ASCII characters that are ordinary in text written in ``codec``:
    each wrong guess tends to land in rare code points (GBK-only ideographs for
    Shift_JIS read as GB18030, half-width katakana for GB2312 read as Shift_JIS,
    U+FFFD for broken UTF-8, C1 controls for Latin-1)."""
    chars = [ch for ch in text if ord(ch) > 127]
    if not chars:
        return 1.0
    core = {"gb18030": "gb2312", "cp949": "euc_kr", "cp932": "shift_jis"}.get(codec)
    if core is None:
        good = sum(ch.isprintable() and ch != "\ufffd" for ch in chars)
    else:
        good = 0
        for ch in chars:
            if codec == "cp932" and "\uff61" <= ch <= "\uff9f":
                continue
            try:
                ch.encode(core)
            except UnicodeEncodeError:
                continue
            good += 1
    return good / len(chars)


def decode_text(data: bytes) -> tuple[str, str]:
    """The file as text and the codec used.

    Order: a BOM; the declared ``CA[]`` if the bytes decode with it (after UTF-8
    when the label is a Latin one, since UTF-8 filed under a default Latin-1 label
    is common and Latin-1 text is almost never valid UTF-8); UTF-8; then whichever
    of UTF-8-with-damage (the YuanYu exports cut a character in half inside PB/PW),
    GB18030, CP949, CP932 and Latin-1 reads most plausibly, ties going to the
    earlier one. Damaged bytes become U+FFFD.
    """
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return data[len(bom):].decode(codec, "replace"), codec
    declared = _declared_codec(data)
    order = [declared, "utf-8"] if declared not in _SINGLE_BYTE_LATIN else ["utf-8", declared]
    for codec in order:
        if codec is not None:
            try:
                return data.decode(codec), codec
            except UnicodeError:
                pass
    best = ("", "", -1.0)
    for codec in dict.fromkeys([declared, *_FALLBACKS]):
        if codec is None:
            continue
        try:
            text = data.decode(codec, "replace" if codec == "utf-8" else "strict")
        except UnicodeError:
            continue
        score = _plausible(text, codec)
        if score > best[2]:
            best = (text, codec, score)
    return best[0], best[1]


# -- step 2: text to main-line nodes -----------------------------------------------

# One token is either a run of plain move nodes (``;B[pd];W[dp]``, or with the
# servers' time left ``BL[1797]WL[1795]``, which go19 does not keep: most of any
# file, matched in C and split in bulk; the timeless form is tried first because
# it is twice as fast) or one of: a whole
# [value], a property name, a delimiter, an unclosed [value (it swallows the rest,
# so a truncated file costs one scan), one stray character.
_TOKEN_RE = re.compile(
    r"\s*(?:((?:;\s*[BW]\[[a-zA-Z]{0,2}\]\s*)+(?=[;()])"
    r"|(?:;\s*[BW]\[[a-zA-Z]{0,2}\](?:\s*(?:[BW]L|O[BW])\[[0-9.]*\])*\s*)+(?=[;()]))"
    r"|(\[[^\\\]]*(?:\\.[^\\\]]*)*\]|[A-Za-z][A-Za-z0-9]*|[;()]|\[.*|\S))",
    re.S,
)
_RUN_MOVE_RE = re.compile(r";\s*([BW]\[[a-zA-Z]*\])")
_VALUE_RE = re.compile(r"\[[^\\\]]*(?:\\.[^\\\]]*)*\]", re.S)
_LOWER = str.maketrans("", "", "abcdefghijklmnopqrstuvwxyz")

# A main-line node: its properties, or the text of a run of plain move nodes.
Node = dict[str, list[str]] | str
Token = tuple[str, str]


def _game_starts(tokens: list[Token], i: int) -> bool:
    """A ``(`` that opens a game: followed by ``;``, or (Nihon Kiin exports, which
    leave out the root's ``;``) by a property with a value."""
    if i + 1 >= len(tokens):
        return False
    run, nxt = tokens[i + 1]
    if run or nxt == ";":
        return True
    return nxt[:1].isalpha() and i + 2 < len(tokens) and tokens[i + 2][1][:1] == "["


def _read_tree(tokens: list[Token], start: int) -> tuple[list[Node], int]:
    """The main-line nodes of the game tree opening at ``tokens[start]`` and the
    index after its closing ``)``. The main line ends at the first ``)``."""
    nodes: list[Node] = []
    props: dict[str, list[str]] | None = None
    values: list[str] | None = None
    on_main = True
    depth = 0
    for j in range(start, len(tokens)):
        run, tok = tokens[j]
        if run:
            values = props = None
            if on_main:
                nodes.append(run)
            continue
        c = tok[0]
        if c == "[":
            if values is not None:
                values.append(tok[1:-1])
        elif c == ";":
            values = None
            if on_main:
                props = {}
                nodes.append(props)
        elif c == "(":
            values = None
            depth += 1
        elif c == ")":
            values = props = None
            on_main = False
            depth -= 1
            if depth == 0:
                return nodes, j + 1
        elif c.isalpha():
            values = None
            if on_main:
                name = tok if tok.isupper() else tok.translate(_LOWER)
                if name:
                    if props is None:
                        props = {}
                        nodes.append(props)
                    values = props.get(name)
                    if values is None:
                        values = props[name] = []
        # Anything else is a stray character: skipped, as most readers do.
    raise Truncated("the file ends inside a game tree (missing ')')")


def _main_lines(text: str) -> list[list[Node]]:
    tokens: list[Token] = _TOKEN_RE.findall(text)
    if tokens and tokens[-1][1][:1] == "[" and not _VALUE_RE.fullmatch(tokens[-1][1]):
        tokens.pop()  # an unclosed value: the tree around it reports the truncation
    games = []
    i = 0
    while i < len(tokens):
        if tokens[i][1] == "(" and _game_starts(tokens, i):
            nodes, i = _read_tree(tokens, i)
            if nodes:
                games.append(nodes)
        else:
            i += 1
    return games


# -- step 3: nodes to games ------------------------------------------------------

_NEEDS_TEXT_WORK = re.compile(r"[\\\r\t\v\f]")
_NEWLINES_RE = re.compile(r"\r\n|\n\r|\r")
_ESCAPE_RE = re.compile(r"\\(.)", re.S)
_WHITESPACE = str.maketrans("\t\v\f", "   ")


def _text(raw: str) -> str:
    """An SGF Text value: escapes resolved, ``\\``-newline removed, line breaks as
    ``\\n``, other whitespace as spaces."""
    if not _NEEDS_TEXT_WORK.search(raw):
        return raw
    raw = _NEWLINES_RE.sub("\n", raw)
    raw = _ESCAPE_RE.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), raw)
    return raw.translate(_WHITESPACE)


def _simple_text(raw: str) -> str:
    """An SGF SimpleText value: as Text, with line breaks as spaces."""
    return _text(raw).replace("\n", " ")


@cache
def _point_table(size: int) -> dict[str, int]:
    """Every SGF spelling of a point or pass on this board, for one dict lookup."""
    table = {to_sgf(p, size): p for p in range(size * size)}
    table[""] = PASS
    if size <= 19:
        table["tt"] = PASS
    return table


_SIZE_RE = re.compile(r"\s*(\d{1,9})\s*(?::\s*(\d{1,9})\s*)?")
_KNOWN_ROOT = frozenset({"AB", "AW", "AE", "B", "W"})


def _size(raw: str | None) -> int:
    if raw is None:
        return 19
    match = _SIZE_RE.fullmatch(raw)
    if match is None:
        raise Unparseable(f"bad SZ[{raw}]")
    cols = int(match.group(1))
    rows = int(match.group(2) or cols)
    if cols != rows:
        raise NotSupported(f"rectangular board SZ[{raw}]")
    if not 2 <= cols <= MAX_SIZE:
        raise NotSupported(f"board size {cols} not supported (2..{MAX_SIZE})")
    return cols


def _komi(raw: str | None) -> float:
    try:
        komi = float(raw.replace(",", ".")) if raw is not None else 0.0
    except ValueError:
        return 0.0
    if komi != komi or abs(komi) == float("inf"):
        return 0.0
    return komi / 100 if abs(komi) >= 100 else komi


def _handicap(raw: str | None) -> int:
    try:
        return int(raw.strip()) if raw is not None else 0
    except ValueError:
        return 0


def _setup_points(values: list[str], table: dict[str, int], size: int, node: int) -> list[int]:
    """AB/AW/AE values: single points or FF[4] rectangles ``aa:cc``; empty values skipped."""
    points: list[int] = []
    for value in values:
        value = value.strip()
        if not value:
            continue
        corners = [table.get(corner, PASS) for corner in value.split(":")]
        if len(corners) > 2 or PASS in corners:
            raise CorruptCoordinate(
                f"setup point [{value}] in node {node} is not on a {size}x{size} board",
                node=node,
            )
        if len(corners) == 1:
            points.append(corners[0])
            continue
        (r1, c1), (r2, c2) = divmod(corners[0], size), divmod(corners[1], size)
        for row in range(min(r1, r2), max(r1, r2) + 1):
            for col in range(min(c1, c2), max(c1, c2) + 1):
                points.append(row * size + col)
    return points


def _latency(values: list[str] | None) -> float | None:
    """A GOXIXMS value; anything unreadable is simply not a latency."""
    if not values:
        return None
    try:
        ms = float(values[0])
    except ValueError:
        return None
    return ms if ms >= 0 and ms == ms and ms != float("inf") else None


def _move_point(value: str, table: dict[str, int], size: int, number: int, letter: str) -> int:
    point = table.get(value)
    if point is not None:
        return point
    try:
        return from_sgf(value.strip(), size)
    except CoordinateError:
        raise CorruptCoordinate(
            f"move {number} {letter}[{value}] is not on a {size}x{size} board", move=number
        ) from None


@cache
def _plain_moves(size: int) -> dict[str, SgfMove]:
    """``"B[pd]"`` to its move: immutable, so one object serves every game."""
    return {
        f"{letter}[{spelled}]": SgfMove(color, point)
        for letter, color in (("B", BLACK), ("W", WHITE))
        for spelled, point in _point_table(size).items()
    }


def _extend_run(moves: list[SgfMove], run: str, plain: dict[str, SgfMove], size: int) -> int:
    """Append the moves of a run of plain move nodes; return how many nodes it held.

    Splitting on ``;`` and looking each node up whole is the fast way; a run with
    time-left properties or a coordinate off this board takes the careful way."""
    before = len(moves)
    spelled = "".join(run.split()).split(";")
    del spelled[0]
    try:
        moves.extend(map(plain.__getitem__, spelled))
    except KeyError:
        del moves[before:]
        spelled = _RUN_MOVE_RE.findall(run)
        try:
            moves.extend(map(plain.__getitem__, spelled))
        except KeyError:  # the moves before the bad one are in already
            number = len(moves) + 1
            raise CorruptCoordinate(
                f"move {number} {spelled[number - 1 - before]} is not on a {size}x{size} board",
                move=number,
            ) from None
    return len(spelled)


def _build_game(
    nodes: list[Node], sha1: str, game_index: int, require_size: int | None
) -> SgfGame:
    root = nodes[0] if isinstance(nodes[0], dict) else {}

    def first(name: str) -> str | None:
        values = root.get(name)
        return values[0] if values else None

    game_type = first("GM")
    if game_type is not None and game_type.strip() not in ("", "1"):
        raise NotSupported(f"GM[{game_type}] is not a game of Go")
    size = _size(first("SZ"))
    if require_size is not None and size != require_size:
        raise NotNineteen(f"board is {size}x{size}, not {require_size}x{require_size}")
    table = _point_table(size)
    plain = _plain_moves(size)
    moves: list[SgfMove] = []
    setups: list[Setup] = []
    index = 0
    for props in nodes:
        if props.__class__ is str:
            index += _extend_run(moves, props, plain, size)
            continue
        if "AB" in props or "AW" in props or "AE" in props:
            black = tuple(_setup_points(props.get("AB", []), table, size, index))
            white = tuple(_setup_points(props.get("AW", []), table, size, index))
            empty = tuple(_setup_points(props.get("AE", []), table, size, index))
            if black or white or empty:
                setups.append(Setup(len(moves), black, white, empty, node=index))
        for letter, color in (("B", BLACK), ("W", WHITE)):
            values = props.get(letter)
            if values:
                number = len(moves) + 1
                point = _move_point(values[0], table, size, number, letter)
                source = props.get(SOURCE_PROP)
                comment = props.get("C")
                moves.append(SgfMove(
                    color, point,
                    _simple_text(source[0]) if source else None,
                    _text(comment[0]) if comment else None,
                    _latency(props.get(LATENCY_PROP)),
                ))
        index += 1
    return SgfGame(
        size=size,
        komi=_komi(first("KM")),
        handicap=_handicap(first("HA")),
        rules=_simple_text(first("RU") or ""),
        result=_simple_text(first("RE") or ""),
        black_name=_simple_text(first("PB") or ""),
        white_name=_simple_text(first("PW") or ""),
        date=_simple_text(first("DT") or ""),
        root_props={k: _text(v[0]) for k, v in root.items() if v and k not in _KNOWN_ROOT},
        setup=tuple(setups),
        moves=tuple(moves),
        sha1=sha1,
        game_index=game_index,
    )


def read_games(
    source: bytes | str | os.PathLike[str], *, require_size: int | None = None
) -> list[SgfGame]:
    """Every game in an SGF file (a path) or in its bytes, main lines only.

    Raises an :class:`SgfError` subclass, with the path when given one, and
    nothing else. ``require_size=19`` rejects other boards with :class:`NotNineteen`.
    """
    path = None if isinstance(source, bytes | bytearray) else os.fspath(source)
    try:
        if path is None:
            data = bytes(source)
        else:
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError as exc:
                raise Unreadable(f"cannot read: {exc.strerror or exc}") from None
        text = decode_text(data)[0]
        if not text.strip():
            raise EmptyFile("empty file")
        lines = _main_lines(text)
        if not lines:
            raise Unparseable("no SGF game tree found")
        sha1 = hashlib.sha1(data).hexdigest()
        return [_build_game(nodes, sha1, i, require_size) for i, nodes in enumerate(lines)]
    except SgfError as exc:
        if exc.path is None:
            exc.path = path
        raise


# -- replay --------------------------------------------------------------------


def _spell(move: SgfMove, size: int) -> str:
    """``B[km] (L7)``, for messages."""
    letter = "B" if move.color == BLACK else "W"
    if move.point != PASS and not 0 <= move.point < size * size:
        return f"{letter} at point {move.point}"
    return f"{letter}[{to_sgf(move.point, size)}] ({to_gtp(move.point, size)})"


def _apply_setup(live: Game, setup: Setup) -> None:
    try:
        live.setup(setup.black, setup.white, setup.empty)
    except ValueError as exc:  # IllegalMove is a ValueError too
        raise IllegalSetup(f"setup in node {setup.node}: {exc}") from None


def replay_positions(game: SgfGame) -> Iterator[tuple[Game, SgfMove, int]]:
    """Replay the main line, yielding (position before the move, the move, its
    1-based number) for every move.

    The yielded :class:`Game` is the live one, with ``to_play`` set to the move's
    colour: copy what you keep, it changes on the next step. Setups apply where
    they were recorded. Raises :class:`IllegalMoveInRecord` at the first move our
    rules reject, :class:`IllegalSetup` for impossible setup stones.
    """
    return _positions(game, _start(game))


def replay(game: SgfGame) -> Game:
    """The position after the whole main line (raises like :func:`replay_positions`)."""
    live = _start(game)
    for _ in _positions(game, live):
        pass
    return live


def _start(game: SgfGame) -> Game:
    """The empty board the game starts on; the rules stop at 25x25 (GTP letters)."""
    if game.size > REPLAY_MAX_SIZE:
        raise NotSupported(
            f"board size {game.size} cannot be replayed (2..{REPLAY_MAX_SIZE})"
        )
    return Game(size=game.size, komi=game.komi)


def _positions(game: SgfGame, live: Game) -> Iterator[tuple[Game, SgfMove, int]]:
    setups = game.setup
    pending = 0
    for number, move in enumerate(game.moves, 1):
        while pending < len(setups) and setups[pending].before_move < number:
            _apply_setup(live, setups[pending])
            pending += 1
        live.to_play = move.color
        yield live, move, number
        try:
            live.play(move.point, move.color)
        except IllegalMove as exc:
            raise IllegalMoveInRecord(
                number, exc.reason, f"move {number} {_spell(move, game.size)}: {exc.reason}"
            ) from None
    for setup in setups[pending:]:
        _apply_setup(live, setup)


# -- writing ---------------------------------------------------------------------

_IDENT_RE = re.compile(r"[A-Z]+")
_WRITER_OWNED = frozenset(
    {"FF", "CA", "GM", "AP", "SZ", "KM", "HA", "RU", "PB", "PW", "RE", "DT", "AB", "AW", "AE",
     "B", "W"}
)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("]", "\\]")


def _number(value: float) -> str:
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


@cache
def _letters(size: int) -> dict[int, str]:
    """Every point of this board as SGF letters, and PASS as the FF[4] empty value
    (never ``tt``, which is a point on boards over 19x19)."""
    return {point: to_sgf(point, size) for point in (*range(size * size), PASS)}


def _points(name: str, points: Iterable[int], letters: dict[int, str]) -> str:
    spelled = []
    for point in points:
        if point == PASS or point not in letters:
            raise ValueError(f"{name}: {point} is not a point of the board")
        spelled.append(letters[point])
    return f"{name}[{']['.join(spelled)}]" if spelled else ""


def _setup_props(setup: Setup, letters: dict[int, str]) -> str:
    return (
        _points("AE", setup.empty, letters)
        + _points("AB", setup.black, letters)
        + _points("AW", setup.white, letters)
    )


def write_sgf(game: SgfGame, extra: Mapping[str, str] | None = None) -> bytes:
    """FF[4] UTF-8 SGF of ``game``: the standard root properties from its fields,
    ``AP`` from ``root_props`` (default ``go19:VERSION``), every other root property
    in ``root_props`` and ``extra`` as is, then one node per setup and per move with
    the move's :data:`SOURCE_PROP` and ``C``.

    Raises ValueError for a property name that is not upper-case letters only, a
    point off the board, or a komi that would not read back: 100 or more (Fox's
    komi x100), infinite or NaN.
    """
    if not abs(game.komi) < 100:
        raise ValueError(f"komi {game.komi} cannot be written (|KM| >= 100 reads as x100)")
    size = game.size
    letters = _letters(size)
    props = dict(game.root_props)
    if extra:
        props.update(extra)
    out = [
        "(;FF[4]CA[UTF-8]GM[1]AP[", _escape(props.get("AP", f"go19:{__version__}")),
        "]SZ[", str(size), "]KM[", _number(game.komi), "]",
    ]
    if game.handicap:
        out.append(f"HA[{game.handicap}]")
    for name, value in (
        ("RU", game.rules), ("PB", game.black_name), ("PW", game.white_name),
        ("RE", game.result), ("DT", game.date),
    ):
        if value:
            out.append(f"{name}[{_escape(value)}]")
    for name, value in props.items():
        if name in _WRITER_OWNED:
            continue
        if not _IDENT_RE.fullmatch(name):
            raise ValueError(f"SGF property names are upper-case letters only, not {name!r}")
        out.append(f"{name}[{_escape(value)}]")
    setups = list(game.setup)
    if setups and setups[0].before_move == 0 and setups[0].node == 0:
        out.append(_setup_props(setups.pop(0), letters))
    pending = 0
    for number, move in enumerate(game.moves):
        while pending < len(setups) and setups[pending].before_move <= number:
            out.append("\n;" + _setup_props(setups[pending], letters))
            pending += 1
        out.append("\n;B[" if move.color == BLACK else "\n;W[")
        spelled = letters.get(move.point)
        if spelled is None:
            raise ValueError(f"move {number + 1}: {move.point} is not a point of the board")
        out.append(spelled)
        out.append("]")
        if move.source is not None:
            out.append(f"{SOURCE_PROP}[{_escape(move.source)}]")
        if move.ms is not None:
            out.append(f"{LATENCY_PROP}[{move.ms:.1f}]")
        if move.comment is not None:
            out.append(f"C[{_escape(move.comment)}]")
    for setup in setups[pending:]:
        out.append("\n;" + _setup_props(setup, letters))
    out.append(")\n")
    return "".join(out).encode("utf-8")
