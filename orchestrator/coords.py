"""Every coordinate system go19 meets, converted in one place.

Inside go19 a point is one integer, ``row * size + col``, with row 0 at the top
of the board; a pass is :data:`PASS`. Nothing past the edges sees letters.

======== ================ ================ ================ ==============
system   top-left         top-right        bottom-left      pass
======== ================ ================ ================ ==============
point    0                size-1           (size-1)*size    PASS (-1)
index    0                size-1           (size-1)*size    size*size (361)
rowcol   (0, 0)           (0, size-1)      (size-1, 0)      None
SGF      ``aa``           ``sa`` (19x19)   ``as`` (19x19)   ``""`` (``tt``)
GTP      ``A19``          ``T19``          ``A1``           ``pass``
GO19     (0, 0)           (0, size-1)      (size-1, 0)      (255, 255)
======== ================ ================ ================ ==============

The index is a point as a position in an array of ``size*size + 1`` (a policy, the
dataset's moves and KataGo's best moves): the point itself, the pass last.
GTP columns skip the letter I. SGF letters run a-z then A-Z (boards up to 52x52);
``tt`` means pass on boards up to 19x19 and is a point on larger ones.
"""

from __future__ import annotations

PASS = -1
GO19_PASS = (255, 255)
GTP_COLUMNS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"
_SGF_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


class CoordinateError(ValueError):
    """A coordinate string or pair that does not name a point of this board."""


def from_rowcol(row: int, col: int, size: int) -> int:
    if not (0 <= row < size and 0 <= col < size):
        raise CoordinateError(f"({row}, {col}) is off a {size}x{size} board")
    return row * size + col


def to_index(point: int, size: int) -> int:
    """A point (or PASS) to its flat index: the point, ``size * size`` for a pass."""
    return size * size if point == PASS else point


def from_index(index: int, size: int) -> int:
    """A flat index back to a point; ``size * size`` is PASS."""
    if not 0 <= index <= size * size:
        raise CoordinateError(f"index {index} is off a {size}x{size} board")
    return PASS if index == size * size else index


def from_sgf(text: str, size: int) -> int:
    """SGF letters ``"pd"`` (column first) to a point; ``""`` and ``"tt"`` (size <= 19) pass."""
    if text == "" or (text == "tt" and size <= 19):
        return PASS
    if len(text) != 2:
        raise CoordinateError(f"bad SGF point {text!r}")
    col = _SGF_LETTERS.find(text[0])
    row = _SGF_LETTERS.find(text[1])
    if col < 0 or row < 0 or col >= size or row >= size:
        raise CoordinateError(f"SGF point {text!r} is off a {size}x{size} board")
    return row * size + col


def to_sgf(point: int, size: int) -> str:
    """A point to SGF letters; a pass is written as the FF[4] empty value."""
    if point == PASS:
        return ""
    row, col = divmod(point, size)
    return _SGF_LETTERS[col] + _SGF_LETTERS[row]


def from_gtp(vertex: str, size: int) -> int:
    """GTP vertex ``"Q16"`` (case-insensitive) or ``"pass"`` to a point."""
    text = vertex.strip().upper()
    if text == "PASS":
        return PASS
    if len(text) < 2 or text[0] not in GTP_COLUMNS or not text[1:].isdigit():
        raise CoordinateError(f"bad GTP vertex {vertex!r}")
    col = GTP_COLUMNS.index(text[0])
    number = int(text[1:])
    if col >= size or not 1 <= number <= size:
        raise CoordinateError(f"GTP vertex {vertex!r} is off a {size}x{size} board")
    return (size - number) * size + col


def to_gtp(point: int, size: int) -> str:
    if point == PASS:
        return "pass"
    row, col = divmod(point, size)
    return f"{GTP_COLUMNS[col]}{size - row}"


def from_go19(row: int, col: int, size: int) -> int:
    """A GO19 reply's ``row, col`` bytes; ``255, 255`` is a pass."""
    if (row, col) == GO19_PASS:
        return PASS
    return from_rowcol(row, col, size)


def to_go19(point: int, size: int) -> tuple[int, int]:
    if point == PASS:
        return GO19_PASS
    return divmod(point, size)
