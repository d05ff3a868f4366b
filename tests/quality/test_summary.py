"""The per-player numbers: sums worked out by hand, and the bootstrap intervals against a
plain resampling loop written here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from orchestrator.quality import summary
from orchestrator.quality.moves import FALLBACK, OPENING, OWN, GameMoves

B, W = 1, 2


def game(losses: list[float], colors: list[int], origins: list[int] | None = None,
         played: list[int] | None = None, best: list[int] | None = None,
         ranks: list[int] | None = None, numbers: list[int] | None = None) -> GameMoves:
    n = len(losses)
    return GameMoves(
        number=np.array(numbers or range(1, n + 1), np.int32),
        color=np.array(colors, np.uint8),
        origin=np.array(origins or [OWN] * n, np.uint8),
        played=np.array(played or [10] * n, np.int16),
        best=np.array(best or [11] * n, np.int16),
        loss=np.array(losses, np.float64),
        rank=np.array(ranks or [7] * n, np.int16),
        lead=np.zeros(n),
    )


def test_tally_by_hand() -> None:
    g = game(losses=[-1.0, 2.0, 4.0, 7.0, 13.0, 0.5, math.nan, 9.0],
             colors=[B, W, B, W, B, W, B, B],
             origins=[OWN, OWN, OWN, OWN, OWN, OWN, OWN, FALLBACK],
             played=[11, 10, 10, 10, 3, 10, 10, 10], best=[11, 11, 11, 11, 11, 11, 11, 11],
             ranks=[1, 7, 5, 7, 6, 7, 7, 7])
    t = summary.tally([(g, B)])
    # Black's counted moves: 1 (loss -1 -> 0, KataGo's move, rank 1), 3 (4.0, rank 5),
    # 5 (13.0); move 7 has no loss (unlabelled), move 8 is a fallback (loss 9).
    moves, loss, top1, top5, b3, b6, b12, weight, weighted = t.sums[0, 0]
    assert (moves, loss, top1, top5, b3, b6, b12) == (3, 17.0, 1, 2, 2, 1, 1)
    # KaTrain's weights: max(0.05, min(1, loss / 4)) for losses 0, 4 and 13.
    assert (weight, weighted) == pytest.approx((0.05 + 1 + 1, 0 + 4 + 13))
    assert (t.opening, t.fallback, t.unlabelled) == (0, 1, 1)
    assert (t.fallback_loss, t.fallback_labelled) == (9.0, 1)
    stats = summary.statistics(t.sums[0, 0])
    assert stats["mean_loss"] == pytest.approx(17 / 3)
    assert stats["accuracy"] == pytest.approx(100 * 0.75 ** (17 / 3))
    assert stats["katrain_accuracy"] == pytest.approx(100 * 0.75 ** (17 / 2.05))
    assert stats["top1"] == pytest.approx(100 / 3)
    assert stats["blunders12"] == pytest.approx(100 / 3)


def test_phases_split_by_move_number() -> None:
    # Black moves at 49, 51, 150, 151 (White's in between are not Black's).
    g = game(losses=[1.0, 0.0, 2.0, 0.0, 3.0, 0.0, 4.0], colors=[B, W, B, W, B, W, B],
             numbers=[49, 50, 51, 52, 150, 151, 151])
    sums = summary.tally([(g, B)]).sums[0]
    names = [p[0] for p in summary.PHASES]
    by_phase = dict(zip(names, sums[:, 1], strict=True))
    assert by_phase == {"all": 10.0, "1-50": 1.0, "51-150": 5.0, "151+": 4.0}


def test_opening_moves_are_counted_apart() -> None:
    g = game(losses=[5.0, 5.0, 1.0], colors=[B, W, B], origins=[OPENING, OPENING, OWN])
    t = summary.tally([(g, B)])
    assert (t.opening, t.moves) == (1, 1)
    assert t.sums[0, 0, 1] == 1.0


# Student's t 97.5 % points from the tables.
T_TABLE = {4: 2.776, 11: 2.201, 22: 2.074}


def _expanded_tail(games: int) -> float:
    """Hesterberg's expanded percentile: Φ(−√(n/(n−1)) · t(n−1)), in %."""
    x = math.sqrt(games / (games - 1)) * T_TABLE[games - 1]
    return 100 * 0.5 * math.erfc(x / math.sqrt(2))


# Student's t 97.5 % points to 20 digits, computed apart (mpmath at 40 digits: the root of
# the density's integral from 0, minus 0.475), and two closed forms: for 1 degree of freedom
# tan(0.475 π), for 2 degrees 0.95 √(2 / (1 − 0.95²)).
T_EXACT = {1: math.tan(0.475 * math.pi), 2: 0.95 * math.sqrt(2 / (1 - 0.95**2)),
           4: 2.7764451051977943578, 10: 2.2281388519862747484, 100: 1.9839715185235522866}


def test_t_quantile_is_exact() -> None:
    for df, t in T_EXACT.items():
        assert summary.t_quantile(df) == pytest.approx(t, rel=1e-13, abs=0), df
    # The expanded interval's tail at 6 games: Φ(−√(6/5) · t(5)) with the exact t is
    # 0.24318 %; the series it replaced gave 0.24341 %.
    assert summary.tail_percent(6) == pytest.approx(0.243180317, rel=1e-8)
    assert summary.t_cdf(summary.t_quantile(37), 37) == pytest.approx(0.975, abs=1e-15)


