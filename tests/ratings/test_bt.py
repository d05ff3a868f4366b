"""Bradley–Terry ratings: closed forms by hand, exact anchors, and recovery from seeded data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from orchestrator.ratings import (
    GameOutcome,
    RatingsError,
    Wdl,
    aggregate,
    bradley_terry,
    elo_from_score,
)

ELO = 400 / math.log(10)  # 173.7178 Elo per unit of logistic strength


def test_two_players_agree_with_closed_form_logistic_elo() -> None:
    # a scores 60 % over 100 games, colours balanced: the MLE of r_a - r_b solves
    # σ(x) = 0.6, i.e. x = 400·log10(1.5) = 70.4365 Elo, and its stderr is the inverse
    # Fisher information n·s·(1-s) = 100·0.24 = 24 per unit²: 173.7178/√24 = 35.4600 Elo.
    table = {("a", "b"): Wdl(wins=30, losses=20), ("b", "a"): Wdl(wins=20, losses=30)}
    fit = bradley_terry(table, anchor={"b": 0.0}, prior_games=0)
    assert fit.elo("a") == pytest.approx(elo_from_score(0.6), abs=1e-6)
    assert fit.elo("a") == pytest.approx(70.4365, abs=1e-4)
    assert fit.row("a").stderr == pytest.approx(35.4600, abs=1e-4)
    assert fit.black_advantage == pytest.approx(0.0, abs=1e-6)
    assert fit.row("a") .games == 100 and fit.row("a").wins == 60 and fit.row("a").losses == 40


def test_draws_count_as_half_wins() -> None:
    # 40 wins, 20 losses, 40 draws = 60 points of 100: the same 70.4365 Elo as above.
    table = {("a", "b"): Wdl(20, 10, 20), ("b", "a"): Wdl(10, 20, 20)}
    fit = bradley_terry(table, anchor={"b": 0.0}, prior_games=0, black_advantage=False)
    assert fit.elo("a") == pytest.approx(70.4365, abs=1e-4)
    assert fit.row("a").draws == 40 and fit.black_advantage is None


def test_anchor_holds_exactly() -> None:
    table = {("a", "b"): Wdl(7, 3, 0), ("b", "c"): Wdl(6, 4, 1), ("c", "a"): Wdl(2, 8, 0)}
    fit = bradley_terry(table, anchor={"b": 1234.5})
    assert fit.elo("b") == 1234.5
    assert fit.row("b").stderr == 0.0
    assert fit.diff_stderr("a", "b") == pytest.approx(fit.row("a").stderr)


def _synthetic(true: dict[str, float], black_adv: float, games: int, seed: int):
    """Every ordered pair plays ``games`` games; Black wins with the model's probability."""
    rng = np.random.default_rng(seed)
    out: list[GameOutcome] = []
    for black in true:
        for white in true:
            if black == white:
                continue
            p = 1 / (1 + 10 ** (-(true[black] - true[white] + black_adv) / 400))
            k = int(rng.binomial(games, p))
            out += [GameOutcome(black, white, "black")] * k
            out += [GameOutcome(black, white, "white")] * (games - k)
    return out


def test_three_players_and_black_advantage_recovered_within_stderr() -> None:
    true = {"gnugo": 0.0, "r4": 100.0, "r5": 250.0}
    games = _synthetic(true, black_adv=40.0, games=3000, seed=19)
    fit = bradley_terry(aggregate(games), anchor={"gnugo": 0.0})
    assert [r.player for r in fit.rows] == ["r5", "r4", "gnugo"]
    for row in fit.rows:
        if row.player != "gnugo":
            assert 1.0 < row.stderr < 10.0
            assert abs(row.elo - true[row.player]) < 3 * row.stderr
        assert row.games == 4 * 3000
    assert abs(fit.black_advantage - 40.0) < 3 * fit.black_advantage_stderr
    assert fit.los("r5", "r4") > 0.999 and fit.los("r4", "r5") < 0.001
    assert fit.los("r4", "r5") + fit.los("r5", "r4") == pytest.approx(1.0)
    assert fit.los("r4", "r4") == 0.5


def test_black_advantage_between_equal_players() -> None:
    true = {"a": 0.0, "b": 0.0}
    fit = bradley_terry(aggregate(_synthetic(true, 60.0, 5000, seed=7)), anchor={"a": 0.0})
    assert abs(fit.black_advantage - 60.0) < 3 * fit.black_advantage_stderr
    assert abs(fit.elo("b")) < 3 * fit.row("b").stderr


