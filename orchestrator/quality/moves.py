"""One game's moves judged by KataGo: point loss, KataGo's move, the played move's rank.

**Point loss** is KaTrain's (``GameNode.points_lost`` in katrain/core/game_node.py)::

    loss = player_sign × (scoreLead before the move − scoreLead after it)

with ``player_sign`` +1 for a Black move and −1 for a White one, and ``scoreLead`` Black's
expected lead as go19's labels store it (``reportAnalysisWinratesAs = BLACK``). A move that
keeps the lead loses 0; a negative loss means KataGo thought better of the position after
the move than before it (its own noise, or the opponent's earlier mistake showing). The
loss of the last move needs the position after it, which labels made for review hold
(``go19 label --review``).

**Rank**: 1 + the number of points (pass included) KataGo's raw policy gives more than the
played move, so KataGo's favourite has rank 1 and ties share a rank. **Top move**: the played
move is the label's ``best_move`` (at one visit the policy's top point, with more visits the
search's choice).

Points are ``coords`` indices (``row * 19 + col``, 361 the pass), as in the labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from orchestrator.color import BLACK

# Where a move came from: the player's own choice, the opening book, or a fallback after a
# timeout, error or illegal reply (the codes of orchestrator.positions.samples).
OWN, OPENING, FALLBACK = 0, 1, 2


@dataclass(frozen=True, slots=True)
class GameMoves:
    """Every move of one game, in order; -1 / NaN where a label is missing."""

    number: np.ndarray  # int32 (n,): 1-based move number
    color: np.ndarray  # uint8 (n,): 1 Black, 2 White
    origin: np.ndarray  # uint8 (n,): OWN, OPENING or FALLBACK
    played: np.ndarray  # int16 (n,): the move, a coords index
    best: np.ndarray  # int16 (n,): KataGo's move, -1 without a label before the move
    loss: np.ndarray  # float64 (n,): point loss, NaN without labels before and after
    rank: np.ndarray  # int16 (n,): the played move's policy rank, -1 without a label
    lead: np.ndarray  # float64 (n,): Black's score lead before the move, NaN without a label

    def __len__(self) -> int:
        return len(self.number)


def point_loss(color: np.ndarray, lead_before: np.ndarray, lead_after: np.ndarray) -> np.ndarray:
    """The mover's points lost by each move (KaTrain's ``points_lost``); leads are Black's."""
    sign = np.where(np.asarray(color) == BLACK, 1.0, -1.0)
    return sign * (np.asarray(lead_before, np.float64) - np.asarray(lead_after, np.float64))


def policy_rank(policy: np.ndarray, played: np.ndarray) -> np.ndarray:
    """Each played move's rank in its row of ``policy`` (rows of 362, illegal points -1):
    1 + how many points the policy prefers; -1 for a row without a policy (NaN)."""
    policy = np.asarray(policy, np.float64)
    played = np.asarray(played, np.intp)
    if not len(played):
        return np.empty(0, np.int16)
    mine = policy[np.arange(len(played)), played]
    rank = 1 + np.count_nonzero(policy > mine[:, None], axis=1)
    return np.where(np.isnan(mine), -1, rank).astype(np.int16)


def judge(color: np.ndarray, played: np.ndarray, origin: np.ndarray, lead: np.ndarray,
          best: np.ndarray, policy: np.ndarray) -> GameMoves:
    """A game's ``n`` moves from the labels of its positions: ``lead`` has ``n + 1``
    values (Black's score lead before each move and after the last, NaN where there is no
    label), ``best`` and ``policy`` one row per position before a move (-1 / NaN rows where
    there is no label)."""
    n = len(played)
    lead = np.asarray(lead, np.float64)
    if len(lead) != n + 1:
        raise ValueError(f"{n} moves need {n + 1} score leads (before each move and after "
                         f"the last), got {len(lead)}")
    return GameMoves(
        number=np.arange(1, n + 1, dtype=np.int32),
        color=np.asarray(color, np.uint8),
        origin=np.asarray(origin, np.uint8),
        played=np.asarray(played, np.int16),
        best=np.asarray(best, np.int16),
        loss=point_loss(color, lead[:-1], lead[1:]),
        rank=policy_rank(policy, played),
        lead=lead[:-1],
    )
