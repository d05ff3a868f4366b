"""Slow, independent reference computations for the property tests: groups and
liberties by flood fill from the stones alone, the Zobrist hash from scratch, and
a referee made of sgfmill's capture logic plus the set of exact earlier positions
(no hashing), which decides occupied / suicide / superko on its own."""

from __future__ import annotations

from functools import cache

from sgfmill import boards

from orchestrator.color import BLACK, EMPTY, WHITE
from orchestrator.coords import PASS
from orchestrator.rules.board import zobrist_table

SGFMILL_COLOR = {BLACK: "b", WHITE: "w"}
OUR_COLOR = {"b": BLACK, "w": WHITE}


@cache
def _adjacency(size: int) -> tuple[tuple[int, ...], ...]:
    table = []
    for point in range(size * size):
        row, col = divmod(point, size)
        table.append(tuple(
            r * size + c
            for r, c in ((row - 1, col), (row + 1, col), (row, col - 1), (row, col + 1))
            if 0 <= r < size and 0 <= c < size
        ))
    return tuple(table)


def adjacent(point: int, size: int) -> tuple[int, ...]:
    return _adjacency(size)[point]


def flood_groups(stones: list[int], size: int) -> dict[int, tuple[frozenset, frozenset]]:
    """Each stone's (group stones, group liberties), found by flood fill."""
    found: dict[int, tuple[frozenset, frozenset]] = {}
    table = _adjacency(size)
    for start, color in enumerate(stones):
        if color == EMPTY or start in found:
            continue
        members, liberties, todo = {start}, set(), [start]
        while todo:
            p = todo.pop()
            for q in table[p]:
                if stones[q] == EMPTY:
                    liberties.add(q)
                elif stones[q] == color and q not in members:
                    members.add(q)
                    todo.append(q)
        entry = (frozenset(members), frozenset(liberties))
        for p in members:
            found[p] = entry
    return found


def zobrist_hash(stones: list[int], size: int) -> int:
    keys = zobrist_table(size)
    value = 0
    for p, color in enumerate(stones):
        if color != EMPTY:
            value ^= keys[color][p]
    return value


def to_rc(point: int, size: int) -> tuple[int, int]:
    row, col = divmod(point, size)
    return size - 1 - row, col


class SgfmillReferee:
    """Positional superko over exact positions on top of sgfmill's board."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.board = boards.Board(size)
        self.seen = {self._key(self.board)}

    @staticmethod
    def _key(board: boards.Board) -> tuple:
        # sgfmill's rows of None/'b'/'w' (list_occupied_points is several times slower).
        return tuple(map(tuple, board.board))

    def setup(self, black: list[int], white: list[int]) -> bool:
        """AB/AW; False (and the position unchanged) if a group would have no liberties."""
        trial = self.board.copy()
        ok = trial.apply_setup(
            [to_rc(p, self.size) for p in black], [to_rc(p, self.size) for p in white], []
        )
        if ok:
            self.board = trial
            self.seen.add(self._key(trial))
        return ok

    def verdict(self, color: int, point: int) -> tuple[str | None, boards.Board | None, object]:
        """(reason it is illegal or None, board after, sgfmill's simple-ko point)."""
        if point == PASS:
            return None, self.board, None
        row, col = to_rc(point, self.size)
        if self.board.get(row, col) is not None:
            return "occupied", None, None
        after = self.board.copy()
        ko = after.play(row, col, SGFMILL_COLOR[color])
        if after.get(row, col) is None:
            return "suicide", None, None
        if self._key(after) in self.seen:
            return "superko", None, None
        return None, after, ko

    def accept(self, after: boards.Board) -> None:
        self.board = after
        self.seen.add(self._key(after))

    def stones(self) -> list[int]:
        stones = [EMPTY] * (self.size * self.size)
        for color, (row, col) in self.board.list_occupied_points():
            stones[(self.size - 1 - row) * self.size + col] = OUR_COLOR[color]
        return stones
