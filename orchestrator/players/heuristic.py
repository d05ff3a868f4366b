"""The built-in heuristic AI: opponent, baseline and the fallback that plays
whenever an adapter times out or answers an illegal move.

It must be fast (a few milliseconds on 19x19) and always answer a legal move
or a pass, so it reads no further than one move: every candidate is checked
with ``Board.check``, which says what a stone would capture and how many
liberties it would have without changing the board.

How it picks a move: every empty point gets a score (tactics, then shape, then
seeded noise), and the best point that survives the filters is played:

- tactics: capture (bigger first), save a group in atari by extending when
  that gains liberties or by capturing a neighbour, atari a group that cannot
  run, lengthen a group short of liberties;
- shape: opening points (3-4, 4-4, sides), the third and fourth lines over
  the edge, answers near the last move, contested areas over settled ones;
- filters: no self-atari; nothing inside a settled region, that is a small
  empty region bordered by one colour only (own territory, own eyes, or the
  opponent's territory where a stone would only die); and in a small region
  bordered by both colours, only points that touch an opponent stone (the
  others change no ownership and only spend liberties). Tromp-Taylor scoring
  gives settled points to their owner already, so once nothing else is left
  the AI passes, and games end by two passes long before the move cap.

Late in a long game (more positions seen than the board has points) it stops
retaking kos, so that several kos at once cannot run a game into the cap.

``level`` tunes strength: 2 is all of the above; 0 only captures (greedily)
and otherwise plays at random, still never into self-atari or settled regions;
1 plays like 2 but, on a seeded random share of its moves (``LAPSES``), like 0.
On 19x19 level 2 wins 75-85 % against level 1 (bench/heuristic.py), a gap a
rating can measure, unlike a 100 % one.
"""

from __future__ import annotations

import random
from functools import cache

from orchestrator.color import BLACK, EMPTY, WHITE
from orchestrator.coords import PASS
from orchestrator.players.local import LocalPlayer
from orchestrator.rules.board import Board, Group, IllegalMove, neighbours_table
from orchestrator.rules.regions import empty_regions

LEVELS = (0, 1, 2)

# Score bands: tactics outweigh shape, shape outweighs noise.
CAPTURE = 100.0
SAVE = 90.0
ATARI = 40.0
EXTEND = 12.0
PRESSURE = 2.0
OPENING = 8.0
# Share of level-1 moves played as level 0: a weaker but not hopeless player.
LAPSES = 0.15
# Seeded noise added to every score: a tie-breaker for the full AI, and all there
# is between captures for level 0, which makes its other moves uniformly random.
NOISE = 1.5
RANDOM_NOISE = 10.0
# Value of a point by its distance from the edge (0 = first line); beyond: the last value.
LINE_VALUE = (-4.0, -1.5, 2.0, 2.0, 1.0)


@cache
def edge_distance(size: int) -> tuple[int, ...]:
    return tuple(
        min(r, c, size - 1 - r, size - 1 - c) for r in range(size) for c in range(size)
    )


@cache
def near_table(size: int) -> tuple[tuple[int, ...], ...]:
    """Points at Manhattan distance 1 or 2 from each point."""
    table = []
    for r in range(size):
        for c in range(size):
            near = []
            for dr in range(-2, 3):
                for dc in range(-2, 3):
                    if 0 < abs(dr) + abs(dc) <= 2 and 0 <= r + dr < size and 0 <= c + dc < size:
                        near.append((r + dr) * size + c + dc)
            table.append(tuple(near))
    return tuple(table)


@cache
def opening_points(size: int) -> tuple[tuple[int, float], ...]:
    """Opening points with their bonus: the 3-3, 3-4 and 4-4 points of each
    corner, then (on big boards, worth half as much) the side star points."""
    if size < 7:
        return ()
    lines = (2, 3) if size >= 13 else (2,)
    far = size - 1
    corners = set()
    for a in lines:
        for b in lines:
            for r, c in ((a, b), (a, far - b), (far - a, b), (far - a, far - b)):
                corners.add(r * size + c)
    points = [(p, OPENING) for p in sorted(corners)]
    if size >= 13:
        mid = size // 2
        for r, c in ((3, mid), (far - 3, mid), (mid, 3), (mid, far - 3)):
            points.append((r * size + c, OPENING / 2))
    return tuple(points)


