"""Per player: the move-quality numbers over its games, with bootstrap intervals (pure).

A player's **counted moves** are those its own policy chose (not opening-book or fallback
moves, which are counted apart) with labels before and after the move. Over them, per phase
of the game (moves 1–50, 51–150, 151+, and all):

- **mean point loss**: the mean of ``max(0, loss)`` — KaTrain's ``game_report``
  (katrain/core/ai.py) clips each loss at 0 before averaging, as a move cannot be better
  than KataGo's own;
- **KaTrain accuracy** (``katrain_accuracy``): KaTrain's ``game_report``,
  ``100 × 0.75 ** weighted point loss``, the weighted loss ``Σ w · loss / Σ w`` with each
  move's weight ``w = max(0.05, min(1, max(complexity, loss / 4)))``. The complexity is the
  prior-weighted loss of the search's candidate moves; KaTrain finds none with a prior at one
  visit (its single candidate is the root), so it is 0 there, and the labels keep no
  candidates at more visits either: ``w = max(0.05, min(1, loss / 4))``, KaTrain's number at
  one visit. Over several games the sums run over all the player's counted moves;
- **go19 accuracy** (``accuracy``): ``100 × 0.75 ** mean point loss``, the same formula with
  every move weighted 1 (go19's own, kept for earlier reports; not KaTrain's number);
- **top-1**: the share of moves that are KataGo's move; **top-5**: the share whose policy
  rank is 5 or better;
- **blunders per 100 moves** at 3, 6 and 12 points lost (KaTrain's
  ``trainer/eval_thresholds`` 12, 6, 3, 1.5, 0.5, 0: its three worst classes), cumulative:
  a 12-point loss counts in all three.

Each number is a ratio of sums over games (e.g. lost points / moves), and its 95 % interval
is a bootstrap over **games** (from MIN_GAMES games on; below, the value alone): the
player's games are drawn with replacement
(``numpy.random.default_rng(seed).integers(0, games, (resamples, games))``), the ratio is
taken over each draw, and the interval is two percentiles of the draws. Games, not moves,
are the unit because the moves of one game are not independent. Seeded, so a report is the
same every time it is built.

The percentiles are those of the *expanded percentile interval* (Hesterberg, "What teachers
should know about the bootstrap", The American Statistician 69(4), 2015): with n games,
``p = Φ(−√(n / (n − 1)) · t(n − 1))`` and ``1 − p``, t(n − 1) Student's 97.5 % point (exact:
:func:`t_quantile` inverts the closed-form distribution function for integer n − 1). The
plain 2.5 / 97.5 percentiles are too narrow for few games (they miss both the n − 1 and
Student's t of a mean's interval: at 5 games the expanded one is about 1.6 times as wide);
the expanded ones tend to them as games grow (at 40 games, p = 2.0 %).

The **paired verdict** between two players of the same games resamples those games once
for both and takes the difference of their mean point losses in each draw;
:func:`first_decided` says after how many games (in the order given) its interval first
excluded 0, and from which game on it always did.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from orchestrator.quality.moves import FALLBACK, OPENING, OWN, GameMoves

PHASES: tuple[tuple[str, int, int | None], ...] = (
    ("all", 1, None), ("1-50", 1, 50), ("51-150", 51, 150), ("151+", 151, None))
BLUNDERS = (3.0, 6.0, 12.0)  # points lost; KaTrain's eval_thresholds 12, 6, 3
ACCURACY_BASE = 0.75  # KaTrain: accuracy = 100 * 0.75 ** weighted point loss
# KaTrain's weight of a move: max(KATRAIN_MIN_WEIGHT, min(1, max(complexity, loss / 4))).
KATRAIN_MIN_WEIGHT = 0.05
KATRAIN_LOSS_SCALE = 4.0
TOP_N = 5
RESAMPLES = 4000  # the expanded interval's tails are thin for few games: many draws
SEED = 25
CONFIDENCE = 0.95
Z = 1.959963984540054  # the normal's 97.5 % point, for CONFIDENCE
# Fewer games get the value without an interval: a bootstrap over 1 game has no spread at
# all, and over a handful it is far too narrow (it cannot see the games not played).
MIN_GAMES = 5
# What Tally.sums holds per game and phase; every statistic is a ratio of two of them.
COLUMNS = ("moves", "loss", "top1", "top5", *(f"blunders{t:g}" for t in BLUNDERS),
           "katrain_weight", "katrain_weighted_loss")
STATISTICS = ("mean_loss", "accuracy", "katrain_accuracy", "top1", "top5",
              *(f"blunders{t:g}" for t in BLUNDERS))


@dataclass(frozen=True, slots=True)
class Interval:
    """A statistic and its bootstrap interval; NaN where it is undefined (no moves)."""

    value: float
    low: float
    high: float

    @property
    def excludes_zero(self) -> bool:
        return bool(self.low > 0 or self.high < 0)  # False for NaN bounds


@dataclass(frozen=True, slots=True)
class Tally:
    """One player's counted moves summed per game and phase (``sums[game, phase, column]``
    for PHASES and COLUMNS), and the moves left out of them."""

    sums: np.ndarray  # float64 (games, len(PHASES), len(COLUMNS))
    opening: int  # opening-book moves
    fallback: int  # fallback moves (timeouts, errors, illegal replies)
    unlabelled: int  # own moves without labels before and after
    fallback_loss: float  # the fallback moves' summed max(0, loss), where labelled
    fallback_labelled: int

    @property
    def games(self) -> int:
        return int(self.sums.shape[0])

    @property
    def moves(self) -> int:
        return int(self.sums[:, 0, 0].sum())


def counted(moves: GameMoves, color: int) -> np.ndarray:
    """The moves of ``color`` that count: its own choices, labelled before and after."""
    return ((moves.color == color) & (moves.origin == OWN) & np.isfinite(moves.loss)
            & (moves.best >= 0))


def katrain_weight(loss: np.ndarray, complexity: float = 0.0) -> np.ndarray:
    """KaTrain ``game_report``'s weight of each move by its (clipped) point loss:
    ``max(0.05, min(1, max(complexity, loss / 4)))``; the labels give complexity 0."""
    return np.clip(np.maximum(complexity, loss / KATRAIN_LOSS_SCALE), KATRAIN_MIN_WEIGHT, 1.0)


def _game_sums(moves: GameMoves, color: int) -> np.ndarray:
    mask = counted(moves, color)
    loss = np.maximum(moves.loss[mask], 0.0)
    rank = moves.rank[mask]
    number = moves.number[mask]
    weight = katrain_weight(loss)
    columns = np.stack([
        np.ones_like(loss), loss, (moves.played[mask] == moves.best[mask]).astype(np.float64),
        ((rank >= 1) & (rank <= TOP_N)).astype(np.float64),
        *((loss >= t).astype(np.float64) for t in BLUNDERS),
        weight, weight * loss,
    ], axis=1)
    out = np.zeros((len(PHASES), len(COLUMNS)))
    for p, (_, first, last) in enumerate(PHASES):
        inside = (number >= first) & (number <= (np.inf if last is None else last))
        out[p] = columns[inside].sum(axis=0)
    return out


def tally(games: Sequence[tuple[GameMoves, int]]) -> Tally:
    """A player's games, each as (the game's moves, the colour the player had in it)."""
    sums = np.zeros((len(games), len(PHASES), len(COLUMNS)))
    opening = fallback = unlabelled = fallback_labelled = 0
    fallback_loss = 0.0
    for g, (moves, color) in enumerate(games):
        sums[g] = _game_sums(moves, color)
        mine = moves.color == color
        opening += int(np.count_nonzero(mine & (moves.origin == OPENING)))
        fb = mine & (moves.origin == FALLBACK)
        fallback += int(np.count_nonzero(fb))
        fb_loss = moves.loss[fb & np.isfinite(moves.loss)]
        fallback_loss += float(np.maximum(fb_loss, 0.0).sum())
        fallback_labelled += len(fb_loss)
        own = mine & (moves.origin == OWN)
        unlabelled += int(np.count_nonzero(own)) - int(np.count_nonzero(counted(moves, color)))
    return Tally(sums, opening, fallback, unlabelled, fallback_loss, fallback_labelled)


def statistics(sums: np.ndarray) -> dict[str, np.ndarray]:
    """Every statistic from summed columns (the last axis of ``sums``); NaN without moves."""
    with np.errstate(divide="ignore", invalid="ignore"):
        moves = sums[..., 0]
        mean_loss = sums[..., 1] / moves
        weighted_loss = sums[..., -1] / sums[..., -2]
        out = {"mean_loss": mean_loss, "accuracy": 100.0 * ACCURACY_BASE ** mean_loss,
               "katrain_accuracy": 100.0 * ACCURACY_BASE ** weighted_loss,
               "top1": 100.0 * sums[..., 2] / moves, "top5": 100.0 * sums[..., 3] / moves}
        for k, t in enumerate(BLUNDERS):
            out[f"blunders{t:g}"] = 100.0 * sums[..., 4 + k] / moves
    return out


def resample_counts(games: int, resamples: int, seed: int | Sequence[int]) -> np.ndarray:
    """(resamples, games): how often each game is drawn in each resample, the games drawn
    with replacement as ``default_rng(seed).integers(0, games, (resamples, games))``."""
    if games == 0:
        return np.zeros((resamples, 0))
    drawn = np.random.default_rng(seed).integers(0, games, (resamples, games))
    flat = drawn + games * np.arange(resamples)[:, None]
    return np.bincount(flat.ravel(), minlength=resamples * games).reshape(
        resamples, games).astype(np.float64)


def t_cdf(t: float, df: int) -> float:
    """Student's t distribution function for integer ``df``, in closed form (Abramowitz &
    Stegun 26.7.3 and 26.7.4: with θ = atan(t / √df), a finite series in cos θ)."""
    theta = math.atan(t / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2:  # odd: (2/π)(θ + sin θ cos θ (1 + 2/3 cos²θ + 2·4/(3·5) cos⁴θ + …))
        term = total = 1.0
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        inside = 2 / math.pi * (theta + (s * math.cos(theta) * total if df > 1 else 0.0))
    else:  # even: sin θ (1 + 1/2 cos²θ + 1·3/(2·4) cos⁴θ + …)
        term = total = 1.0
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        inside = s * total
    return 0.5 * (1 + inside)


def _t_density(t: float, df: int) -> float:
    v = float(df)
    return math.exp(math.lgamma((v + 1) / 2) - math.lgamma(v / 2) - 0.5 * math.log(v * math.pi)
                    - (v + 1) / 2 * math.log1p(t * t / v))


def t_quantile(df: int, p: float = 1 - (1 - CONFIDENCE) / 2) -> float:
    """Student's t ``p`` point (``p`` ≥ ½; the 97.5 % one by default) for ``df`` degrees of
    freedom: :func:`t_cdf` inverted by Newton's method from the normal's point, to the
    last bits of a float (no scipy needed)."""
    z = math.sqrt(2) * _erfinv(2 * p - 1)
    t = z + (z**3 + z) / (4 * df)  # Cornish–Fisher's first terms: close, and above 0
    for _ in range(100):
        step = (t_cdf(t, df) - p) / _t_density(t, df)
        t = max(t - step, t / 2)  # never past 0: the heavy tails make the first steps long
        if abs(step) <= 1e-15 * t:
            break
    return t


def _erfinv(y: float) -> float:
    """The inverse of ``math.erf`` on (-1, 1), by Newton's method."""
    x = 0.0
    for _ in range(100):
        step = (math.erf(x) - y) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
        x -= step
        if abs(step) <= 1e-16 * max(1.0, abs(x)):
            break
    return x


