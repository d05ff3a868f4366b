"""The board: stones, groups with incremental liberties, captures, suicide and
positional superko by Zobrist hash.

A :class:`Board` is mutable (a referee plays hundreds of moves per game, and
copying a whole position per move would cost more than the move). Every check
happens before anything changes, so a move that raises leaves the board exactly
as it was. ``copy()`` gives an independent board for look-ahead.

What it enforces: occupied points, suicide (forbidden, as under Chinese and
Tromp-Taylor area rules with the GO19 referee), positional superko (a stone
placement may not recreate any whole-board position seen earlier in this game,
whoever was to move). Passes never violate superko. What it does not know:
whose turn it is (see :class:`orchestrator.rules.game.Game`) and game end.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from orchestrator.coords import GTP_COLUMNS, PASS, to_gtp

EMPTY, BLACK, WHITE = 0, 1, 2
COLOR_NAMES = {BLACK: "black", WHITE: "white"}


def opponent(color: int) -> int:
    return 3 - color


class IllegalMove(ValueError):
    """A move the rules forbid. ``reason`` is one of the subclass reasons."""

    reason = "illegal"

    def __init__(self, color: int, point: int, size: int, detail: str = "") -> None:
        self.color = color
        self.point = point
        self.size = size
        where = to_gtp(point, size) if 0 <= point < size * size else f"point {point}"
        text = f"{COLOR_NAMES.get(color, color)} {where}: {self.reason}"
        super().__init__(f"{text} ({detail})" if detail else text)


class OccupiedError(IllegalMove):
    reason = "occupied"


class SuicideError(IllegalMove):
    reason = "suicide"


class SuperkoError(IllegalMove):
    reason = "superko"


class OffBoardError(IllegalMove):
    reason = "off-board"


class BadColorError(IllegalMove):
    reason = "bad colour"


@lru_cache(maxsize=None)
def neighbours_table(size: int) -> tuple[tuple[int, ...], ...]:
    table = []
    for p in range(size * size):
        row, col = divmod(p, size)
        adj = []
        if row > 0:
            adj.append(p - size)
        if row < size - 1:
            adj.append(p + size)
        if col > 0:
            adj.append(p - 1)
        if col < size - 1:
            adj.append(p + 1)
        table.append(tuple(adj))
    return tuple(table)


@lru_cache(maxsize=None)
def zobrist_table(size: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Random 64-bit keys per (colour, point); fixed seed so hashes are stable across runs."""
    rng = random.Random(0x60_19 + size)
    n = size * size
    black = tuple(rng.getrandbits(64) for _ in range(n))
    white = tuple(rng.getrandbits(64) for _ in range(n))
    return (tuple(0 for _ in range(n)), black, white)


class Group:
    __slots__ = ("color", "stones", "liberties")

    def __init__(self, color: int, stones: set[int], liberties: set[int]) -> None:
        self.color = color
        self.stones = stones
        self.liberties = liberties


@dataclass(frozen=True, slots=True)
class MoveResult:
    """What a stone placement did (or would do): stones captured and the
    liberties of the placed stone's group afterwards."""

    color: int
    point: int
    captured: tuple[int, ...]
    liberties: int
    ko_point: int | None


