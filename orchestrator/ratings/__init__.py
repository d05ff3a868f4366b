"""Pure ratings core (numpy and math only; no I/O, no trio).

Two players, from counts (cutechess/fastchess/fishtest formulas)::

    from orchestrator.ratings import Wdl, Pentanomial, estimate, sprt
    e = estimate(Wdl(wins=60, losses=40, draws=0))      # e.elo ≈ 70.44, e.error, e.los, e.nelo
    estimate(Pentanomial.from_counts([3, 0, 10, 0, 7]))  # colour-swapped pairs
    sprt(Wdl(60, 40, 0), elo0=0, elo1=30, alpha=0.05, beta=0.05)  # SprtResult(llr, ..., decision)

From games (``winner`` as in games.jsonl: "black", "white", "draw" for a jigo, None)::

    games = [GameOutcome(black="r5", white="r4", winner="black", pair=("run", 6)), ...]
    split_by_colour(games, "r5")           # ColourSplit(overall, as_black, as_white) of Wdl
    pentanomial_from_games(games, "r5")    # complete pairs only

Many players (Bradley–Terry with a Black-advantage term)::

    fit = bradley_terry(aggregate(games), anchor={"gnugo-l0": 0})
    fit.rows, fit.black_advantage, fit.los("r5", "r4")
    connected_groups(aggregate(games))     # players who met, directly or by a chain

Every bad input raises :class:`RatingsError` (a ``ValueError``) with a one-line message.
"""

from orchestrator.ratings.bt import (
    BtRatings,
    Likelihood,
    RatingRow,
    aggregate,
    bradley_terry,
    connected_groups,
    fit_likelihoods,
    likelihood_of_games,
)
from orchestrator.ratings.elo import (
    ELO_PER_NAT,
    NELO_PER_T,
    Counts,
    EloEstimate,
    Pentanomial,
    RatingsError,
    Wdl,
    elo_from_score,
    estimate,
    score_from_elo,
)
from orchestrator.ratings.outcomes import (
    ColorSplit,
    GameOutcome,
    pentanomial_from_games,
    split_by_color,
)
from orchestrator.ratings.sprt import SequentialSprt, SprtResult, llr, sprt, sprt_bounds

__all__ = [
    "ELO_PER_NAT", "NELO_PER_T", "BtRatings", "ColorSplit", "Counts", "EloEstimate",
    "GameOutcome", "Likelihood", "Pentanomial", "RatingRow", "RatingsError", "SequentialSprt",
    "SprtResult", "Wdl", "aggregate", "bradley_terry", "connected_groups", "elo_from_score",
    "estimate", "fit_likelihoods", "likelihood_of_games", "llr", "pentanomial_from_games",
    "score_from_elo", "split_by_color", "sprt", "sprt_bounds",
]