def test_t_points_and_the_expanded_tails() -> None:
    for df, t in T_TABLE.items():
        assert summary.t_quantile(df) == pytest.approx(t, abs=5e-4)
    assert summary.tail_percent(5) == pytest.approx(_expanded_tail(5), rel=5e-3)
    assert summary.tail_percent(5) < 0.1 < summary.tail_percent(23) < 2.5  # widened
    assert summary.tail_percent(2000) == pytest.approx(2.5, abs=0.01)  # the plain one


def _plain_interval(values: list[tuple[float, float]], seed: int,
                    resamples: int) -> tuple[float, float]:
    """The ratio sum(loss) / sum(moves) over games drawn with replacement, one draw at a
    time, then the expanded percentiles: what the module must compute."""
    rng = np.random.default_rng(seed)
    ratios = []
    for _ in range(resamples):
        picks = rng.integers(0, len(values), len(values))
        loss = sum(values[p][0] for p in picks)
        moves = sum(values[p][1] for p in picks)
        ratios.append(loss / moves)
    tail = _expanded_tail(len(values))
    low, high = np.percentile(ratios, [tail, 100 - tail])
    return float(low), float(high)


def test_bootstrap_equals_a_plain_resampling() -> None:
    rng = np.random.default_rng(3)
    games = []
    for _ in range(23):
        n = int(rng.integers(5, 30))
        games.append((game(list(rng.exponential(1.5, n)), [B] * n), B))
    t = summary.tally(games)
    per_game = [(float(t.sums[g, 0, 1]), float(t.sums[g, 0, 0])) for g in range(t.games)]
    got = summary.estimates(t, seed=11, resamples=500)["all"]["mean_loss"]
    low, high = _plain_interval(per_game, seed=11, resamples=500)
    # The same draws; the percentile levels agree to the table's t (3 digits).
    assert got.low == pytest.approx(low, rel=1e-3)
    assert got.high == pytest.approx(high, rel=1e-3)
    assert got.value == pytest.approx(sum(v[0] for v in per_game) / sum(v[1] for v in per_game))
    # Seeded: the same interval every time.
    assert summary.estimates(t, seed=11, resamples=500)["all"]["mean_loss"] == got


def test_paired_difference_resamples_both_players_together() -> None:
    rng = np.random.default_rng(5)
    a_games, b_games = [], []
    for _ in range(12):
        g = game(list(rng.exponential(1.0, 20)) + list(rng.exponential(2.0, 20)),
                 [B] * 20 + [W] * 20)
        a_games.append((g, B))
        b_games.append((g, W))
    a, b = summary.tally(a_games), summary.tally(b_games)
    d = summary.loss_difference(a, b, seed=2, resamples=400)
    rng2 = np.random.default_rng(2)
    diffs = []
    for _ in range(400):
        picks = rng2.integers(0, 12, 12)
        diffs.append(b.sums[picks, 0, 1].sum() / b.sums[picks, 0, 0].sum()
                     - a.sums[picks, 0, 1].sum() / a.sums[picks, 0, 0].sum())
    tail = _expanded_tail(12)
    assert (d.low, d.high) == pytest.approx(tuple(np.percentile(diffs, [tail, 100 - tail])),
                                            rel=1e-3)
    assert d.excludes_zero and d.low > 0  # b loses more: a plays better


def test_too_few_games_have_no_interval_and_never_decide() -> None:
    g = game([0.0] * 10 + [5.0] * 10, [B] * 10 + [W] * 10)
    a = summary.tally([(g, B)] * (summary.MIN_GAMES - 1))
    b = summary.tally([(g, W)] * (summary.MIN_GAMES - 1))
    d = summary.loss_difference(a, b)
    assert d.value == pytest.approx(5.0) and math.isnan(d.low) and not d.excludes_zero
    assert summary.first_decided(a, b) == (None, None)
    a = summary.tally([(g, B)] * summary.MIN_GAMES)
    b = summary.tally([(g, W)] * summary.MIN_GAMES)
    assert summary.first_decided(a, b) == (summary.MIN_GAMES, summary.MIN_GAMES)


def test_first_decided_and_for_good() -> None:
    # Games where a is clearly better, then a run of games where b is: the interval
    # excludes 0 early, then stops doing so once b's games pile up.
    good = game([0.0] * 10 + [3.0] * 10, [B] * 10 + [W] * 10)
    bad = game([6.0] * 10 + [0.0] * 10, [B] * 10 + [W] * 10)
    order = [good] * 8 + [bad] * 8
    a = summary.tally([(g, B) for g in order])
    b = summary.tally([(g, W) for g in order])
    first, steady = summary.first_decided(a, b, resamples=300)
    assert first == summary.MIN_GAMES
    assert steady is None  # with all 16 games the difference is 0 on average


def test_histogram_curve_and_worst() -> None:
    g1 = game([0.2, 9.0, 25.0, 1.5], [B, W, B, W])
    g2 = game([3.0, 0.0], [B, W])
    edges = [0.0, 1.0, 2.0, 5.0, 10.0]
    assert summary.loss_histogram([(g1, B), (g2, B)], edges) == [1, 0, 1, 1]  # 25 in the last
    assert summary.worst([(g1, B), (g2, B)], 2) == [(0, 2), (1, 0)]
    curve = summary.loss_by_move([(g1, B), (g2, B)], bucket=2)
    assert curve == [(1.5, pytest.approx((0.2 + 3.0) / 2), 2), (3.5, 25.0, 1)]