def test_without_anchor_ratings_average_zero() -> None:
    games = _synthetic({"a": 0.0, "b": 150.0, "c": 300.0}, 0.0, 400, seed=3)
    fit = bradley_terry(aggregate(games))
    assert sum(r.elo for r in fit.rows) == pytest.approx(0.0, abs=1e-9)
    anchored = bradley_terry(aggregate(games), anchor={"a": 0.0})
    # Same differences whichever way the scale is pinned (priors aside, they are weak).
    assert fit.elo("c") - fit.elo("a") == pytest.approx(
        anchored.elo("c") - anchored.elo("a"), abs=1.0
    )


def test_prior_keeps_an_unbeaten_player_finite() -> None:
    # "c" won all 10 games against "a": plain MLE puts it at +inf.
    table = {("a", "b"): Wdl(5, 5, 0), ("b", "a"): Wdl(5, 5, 0), ("c", "a"): Wdl(wins=10)}
    fit = bradley_terry(table, anchor={"a": 0.0})
    assert fit.rows[0].player == "c"
    assert 100.0 < fit.elo("c") < 1000.0 and math.isfinite(fit.row("c").stderr)
    with pytest.raises(RatingsError, match="never lost"):
        bradley_terry(table, anchor={"a": 0.0}, prior_games=0)


def test_prior_by_hand_with_virtual_draws() -> None:
    # b never played a real game but for 1 win and 1 loss vs anchor a (rating 0): MLE is 0.
    # Prior alone: g = 2 virtual draws add precision g/4 = 0.5; real games add 2·¼ = 0.5,
    # so stderr = 173.7178/√1.0 = 173.7178 Elo.
    table = {("a", "b"): Wdl(1, 1, 0)}
    fit = bradley_terry(table, anchor={"a": 0.0}, black_advantage=False)
    assert fit.elo("b") == pytest.approx(0.0, abs=1e-9)
    assert fit.row("b").stderr == pytest.approx(ELO, abs=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"anchor": {"zz": 0.0}}, "anchor 'zz' played no games"),
        ({"anchor": {"a": math.nan}}, "finite"),
        ({"prior_games": -1.0}, "prior_games"),
    ],
)
def test_bad_arguments_raise_one_clear_error(kwargs, message) -> None:
    with pytest.raises(RatingsError, match=message):
        bradley_terry({("a", "b"): Wdl(1, 1, 0)}, **kwargs)


def test_empty_table_and_unknown_player() -> None:
    with pytest.raises(RatingsError, match="no games"):
        bradley_terry({})
    fit = bradley_terry({("a", "b"): Wdl(1, 1, 0)})
    with pytest.raises(RatingsError, match="'x'"):
        fit.los("a", "x")


def test_terms_and_priors_compose_into_the_same_fit() -> None:
    # The fit of likelihood_of_games plus explicit priors is bradley_terry's own fit.
    from orchestrator.ratings.bt import (
        black_advantage_prior,
        fit_likelihoods,
        likelihood_of_games,
        player_prior,
    )

    table = {("a", "b"): Wdl(7, 3, 0), ("b", "c"): Wdl(6, 4, 1), ("c", "a"): Wdl(2, 8, 0)}
    terms = likelihood_of_games(table)
    assert len(terms) == 3 and terms[0].coefs == {"a": 1.0, "b": -1.0, "<black advantage>": 1.0}
    terms += [player_prior(p, 2.0, 0.0) for p in ("a", "c")] + [black_advantage_prior(2.0)]
    totals = {"a": Wdl(15, 5, 0), "b": Wdl(9, 11, 1), "c": Wdl(6, 14, 1)}
    composed = fit_likelihoods(terms, ("a", "b", "c"), totals, {"b": 0.0}, True)
    direct = bradley_terry(table, anchor={"b": 0.0})
    for p in "abc":
        assert composed.elo(p) == pytest.approx(direct.elo(p), abs=1e-9)
        assert composed.row(p).stderr == pytest.approx(direct.row(p).stderr, abs=1e-9)


def test_connected_groups_split_players_who_never_met() -> None:
    from orchestrator.ratings import connected_groups

    table = {("a", "b"): Wdl(1, 1, 0), ("c", "b"): Wdl(2, 0, 0), ("x", "y"): Wdl(3, 1, 0),
             ("z", "w"): Wdl()}  # no games: z and w are not connected by it
    assert connected_groups(table) == [("a", "b", "c"), ("x", "y")]
    assert connected_groups({("a", "b"): Wdl(1, 0, 0), ("b", "c"): Wdl(0, 1, 0)}) == [
        ("a", "b", "c")]