def tail_percent(games: int) -> float:
    """The lower percentile (in %) of the expanded percentile interval over ``games``
    games; the upper one is 100 minus it."""
    x = math.sqrt(games / (games - 1)) * t_quantile(games - 1)
    return 100 * 0.5 * math.erfc(x / math.sqrt(2))


def _interval(value: float, draws: np.ndarray, games: int) -> Interval:
    finite = draws[np.isfinite(draws)]
    if not np.isfinite(value) or not len(finite) or games < MIN_GAMES:
        return Interval(float(value), np.nan, np.nan)
    tail = tail_percent(games)
    low, high = np.percentile(finite, [tail, 100 - tail])
    return Interval(float(value), float(low), float(high))


def estimates(t: Tally, seed: int = SEED,
              resamples: int = RESAMPLES) -> dict[str, dict[str, Interval]]:
    """Every statistic of every phase with its interval: ``[phase][statistic]``."""
    counts = resample_counts(t.games, resamples, seed)
    boot = statistics(np.tensordot(counts, t.sums, axes=(1, 0)))  # (resamples, phases)
    point = statistics(t.sums.sum(axis=0))
    return {phase: {name: _interval(point[name][p], boot[name][:, p], t.games)
                    for name in STATISTICS}
            for p, (phase, _, _) in enumerate(PHASES)}


