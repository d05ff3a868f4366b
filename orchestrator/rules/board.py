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
Positions are compared by 64-bit Zobrist hash: with a few hundred positions per
game, the chance that a legal move is refused as a false repeat is about 1e-14.
"""

from __future__ import annotations

import random
from functools import cache
from typing import NamedTuple, cast

import numpy as np

from orchestrator.color import BLACK, COLOR_NAMES, EMPTY, WHITE
from orchestrator.coords import GTP_COLUMNS, PASS, to_gtp


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


@cache
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


@cache
def zobrist_table(size: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Random 64-bit keys per (colour, point); fixed seed so hashes are stable across runs."""
    rng = random.Random(0x60_19 + size)
    n = size * size
    black = tuple(rng.getrandbits(64) for _ in range(n))
    white = tuple(rng.getrandbits(64) for _ in range(n))
    return (tuple(0 for _ in range(n)), black, white)


@cache
def side_ko_table(size: int) -> tuple[int, ...]:
    """Random 64-bit keys per (side to move, ko point + 1), XORed into the stones' Zobrist
    hash by :meth:`Board.position_key`. Fixed seed, the same for every size (a table is a
    prefix of a larger board's): datasets and label folders store these keys, so they
    must agree across processes, runs and versions."""
    rng = random.Random(0x19_DA7A)
    return tuple(rng.getrandbits(64) for _ in range(3 * (size * size + 1)))


def _group_len(group: Group) -> int:
    return len(group.stones)


class Group:
    __slots__ = ("color", "stones", "liberties")

    def __init__(self, color: int, stones: set[int], liberties: set[int]) -> None:
        self.color = color
        self.stones = stones
        self.liberties = liberties


