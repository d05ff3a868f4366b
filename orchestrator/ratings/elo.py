"""Two-player Elo from game counts: score, logistic Elo, 95 % interval, LOS and normalized Elo.

The formulas are those of cutechess, fastchess and fishtest, so a go19 report and a
fastchess run over the same counts print the same numbers:

- score ``s`` = mean points per game (win 1, draw ½, loss 0);
- Elo = ``-400·log10(1/s - 1)``;
- the 95 % interval maps ``s ± 1.96·σ/√n`` through the same curve, where ``σ²`` is the
  variance of one sample (a game for :class:`Wdl`, a colour-swapped pair for
  :class:`Pentanomial`) and ``n`` the number of samples; ``error`` is half its width;
- LOS = ``Φ((s - ½)/(σ/√n))`` = ``(1 - erf(-(s - ½)/√(2σ²/n)))/2``;
- nElo = ``(s - ½)/σ_game · 800/ln 10`` with ``σ_game = σ`` for games and ``√2·σ`` for pairs.

In Go, half-point komi leaves no draws; a jigo (integer komi, equal score) counts as a draw.

Edge cases, never an exception:

- no games: every field but ``games`` is ``None``;
- every sample alike (all wins, all losses, all draws, or all pairs with the same points):
  the variance is 0, ``elo`` is ``+inf``/``-inf`` for a score of 1/0 (finite otherwise) and the
  interval, ``error``, ``los``, ``nelo`` and ``nelo_error`` are ``None``, because the normal
  approximation says nothing with zero observed spread;
- an interval bound whose score leaves (0, 1) is ``±inf`` (a few games at a lopsided score).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

ELO_PER_NAT = 400.0 / math.log(10.0)  # Elo per unit of logistic strength (173.72)
NELO_PER_T = 800.0 / math.log(10.0)  # nElo per unit of t = (s - ½)/σ_game (347.44)
Z95 = 1.959963984540054  # two-sided 95 % normal quantile, as fastchess uses


class RatingsError(ValueError):
    """Counts or parameters the ratings core cannot use; the message says which and why."""


def phi(z: float) -> float:
    """Standard normal cumulative distribution function."""
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def elo_from_score(score: float) -> float:
    """Logistic Elo difference for an expected score; ``±inf`` at 1 and 0."""
    if score >= 1.0:
        return math.inf
    if score <= 0.0:
        return -math.inf
    return 400.0 * math.log10(score / (1.0 - score))  # = -400·log10(1/s - 1), +0.0 at s = ½


def score_from_elo(elo: float) -> float:
    """Expected score of the side that is ``elo`` points stronger."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def _check_counts(kind: str, **counts: int) -> None:
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise RatingsError(f"{kind}: {name} must be a non-negative integer, got {value!r}")


@dataclass(frozen=True)
class Wdl:
    """Wins, losses and draws of one player against the field (trinomial counts)."""

    wins: int = 0
    losses: int = 0
    draws: int = 0

    def __post_init__(self) -> None:
        _check_counts("Wdl", wins=self.wins, losses=self.losses, draws=self.draws)

    @property
    def games(self) -> int:
        return self.wins + self.losses + self.draws

    @property
    def points(self) -> float:
        return self.wins + 0.5 * self.draws

    def flipped(self) -> Wdl:
        """The same games seen from the opponent's side."""
        return Wdl(wins=self.losses, losses=self.wins, draws=self.draws)

    def __add__(self, other: Wdl) -> Wdl:
        return Wdl(self.wins + other.wins, self.losses + other.losses, self.draws + other.draws)