def _difference(a: np.ndarray, b: np.ndarray, counts: np.ndarray) -> tuple[float, np.ndarray]:
    def mean_loss(sums: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return sums[..., 1] / sums[..., 0]

    value = float(mean_loss(b.sum(axis=0)) - mean_loss(a.sum(axis=0)))
    return value, mean_loss(counts @ b) - mean_loss(counts @ a)


def loss_difference(a: Tally, b: Tally, seed: int = SEED, resamples: int = RESAMPLES,
                    phase: int = 0) -> Interval:
    """``b``'s mean point loss minus ``a``'s, over the same games (game ``g`` of both
    tallies is the same game): positive when ``a`` loses fewer points a move."""
    if a.games != b.games:
        raise ValueError(f"a paired difference needs the same games, got {a.games} and "
                         f"{b.games}")
    counts = resample_counts(a.games, resamples, seed)
    value, draws = _difference(a.sums[:, phase], b.sums[:, phase], counts)
    return _interval(value, draws, a.games)


def first_decided(a: Tally, b: Tally, seed: int = SEED,
                  resamples: int = RESAMPLES) -> tuple[int | None, int | None]:
    """After how many games (the first n, in the tallies' order) the interval of
    :func:`loss_difference` first excluded 0, and the n from which it always did (over
    every n up to all the games); None where it never did."""
    first = steady = None
    for n in range(1, a.games + 1):
        counts = resample_counts(n, resamples, (seed, n))
        value, draws = _difference(a.sums[:n, 0], b.sums[:n, 0], counts)
        if _interval(value, draws, n).excludes_zero:
            first = n if first is None else first
            steady = n if steady is None else steady
        else:
            steady = None
    return first, steady


def loss_by_move(games: Sequence[tuple[GameMoves, int]], bucket: int = 10
                 ) -> list[tuple[float, float, int]]:
    """A player's mean ``max(0, loss)`` per ``bucket`` move numbers over its games:
    (the bucket's middle move number, mean loss, counted moves), buckets with moves only."""
    numbers, losses = [], []
    for moves, color in games:
        mask = counted(moves, color)
        numbers.append(moves.number[mask])
        losses.append(np.maximum(moves.loss[mask], 0.0))
    if not numbers or not sum(map(len, numbers)):
        return []
    number, loss = np.concatenate(numbers), np.concatenate(losses)
    which = (number - 1) // bucket
    sums = np.bincount(which, weights=loss)
    counts = np.bincount(which)
    return [((k + 0.5) * bucket + 0.5, float(sums[k] / counts[k]), int(counts[k]))
            for k in np.flatnonzero(counts)]


def loss_histogram(games: Sequence[tuple[GameMoves, int]], edges: Sequence[float]
                   ) -> list[int]:
    """How many of a player's counted moves lost ``max(0, loss)`` in each
    ``[edges[i], edges[i + 1])``; the last bin also takes everything above it."""
    losses = [np.maximum(m.loss[counted(m, c)], 0.0) for m, c in games]
    loss = np.concatenate(losses) if losses else np.empty(0)
    top = np.asarray(edges, np.float64)
    counts, _ = np.histogram(np.minimum(loss, top[-1] - 1e-9), bins=top)
    return [int(c) for c in counts]


def worst(games: Sequence[tuple[GameMoves, int]], count: int = 10) -> list[tuple[int, int]]:
    """A player's ``count`` costliest counted moves, worst first, as (game, move index);
    ties in game then move order."""
    found = [(float(m.loss[i]), g, int(i)) for g, (m, c) in enumerate(games)
             for i in np.flatnonzero(counted(m, c))]
    found.sort(key=lambda item: (-item[0], item[1], item[2]))
    return [(g, i) for _, g, i in found[:count]]
