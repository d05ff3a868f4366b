"""Step 3 of reading (see :mod:`orchestrator.sgf`): main-line nodes to typed games, and
:func:`read_games`, which runs the three steps: bytes in, games out."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from functools import cache

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS, CoordinateError, from_sgf, to_sgf
from orchestrator.sgf.grammar import RUN_MOVE_RE, Node, main_lines
from orchestrator.sgf.model import (
    LATENCY_PROP,
    MAX_SIZE,
    REPLY_PROP,
    SOURCE_PROP,
    CorruptCoordinate,
    EmptyFile,
    NotNineteen,
    NotSupported,
    Setup,
    SgfError,
    SgfGame,
    SgfMove,
    Unparseable,
)
from orchestrator.sgf.text import decode_text
from orchestrator.words import plural

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
    if abs(komi) < 100:
        return komi
    # Fox writes komi x100: points (KM[650] 6.5, KM[750] 7.5), or under Chinese rules
    # stones, which count twice (KM[375]: 3.75 stones, 7.5 points).
    komi /= 100
    return komi * 2 if (komi * 4).is_integer() and not (komi * 2).is_integer() else komi


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
        spelled = RUN_MOVE_RE.findall(run)
        try:
            moves.extend(map(plain.__getitem__, spelled))
        except KeyError:  # the moves before the bad one are in already
            number = len(moves) + 1
            raise CorruptCoordinate(
                f"move {number} {spelled[number - 1 - before]} is not on a {size}x{size} board",
                move=number,
            ) from None
    return len(spelled)


def _node_moves(props: dict[str, list[str]], moves: list[SgfMove], table: dict[str, int],
                size: int) -> None:
    """Append the ``B`` and ``W`` of one node (B first when a node has both)."""
    for letter, color in (("B", BLACK), ("W", WHITE)):
        values = props.get(letter)
        if values:
            number = len(moves) + 1
            point = _move_point(values[0], table, size, number, letter)
            source = props.get(SOURCE_PROP)
            comment = props.get("C")
            reply = props.get(REPLY_PROP)
            moves.append(SgfMove(
                color, point,
                _simple_text(source[0]) if source else None,
                _text(comment[0]) if comment else None,
                _latency(props.get(LATENCY_PROP)),
                _text(reply[0]) if reply else None,
            ))


def _main_line(nodes: list[Node], size: int) -> tuple[tuple[Setup, ...], tuple[SgfMove, ...]]:
    table = _point_table(size)
    plain = _plain_moves(size)
    moves: list[SgfMove] = []
    setups: list[Setup] = []
    index = 0
    for props in nodes:
        if isinstance(props, str):
            index += _extend_run(moves, props, plain, size)
            continue
        if "AB" in props or "AW" in props or "AE" in props:
            black = tuple(_setup_points(props.get("AB", []), table, size, index))
            white = tuple(_setup_points(props.get("AW", []), table, size, index))
            empty = tuple(_setup_points(props.get("AE", []), table, size, index))
            if black or white or empty:
                setups.append(Setup(len(moves), black, white, empty, node=index))
        _node_moves(props, moves, table, size)
        index += 1
    return tuple(setups), tuple(moves)


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
    setup, moves = _main_line(nodes, size)
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
        setup=setup,
        moves=moves,
        sha1=sha1,
        game_index=game_index,
    )


# FF[4]'s root and game-info properties, and Go's own: a tree with none of them, no move
# and no setup stone is no game record (random bytes hold "(;" often enough).
_GAME_INFO = frozenset("AP CA FF GM ST SZ AN BR BT CP DT EV GN GC ON OT PB PC PW RE RO RU SO "
                       "TM US WR WT HA KM".split())


def _is_game(game: SgfGame) -> bool:
    return bool(game.moves or game.setup) or any(
        name in _GAME_INFO or name.startswith("GOXIX") for name in game.root_props)


def read_games(
    data: bytes, *, require_size: int | None = None, path: str | None = None,
    lines: Callable[[str], list[list[Node]]] = main_lines,
) -> list[SgfGame]:
    """Every game in an SGF file's bytes, main lines only.

    Raises an :class:`SgfError` subclass, naming ``path`` (where the caller read the
    bytes) when given, and nothing else. A game tree without a move, a setup stone or
    an SGF root or game-info property is not a game: it is left out (the others keep
    their ``game_index``, the tree's place in the file), and a file of nothing else is
    :class:`Unparseable`. ``require_size=19`` rejects other boards with
    :class:`NotNineteen`. The caller opens the file (:meth:`Unreadable.from_os_error`
    turns its OSError into the same kind of one-line error). ``lines`` is step 2: the
    build passes its compiled twin of :func:`~orchestrator.sgf.grammar.main_lines`.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"read_games takes the file's bytes, not {type(data).__name__}")
    try:
        data = bytes(data)
        text = decode_text(data)[0]
        if not text.strip():
            raise EmptyFile("empty file")
        trees = lines(text)
        if not trees:
            raise Unparseable("no SGF game tree found")
        sha1 = hashlib.sha1(data).hexdigest()
        built = [_build_game(line, sha1, i, require_size) for i, line in enumerate(trees)]
        games = [game for game in built if _is_game(game)]
        if not games:
            raise Unparseable(f"no game: {plural(len(built), 'game tree')} without a move, a "
                              "setup stone or an SGF root property")
        return games
    except SgfError as exc:
        if exc.path is None:
            exc.path = path
        raise


