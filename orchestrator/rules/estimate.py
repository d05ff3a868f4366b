"""A cheap, conservative live score estimate for the dashboard.

It splits every point of the board into the seed client's categories and
counts them. The life-and-death judgement is a heuristic, and it assumes this:

* **Dead**: a group is dead only in an obvious case. It has exactly one
  liberty, it touches no empty region that only its own colour borders (no
  eye), it cannot get a second liberty by playing at its liberty (that move is
  illegal or leaves at most one liberty without capturing), and no opponent
  group next to it is in atari (so it cannot capture its way out). A ko or a
  capture somewhere else might still save it; the estimate ignores that.
* **Alive**: groups of one colour that border a common empty region which
  only that colour borders form a chain (they stand or fall together). A
  chain is alive if it borders at least two such regions (two "eyes", false
  eyes included) or has at least ``MANY_LIBERTIES`` liberties in all.
* Every other group is **unsettled**. Its stones still count for their owner
  (under area scoring a stone on the board is its owner's point until it is
  captured), but the empty points next to it are not settled.
* Empty regions are found with the dead stones lifted off the board. A region
  whose bordering stones are all alive and all one colour is that colour's
  **territory**. A region bordered by living stones of both colours that is
  only a seam (every point in it touches a stone) is **dame**. Every other
  empty point (open areas, regions next to unsettled groups, the empty board)
  is **disputed**.
* The points of dead stones go to the opponent, as they would once captured.

So ``margin`` counts stones, territory and the opponent's dead stones, then
komi; disputed points and dame count for nobody. On a finished board where
every group has two eyes and no dead stones are left, it equals Tromp-Taylor.
Two flood fills over the board and one pass over its groups: about a
millisecond on 19x19 (bench/replay.py measures it).
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.color import BLACK, WHITE
from orchestrator.rules.board import Board, Group, IllegalMove, neighbours_table
from orchestrator.rules.regions import empty_regions
from orchestrator.rules.scoring import result_string

MANY_LIBERTIES = 10
_ALIVE, _UNSETTLED, _DEAD = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Estimate:
    """Point counts per category; together they cover the board exactly once."""

    black_stones: int
    white_stones: int
    black_territory: int
    white_territory: int
    black_dead: int
    white_dead: int
    disputed: int
    dame: int
    komi: float

    @property
    def black_area(self) -> int:
        return self.black_stones + self.black_territory + self.white_dead

    @property
    def white_area(self) -> int:
        return self.white_stones + self.white_territory + self.black_dead

    @property
    def margin(self) -> float:
        """Black's estimated lead after komi (negative: White leads)."""
        return self.black_area - self.white_area - self.komi

    def summary(self) -> str:
        """The margin as a result string: ``B+12.5``, ``W+0.5`` or ``0``."""
        return result_string(self.margin)


def _regions(board: Board, lifted: list[bool]) -> list[tuple[list[int], list[Group], bool]]:
    """Maximal regions of empty or lifted (dead) points: their points, the groups
    that border them, and whether every empty point in them touches a stone."""
    found = empty_regions(board, lifted)
    stones = board.stones
    group_at = board.group_at
    adj = neighbours_table(board.size)
    region_of = found.region_of
    regions = []
    for points, touching in zip(found.points, found.touching, strict=True):
        borders: list[Group] = []
        for q in touching:
            g = group_at(q)
            if g not in borders:
                borders.append(g)
        seam = all(any(region_of[q] < 0 for q in adj[p]) for p in points if not stones[p])
        regions.append((points, borders, seam))
    return regions


def _is_dead(board: Board, group: Group, own_regions: int) -> bool:
    if len(group.liberties) != 1 or own_regions:
        return False
    stones = board.stones
    other = 3 - group.color
    for s in group.stones:
        for q in board.neighbours(s):
            if stones[q] == other and board.liberties_at(q) == 1:
                return False
    (liberty,) = group.liberties
    try:
        result = board.check(group.color, liberty)
    except IllegalMove:
        return True
    return not result.captured and result.liberties <= 1


def _chains(board: Board, groups: list[Group]) -> tuple[
    dict[int, int], dict[int, int], dict[int, int], dict[int, set[int]]
]:
    """Groups of one colour that share an own-colour-only region stand or fall together
    (a chain; union-find keyed by id). Returns, by group id, its own regions (eyes) and
    its chain's key; by chain key, the chain's eyes and liberties."""
    parent = {id(g): id(g) for g in groups}

    def root(key: int) -> int:
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    eyes = dict.fromkeys(parent, 0)
    own_regions = []
    for _, borders, _ in _regions(board, [False] * board.area):
        if borders and all(g.color == borders[0].color for g in borders):
            own_regions.append(borders)
            for g in borders:
                eyes[id(g)] += 1
                parent[root(id(g))] = root(id(borders[0]))
    chain_of = {key: root(key) for key in parent}
    chain_eyes = dict.fromkeys(parent, 0)
    for borders in own_regions:
        chain_eyes[chain_of[id(borders[0])]] += 1
    chain_liberties: dict[int, set[int]] = {}
    for g in groups:
        chain_liberties.setdefault(chain_of[id(g)], set()).update(g.liberties)
    return eyes, chain_of, chain_eyes, chain_liberties


def estimate(board: Board, komi: float) -> Estimate:
    """Split ``board`` into the categories above (see the module docstring)."""
    groups = board.groups()
    eyes, chain_of, chain_eyes, chain_liberties = _chains(board, groups)
    status: dict[int, int] = {}
    lifted = [False] * board.area
    counts = {BLACK: 0, WHITE: 0}
    dead = {BLACK: 0, WHITE: 0}
    for g in groups:
        if _is_dead(board, g, eyes[id(g)]):
            status[id(g)] = _DEAD
            dead[g.color] += len(g.stones)
            for s in g.stones:
                lifted[s] = True
            continue
        chain = chain_of[id(g)]
        alive = chain_eyes[chain] >= 2 or len(chain_liberties[chain]) >= MANY_LIBERTIES
        status[id(g)] = _ALIVE if alive else _UNSETTLED
        counts[g.color] += len(g.stones)
    territory = {BLACK: 0, WHITE: 0}
    disputed = dame = 0
    stones = board.stones
    for points, borders, seam in _regions(board, lifted):
        empty = sum(1 for p in points if not stones[p])
        settled = bool(borders) and all(status[id(g)] == _ALIVE for g in borders)
        colors = {g.color for g in borders}
        if settled and len(colors) == 1:
            territory[colors.pop()] += empty
        elif settled and seam:
            dame += empty
        else:
            disputed += empty
    return Estimate(
        black_stones=counts[BLACK],
        white_stones=counts[WHITE],
        black_territory=territory[BLACK],
        white_territory=territory[WHITE],
        black_dead=dead[BLACK],
        white_dead=dead[WHITE],
        disputed=disputed,
        dame=dame,
        komi=komi,
    )