class Board:
    def __init__(self, size: int = 19) -> None:
        if not 2 <= size <= 25:
            raise ValueError(f"board size {size} not supported (2..25)")
        self.size = size
        self.area = size * size
        self._adj = neighbours_table(size)
        self._zobrist = zobrist_table(size)
        self.stones: list[int] = [EMPTY] * self.area
        self._group_at: list[Group | None] = [None] * self.area
        self.hash = 0
        self.history: set[int] = {0}
        self.ko_point: int | None = None
        self.captures = {BLACK: 0, WHITE: 0}

    # -- reading -----------------------------------------------------------

    def __getitem__(self, point: int) -> int:
        return self.stones[point]

    def group_at(self, point: int) -> Group | None:
        return self._group_at[point]

    def liberties_at(self, point: int) -> int:
        group = self._group_at[point]
        return len(group.liberties) if group is not None else 0

    def groups(self) -> list[Group]:
        seen: dict[int, Group] = {}
        for group in self._group_at:
            if group is not None:
                seen.setdefault(id(group), group)
        return list(seen.values())

    def neighbours(self, point: int) -> tuple[int, ...]:
        return self._adj[point]

    def to_array(self) -> np.ndarray:
        """uint8 (size, size): 0 empty, 1 black, 2 white, row 0 at the top."""
        return np.array(self.stones, dtype=np.uint8).reshape(self.size, self.size)

    def stone_count(self, color: int) -> int:
        return self.stones.count(color)

    def copy(self) -> Board:
        new = Board.__new__(Board)
        new.size = self.size
        new.area = self.area
        new._adj = self._adj
        new._zobrist = self._zobrist
        new.stones = self.stones.copy()
        new._group_at = [None] * self.area
        for group in self.groups():
            clone = Group(group.color, set(group.stones), set(group.liberties))
            for stone in clone.stones:
                new._group_at[stone] = clone
        new.hash = self.hash
        new.history = set(self.history)
        new.ko_point = self.ko_point
        new.captures = dict(self.captures)
        return new

    def position_key(self, to_play: int) -> tuple[int, int, int]:
        """Identity of a position for deduplication: stones, side to move, ko point."""
        return (self.hash, to_play, -1 if self.ko_point is None else self.ko_point)

    # -- playing -----------------------------------------------------------

    def check(self, color: int, point: int) -> MoveResult:
        """Raise the :class:`IllegalMove` this move would be, else say what it would do.

        Changes nothing. A pass is always legal.
        """
        if color != BLACK and color != WHITE:
            raise BadColorError(color, point, self.size)
        if point == PASS:
            return MoveResult(color, PASS, (), 0, None)
        if not 0 <= point < self.area:
            raise OffBoardError(color, point, self.size)
        stones = self.stones
        if stones[point] != EMPTY:
            raise OccupiedError(color, point, self.size)
        other = 3 - color
        group_at = self._group_at
        captured_groups: list[Group] = []
        friends: list[Group] = []
        own_libs = 0
        for q in self._adj[point]:
            s = stones[q]
            if s == EMPTY:
                own_libs += 1
            else:
                g = group_at[q]
                if s == other:
                    if len(g.liberties) == 1 and g not in captured_groups:
                        captured_groups.append(g)
                elif g not in friends:
                    friends.append(g)
        if captured_groups:
            captured = tuple(s for g in captured_groups for s in g.stones)
        else:
            captured = ()
            if own_libs == 0 and all(len(g.liberties) == 1 for g in friends):
                raise SuicideError(color, point, self.size)
        zob = self._zobrist
        new_hash = self.hash ^ zob[color][point]
        for s in captured:
            new_hash ^= zob[other][s]
        if new_hash in self.history:
            raise SuperkoError(color, point, self.size, "repeats an earlier position")
        libs: set[int] = {q for q in self._adj[point] if stones[q] == EMPTY}
        for g in friends:
            libs |= g.liberties
        libs.discard(point)
        captured_set = set(captured)
        for q in self._adj[point]:
            if q in captured_set:
                libs.add(q)
        for g in friends:
            for s in g.stones:
                for q in self._adj[s]:
                    if q in captured_set:
                        libs.add(q)
        ko = None
        if len(captured) == 1 and not friends and len(libs) == 1:
            ko = captured[0]
        return MoveResult(color, point, captured, len(libs), ko)

    def is_legal(self, color: int, point: int) -> bool:
        try:
            self.check(color, point)
        except IllegalMove:
            return False
        return True

    def legal_moves(self, color: int) -> list[int]:
        """Every legal stone placement for ``color`` (passing is always legal too)."""
        legal = []
        stones = self.stones
        for p in range(self.area):
            if stones[p] == EMPTY and self.is_legal(color, p):
                legal.append(p)
        return legal

    def play(self, color: int, point: int) -> MoveResult:
        """Place a stone (or pass) and return what happened; raise before changing
        anything if the move is illegal."""
        result = self.check(color, point)
        if point == PASS:
            self.ko_point = None
            return result
        self._place(color, point)
        other = 3 - color
        if result.captured:
            zob_other = self._zobrist[other]
            for s in result.captured:
                self._remove(s)
                self.hash ^= zob_other[s]
            self.captures[color] += len(result.captured)
        self.hash ^= self._zobrist[color][point]
        self.history.add(self.hash)
        self.ko_point = result.ko_point
        return result

    def setup(self, black=(), white=(), empty=()) -> None:
        """Place (AB/AW) or clear (AE) stones without the rules of play, as SGF setup does.

        Groups are rebuilt from scratch; the resulting position joins the history.
        A setup that leaves a group without liberties raises ValueError.
        """
        for points, color in ((empty, EMPTY), (black, BLACK), (white, WHITE)):
            for p in points:
                if not 0 <= p < self.area:
                    raise OffBoardError(color or BLACK, p, self.size, "setup")
                self.stones[p] = color
        self._rebuild()
        for group in self.groups():
            if not group.liberties:
                raise ValueError(
                    f"setup leaves a {COLOR_NAMES[group.color]} group without liberties "
                    f"at {to_gtp(min(group.stones), self.size)}"
                )
        self.ko_point = None
        self.history.add(self.hash)

    # -- internals ---------------------------------------------------------

    def _rebuild(self) -> None:
        self._group_at = [None] * self.area
        zob = self._zobrist
        self.hash = 0
        for p, s in enumerate(self.stones):
            if s != EMPTY:
                self.hash ^= zob[s][p]
                if self._group_at[p] is None:
                    self._flood(p)

    def _flood(self, start: int) -> None:
        color = self.stones[start]
        group = Group(color, set(), set())
        frontier = [start]
        group.stones.add(start)
        while frontier:
            p = frontier.pop()
            self._group_at[p] = group
            for q in self._adj[p]:
                s = self.stones[q]
                if s == EMPTY:
                    group.liberties.add(q)
                elif s == color and q not in group.stones:
                    group.stones.add(q)
                    frontier.append(q)

    def _place(self, color: int, point: int) -> None:
        stones = self.stones
        group_at = self._group_at
        stones[point] = color
        group = Group(color, {point}, set())
        for q in self._adj[point]:
            s = stones[q]
            if s == EMPTY:
                group.liberties.add(q)
                continue
            g = group_at[q]
            g.liberties.discard(point)
            if s == color and g is not group:
                # Merge the smaller group into the larger one.
                if len(g.stones) > len(group.stones):
                    g, group = group, g
                group.stones |= g.stones
                group.liberties |= g.liberties
                for stone in g.stones:
                    group_at[stone] = group
        group_at[point] = group
        group.liberties.discard(point)

    def _remove(self, point: int) -> None:
        self.stones[point] = EMPTY
        self._group_at[point] = None
        seen: list[Group] = []
        for q in self._adj[point]:
            g = self._group_at[q]
            if g is not None and g not in seen:
                g.liberties.add(point)
                seen.append(g)

    def __str__(self) -> str:
        chars = {EMPTY: ".", BLACK: "X", WHITE: "O"}
        rows = []
        for r in range(self.size):
            row = self.stones[r * self.size : (r + 1) * self.size]
            rows.append(f"{self.size - r:>2} " + " ".join(chars[s] for s in row))
        rows.append("   " + " ".join(GTP_COLUMNS[: self.size]))
        return "\n".join(rows)
