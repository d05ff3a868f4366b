"""Many players: maximum-likelihood Bradley–Terry ratings with a first-move (Black) advantage.

Model, on the Elo scale: Black (player ``i``) scores against White (player ``j``) with
probability ``1/(1 + 10^(-(rᵢ - rⱼ + b)/400))``, where ``b`` is the Black advantage.
A draw (jigo) counts as half a win and half a loss. Games are aggregated per
(Black, White) pair first, so the fit costs the same for ten games or ten thousand.

Every result and every prior is one :class:`Likelihood` term (the shape of KataGo's
``python/elo.py``): :func:`likelihood_of_games` builds the results' terms, :func:`player_prior`
and :func:`black_advantage_prior` the priors, and :func:`fit_likelihoods` maximises their
summed log-likelihood with Newton steps and a backtracking line search, and the
covariance is the inverse of the negated Hessian there.
Standard errors are the marginal ones (square roots of that covariance's diagonal).

Anchoring. ``anchor={"gnugo-l0": 0}`` fixes those players' ratings exactly (stderr 0); all
other ratings and errors are relative to them. Without an anchor the ratings are
constrained to average exactly 0.

Priors. With ``prior_games = g > 0`` (default 2) every unanchored player is treated as
having also played ``g`` virtual draws against a virtual opponent rated at the anchors' mean
(0 without an anchor), and ``b`` as ``g`` virtual games in which Black scored half. This
keeps a player who never lost (or never won) finite and barely moves anyone with real
games: it adds ``g/4`` to the precision of each rating, i.e. alone it would allow
``±2·173.7/√g`` Elo. With ``prior_games=0`` the fit is plain maximum likelihood and is
undefined (:class:`RatingsError`) when some player never lost or never won, when a group
of players never met the rest, or, without a fixed point, when nothing anchors the scale.
Black's advantage is identified only by colour-swapped results; without them it leans on
its prior. Players who never met, even through a chain of opponents, have no common
scale: :func:`connected_groups` splits them, and each group is fitted on its own.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from orchestrator.ratings.elo import ELO_PER_NAT, RatingsError, Wdl, phi
from orchestrator.ratings.outcomes import GameOutcome

PairTable = Mapping[tuple[str, str], Wdl]  # (black, white) -> results from Black's side
_UNDEFINED = (
    "no finite maximum-likelihood ratings for these games: a player never lost or never won, "
    "a group never met the anchored players, or Black's advantage cannot be told from "
    "strength without colour-swapped games; use prior_games > 0"
)


@dataclass(frozen=True)
class RatingRow:
    player: str
    elo: float
    stderr: float
    games: int
    wins: int
    losses: int
    draws: int


@dataclass(frozen=True, eq=False)
class BtRatings:
    """A fitted rating list. ``rows`` run strongest first; ``covariance`` (Elo²) is indexed
    by ``players`` (sorted names)."""

    rows: tuple[RatingRow, ...]
    black_advantage: float | None
    black_advantage_stderr: float | None
    players: tuple[str, ...]
    covariance: np.ndarray
    iterations: int

    def _index(self, player: str) -> int:
        try:
            return self.players.index(player)
        except ValueError:
            raise RatingsError(f"no rating for {player!r}: not among the rated players") from None

    def row(self, player: str) -> RatingRow:
        self._index(player)
        return next(r for r in self.rows if r.player == player)

    def elo(self, player: str) -> float:
        return self.row(player).elo

    def diff_stderr(self, a: str, b: str) -> float:
        """Standard error of ``elo(a) - elo(b)``, covariance included."""
        i, j = self._index(a), self._index(b)
        c = self.covariance
        return math.sqrt(max(c[i, i] + c[j, j] - 2.0 * c[i, j], 0.0))

    def los(self, a: str, b: str) -> float:
        """Likelihood that ``a`` is stronger than ``b`` (normal approximation)."""
        diff = self.elo(a) - self.elo(b)
        sd = self.diff_stderr(a, b)
        if sd < 1e-12:
            return 0.5 if diff == 0.0 else float(diff > 0.0)
        return phi(diff / sd)


def aggregate(games: Iterable[GameOutcome]) -> dict[tuple[str, str], Wdl]:
    """Results per (Black, White) pair from Black's side; games without a result are skipped."""
    counts = Counter((g.black, g.white, g.winner) for g in games if g.winner is not None)
    table: dict[tuple[str, str], Wdl] = {}
    for (black, white, winner), n in counts.items():
        one = Wdl(wins=n * (winner == "black"), losses=n * (winner == "white"),
                  draws=n * (winner == "draw"))
        table[black, white] = table.get((black, white), Wdl()) + one
    return table