class MoveResult(NamedTuple):
    """What a stone placement did (or would do): stones captured (ascending) and the
    liberties of the placed stone's group afterwards. A tuple because the referee
    makes one per move and a frozen dataclass costs twice as much to build."""

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
        self._side_ko = side_ko_table(size)
        self.stones: list[int] = [EMPTY] * self.area
        self._group_at: list[Group | None] = [None] * self.area
        self.hash = 0
        self.history: set[int] = {0}
        self.ko_point: int | None = None
        self.captures = {BLACK: 0, WHITE: 0}

    # -- reading -----------------------------------------------------------

    def __getitem__(self, point: int) -> int:
        return self.stones[point]

    def group_at(self, point: int) -> Group:
        """The group of the stone at ``point`` (there must be one)."""
        return cast(Group, self._group_at[point])

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
        new._side_ko = self._side_ko
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

    def position_key(self, to_play: int) -> int:
        """The one identity of a position (dataset dedup, label joins): a 64-bit key of
        the stones, the side to move and the ko point. Two positions share it only if all
        three match (or with probability 2**-64)."""
        ko = -1 if self.ko_point is None else self.ko_point
        return self.hash ^ self._side_ko[to_play * (self.area + 1) + ko + 1]

    # -- playing -----------------------------------------------------------

    def _judge(self, color: int, point: int) -> tuple[list[Group], list[Group], int]:
        """The checks every stone placement passes: raise the :class:`IllegalMove` it
        would be, else return (opponent groups it captures, own groups it joins, the
        position hash after it). Reads only; shared by check(), is_legal() and play()."""
        if color != BLACK and color != WHITE:
            raise BadColorError(color, point, self.size)
        if not 0 <= point < self.area:
            raise OffBoardError(color, point, self.size)
        stones = self.stones
        if stones[point]:
            raise OccupiedError(color, point, self.size)
        group_at = cast("list[Group]", self._group_at)  # read at stones only
        dead: list[Group] = []
        friends: list[Group] = []
        empties = 0
        for q in self._adj[point]:
            s = stones[q]
            if not s:
                empties += 1
            elif s == color:
                g = group_at[q]
                if g not in friends:
                    friends.append(g)
            else:
                g = group_at[q]
                if len(g.liberties) == 1 and g not in dead:
                    dead.append(g)
        new_hash = self.hash ^ self._zobrist[color][point]
        if dead:
            keys = self._zobrist[3 - color]
            for g in dead:
                for s in g.stones:
                    new_hash ^= keys[s]
        elif not empties:
            for g in friends:
                if len(g.liberties) > 1:
                    break
            else:
                raise SuicideError(color, point, self.size)
        if new_hash in self.history:
            raise SuperkoError(color, point, self.size, "repeats an earlier position")
        return dead, friends, new_hash

    def check(self, color: int, point: int) -> MoveResult:
        """Raise the :class:`IllegalMove` this move would be, else say what it would do.

        Changes nothing. A pass is always legal.
        """
        if point == PASS:
            if color != BLACK and color != WHITE:
                raise BadColorError(color, point, self.size)
            return MoveResult(color, PASS, (), 0, None)
        dead, friends, _ = self._judge(color, point)
        stones = self.stones
        adj = self._adj
        libs = {q for q in adj[point] if not stones[q]}
        for g in friends:
            libs |= g.liberties
        libs.discard(point)
        captured: tuple[int, ...] = ()
        if dead:
            captured = tuple(sorted(s for g in dead for s in g.stones))
            joined = {point}.union(*(g.stones for g in friends))
            for s in captured:
                if not joined.isdisjoint(adj[s]):
                    libs.add(s)
        ko = captured[0] if len(captured) == 1 and not friends and len(libs) == 1 else None
        return MoveResult(color, point, captured, len(libs), ko)

    def is_legal(self, color: int, point: int) -> bool:
        if point == PASS:
            return color == BLACK or color == WHITE
        try:
            self._judge(color, point)
        except IllegalMove:
            return False
        return True

    def legal_moves(self, color: int) -> list[int]:
        """Every legal stone placement for ``color``, ascending (passing is always legal too).

        One pass over the empty points (a VLM player asks this on every move): a point with
        an empty neighbour that captures nothing needs only the superko look-up; the others
        are judged in full."""
        if color != BLACK and color != WHITE:
            return []
        stones = self.stones
        adj = self._adj
        group_at = cast("list[Group]", self._group_at)  # read at stones only
        keys = self._zobrist[color]
        history = self.history
        position = self.hash
        out = []
        for p in range(self.area):
            if stones[p]:
                continue
            empty = captures = False
            for q in adj[p]:
                s = stones[q]
                if not s:
                    empty = True
                elif s != color and len(group_at[q].liberties) == 1:
                    captures = True
                    break
            if empty and not captures:
                if position ^ keys[p] not in history:
                    out.append(p)
            elif self.is_legal(color, p):
                out.append(p)
        return out

    def play(self, color: int, point: int) -> MoveResult:
        """Place a stone (or pass) and return what happened; raise before changing
        anything if the move is illegal."""
        if point == PASS:
            if color != BLACK and color != WHITE:
                raise BadColorError(color, point, self.size)
            self.ko_point = None
            return MoveResult(color, PASS, (), 0, None)
        dead, friends, new_hash = self._judge(color, point)
        stones = self.stones
        group_at = self._group_at
        stone_group = cast("list[Group]", group_at)  # the same list, read at stones only
        adj = self._adj
        stones[point] = color
        # The largest adjacent own group absorbs the stone and the other groups,
        # so a merge copies only the smaller sets.
        if friends:
            group = friends[0]
            if len(friends) > 1:
                group = max(friends, key=_group_len)
                for g in friends:
                    if g is not group:
                        group.stones |= g.stones
                        group.liberties |= g.liberties
                        for s in g.stones:
                            group_at[s] = group
            group.stones.add(point)
            libs = group.liberties
            libs.discard(point)
        else:
            libs = set()
            group = Group(color, {point}, libs)
        group_at[point] = group
        for q in adj[point]:
            s = stones[q]
            if not s:
                libs.add(q)
            elif s != color:
                stone_group[q].liberties.discard(point)
        captured: tuple[int, ...] = ()
        if dead:
            captured = tuple(sorted(s for g in dead for s in g.stones))
            for s in captured:
                stones[s] = EMPTY
                group_at[s] = None
            # Only the capturer's stones can border a captured group.
            for s in captured:
                for q in adj[s]:
                    if stones[q] == color:
                        stone_group[q].liberties.add(s)
            self.captures[color] += len(captured)
        self.hash = new_hash
        self.history.add(new_hash)
        n_libs = len(libs)
        ko = captured[0] if len(captured) == 1 and not friends and n_libs == 1 else None
        self.ko_point = ko
        return MoveResult(color, point, captured, n_libs, ko)

    def setup(self, black=(), white=(), empty=()) -> None:
        """Place (AB/AW) or clear (AE) stones without the rules of play, as SGF setup does.

        Groups are rebuilt from scratch; the resulting position joins the history.
        A setup that leaves a group without liberties raises ValueError and changes nothing.
        """
        changes = [(p, color) for points, color in ((empty, EMPTY), (black, BLACK),
                                                    (white, WHITE)) for p in points]
        for p, color in changes:
            if not 0 <= p < self.area:
                raise OffBoardError(color or BLACK, p, self.size, "setup")
        saved = (self.stones.copy(), self._group_at, self.hash)
        for p, color in changes:
            self.stones[p] = color
        self._rebuild()
        for group in self.groups():
            if not group.liberties:
                self.stones, self._group_at, self.hash = saved
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

    def __str__(self) -> str:
        chars = {EMPTY: ".", BLACK: "X", WHITE: "O"}
        rows = []
        for r in range(self.size):
            row = self.stones[r * self.size : (r + 1) * self.size]
            rows.append(f"{self.size - r:>2} " + " ".join(chars[s] for s in row))
        rows.append("   " + " ".join(GTP_COLUMNS[: self.size]))
        return "\n".join(rows)
