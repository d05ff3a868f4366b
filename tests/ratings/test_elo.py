"""Two-player Elo against hand arithmetic and against numbers fastchess and cutechess published.

Sources of expected values:
- FC: Disservin/fastchess ``app/tests/elo_test.cpp`` (fastchess's own unit tests).
  Its ``Stats(a, b, c)`` is (wins, losses, draws); ``Stats(six)`` is
  (LL, LD, WL, DD, WD, WW), so WL + DD is our ``wl_dd``.
- ZENO: Toudonou/zeno ``docs/testing.md``, fastchess match reports
  ("Elo: … +/- …, nElo: … +/- …, LOS: … %", "Ptnml(0-2): […]") printed to 2 decimals.
  With pentanomial reporting on, fastchess prints the pentanomial estimate.
- CUTECHESS: mvanthoor/rustic-book ``src/progress/sprt_results.md``, cutechess-cli's
  "Elo difference: … +/- …, LOS: … %" (1 decimal) for "Score of …: W - L - D".
"""

from __future__ import annotations

import math

import pytest

from orchestrator.ratings import (
    EloEstimate,
    Pentanomial,
    RatingsError,
    Wdl,
    elo_from_score,
    estimate,
    score_from_elo,
)


def _penta(ll: int, ld: int, wl: int, dd: int, wd: int, ww: int) -> Pentanomial:
    return Pentanomial(ll=ll, ld=ld, wl_dd=wl + dd, wd=wd, ww=ww)


def test_sixty_percent_by_hand() -> None:
    # W=60 L=40 D=0, n=100: s = 0.6, Elo = -400·log10(1/0.6 - 1) = 400·log10(1.5) = 70.4365.
    # var = 0.6·(1-0.6)² + 0.4·(0-0.6)² = 0.096 + 0.144 = 0.24; σ/√n = √0.0024 = 0.0489898.
    # s ± 1.959964·0.0489898 = 0.503982 / 0.696018 → Elo 2.7669 / 143.9092, error 70.571.
    # LOS = Φ(0.1/0.0489898) = Φ(2.04124) = 0.979387.
    # nElo = 0.1/√0.24 · 800/ln10 = 0.204124·347.4356 = 70.920; ± 1.959964·347.4356/√100 = 68.096.
    e = estimate(Wdl(wins=60, losses=40, draws=0))
    assert e.games == e.samples == 100
    assert e.score == pytest.approx(0.6)
    assert e.elo == pytest.approx(70.4365, abs=1e-4)
    assert e.elo_low == pytest.approx(2.7669, abs=1e-4)
    assert e.elo_high == pytest.approx(143.9092, abs=1e-4)
    assert e.error == pytest.approx((143.9092 - 2.7669) / 2, abs=1e-4)
    assert e.los == pytest.approx(0.979387, abs=1e-6)
    assert e.nelo == pytest.approx(70.920, abs=1e-3)
    assert e.nelo_error == pytest.approx(68.096, abs=1e-3)


@pytest.mark.parametrize(
    ("wdl", "elo", "error", "nelo", "nelo_error", "los_percent"),
    [
        # FC "EloWDL 1": Stats(76, 89, 123): nElo -20.76 ± 40.13, LOS "15.53 %".
        (Wdl(76, 89, 123), None, None, -20.76, 40.13, 15.53),
        # FC "EloWDL 2": Stats(136, 96, 111): Elo 40.70 ± 30.43, nElo 49.77 ± 36.77, "99.60 %".
        (Wdl(136, 96, 111), 40.70, 30.43, 49.77, 36.77, 99.60),
        # FC "EloWDL 3": Stats(34, 356, 0): nElo -508.44 ± 34.48.
        (Wdl(34, 356, 0), None, None, -508.44, 34.48, None),
    ],
)
def test_trinomial_matches_fastchess(
    wdl: Wdl, elo: float | None, error: float | None, nelo: float, nelo_error: float,
    los_percent: float | None,
) -> None:
    e = estimate(wdl)
    if elo is not None:
        assert e.elo == pytest.approx(elo, abs=0.005)
        assert e.error == pytest.approx(error, abs=0.005)
    assert e.nelo == pytest.approx(nelo, abs=0.005)
    assert e.nelo_error == pytest.approx(nelo_error, abs=0.005)
    if los_percent is not None:
        assert 100 * e.los == pytest.approx(los_percent, abs=0.005)


def test_trinomial_matches_cutechess() -> None:
    # CUTECHESS "TT-cuts": 869 - 646 - 357 → "Elo difference: 41.6 +/- 14.2, LOS: 100.0 %".
    e = estimate(Wdl(wins=869, losses=646, draws=357))
    assert e.elo == pytest.approx(41.6, abs=0.05)
    assert e.error == pytest.approx(14.2, abs=0.05)
    assert 100 * e.los == pytest.approx(100.0, abs=0.05)


