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

**At the end of play** (both sides passed) a player counting the board calls more stones
dead than the obvious ones: what the game left unplayed is settled against the side that
did not play it out. :func:`end_of_play_dead` does so after Sabaki's rule for floating
stones (``get_floating_stones`` of SabakiHQ/deadstones), for each colour as the captor:

* An **enclosure** is a connected set of points without a captor stone (empty points and
  the prey's stones, its prisoners); its **wall** is the captor stones next to it, and
  what those reach through empty points and captor stones is the captor's side. The
  empty points of the enclosure that the captor's side cannot reach are the prisoners'
  own eyes.
* The prisoners are **dead** when they have at most one eye, of at most
  ``MAX_DEAD_EYE`` points (a bigger one may make two; one-point eyes in two places live),
  and the captor's side has at least ``CAPTORS`` times as many stones (Sabaki asks for as
  many). Not when a captor string next to one of theirs has no more liberties than it and
  does not live by itself (two own-colour-only regions, or one bigger than
  ``MAX_DEAD_EYE``, reached through its colour's stones and such regions): that is a
  capturing race or a seki, left alive for the players to judge.
* Not either when the captor's side is only an eye inside the enclosure (reached by the
  empty points of the enclosure and bordered by its prisoners alone), or when the
  enclosure has more than half the square of its wall's stones: w stones around a corner
  enclose (w/2)² points, a wall from edge to edge about w²/2, so a bigger one is an open
  board. The obvious dead stones above are dead too.

:func:`final_ownership` is the Black-view ownership map of that judgement, for
:func:`~orchestrator.rules.dead_stones.dead_chains` (KataGo's rule, as collect applies it
to KataGo's map): +1 a black stone that is not dead, a dead white one, an empty point that
(dead stones lifted) reaches black stones only; -1 the same for White; 0 the empty points
that reach both colours or none. It is made for a board whose borders are closed; on one
passed out early it may still call an outnumbered group dead.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.color import BLACK, EMPTY, WHITE
from orchestrator.rules.board import Board, Group, IllegalMove, neighbours_table
from orchestrator.rules.dead_stones import without
from orchestrator.rules.regions import empty_regions
from orchestrator.rules.scoring import result_string

MANY_LIBERTIES = 10
MAX_DEAD_EYE = 2  # one eye of up to this many points: dead once play has ended
CAPTORS = 2  # stones of the enclosing side per dead stone, at least
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


def _components(board: Board, wall: int) -> tuple[list[int], list[list[int]]]:
    """The connected components of the points without a ``wall`` stone: each point's
    component (-1 on the wall) and each component's points."""
    stones = board.stones
    adj = neighbours_table(board.size)
    label = [-1] * board.area
    found: list[list[int]] = []
    for start in range(board.area):
        if stones[start] == wall or label[start] >= 0:
            continue
        label[start] = len(found)
        points = [start]
        i = 0
        while i < len(points):
            for q in adj[points[i]]:
                if stones[q] != wall and label[q] < 0:
                    label[q] = len(found)
                    points.append(q)
            i += 1
        found.append(points)
    return label, found


def _few_eyes(board: Board, eyes: list[int]) -> bool:
    """At most one eye (connected empty points), of at most MAX_DEAD_EYE points."""
    if len(eyes) > MAX_DEAD_EYE:
        return False
    if len(eyes) < 2:
        return True
    inside, reached, frontier = set(eyes), {eyes[0]}, [eyes[0]]
    while frontier:
        for q in board.neighbours(frontier.pop()):
            if q in inside and q not in reached:
                reached.add(q)
                frontier.append(q)
    return len(reached) == len(eyes)


def end_of_play_dead(board: Board) -> set[int]:
    """The stones dead once play has ended (see "At the end of play" above)."""
    stones = board.stones
    adj = neighbours_table(board.size)
    dead: set[int] = set()
    labels = {BLACK: _components(board, BLACK), WHITE: _components(board, WHITE)}
    regions = empty_regions(board)

    def has_room(start: int) -> bool:
        """Whether the string at ``start`` lives by itself: the empty regions that only its
        colour borders, reached through them and stones of its colour, are two or more,
        or one larger than MAX_DEAD_EYE points."""
        color = stones[start]
        reached, frontier = {start}, [start]
        eyes: set[int] = set()
        while frontier:
            for q in adj[frontier.pop()]:
                if q in reached:
                    continue
                if stones[q] == EMPTY:
                    region = regions.region_of[q]
                    if regions.borders[region] == color and region not in eyes:
                        eyes.add(region)
                        for r in regions.points[region]:  # and on to the strings beyond
                            reached.add(r)
                            frontier.append(r)
                elif stones[q] == color:
                    reached.add(q)
                    frontier.append(q)
        return len(eyes) >= 2 or any(len(regions.points[r]) > MAX_DEAD_EYE for r in eyes)

    for captor in (BLACK, WHITE):
        prey = 3 - captor
        enclosure_of, enclosures = labels[captor]  # the points without captor stones
        reach_of, reaches = labels[prey]  # what captor stones reach through empty points
        strength = [sum(1 for p in points if stones[p] == captor) for points in reaches]
        # The enclosures whose prey stones border each reach: a reach bordered by one
        # enclosure's prisoners only, its empty points all in that enclosure, lies inside
        # it (their eye, if they live), and encloses nothing.
        bordering = [{enclosure_of[q] for p in points for q in adj[p] if stones[q] == prey}
                     for points in reaches]
        inside = [{enclosure_of[p] for p in points if stones[p] == EMPTY}
                  for points in reaches]
        for number, enclosure in enumerate(enclosures):
            prisoners = [p for p in enclosure if stones[p] == prey]
            wall = {q for p in enclosure for q in adj[p] if stones[q] == captor}
            walls = {reach_of[q] for q in wall}
            walls = {w for w in walls if not bordering[w] == inside[w] == {number}}
            if not prisoners or not walls or len(enclosure) > len(wall) ** 2 / 2:
                continue  # no wall around them, or one too short to enclose so much
            eyes = [p for p in enclosure if stones[p] == EMPTY and reach_of[p] not in walls]
            if (CAPTORS * len(prisoners) > sum(strength[w] for w in walls)
                    or not _few_eyes(board, eyes)):
                continue
            # A captor string next to one of theirs with no more liberties that does not
            # live by itself: a race (or a seki), not a capture.
            if not any(board.liberties_at(q) <= board.liberties_at(p) and not has_room(q)
                       for p in prisoners for q in adj[p] if stones[q] == captor):
                dead.update(prisoners)
    groups = board.groups()
    eyes_of, *_ = _chains(board, groups)
    for g in groups:
        if _is_dead(board, g, eyes_of[id(g)]):
            dead |= g.stones
    return dead


def final_ownership(board: Board) -> list[float]:
    """Black's view of who owns each point once play has ended (+1 Black, -1 White, 0
    nobody), dead stones as their captor's: see "At the end of play" above."""
    dead = end_of_play_dead(board)
    lifted = without(board, dead) if dead else board
    owner = {BLACK: 1.0, WHITE: -1.0}
    view = [owner.get(s, 0.0) for s in board.stones]
    regions = empty_regions(lifted)
    for points, borders in zip(regions.points, regions.borders, strict=True):
        value = owner.get(borders, 0.0)  # the border mask: 1 or 2 for one colour only
        for p in points:
            view[p] = value
    for p in dead:
        view[p] = -owner[board.stones[p]]
    return view

