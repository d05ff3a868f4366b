"""Games (as games.jsonl records them) to per-colour and per-pair counts."""

from __future__ import annotations

import pytest

from orchestrator.ratings import (
    GameOutcome,
    Pentanomial,
    RatingsError,
    Wdl,
    estimate,
    pentanomial_from_games,
    split_by_color,
)


def _games(black: str, white: str, black_wins: int, white_wins: int, draws: int):
    return (
        [GameOutcome(black, white, "black")] * black_wins
        + [GameOutcome(black, white, "white")] * white_wins
        + [GameOutcome(black, white, "draw")] * draws
    )


def test_split_by_color_matches_cutechess_report() -> None:
    # rafid-dev/Union changelog.md, cutechess-cli, "Repetition detection":
    #   Score of dev vs master: 1086 - 963 - 336  [0.526] 2385
    #   ...      dev playing White: 519 - 495 - 179  [0.510] 1193
    #   ...      dev playing Black: 567 - 468 - 157  [0.542] 1192
    #   Elo difference: 17.9 +/- 12.9, LOS: 99.7 %
    # Chess White moves first, so it plays the part of Go's Black here.
    games = (
        _games("dev", "master", 519, 495, 179)  # dev first to move
        + _games("master", "dev", 468, 567, 157)  # dev second to move, wins as "white"
        + [GameOutcome("other", "master", "black"), GameOutcome("dev", "master", None)]
    )
    split = split_by_color(games, "dev")
    assert split.as_black == Wdl(wins=519, losses=495, draws=179)
    assert split.as_white == Wdl(wins=567, losses=468, draws=157)
    assert split.overall == Wdl(wins=1086, losses=963, draws=336)
    assert estimate(split.as_black).score == pytest.approx(0.510, abs=5e-4)
    assert estimate(split.as_white).score == pytest.approx(0.542, abs=5e-4)
    overall = estimate(split.overall)
    assert overall.elo == pytest.approx(17.9, abs=0.05)
    assert overall.error == pytest.approx(12.9, abs=0.05)
    assert 100 * overall.los == pytest.approx(99.7, abs=0.05)
    # The opponent's view is the mirror image; a filter on the opponent drops "other".
    assert split_by_color(games, "master", opponent="dev").overall == split.overall.flipped()


def test_jigo_is_a_draw_for_both_sides() -> None:
    games = [GameOutcome("a", "b", "draw"), GameOutcome("b", "a", "draw")]
    assert split_by_color(games, "a").overall == Wdl(draws=2)
    assert split_by_color(games, "b").as_black == Wdl(draws=1)


def test_pentanomial_from_pairs() -> None:
    games = [
        # pair 1: a wins both (2 points)
        GameOutcome("a", "b", "black", pair=1), GameOutcome("b", "a", "white", pair=1),
        # pair 2: each side wins with Black (1 point)
        GameOutcome("a", "b", "black", pair=2), GameOutcome("b", "a", "black", pair=2),
        # pair 3: a loses one and draws one (½ point)
        GameOutcome("a", "b", "white", pair=3), GameOutcome("b", "a", "draw", pair=3),
        # pair 4: second game not finished yet; pair 5: no result; unpaired game
        GameOutcome("a", "b", "black", pair=4),
        GameOutcome("a", "b", "black", pair=5), GameOutcome("b", "a", None, pair=5),
        GameOutcome("a", "b", "black"),
    ]
    assert pentanomial_from_games(games, "a") == Pentanomial(ll=0, ld=1, wl_dd=1, wd=0, ww=1)
    assert pentanomial_from_games(games, "b") == Pentanomial(ll=1, ld=0, wl_dd=1, wd=1, ww=0)


@pytest.mark.parametrize(
    "games",
    [
        [GameOutcome("a", "b", "black", pair=7)] * 2,  # same colour twice
        [GameOutcome("a", "b", "black", pair=7), GameOutcome("b", "a", "black", pair=7),
         GameOutcome("a", "b", "white", pair=7)],  # three games
    ],
)
def test_malformed_pairs_are_errors(games) -> None:
    with pytest.raises(RatingsError, match="pair 7"):
        pentanomial_from_games(games, "a")


def test_bad_outcomes_are_errors() -> None:
    with pytest.raises(RatingsError, match="winner must be"):
        GameOutcome("a", "b", "B+R")  # type: ignore[arg-type]
    with pytest.raises(RatingsError, match="cannot play itself"):
        GameOutcome("a", "a", "black")
