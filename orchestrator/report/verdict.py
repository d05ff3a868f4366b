"""The verdict: who is stronger, by how much, how sure — one :class:`~.model.Verdict` and
one sentence.

Input is a head-to-head section of :func:`orchestrator.report.stats.compute`. The sentence
follows the numbers:

- the SPRT decided: it says which hypothesis and at which game;
- else the LOS is at least 95 % (or at most 5 %): that side is stronger, with that
  confidence;
- else: undecided, with the Elo interval, and more games are needed.
"""

from __future__ import annotations

import math

from orchestrator.ratings import EloEstimate
from orchestrator.report.model import HeadToHead, Sprt, Verdict, VerdictSprt

CONFIDENT = 0.95


def _elo_text(value: float | None) -> str:
    if value is None:
        return "n/a"
    if math.isinf(value):
        return "+∞" if value > 0 else "−∞"
    return f"{value:+.1f}".replace("-", "−")


def _all(count: int, kind: str) -> str:
    """``the one game``, ``both pairs``, ``all 5 games``."""
    if count == 1:
        return f"the one {kind[:-1]}"
    return f"both {kind}" if count == 2 else f"all {count} {kind}"


def sentence(player: str, opponent: str, est: EloEstimate, sprt: Sprt | None,
             samples_kind: str) -> str:
    """One plain-language sentence for ``player`` against ``opponent``."""
    text = _sentence(player, opponent, est, sprt, samples_kind)
    if sprt is not None and sprt.decision is None and est.elo is not None:
        text = (f"{text[:-1]}; the SPRT [{sprt.elo0:g}, {sprt.elo1:g}] has not decided "
                f"yet (LLR {sprt.llr:+.2f}, bounds {sprt.lower:+.2f} and "
                f"{sprt.upper:+.2f}).")
    return text


def _sentence(player: str, opponent: str, est: EloEstimate, sprt: Sprt | None,
              samples_kind: str) -> str:
    los = est.los
    if est.elo is None:
        return f"No rated games between {player} and {opponent} yet."
    if sprt is not None and sprt.decision is not None:
        at = f" at game {sprt.decided_at}" if sprt.decided_at else ""
        if sprt.decision == "H1":
            lead = (f"{player} is stronger than {opponent}"
                    + (f" with {100 * los:.0f} % confidence" if los is not None else ""))
            return (f"{lead}; the SPRT accepted H1 (+{sprt.elo1:g} Elo rather than "
                    f"{sprt.elo0:+g}){at}.")
        return (f"{player} is not shown to be {sprt.elo1:g} Elo stronger than {opponent}; "
                f"the SPRT accepted H0 ({sprt.elo0:+g} Elo rather than "
                f"+{sprt.elo1:g}){at}.")
    if los is None:  # every sample alike: a clean sweep (or all draws) so far
        score = est.score
        assert score is not None
        winner, loser = (player, opponent) if score > 0.5 else (opponent, player)
        if score == 0.5:
            return (f"{player} and {opponent} drew every {samples_kind[:-1]} so far; "
                    "no interval yet, more games needed.")
        return (f"{winner} won {_all(est.samples, samples_kind)} against {loser}; too few "
                "games for an interval, more games needed.")
    interval = (f"Elo {_elo_text(est.elo)} [{_elo_text(est.elo_low)}, "
                f"{_elo_text(est.elo_high)}]")
    if los >= CONFIDENT:
        return (f"{player} is stronger than {opponent} with {100 * los:.0f} % confidence "
                f"({interval}).")
    if los <= 1 - CONFIDENT:
        return (f"{opponent} is stronger than {player} with {100 * (1 - los):.0f} % confidence "
                f"({interval} for {player}).")
    return (f"Undecided: {player} vs {opponent} {interval}, LOS {100 * los:.0f} %; "
            "more games needed.")


def verdict(section: HeadToHead) -> Verdict:
    """The verdict box's fields for one head-to-head section."""
    est = section.estimate
    sprt = section.sprt[0] if section.sprt else None
    los = est.los
    # "Stronger" only when the statistics say so; a clean sweep of a few games is not enough.
    if sprt is not None and sprt.decision == "H1" or los is not None and los >= CONFIDENT:
        stronger: str | None = section.player
    elif los is not None and los <= 1 - CONFIDENT and (sprt is None or sprt.decision != "H1"):
        stronger = section.opponent
    else:
        stronger = None
    return Verdict(
        player=section.player,
        opponent=section.opponent,
        stronger=stronger,
        games=section.games,
        results=section.results,
        counts=section.counts,
        kind="pentanomial" if section.counts == "pairs" else "trinomial",
        samples=est.samples,
        elo=est.elo, elo_low=est.elo_low, elo_high=est.elo_high,
        los=los,
        sprt=None if sprt is None else VerdictSprt(
            status=sprt.status, llr=sprt.llr, lower=sprt.lower, upper=sprt.upper,
            elo0=sprt.elo0, elo1=sprt.elo1, decision=sprt.decision,
            decided_at=sprt.decided_at),
        sentence=sentence(section.player, section.opponent, est, sprt, section.counts),
    )