def _player_rows(table: PairTable) -> dict[str, Wdl]:
    totals: dict[str, Wdl] = {}
    for (black, white), wdl in table.items():
        totals[black] = totals.get(black, Wdl()) + wdl
        totals[white] = totals.get(white, Wdl()) + wdl.flipped()
    return totals


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(_log_sigmoid(x))


class _Terms:
    """Logistic terms ``win·log σ(x) + loss·log σ(-x)`` with ``x = X·θ + offset``."""

    def __init__(self, rows: list[np.ndarray], offsets: list[float],
                 wins: list[float], losses: list[float]) -> None:
        self.x = np.array(rows)
        self.offset = np.array(offsets)
        self.win = np.array(wins)
        self.total = self.win + np.array(losses)

    def loglik(self, theta: np.ndarray) -> float:
        z = self.x @ theta + self.offset
        loss = self.total - self.win
        return float(self.win @ _log_sigmoid(z) + loss @ _log_sigmoid(-z))

    def grad_hess(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = _sigmoid(self.x @ theta + self.offset)
        grad = self.x.T @ (self.win - self.total * s)
        # einsum rather than a BLAS product: tiny matrices, and BLAS threads fight over
        # busy cores (130 ms against 2 ms for 900 terms × 30 players on a loaded machine).
        hess = -np.einsum("ki,k,kj->ij", self.x, self.total * s * (1.0 - s), self.x)
        return grad, hess


def _newton(terms: _Terms, size: int, max_iters: int) -> tuple[np.ndarray, int]:
    """Maximize the log-likelihood: Newton steps, halved until they gain enough (Armijo)."""
    theta = np.zeros(size)
    value = terms.loglik(theta)
    for iteration in range(1, max_iters + 1):
        grad, hess = terms.grad_hess(theta)
        try:
            step = np.linalg.solve(-hess, grad)
        except np.linalg.LinAlgError:
            raise RatingsError(_UNDEFINED) from None
        slope = float(grad @ step)
        t = 1.0
        while t > 1e-12:
            new_theta = theta + t * step
            new_value = terms.loglik(new_theta)
            if new_value >= value + 1e-4 * t * slope:
                break
            t *= 0.5
        theta, value = new_theta, new_value
        if np.max(np.abs(step), initial=0.0) * ELO_PER_NAT < 1e-9:
            return theta, iteration
    raise RatingsError(f"{_UNDEFINED} (no convergence in {max_iters} Newton steps)")


BLACK = "<black advantage>"  # the Black-advantage parameter's key in a Likelihood


@dataclass(frozen=True)
class Likelihood:
    """One logistic term ``wins·log σ(x) + losses·log σ(-x)`` with, in natural units,
    ``x = Σ coefs[k]·r[k] + offset``; ``k`` is a player name or :data:`BLACK`. Results and
    priors are both made of these, as in KataGo's ``python/elo.py``."""

    coefs: Mapping[str, float]
    offset: float
    wins: float
    losses: float


def likelihood_of_games(table: PairTable, black_advantage: bool = True) -> list[Likelihood]:
    """One term per (Black, White) pair: their games aggregated, draws as half a win."""
    terms = []
    for (black, white), wdl in table.items():
        if wdl.games == 0:
            continue
        coefs = {black: 1.0, white: -1.0}
        if black_advantage:
            coefs[BLACK] = 1.0
        terms.append(Likelihood(coefs, 0.0, wdl.points, wdl.games - wdl.points))
    return terms


def player_prior(player: str, games: float, elo: float) -> Likelihood:
    """``games`` virtual draws against a virtual opponent rated ``elo``."""
    return Likelihood({player: 1.0}, -elo / ELO_PER_NAT, games / 2.0, games / 2.0)


def black_advantage_prior(games: float) -> Likelihood:
    """``games`` virtual games in which Black scored half: ``b`` leans towards 0."""
    return Likelihood({BLACK: 1.0}, 0.0, games / 2.0, games / 2.0)


def _lower(terms: list[Likelihood], a: np.ndarray, c: np.ndarray, b_row: np.ndarray,
           index: Mapping[str, int]) -> _Terms:
    """The terms over the free parameters θ, with ratings ``r = A·θ + c``."""
    rows, offsets = [], []
    for term in terms:
        row = np.zeros(a.shape[1])
        offset = term.offset
        for key, coef in term.coefs.items():
            if key == BLACK:
                row = row + coef * b_row
            else:
                row = row + coef * a[index[key]]
                offset += coef * c[index[key]]
        rows.append(row)
        offsets.append(offset)
    return _Terms(rows, offsets, [t.wins for t in terms], [t.losses for t in terms])


def bradley_terry(
    table: PairTable,
    anchor: Mapping[str, float] | None = None,
    prior_games: float = 2.0,
    black_advantage: bool = True,
    max_iters: int = 200,
) -> BtRatings:
    """Fit ratings to per-(Black, White) results (see :func:`aggregate` and the module doc)."""
    totals = _player_rows(table)
    if not totals:
        raise RatingsError("no games to rate")
    if not (math.isfinite(prior_games) and prior_games >= 0.0):
        raise RatingsError(f"prior_games must be a non-negative number, got {prior_games!r}")
    anchor = dict(anchor or {})
    for name, value in anchor.items():
        if name not in totals:
            raise RatingsError(f"anchor {name!r} played no games")
        if not math.isfinite(value):
            raise RatingsError(f"anchor {name!r} needs a finite rating, got {value!r}")
    players = tuple(sorted(totals))
    free = [p for p in players if p not in anchor]
    terms = likelihood_of_games(table, black_advantage)
    if prior_games > 0.0:
        centre = sum(anchor.values()) / len(anchor) if anchor else 0.0
        terms += [player_prior(p, prior_games, centre) for p in free]
        if black_advantage:
            terms.append(black_advantage_prior(prior_games))
    return fit_likelihoods(terms, players, totals, anchor, black_advantage, max_iters)


def fit_likelihoods(
    terms: list[Likelihood],
    players: tuple[str, ...],
    totals: Mapping[str, Wdl],
    anchor: Mapping[str, float],
    black_advantage: bool,
    max_iters: int = 200,
) -> BtRatings:
    """Maximise the summed terms over the ratings (anchors fixed; without one, the mean is
    0) and Black's advantage; stderr from the inverse Hessian."""
    n = len(players)
    index = {p: k for k, p in enumerate(players)}
    # Ratings in natural units are r = A·θ + c; θ also holds b last when it is fitted.
    free = [p for p in players if p not in anchor]
    size = len(free) - (0 if anchor else 1) + int(black_advantage)
    a = np.zeros((n, size))
    fixed_elo = np.array([anchor.get(p, 0.0) for p in players])
    c = fixed_elo / ELO_PER_NAT
    for k, p in enumerate(free[: len(free) - (0 if anchor else 1)]):
        a[index[p], k] = 1.0
    if not anchor:  # the last player is minus the sum of the others: the mean is exactly 0
        a[n - 1, : n - 1] = -1.0
    b_row = np.zeros(size)
    if black_advantage:
        b_row[-1] = 1.0
    if size == 0:
        theta, iterations = np.zeros(0), 0
        cov_theta = np.zeros((0, 0))
    else:
        lowered = _lower(terms, a, c, b_row, index)
        theta, iterations = _newton(lowered, size, max_iters)
        cov_theta = np.linalg.inv(-lowered.grad_hess(theta)[1])

    elos = a @ theta * ELO_PER_NAT + fixed_elo  # an anchor's row of A is 0: it stays exact
    cov = a @ cov_theta @ a.T * ELO_PER_NAT**2
    result_rows = sorted(
        (
            RatingRow(
                player=p, elo=float(elos[k]), stderr=math.sqrt(max(cov[k, k], 0.0)),
                games=totals[p].games, wins=totals[p].wins, losses=totals[p].losses,
                draws=totals[p].draws,
            )
            for k, p in enumerate(players)
        ),
        key=lambda r: (-r.elo, r.player),
    )
    b_elo: float | None
    b_err: float | None
    if black_advantage:
        b_elo = float(theta[-1]) * ELO_PER_NAT
        b_err = math.sqrt(max(float(cov_theta[-1, -1]), 0.0)) * ELO_PER_NAT
    else:
        b_elo = b_err = None
    return BtRatings(
        rows=tuple(result_rows), black_advantage=b_elo, black_advantage_stderr=b_err,
        players=players, covariance=cov, iterations=iterations,
    )


def connected_groups(table: PairTable) -> list[tuple[str, ...]]:
    """Players split into groups that met, directly or through a chain of opponents;
    ratings in different groups share no scale. Largest group first, then by name."""
    parent: dict[str, str] = {}

    def root(p: str) -> str:
        while parent.setdefault(p, p) != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    for (black, white), wdl in table.items():
        if wdl.games:
            parent[root(black)] = root(white)
    groups: dict[str, list[str]] = {}
    for p in parent:
        groups.setdefault(root(p), []).append(p)
    return sorted((tuple(sorted(g)) for g in groups.values()), key=lambda g: (-len(g), g))
