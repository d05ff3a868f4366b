"""The empty regions of a board, found once: area scoring (:mod:`.scoring`), the live
estimate (:mod:`.estimate`, with dead stones lifted off) and the heuristic AI
(:mod:`orchestrator.players.heuristic`) all read them from :func:`empty_regions`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.color import EMPTY
from orchestrator.rules.board import Board, neighbours_table


@dataclass(frozen=True, slots=True)
class EmptyRegions:
    """Maximal regions of connected empty points, numbered in board order of their first
    point. ``region_of[p]`` is the region of point ``p`` (-1 on a stone); per region:
    ``points``, ``borders`` (the colors of the stones next to it as a bitmask: 1 black,
    2 white, 3 both) and ``touching`` (the points of those stones, one entry per
    adjacency, so a stone next to several of its points is there several times)."""

    region_of: list[int]
    points: list[list[int]]
    borders: list[int]
    touching: list[list[int]]


def empty_regions(board: Board, lifted: Sequence[bool] | None = None) -> EmptyRegions:
    """The board's empty regions; with ``lifted``, the stones at its True points count
    as empty (dead stones taken off)."""
    # The color of the stone that stands at each point (0: none, or lifted off).
    standing: Sequence[int] = board.stones if lifted is None else [
        EMPTY if up else s for s, up in zip(board.stones, lifted, strict=True)]
    adj = neighbours_table(board.size)
    region_of = [-1] * board.area
    points_of: list[list[int]] = []
    borders: list[int] = []
    touching: list[list[int]] = []
    for start in range(board.area):
        if standing[start] or region_of[start] >= 0:
            continue
        rid = len(points_of)
        region_of[start] = rid
        points = [start]
        touch: list[int] = []
        mask = 0
        i = 0
        while i < len(points):
            p = points[i]
            i += 1
            for q in adj[p]:
                color = standing[q]
                if color:
                    mask |= color
                    touch.append(q)
                elif region_of[q] < 0:
                    region_of[q] = rid
                    points.append(q)
        points_of.append(points)
        borders.append(mask)
        touching.append(touch)
    return EmptyRegions(region_of, points_of, borders, touching)
