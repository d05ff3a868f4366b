"""Generalized SPRT (GSPRT) on trinomial or pentanomial counts, as fishtest and fastchess run it.

H0: the Elo difference is ``elo0``; H1: it is ``elo1``. The log-likelihood ratio is

    LLR = N · Σ p̂ᵢ · (log p₁ᵢ - log p₀ᵢ)

where ``p̂`` is the observed distribution of the N outcomes (games, or colour-swapped
pairs) over their scores ``aᵢ`` and ``p₀``, ``p₁`` are the distributions closest to it
(maximum likelihood) under each hypothesis. The constraint depends on the model:

- ``"logistic"``: the expected score is ``s = 1/(1 + 10^(-elo/400))``. Then
  ``p = p̂/(1 + θ(a - s))`` with θ the root of a secular equation (M. Van den Bergh,
  *Comments on normalized Elo*, proposition 1.1, as fishtest's ``MLE_expected``).
- ``"normalized"``: ``(μ - ½)/σ = t`` with ``t = nElo·ln10/800`` per game (``√2`` times
  that per pair). For a given mean μ the constraint fixes σ, so μ and E[a²] are fixed and
  the best ``p`` solves a linear-moment (empirical likelihood) problem through its convex
  two-dimensional dual; the best μ is then found by a grid and golden-section search.
  fishtest and fastchess reach the same maximum by the fixed-point iteration of section
  4.1 of the note, which stalls or fails to bracket for lopsided data or large ``t`` (and
  stops early on all-draw counts, where fastchess reports a positive LLR that cannot be).
  Against a direct numeric MLE this agrees to 1e-6; only on absurd counts such as 0-100000
  does the relative error reach 1e-4, far from anything that moves a decision.

As in fishtest (``LLRcalc.regularize``) and fastchess, an outcome never seen counts as
0.001 of a sample, so the maximum-likelihood distributions exist from the first game;
with no samples at all the LLR is 0. The test stops when the LLR reaches
``upper = ln((1-β)/α)`` (accept H1) or ``lower = ln(β/(1-α))`` (accept H0).

:class:`SequentialSprt` runs the test as a stop rule: samples come one at a time, in the
order the caller counts them, and the first one at which the LLR is past a bound with at
least ``min_games`` games counted decides; nothing is counted after that, so the decision
and the numbers it is reported with are those of the same samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from orchestrator.ratings.elo import (
    NELO_PER_T,
    Counts,
    Pentanomial,
    RatingsError,
    Wdl,
    score_from_elo,
    score_table,
)

Model = Literal["logistic", "normalized"]
Decision = Literal["H0", "H1"]
UNSEEN = 1e-3  # weight of an outcome never observed (fishtest, fastchess)
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


@dataclass(frozen=True)
class SprtResult:
    llr: float
    lower: float
    upper: float
    decision: Decision | None  # None: keep playing


def sprt_bounds(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's stopping bounds ``(ln(β/(1-α)), ln((1-β)/α))`` on the LLR."""
    for name, value in (("alpha", alpha), ("beta", beta)):
        if not 0.0 < value < 1.0:
            raise RatingsError(f"sprt: {name} must lie strictly between 0 and 1, got {value!r}")
    if alpha + beta >= 1.0:
        raise RatingsError(f"sprt: alpha + beta must be below 1, got {alpha} + {beta}")
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


# Every maximizer below returns max Σ p̂ᵢ·log(pᵢ/p̂ᵢ) under its constraint (≤ 0); the
# LLR is N times the difference of two of them.


def _best_with_score(a: np.ndarray, phat: np.ndarray, s: float) -> float:
    """Expected score ``s``: p = p̂/(1 + x(a - s)), x the root of Σ p̂(a-s)/(1+x(a-s)) = 0."""
    d = a - s
    lo, hi = -1.0 / d.max(), -1.0 / d.min()  # the sum falls from +inf to -inf across this
    while hi - lo > 1e-15 * max(1.0, abs(lo), abs(hi)):
        mid = 0.5 * (lo + hi)
        if phat @ (d / (1.0 + mid * d)) > 0.0:
            lo = mid
        else:
            hi = mid
    return float(-phat @ np.log1p(0.5 * (lo + hi) * d))