@dataclass(frozen=True)
class Pentanomial:
    """Colour-swapped game pairs (same opening, each side once) by the points the player took.

    ``ll`` 0 points, ``ld`` ½, ``wl_dd`` 1 (a win and a loss, or two draws), ``wd`` 1½, ``ww`` 2.
    Without draws (half-point komi) ``ld`` and ``wd`` stay 0.
    """

    ll: int = 0
    ld: int = 0
    wl_dd: int = 0
    wd: int = 0
    ww: int = 0

    def __post_init__(self) -> None:
        _check_counts(
            "Pentanomial", ll=self.ll, ld=self.ld, wl_dd=self.wl_dd, wd=self.wd, ww=self.ww
        )

    @classmethod
    def from_counts(cls, counts: Sequence[int]) -> Pentanomial:
        """From the five counts in fastchess's ``Ptnml(0-2)`` order (0, ½, 1, 1½, 2 points)."""
        if len(counts) != 5:
            raise RatingsError(f"Pentanomial: need 5 counts (0 to 2 points), got {len(counts)}")
        return cls(*counts)

    @property
    def counts(self) -> tuple[int, int, int, int, int]:
        return (self.ll, self.ld, self.wl_dd, self.wd, self.ww)

    @property
    def pairs(self) -> int:
        return sum(self.counts)

    @property
    def games(self) -> int:
        return 2 * self.pairs

    def flipped(self) -> Pentanomial:
        return Pentanomial(self.ww, self.wd, self.wl_dd, self.ld, self.ll)

    def __add__(self, other: Pentanomial) -> Pentanomial:
        return Pentanomial(*(a + b for a, b in zip(self.counts, other.counts, strict=True)))


Counts = Wdl | Pentanomial

WDL_SCORES = (0.0, 0.5, 1.0)  # loss, draw, win
PAIR_SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)  # pair points / 2


def score_table(counts: Counts) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """Per-game score of each outcome and how often it happened (losses first)."""
    if isinstance(counts, Wdl):
        return WDL_SCORES, (counts.losses, counts.draws, counts.wins)
    if isinstance(counts, Pentanomial):
        return PAIR_SCORES, counts.counts
    raise RatingsError(f"expected Wdl or Pentanomial counts, got {type(counts).__name__}")


@dataclass(frozen=True)
class EloEstimate:
    """What two-player counts say about the difference in strength (see module docstring).

    ``elo_low``/``elo_high`` bound the 95 % interval; ``error`` is half its width (the ``±``
    fastchess and cutechess print). ``los`` is in [0, 1]. ``samples`` is games for
    :class:`Wdl` and pairs for :class:`Pentanomial`.
    """

    games: int
    samples: int
    score: float | None
    elo: float | None
    elo_low: float | None
    elo_high: float | None
    error: float | None
    los: float | None
    nelo: float | None
    nelo_error: float | None


def estimate(counts: Counts) -> EloEstimate:
    """Elo, interval, LOS and nElo from trinomial (:class:`Wdl`) or pentanomial counts."""
    values, freq = score_table(counts)
    n = sum(freq)
    if n == 0:
        return EloEstimate(counts.games, 0, None, None, None, None, None, None, None, None)
    score = sum(v * f for v, f in zip(values, freq, strict=True)) / n
    var = sum(f * (v - score) ** 2 for v, f in zip(values, freq, strict=True)) / n
    elo = elo_from_score(score)
    if var <= 1e-15:
        return EloEstimate(counts.games, n, score, elo, None, None, None, None, None, None)
    sigma_mean = math.sqrt(var / n)
    low = elo_from_score(score - Z95 * sigma_mean)
    high = elo_from_score(score + Z95 * sigma_mean)
    sigma_game = math.sqrt(var) if isinstance(counts, Wdl) else math.sqrt(2.0 * var)
    return EloEstimate(
        games=counts.games,
        samples=n,
        score=score,
        elo=elo,
        elo_low=low,
        elo_high=high,
        error=(high - low) / 2.0,
        los=phi((score - 0.5) / sigma_mean),
        nelo=(score - 0.5) / sigma_game * NELO_PER_T,
        nelo_error=Z95 * sigma_mean / sigma_game * NELO_PER_T,
    )
