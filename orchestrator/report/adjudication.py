"""The report's adjudication section (``[adjudicate]`` runs, docs/adjudication.md): games
resigned, the moves that saved, false resigns among the holdout games, dead-stone flips.

Moves saved: a resigned game would have gone on to the length the played-out games needed
(their mean, holdout games included), so it saved that mean less its own moves; the share
is of what the resigned games would have needed. False resigns: holdout games in which the
side that would have resigned did not lose, with a 95 % Wilson interval.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.quality.resign import wilson
from orchestrator.report.load import GameData
from orchestrator.report.model import AdjudicationSection
from orchestrator.words import plural


def section(games: Sequence[GameData]) -> AdjudicationSection | None:
    """The section, or None when no game was adjudicated."""
    judged = [g.line for g in games if not g.line.void and g.line.adjudication is not None]
    if not judged:
        return None
    resigned = [r for r in judged if r.adjudication and r.adjudication.resign is not None]
    played = [r for r in judged if r.reason in ("two-passes", "move-cap")]
    mean = sum(r.moves for r in played) / len(played) if played else None
    saved_pct = None
    if mean is not None and resigned:
        need = mean * len(resigned)
        saved_pct = round(100 * max(0.0, need - sum(r.moves for r in resigned)) / need, 1)
    would = [r.adjudication for r in judged
             if r.adjudication and r.adjudication.holdout and r.adjudication.false_resign
             is not None]
    false = sum(1 for a in would if a.false_resign)
    interval = wilson(false, len(would))
    scored = [r.adjudication for r in judged
              if r.adjudication and r.adjudication.adjudicated_result is not None]
    return AdjudicationSection(
        games=len(judged),
        resigned=len(resigned),
        resigned_moves=sum(r.moves for r in resigned),
        played_out=len(played),
        played_out_mean_moves=None if mean is None else round(mean, 1),
        moves_saved_pct=saved_pct,
        holdout=sum(1 for r in judged if r.adjudication and r.adjudication.holdout),
        holdout_would_resign=len(would),
        false_resigns=false,
        false_resign_ci=None if interval is None else [round(x, 4) for x in interval],
        dead_stones_scored=len(scored),
        dead_stone_flips=sum(1 for a in scored if a.flipped),
        off=sum(1 for r in judged if r.adjudication and r.adjudication.off is not None),
    )


def lines(s: AdjudicationSection) -> list[tuple[str, str]]:
    """The section as label/value lines (the md and html writers')."""
    saved = "n/a" if s.moves_saved_pct is None else (
        f"{s.moves_saved_pct:g} % (resigned games: {s.resigned_moves} moves; played-out "
        f"games: {s.played_out_mean_moves:g} moves on average)")
    ci = s.false_resign_ci
    false = (f"{s.false_resigns} of {s.holdout_would_resign} holdout games that would have "
             "resigned" + ("" if ci is None else
                           f" (95 % Wilson {100 * ci[0]:.1f}–{100 * ci[1]:.1f} %)"))
    return [
        ("Games resigned", f"{s.resigned} of {s.games} adjudicated"),
        ("Moves saved", saved),
        ("False resigns", false + f"; {plural(s.holdout, 'game')} held out"),
        ("Dead-stone flips", f"{s.dead_stone_flips} of {s.dead_stones_scored} games scored "
                             "by KataGo's ownership"),
        ("Adjudication off", f"{plural(s.off, 'game')} (KataGo lagging or gone: played out)"),
    ]