def _best_with_moments(
    h: list[tuple[float, float]], phat: list[float], lam: tuple[float, float]
) -> tuple[float, tuple[float, float]]:
    """Σ p·h = 0 for both moments: p = p̂/(1 + h·λ), λ minimizing the convex
    F(λ) = -Σ p̂ log(1 + h·λ) by Newton steps with backtracking, started from ``lam``.

    Returns (min F, λ), or -inf when Newton stalls short of the minimum: any F(λ) above
    the minimum would overstate the likelihood, and the caller is maximizing it. Plain
    floats: with five outcomes at most, numpy's per-call cost would dominate.
    """

    def at(x: float, y: float) -> list[float]:
        return [1.0 + u * x + v * y for u, v in h]

    x, y = lam
    d = at(x, y)
    if min(d) <= 0.0:
        x, y, d = 0.0, 0.0, [1.0] * len(h)
    value = -sum(q * math.log(di) for q, di in zip(phat, d, strict=True))
    for _ in range(100):
        gx = gy = hxx = hxy = hyy = 0.0
        for (u, v), q, di in zip(h, phat, d, strict=True):
            w = q / di
            gx -= w * u
            gy -= w * v
            w /= di
            hxx += w * u * u
            hxy += w * u * v
            hyy += w * v * v
        det = hxx * hyy - hxy * hxy
        if not det > 0.0:
            break
        sx = -(hyy * gx - hxy * gy) / det
        sy = -(hxx * gy - hxy * gx) / det
        decrement = -(gx * sx + gy * sy)  # about twice F's distance above its minimum
        if decrement < 1e-13:
            return value, (x, y)
        t = 1.0
        while t > 1e-9:
            new_d = at(x + t * sx, y + t * sy)
            if min(new_d) > 0.0:
                new_value = -sum(q * math.log(di) for q, di in zip(phat, new_d, strict=True))
                if new_value <= value - 0.25 * t * decrement:
                    break
            t *= 0.5
        else:  # no descent left to rounding: close enough only if nearly there
            return (value if decrement < 1e-10 else -math.inf), (x, y)
        x, y, d, value = x + t * sx, y + t * sy, new_d, new_value
    return -math.inf, (x, y)


def _best_with_t(a: np.ndarray, phat: np.ndarray, t: float) -> float:
    """``(μ - ½)/σ = t``, maximized over μ; each μ fixes σ = (μ - ½)/t and E[a²] = σ² + μ²."""
    if t == 0.0:
        return _best_with_score(a, phat, 0.5)
    lam = (0.0, 0.0)
    squares = a * a
    points, weights = a.tolist(), phat.tolist()

    def profile(mu: float) -> float:
        nonlocal lam
        var = ((mu - 0.5) / t) ** 2
        # (μ, E[a²]) must lie inside the convex hull of the points (aᵢ, aᵢ²).
        m2 = var + mu * mu
        if not float(np.interp(mu, a, squares)) < m2 < mu * (a[0] + a[-1]) - a[0] * a[-1]:
            return -math.inf
        # Central moments keep the two columns of h far from collinear (raw ones are not).
        h = [(v - mu, (v - mu) ** 2 - var) for v in points]
        value, lam = _best_with_moments(h, weights, lam)
        return value

    # σ² < μ(1-μ) bounds μ to within |t|/(2√(1+t²)) of ½; points crowd towards both ends,
    # where the maximum sits when an outcome was never seen.
    half = abs(t) / (2.0 * math.sqrt(1.0 + t * t))
    lo, hi = (0.5, 0.5 + half) if t > 0 else (0.5 - half, 0.5)
    u = (1.0 - np.cos(np.pi * np.arange(1, 32) / 32)) / 2.0
    grid = [lo, *(lo + (hi - lo) * u).tolist(), hi]
    values = [-math.inf, *(profile(mu) for mu in grid[1:-1]), -math.inf]
    k = int(np.argmax(values))
    if values[k] == -math.inf:
        raise RatingsError(f"sprt: no outcome distribution has normalized t = {t}")
    left, right = grid[k - 1], grid[k + 1]
    c, d = right - _GOLDEN * (right - left), left + _GOLDEN * (right - left)
    fc, fd = profile(c), profile(d)
    for _ in range(45):
        if fc >= fd:
            right, d, fd = d, c, fc
            c = right - _GOLDEN * (right - left)
            fc = profile(c)
        else:
            left, c, fc = c, d, fd
            d = left + _GOLDEN * (right - left)
            fd = profile(d)
    return max(fc, fd, values[k])


