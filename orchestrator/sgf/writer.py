"""The FF[4] UTF-8 files go19 writes (:func:`write_sgf`), which read back identically."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache

from orchestrator import __version__
from orchestrator.color import BLACK
from orchestrator.coords import PASS, to_sgf
from orchestrator.sgf.model import LATENCY_PROP, REPLY_PROP, SOURCE_PROP, Setup, SgfGame

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
        if move.reply is not None:
            out.append(f"{REPLY_PROP}[{_escape(move.reply)}]")
        if move.comment is not None:
            out.append(f"C[{_escape(move.comment)}]")
    for setup in setups[pending:]:
        out.append("\n;" + _setup_props(setup, letters))
    out.append(")\n")
    return "".join(out).encode("utf-8")