def settled_limit(size: int) -> int:
    """Empty regions up to this many points, bordered by one colour, count as settled."""
    return max(6, size * size // 12)


def _adjacent_groups(board: Board, group: Group, color: int) -> list[Group]:
    stones = board.stones
    found: list[Group] = []
    for s in group.stones:
        for q in board.neighbours(s):
            if stones[q] == color:
                g = board.group_at(q)
                if g not in found:
                    found.append(g)
    return found


def _escape_room(board: Board, group: Group, move: int, escape: int) -> int:
    """About how many liberties ``group`` would have after we play ``move`` and
    it extends at ``escape``: the chance that an atari at ``move`` comes to nothing."""
    stones = board.stones
    color = group.color
    if any(len(g.liberties) == 1 for g in _adjacent_groups(board, group, 3 - color)):
        return 3  # it can capture its way out
    libs: set[int] = set()
    for q in board.neighbours(escape):
        s = stones[q]
        if s == EMPTY:
            libs.add(q)
        elif s == color:
            libs |= board.group_at(q).liberties
    libs.discard(move)
    libs.discard(escape)
    return len(libs)


class HeuristicChooser:
    """Sync and pure: ``choose`` reads the board, never changes it, and does no I/O."""

    def __init__(self, seed: int | None = None, level: int = 2) -> None:
        if level not in LEVELS:
            raise ValueError(f"heuristic level {level!r} is not one of {LEVELS}")
        self.level = level
        self._rng = random.Random(seed)

    def choose(self, board: Board, color: int, last_move: int | None = None) -> int:
        """A legal point for ``color`` to play, or PASS when only settled points are left."""
        full = self.level == 2 or (self.level == 1 and self._rng.random() >= LAPSES)
        other = 3 - color
        stones = board.stones
        adj = neighbours_table(board.size)
        regions = empty_regions(board)
        region_of, region_border = regions.region_of, regions.borders
        region_size = [len(points) for points in regions.points]
        limit = settled_limit(board.size)
        scores = [0.0] * board.area
        forced: set[int] = set()  # captures and rescues: worth playing even in settled regions
        _tactics(board, color, full, scores, forced)
        if full:
            _shape(board, color, last_move, scores)
        noise = NOISE if full else RANDOM_NOISE
        rand = self._rng.random
        ranked = []
        for p in range(board.area):
            if stones[p] != EMPTY:
                continue
            if p not in forced and region_size[region_of[p]] <= limit:
                border = region_border[region_of[p]]
                # Bordered by one colour only (mask 1 or 2): settled.
                if border == BLACK or border == WHITE:
                    continue
                # On a boundary, only a point touching the opponent decides anything;
                # filling one's own side just spends liberties.
                if border == BLACK | WHITE and all(stones[q] != other for q in adj[p]):
                    continue
            ranked.append((scores[p] + noise * rand(), p))
        ranked.sort(reverse=True)
        # Several kos at once can be retaken in turn for hundreds of moves without
        # ever repeating a position; late in a long game, kos are left alone.
        late = len(board.history) > board.area
        for _, p in ranked:
            try:
                result = board.check(color, p)
            except IllegalMove:
                continue
            if result.liberties == 1 and not result.captured:  # self-atari
                continue
            if result.ko_point is not None and late:
                continue
            return p
        return PASS


def _tactics(board: Board, color: int, full: bool, scores: list[float], forced: set[int]) -> None:
    """Captures always; with ``full``, also rescues, ataris, pressure and extensions."""
    other = 3 - color
    for group in board.groups():
        libs = group.liberties
        n = len(libs)
        stones = len(group.stones)
        if group.color == other:
            if n == 1:
                (p,) = libs
                scores[p] += CAPTURE + 10 * stones
                forced.add(p)
            elif n == 2 and full:
                a, b = libs
                for move, escape in ((a, b), (b, a)):
                    room = _escape_room(board, group, move, escape)
                    if room <= 1:
                        scores[move] += ATARI + 5 * stones
                    elif room == 2:
                        scores[move] += PRESSURE + stones
            elif n == 3 and full:
                for p in libs:
                    scores[p] += PRESSURE
        elif full:
            if n == 1:
                _rescue(board, group, scores, forced)
            elif n == 2:
                for p in libs:
                    try:
                        gained = board.check(color, p).liberties
                    except IllegalMove:
                        continue
                    if gained >= 3:
                        scores[p] += EXTEND + stones + gained


def _rescue(board: Board, group: Group, scores: list[float], forced: set[int]) -> None:
    """Score the ways out of atari: extending to more liberties, or capturing a neighbour."""
    color = group.color
    value = SAVE + 10 * len(group.stones)
    (p,) = group.liberties
    try:
        gained = board.check(color, p).liberties
    except IllegalMove:
        gained = 0
    # Two liberties may only lead into a ladder.
    if gained >= 3:
        scores[p] += value
        forced.add(p)
    elif gained == 2:
        scores[p] += EXTEND
    for enemy in _adjacent_groups(board, group, 3 - color):
        if len(enemy.liberties) == 1:
            (q,) = enemy.liberties
            scores[q] += value
            forced.add(q)


def _shape(board: Board, color: int, last_move: int | None, scores: list[float]) -> None:
    size = board.size
    stones = board.stones
    edge = edge_distance(size)
    near = near_table(size)
    own_near = [0] * board.area
    enemy_near = [0] * board.area
    for p, s in enumerate(stones):
        if s != EMPTY:
            counts = own_near if s == color else enemy_near
            for q in near[p]:
                counts[q] += 1
    top = len(LINE_VALUE) - 1
    for p in range(board.area):
        if stones[p] != EMPTY:
            continue
        line = edge[p]
        value = LINE_VALUE[min(line, top)]
        own, enemy = own_near[p], enemy_near[p]
        if own and enemy:
            value += 2.0  # the boundary, where points are decided
        elif enemy:
            value += 1.0
        elif own:
            value -= 1.0  # overconcentrated
        elif 2 <= line <= 3:
            value += 2.0  # an open area on the third or fourth line
        scores[p] += value
    for p, bonus in opening_points(size):
        if stones[p] == EMPTY and not own_near[p] and not enemy_near[p]:
            scores[p] += bonus
    if last_move is not None and last_move != PASS:
        for q in board.neighbours(last_move):
            scores[q] += 2.0
        for q in near[last_move]:
            scores[q] += 2.0


class HeuristicPlayer(LocalPlayer):
    """:class:`HeuristicChooser` as a player (the referee's opponent, a GO19 server's engine)."""

    def __init__(self, name: str, seed: int | None = None, level: int = 2) -> None:
        super().__init__(name, HeuristicChooser(seed, level))
