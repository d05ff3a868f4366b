"""GSPRT log-likelihood ratios against fastchess's published numbers and a brute-force MLE.

Sources of expected values:
- FC: Disservin/fastchess ``app/tests/sprt_test.cpp`` (``SPRT(alpha, beta, elo0, elo1, model)``,
  ``getLLR`` checked to 1 %). ``Stats`` argument order as in test_elo.py.
- ZENO: Toudonou/zeno ``docs/testing.md``, fastchess match reports
  "LLR: x (…) (lower, upper) [elo0, elo1]" with "Ptnml(0-2): […]", fastchess's default
  normalized model, LLR printed to 2 decimals.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from orchestrator.ratings import (
    NELO_PER_T,
    Pentanomial,
    RatingsError,
    SequentialSprt,
    Wdl,
    llr,
    sprt,
)
from orchestrator.ratings.sprt import sprt_bounds


def _penta(ll: int, ld: int, wl: int, dd: int, wd: int, ww: int) -> Pentanomial:
    return Pentanomial(ll=ll, ld=ld, wl_dd=wl + dd, wd=wd, ww=ww)


@pytest.mark.parametrize(
    ("counts", "elo0", "elo1", "model", "expected"),
    [
        # FC "normalized trinomial 1" / "2"
        (Wdl(36433, 36027, 68692), 0, 2, "normalized", 0.92),
        (Wdl(10871, 10650, 20431), -1.75, 0.25, "normalized", 2.30),
        # FC "logistic trinomial 1" / "2"
        (Wdl(21404, 21184, 40708), 0.5, 2.5, "logistic", -1.57),
        (Wdl(57433, 57030, 106593), 0, 2, "logistic", -2.59),
        # FC "normalized pentanomial 1" / "2"
        (_penta(365, 16618, 36029, 200, 16974, 390), 0, 2, "normalized", 2.25),
        (_penta(127, 4883, 10311, 401, 5150, 104), -1.75, 0.25, "normalized", 3.01),
        # FC "logistic pentanomial 1" / "2"
        (_penta(223, 9863, 20279, 1000, 10037, 246), 0.5, 2.5, "logistic", -3.07),
        (_penta(871, 26175, 55003, 980, 26678, 821), 0, 2, "logistic", -4.98),
    ],
)
def test_llr_matches_fastchess_unit_tests(counts, elo0, elo1, model, expected) -> None:
    assert llr(counts, elo0, elo1, model) == pytest.approx(expected, rel=0.01)


@pytest.mark.parametrize(
    ("ptnml", "elo0", "elo1", "expected", "decision"),
    [
        # ZENO "History Heuristic": LLR: 0.53 (-2.25, 2.89) [0.00, 2.00], still running
        ([224, 309, 874, 347, 246], 0, 2, 0.53, None),
        # ZENO "History Heuristic" vs Zeno 1.0: LLR: 2.08 (-2.25, 2.89) [15.00, 18.00]
        ([183, 319, 779, 398, 321], 15, 18, 2.08, None),
        # ZENO "Change the conditions …": LLR: 2.97 (-2.94, 2.94) [0.00, 5.00], H1 accepted
        # (alpha = beta = 0.05 there; the bounds below are the 0.05/0.10 ones: still H1).
        ([200, 557, 1005, 643, 249], 0, 5, 2.97, "H1"),
    ],
)
def test_llr_matches_fastchess_match_reports(ptnml, elo0, elo1, expected, decision) -> None:
    result = sprt(Pentanomial.from_counts(ptnml), elo0, elo1, 0.05, 0.10, model="normalized")
    assert result.llr == pytest.approx(expected, abs=0.005)
    # (-2.25, 2.89) as printed: ln(0.10/0.95) = -2.2513, ln(0.90/0.05) = 2.8904.
    assert result.lower == pytest.approx(-2.2513, abs=1e-4)
    assert result.upper == pytest.approx(2.8904, abs=1e-4)
    assert result.decision == decision


def _regularized(freq: list[int]) -> tuple[float, np.ndarray]:
    w = np.array([f if f > 0 else 1e-3 for f in freq], dtype=float)
    return float(w.sum()), w / w.sum()


def _maximize_on_curve(curve, phat: np.ndarray, lo: float, hi: float) -> float:
    """max of Σ p̂·log p over p = curve(x), x in [lo, hi]: a dense grid, then golden section."""

    def loglik(x):
        p = np.stack(curve(np.asarray(x, dtype=float)))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where((p > 0).all(axis=0), phat @ np.log(np.where(p > 0, p, 1.0)), -np.inf)

    grid = np.linspace(lo, hi, 20001)
    k = int(np.argmax(loglik(grid)))
    # The maximum may sit closer to an end than one grid step (a regularized 0.001 outcome).
    a, b = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
    g = (math.sqrt(5) - 1) / 2
    for _ in range(120):
        c, d = b - g * (b - a), a + g * (b - a)
        if loglik(c) > loglik(d):
            b = d
        else:
            a = c
    return float(loglik((a + b) / 2))


def _brute_force_llr(wdl: Wdl, elo0: float, elo1: float, model: str) -> float:
    """Direct constrained MLE of the trinomial (L, D, W), independent of the code under test.

    Logistic: the score W + D/2 = s fixes W = L + 2s - 1 and D = 2 - 2L - 2s, leaving L.
    Normalized: (μ - ½)/σ = t fixes σ² = ((μ - ½)/t)², and with μ = W + D/2,
    E[x²] = W + D/4 = σ² + μ² gives D = 4(μ - μ² - σ²), W = μ - D/2, L = 1 - W - D,
    leaving μ. (t = 0 is μ = ½ with L = W free.)
    """
    n, phat = _regularized([wdl.losses, wdl.draws, wdl.wins])

    def best(elo: float) -> float:
        if model == "logistic":
            s = 1.0 / (1.0 + 10.0 ** (-elo / 400.0))
            return _maximize_on_curve(
                lambda x: (x, 2 - 2 * x - 2 * s, x + 2 * s - 1), phat,
                max(0.0, 1 - 2 * s), 1 - s,
            )
        t = elo / NELO_PER_T
        if t == 0.0:
            return _maximize_on_curve(lambda x: (x, 1 - 2 * x, x), phat, 0.0, 0.5)

        def on_curve(mu):
            d = 4 * (mu - mu * mu - ((mu - 0.5) / t) ** 2)
            w = mu - d / 2
            return (1 - w - d, d, w)

        return _maximize_on_curve(on_curve, phat, *((0.5, 1.0) if t > 0 else (0.0, 0.5)))

    return n * (best(elo1) - best(elo0))


@pytest.mark.parametrize(
    ("wdl", "elo0", "elo1", "model"),
    [
        (Wdl(60, 40, 0), 0, 30, "logistic"),  # the [stop] example of a go19 matchup
        (Wdl(60, 40, 0), 0, 30, "normalized"),
        (Wdl(35, 40, 25), -10, 20, "logistic"),
        (Wdl(35, 40, 25), -10, 20, "normalized"),
        (Wdl(9, 0, 0), 0, 30, "logistic"),  # unseen outcomes regularized
        (Wdl(136, 96, 111), 0, 5, "normalized"),
        # Lopsided data and large t, where the fixed-point iteration of fishtest and
        # fastchess stalls or cannot bracket its root.
        (Wdl(50, 0, 0), -20, 10, "normalized"),
        (Wdl(3, 40, 2), 0, 300, "normalized"),
        (Wdl(0, 1000, 0), -400, -300, "normalized"),
    ],
)
def test_llr_matches_brute_force_trinomial_mle(wdl: Wdl, elo0, elo1, model) -> None:
    assert llr(wdl, elo0, elo1, model) == pytest.approx(
        _brute_force_llr(wdl, elo0, elo1, model), abs=1e-6
    )


def test_degenerate_all_draws_follows_the_true_mle_not_fastchess() -> None:
    # FC "normalized trinomial 3" (W=L=0, D=16700, [0, 5]) expects +2.97, but H0 (t = 0) contains
    # the observed distribution itself, so its maximized likelihood is the global maximum and
    # the LLR cannot be positive: fastchess's loose stopping rule (1e-4) leaves its fixed-point
    # iteration short of the MLE here. The brute-force MLE agrees with us (about -3.45).
    ours = llr(Wdl(0, 0, 16700), 0, 5, "normalized")
    assert ours < 0.0
    assert ours == pytest.approx(_brute_force_llr(Wdl(0, 0, 16700), 0, 5, "normalized"), abs=1e-6)


def test_go_without_draws_hand_checked() -> None:
    # Half-point komi: 60 wins, 40 losses, no draws, H0 0 Elo vs H1 30 Elo (logistic).
    # With two observed outcomes plus a regularized 0.001 draw, the MLE under score s is
    # nearly Bernoulli(s): LLR ≈ 60·ln(s1/s0) + 40·ln((1-s1)/(1-s0)),
    # s0 = 0.5, s1 = 1/(1 + 10^(-30/400)) = 0.543066:
    # 60·ln(1.086132) + 40·ln(0.913868) = 60·0.082622 + 40·(-0.090068) = 1.3546.
    assert llr(Wdl(60, 40, 0), 0, 30) == pytest.approx(1.3546, abs=2e-3)


def test_bounds_and_decisions() -> None:
    # ln(0.05/0.95) = -2.944439, ln(0.95/0.05) = 2.944439.
    assert sprt_bounds(0.05, 0.05) == pytest.approx((-2.944439, 2.944439), abs=1e-6)
    strong = sprt(Wdl(wins=200, losses=50), elo0=0, elo1=30)
    weak = sprt(Wdl(wins=50, losses=200), elo0=0, elo1=30)
    assert strong.decision == "H1" and strong.llr >= strong.upper
    assert weak.decision == "H0" and weak.llr <= weak.lower
    empty = sprt(Wdl(), elo0=0, elo1=30)
    assert empty.llr == 0.0 and empty.decision is None


def test_color_swapped_pairs_count_as_one_sample_each() -> None:
    # Flipping the counts is the same test from the other side: LLR(H1: +e) for the
    # flipped counts equals LLR for the original with the hypotheses mirrored.
    p = Pentanomial.from_counts([10, 20, 40, 25, 15])
    for model in ("logistic", "normalized"):
        assert llr(p.flipped(), -5, 0, model) == pytest.approx(-llr(p, 0, 5, model), abs=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"elo0": 5, "elo1": 0}, "elo0 < elo1"),
        ({"elo0": 0, "elo1": 5, "alpha": 0}, "alpha"),
        ({"elo0": 0, "elo1": 5, "alpha": 0.6, "beta": 0.5}, "alpha \\+ beta"),
        ({"elo0": 0, "elo1": 5, "model": "bayes"}, "model"),
    ],
)
def test_bad_parameters_raise_one_clear_error(kwargs, message) -> None:
    with pytest.raises(RatingsError, match=message):
        sprt(Wdl(3, 2, 1), **kwargs)


WIN, LOSS = Wdl(wins=1), Wdl(losses=1)


def test_a_sequential_test_decides_at_the_first_crossing_and_counts_nothing_after() -> None:
    test = SequentialSprt(0, 30)
    samples = [WIN] * 200
    decided_at = next(n for n in range(1, 201) if sprt(Wdl(wins=n), 0, 30).decision)
    for n, sample in enumerate(samples, 1):
        counted = test.add(sample)
        assert counted == (n <= decided_at)
    assert test.games == decided_at and test.counts == Wdl(wins=decided_at)
    assert test.result == sprt(Wdl(wins=decided_at), 0, 30)
    assert not test.add(LOSS) and test.counts == Wdl(wins=decided_at)


def test_min_games_holds_the_decision_back_not_the_llr() -> None:
    early = next(n for n in range(1, 200) if sprt(Wdl(wins=n), 0, 30).decision)
    test = SequentialSprt(0, 30, min_games=early + 10)
    for _ in range(early + 9):
        test.add(WIN)
    assert test.result.llr > test.result.upper and not test.decided
    test.add(WIN)
    assert test.decided and test.games == early + 10


def test_pairs_count_as_pentanomial_samples_and_kinds_do_not_mix() -> None:
    test = SequentialSprt(0, 35)
    test.add(Pentanomial(ww=1))
    test.add(Pentanomial(wl_dd=1))
    assert test.counts == Pentanomial(wl_dd=1, ww=1) and test.games == 4
    assert test.result.llr == sprt(Pentanomial(wl_dd=1, ww=1), 0, 35).llr
    with pytest.raises(RatingsError, match="Wdl sample among Pentanomial"):
        test.add(WIN)
    with pytest.raises(RatingsError, match="elo0 < elo1"):
        SequentialSprt(35, 0)
