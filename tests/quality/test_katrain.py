"""The KaTrain accuracy is KaTrain's: the loop of ``game_report`` in katrain/core/ai.py
(sanderland/katrain at 30ccf864, lines 81-141) followed step by step over KaTrain's own data
shapes, against go19's column sums.

KaTrain cannot be imported here (it needs Kivy, a GUI toolkit), so :func:`katrain_report`
restates that function on nodes shaped as KaTrain's ``GameNode`` is: each move node has
``points_lost`` (``player_sign × (parent score − score)``, None without both analyses), its
player, and its parent's ``candidate_moves``. At one visit KataGo returns no ``moveInfos``,
and ``GameNode.candidate_moves`` then gives one candidate, the root's info with
``pointsLost`` 0, ``order`` 0 and the policy's top move, and no ``prior`` key (KataGo's
``rootInfo`` has none): the labels' case.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest

from orchestrator.quality import summary
from orchestrator.quality.moves import OWN, GameMoves

ADDITIONAL_MOVE_ORDER = 999  # katrain/core/constants.py


@dataclass
class Node:
    """A move node as game_report reads it."""

    player: str  # "B" or "W"
    points_lost: float | None
    candidates: list[dict] = field(default_factory=list)  # the parent's candidate_moves


def one_visit_candidates(root_score: float) -> list[dict]:
    """``GameNode.candidate_moves`` when the analysis has no moves (a single visit)."""
    return [{"scoreLead": root_score, "winrate": 0.5, "visits": 1, "pointsLost": 0,
             "winrateLost": 0, "order": 0, "move": "D4", "pv": ["D4"]}]


def katrain_report(nodes: list[Node]) -> dict[str, dict]:
    """``game_report``'s sums per player ("B", "W"): accuracy and weighted point loss."""
    ptloss: dict[str, list[float]] = {"B": [], "W": []}
    weights: dict[str, list[tuple[float, float]]] = {"B": [], "W": []}
    for n in nodes:
        if n.points_lost is None:
            continue
        points_lost = max(0, n.points_lost)
        ptloss[n.player].append(points_lost)
        filtered = [d for d in n.candidates if d["order"] < ADDITIONAL_MOVE_ORDER and "prior" in d]
        weight = min(1.0, sum(max(d["pointsLost"], 0) * d["prior"] for d in filtered)
                     / (sum(d["prior"] for d in filtered) or 1e-6))
        adj_weight = max(0.05, min(1.0, max(weight, points_lost / 4)))
        weights[n.player].append((weight, adj_weight))
    out = {}
    for bw in "BW":
        wt_loss = (sum(s * aw for s, (_, aw) in zip(ptloss[bw], weights[bw], strict=True))
                   / (sum(aw for _, aw in weights[bw]) or 1e-6))
        if ptloss[bw]:
            out[bw] = {"accuracy": 100 * 0.75 ** wt_loss, "weighted_ptloss": wt_loss,
                       "mean_ptloss": sum(ptloss[bw]) / len(ptloss[bw]),
                       "complexity": sum(w for w, _ in weights[bw]) / len(ptloss[bw])}
    return out


def _game(seed: int, n: int) -> tuple[GameMoves, np.ndarray]:
    """A game of ``n`` moves with Black's score lead before each move and after the last:
    losses below 0, between 0 and 0.2 (weight 0.05), between 0.2 and 4 and above 4
    (weight 1) for both colours, then random ones; two positions without a label."""
    rng = np.random.default_rng(seed)
    color = np.where(np.arange(n) % 2 == 0, 1, 2).astype(np.uint8)
    sign = np.where(color == 1, 1.0, -1.0)
    loss = np.concatenate([np.repeat([-1.5, 0.1, 0.15, 2.5, 7.0], 2), rng.normal(1, 3, n - 10)])
    lead = np.concatenate([[0.5], 0.5 - np.cumsum(sign * loss)])
    lead[rng.integers(12, n + 1, 2)] = np.nan
    moves = GameMoves(
        number=np.arange(1, n + 1, dtype=np.int32), color=color,
        origin=np.full(n, OWN, np.uint8), played=np.full(n, 60, np.int16),
        best=np.full(n, 72, np.int16), loss=sign * (lead[:-1] - lead[1:]),
        rank=np.full(n, 3, np.int16), lead=lead[:-1])
    return moves, lead


def _nodes(moves: GameMoves, lead: np.ndarray) -> list[Node]:
    nodes = []
    for i in range(len(moves)):
        loss = None if np.isnan(lead[i]) or np.isnan(lead[i + 1]) else float(moves.loss[i])
        nodes.append(Node("B" if moves.color[i] == 1 else "W", loss,
                          one_visit_candidates(float(lead[i]))))
    return nodes


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_katrain_accuracy_is_katrains_game_report(seed: int) -> None:
    moves, lead = _game(seed, 61)
    theirs = katrain_report(_nodes(moves, lead))
    for color, bw in ((1, "B"), (2, "W")):
        stats = summary.statistics(summary.tally([(moves, color)]).sums[0, 0])
        assert theirs[bw]["complexity"] == 0  # no candidate with a prior at one visit
        assert stats["katrain_accuracy"] == pytest.approx(theirs[bw]["accuracy"], rel=1e-12)
        assert stats["mean_loss"] == pytest.approx(theirs[bw]["mean_ptloss"], rel=1e-12)
        # go19's uniform one is another number (KaTrain weighs the costly moves more).
        assert stats["accuracy"] > stats["katrain_accuracy"] + 1


def test_katrain_weights_by_hand() -> None:
    loss = np.array([0.0, 0.1, 0.2, 2.0, 4.0, 9.0])
    assert summary.katrain_weight(loss).tolist() == pytest.approx([0.05, 0.05, 0.05, 0.5, 1, 1])
    # One move losing 0 and one losing 8: KaTrain 100 × 0.75 ** (8 / 1.05), uniform 0.75 ** 4.
    stats = summary.statistics(np.array([2, 8, 0, 0, 1, 1, 0, 1.05, 8.0]))
    assert stats["katrain_accuracy"] == pytest.approx(100 * 0.75 ** (8 / 1.05))
    assert stats["accuracy"] == pytest.approx(100 * 0.75 ** 4)
    assert math.isclose(stats["katrain_accuracy"], 11.2, abs_tol=0.05)