def llr(counts: Counts, elo0: float, elo1: float, model: Model = "logistic") -> float:
    """The generalized log-likelihood ratio of H1 (``elo1``) against H0 (``elo0``)."""
    if model not in ("logistic", "normalized"):
        raise RatingsError(f"sprt: model must be 'logistic' or 'normalized', got {model!r}")
    if not (math.isfinite(elo0) and math.isfinite(elo1) and elo0 < elo1):
        raise RatingsError(f"sprt: need finite elo0 < elo1, got elo0={elo0}, elo1={elo1}")
    values, freq = score_table(counts)
    if sum(freq) == 0:
        return 0.0
    weights = np.array([f if f > 0 else UNSEEN for f in freq], dtype=float)
    a = np.array(values)
    phat = weights / weights.sum()
    if model == "logistic":
        scores = [score_from_elo(e) for e in (elo0, elo1)]
        if not 0.0 < scores[0] < scores[1] < 1.0:
            raise RatingsError(f"sprt: elo0={elo0}, elo1={elo1} lie beyond any possible score")
        best0, best1 = (_best_with_score(a, phat, s) for s in scores)
    else:
        per_sample = math.sqrt(2.0) if isinstance(counts, Pentanomial) else 1.0
        best0, best1 = (_best_with_t(a, phat, per_sample * e / NELO_PER_T) for e in (elo0, elo1))
    return float(weights.sum()) * (best1 - best0)


def sprt(
    counts: Counts,
    elo0: float,
    elo1: float,
    alpha: float = 0.05,
    beta: float = 0.05,
    model: Model = "logistic",
) -> SprtResult:
    """Where a GSPRT of ``elo0`` against ``elo1`` stands after ``counts`` (see module doc)."""
    lower, upper = sprt_bounds(alpha, beta)
    value = llr(counts, elo0, elo1, model)
    decision: Decision | None = "H1" if value >= upper else "H0" if value <= lower else None
    return SprtResult(llr=value, lower=lower, upper=upper, decision=decision)


class SequentialSprt:
    """A GSPRT fed one sample at a time (a game's :class:`Wdl` or a colour-swapped pair's
    :class:`Pentanomial`), deciding at the first sample after which the LLR is past a bound
    and at least ``min_games`` games are counted (Leela Zero's floor against early luck).

    Once decided it counts nothing more (:meth:`add` returns False): ``counts``, ``games``
    and ``result`` stay those of the deciding sample. Before ``min_games`` the LLR is
    reported but ``result.decision`` is None.
    """

    def __init__(self, elo0: float, elo1: float, alpha: float = 0.05, beta: float = 0.05,
                 model: Model = "logistic", min_games: int = 0) -> None:
        self.elo0, self.elo1, self.alpha, self.beta, self.model = elo0, elo1, alpha, beta, model
        self.min_games = min_games
        self.counts: Counts | None = None
        self.games = 0
        lower, upper = sprt_bounds(alpha, beta)
        llr(Wdl(), elo0, elo1, model)  # bad hypotheses raise here, not at the first sample
        self.result = SprtResult(0.0, lower, upper, None)

    @property
    def decided(self) -> bool:
        return self.result.decision is not None

    def add(self, sample: Counts) -> bool:
        """Count one sample; False (and nothing counted) once the test has decided."""
        if self.decided:
            return False
        counts = self.counts
        if counts is None:
            counts = sample
        elif isinstance(counts, Wdl) and isinstance(sample, Wdl):
            counts = counts + sample
        elif isinstance(counts, Pentanomial) and isinstance(sample, Pentanomial):
            counts = counts + sample
        else:
            raise RatingsError(f"sprt: a {type(sample).__name__} sample among "
                               f"{type(counts).__name__} counts")
        self.counts, self.games = counts, counts.games
        result = sprt(counts, self.elo0, self.elo1, self.alpha, self.beta, self.model)
        if self.games < self.min_games:
            result = replace(result, decision=None)
        self.result = result
        return True