@pytest.mark.parametrize(
    ("penta", "elo", "error", "nelo", "nelo_error", "los_percent"),
    [
        # FC "EloPentanomial 1": Elo 55.58 ± 27.65, nElo 57.94 ± 28.28, "100.00 %".
        (_penta(34, 54, 31, 32, 64, 75), 55.58, 27.65, 57.94, 28.28, 100.00),
        # FC "EloPentanomial 2": Elo -8.64 ± 10.33, nElo -9.17 ± 10.96, "5.05 %".
        (_penta(332, 433, 457, 41, 333, 334), -8.64, 10.33, -9.17, 10.96, 5.05),
        # FC "EloPentanomial 3": Elo -21.04 ± 2.95, nElo -19.01 ± 2.65.
        (_penta(7895, 8757, 5485, 200, 568, 9999), -21.04, 2.95, -19.01, 2.65, None),
        # ZENO "History Heuristic": Ptnml [224, 309, 874, 347, 246]:
        # "Elo: 7.12 +/- 8.57, nElo: 8.95 +/- 10.77, LOS: 94.84 %".
        (Pentanomial.from_counts([224, 309, 874, 347, 246]), 7.12, 8.57, 8.95, 10.77, 94.84),
        # ZENO "Change the conditions …": Ptnml [200, 557, 1005, 643, 249]:
        # "Elo: 12.05 +/- 7.02, nElo: 16.07 +/- 9.35, LOS: 99.96 %".
        (Pentanomial.from_counts([200, 557, 1005, 643, 249]), 12.05, 7.02, 16.07, 9.35, 99.96),
    ],
)
def test_pentanomial_matches_fastchess(
    penta: Pentanomial, elo: float, error: float, nelo: float, nelo_error: float,
    los_percent: float | None,
) -> None:
    e = estimate(penta)
    assert e.samples == penta.pairs and e.games == 2 * penta.pairs
    assert e.elo == pytest.approx(elo, abs=0.005)
    assert e.error == pytest.approx(error, abs=0.005)
    assert e.nelo == pytest.approx(nelo, abs=0.005)
    assert e.nelo_error == pytest.approx(nelo_error, abs=0.005)
    if los_percent is not None:
        assert 100 * e.los == pytest.approx(los_percent, abs=0.005)


def test_pairs_tighten_the_interval_when_openings_decide_games() -> None:
    # Same 60 % score both ways. Trinomial: W=12 L=8 D=0 → var 0.24 per game.
    # As pairs, every pair split 1-1 except 2 pairs won twice: pair scores 0.5 ×8, 1.0 ×2,
    # mean 0.6, var = (8·0.01 + 2·0.16)/10 = 0.04 per pair → σ/√n = √0.004 = 0.063246,
    # against √(0.24/20) = 0.109545 for games: the pentanomial interval is narrower.
    tri = estimate(Wdl(wins=12, losses=8, draws=0))
    pairs = estimate(Pentanomial(wl_dd=8, ww=2))
    assert tri.score == pairs.score == pytest.approx(0.6)
    assert tri.elo == pytest.approx(pairs.elo)
    assert pairs.error < tri.error
    # LOS = Φ(0.1/0.063246) = Φ(1.58114) = 0.943077 (pairs), Φ(0.912871) = 0.819345 (games).
    assert pairs.los == pytest.approx(0.943077, abs=1e-6)
    assert tri.los == pytest.approx(0.819345, abs=1e-6)


def test_no_games_is_all_none() -> None:
    for counts in (Wdl(), Pentanomial()):
        assert estimate(counts) == EloEstimate(0, 0, *([None] * 8))


@pytest.mark.parametrize(
    ("counts", "score", "elo"),
    [
        (Wdl(wins=7), 1.0, math.inf),
        (Wdl(losses=3), 0.0, -math.inf),
        (Wdl(draws=5), 0.5, 0.0),
        (Pentanomial(ww=4), 1.0, math.inf),
        # Every pair split: score ½ with no spread at all.
        (Pentanomial(wl_dd=6), 0.5, 0.0),
    ],
)
def test_zero_variance_gives_point_estimate_only(counts, score: float, elo: float) -> None:
    e = estimate(counts)
    assert e.score == score and e.elo == elo
    assert (e.elo_low, e.elo_high, e.error, e.los, e.nelo, e.nelo_error) == (None,) * 6


def test_lopsided_few_games_have_an_open_interval() -> None:
    # W=9 L=1: s = 0.9, var = 0.9·0.01 + 0.1·0.81 = 0.09, σ/√n = 0.094868;
    # s + 1.96·σ/√n = 1.0859 > 1, so the upper bound is +inf; the lower is finite.
    e = estimate(Wdl(wins=9, losses=1))
    assert e.elo_high == math.inf and e.error == math.inf
    assert math.isfinite(e.elo_low) and e.elo_low < e.elo


def test_score_elo_round_trip_by_hand() -> None:
    # 400·log10(3) = 190.849: a 75 % score; 1/(1 + 10^(-190.849/400)) = 1/(1 + 1/3) = 0.75.
    assert elo_from_score(0.75) == pytest.approx(190.849, abs=1e-3)
    assert score_from_elo(190.849) == pytest.approx(0.75, abs=1e-6)
    assert elo_from_score(0.5) == 0.0
    assert elo_from_score(1.0) == math.inf and elo_from_score(0.0) == -math.inf


def test_counts_flip_and_add() -> None:
    assert Wdl(3, 1, 2).flipped() == Wdl(1, 3, 2)
    assert Wdl(3, 1, 2) + Wdl(1, 1, 1) == Wdl(4, 2, 3)
    p = Pentanomial.from_counts([1, 2, 3, 4, 5])
    assert p.flipped().counts == (5, 4, 3, 2, 1)
    assert estimate(p.flipped()).elo == pytest.approx(-estimate(p).elo)


@pytest.mark.parametrize(
    "build",
    [lambda: Wdl(wins=-1), lambda: Wdl(draws=1.5), lambda: Pentanomial(ww=True),
     lambda: Pentanomial.from_counts([1, 2, 3])],
)
def test_bad_counts_raise_one_clear_error(build) -> None:
    with pytest.raises(RatingsError) as info:
        build()
    assert "\n" not in str(info.value)
