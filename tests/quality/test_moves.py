"""Point loss and policy rank, checked against numbers worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from orchestrator.quality.moves import OWN, judge, point_loss, policy_rank

B, W = 1, 2
PASS_INDEX = 361


def test_point_loss_sign_for_black_and_white() -> None:
    # Black's lead 2.0 -> 0.5 after a Black move: Black lost 1.5 points.
    # Black's lead 0.5 -> 3.0 after a White move: White lost 2.5 points.
    # Black's lead 3.0 -> 4.0 after a Black move: the move "gained" a point (loss -1).
    # Black's lead 4.0 -> 5.5 after a White move: White lost 1.5.
    colors = np.array([B, W, B, W])
    leads = np.array([2.0, 0.5, 3.0, 4.0, 5.5])
    assert point_loss(colors, leads[:-1], leads[1:]) == pytest.approx([1.5, 2.5, -1.0, 1.5])


def test_judge_pass_and_last_move() -> None:
    # Four moves, the third a pass: the last move's loss comes from the fifth lead (the
    # position after it); a missing lead anywhere leaves that move's loss NaN only.
    policy = np.full((4, 362), 0.001)
    policy[:, 0] = 0.5  # KataGo's favourite everywhere: A19
    policy[2, PASS_INDEX] = 0.2  # the pass is second in row 2
    played = np.array([0, 40, PASS_INDEX, 60])
    leads = np.array([0.5, 1.5, 0.0, -2.0, -1.0])
    moves = judge(np.array([B, W, B, W]), played, np.full(4, OWN), leads,
                  np.zeros(4, np.int16), policy)
    # B: 0.5 - 1.5 = -1.0; W: -(1.5 - 0.0) = -1.5; B pass: 0.0 - (-2.0) = 2.0;
    # W (last move): -(-2.0 - (-1.0)) = 1.0.
    assert moves.loss == pytest.approx([-1.0, -1.5, 2.0, 1.0])
    assert moves.number.tolist() == [1, 2, 3, 4]
    assert moves.rank.tolist() == [1, 2, 2, 2]  # 40 and 60 tie at 0.001 behind A19
    leads[4] = np.nan  # labels without the position after the last move
    partial = judge(np.array([B, W, B, W]), played, np.full(4, OWN), leads,
                    np.zeros(4, np.int16), policy)
    assert np.isnan(partial.loss[3]) and partial.loss[:3] == pytest.approx([-1.0, -1.5, 2.0])


def test_rank_counts_only_points_the_policy_prefers() -> None:
    policy = np.full((2, 362), -1.0)  # illegal everywhere but four points
    policy[0, [3, 5, 7, 9]] = [0.1, 0.4, 0.4, 0.1]
    policy[1] = np.nan  # no label for this position
    assert policy_rank(policy, np.array([3, 5])).tolist() == [3, -1]
    assert policy_rank(policy[:1], np.array([7])).tolist() == [1]


def test_judge_wants_a_lead_after_the_last_move() -> None:
    with pytest.raises(ValueError, match="2 moves need 3 score leads"):
        judge(np.array([B, W]), np.array([0, 1]), np.zeros(2), np.zeros(2), np.zeros(2),
              np.zeros((2, 362)))
