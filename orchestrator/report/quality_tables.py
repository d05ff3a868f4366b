"""The move-quality section's tables and key lines as plain strings, shared by the Markdown
and HTML pages (as :mod:`orchestrator.report.tables` is for the rest). Input is the typed
report with its ``quality`` section (:func:`orchestrator.report.quality.section`)."""

from __future__ import annotations

import math

from orchestrator.quality.report import (
    Decided,
    PairQuality,
    QualityReport,
    QualityUnavailable,
    WorstMove,
)
from orchestrator.quality.summary import Interval
from orchestrator.report.model import Report
from orchestrator.report.tables import Table, name
from orchestrator.words import plural

PHASE_NAMES = {"all": "all moves", "1-50": "moves 1–50", "51-150": "moves 51–150",
               "151+": "moves 151+"}


def number(value: float | None, digits: int = 1, sign: bool = False) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    return (f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}").replace("-", "−")


def interval(d: Interval, digits: int = 1, sign: bool = False) -> str:
    """``0.9 [0.5, 1.3]``; the bare value while there is no spread yet."""
    text = number(d.value, digits, sign)
    if math.isnan(d.low) or math.isnan(d.value):
        return text
    return f"{text} [{number(d.low, digits, sign)}, {number(d.high, digits, sign)}]"


def section(report: Report) -> QualityReport | None:
    """The report's move-quality section, when it has labels."""
    return report.quality if isinstance(report.quality, QualityReport) else None


def main_pair(report: Report, q: QualityReport) -> PairQuality | None:
    """The quality head-to-head of the report's verdict pair (else the first)."""
    pairs = q.head_to_head
    v = report.verdict
    chosen = (v.player, v.opponent) if v is not None else None
    return next((p for p in pairs if (p.player, p.opponent) == chosen),
                pairs[0] if pairs else None)


def decided(d: Decided, game: str = "game") -> str:
    """When the verdict's 95 % interval left 0: ``decided after 12 of 40 games``, ``decided
    after 12 of 40 games, undecided again until game 15``, ``decided after 12 of 40 games,
    undecided again by the last``, or ``not decided after 40 games``."""
    if d.first is None:
        return f"not decided after {plural(d.games, game)}"
    text = f"decided after {d.first} of {plural(d.games, game)}"
    if d.steady == d.first:
        return text
    if d.steady is None:
        return f"{text}, undecided again by the last"
    return f"{text}, undecided again until game {d.steady}"


def coverage(q: QualityReport) -> str:
    """Which moves the numbers are over: ``6 of 10 games labelled, the first 40 moves of
    each``."""
    c, most = q.counts, q.labels.max_moves
    return (f"{c.labelled} of {plural(c.games, 'game')} labelled, "
            + (f"the first {most} moves of each" if most else "every move"))


def verdict_lines(report: Report) -> list[tuple[str, str]]:
    """The first screen's quality lines, beside the Elo verdict."""
    q = report.quality
    if q is None:
        return []
    if isinstance(q, QualityUnavailable):
        return [("move quality", "no KataGo labels for this run: `go19 review RUN_DIR` "
                 "labels it and adds the move-quality section")]
    pair = main_pair(report, q)
    if pair is None:
        return [("move quality", "no labelled games between two players")]
    return [
        ("move quality", f"{pair.sentence.removesuffix('.')} ({coverage(q)})."),
        ("verdicts", f"quality {decided(pair.quality_decided, 'labelled game')}; "
                     f"Elo {decided(pair.elo_decided, 'rated game')}"),
    ]


def _phases(q: QualityReport) -> list[str]:
    """The phases worth a row or column: every move, and each phase that holds some of a
    player's counted moves but not all of them (with ``--max-moves 40`` moves 1–50 are
    every move, and the later phases none)."""
    return [phase for phase in q.phases if phase == "all" or any(
        0 < p.phase_moves[phase] < p.phase_moves["all"] for p in q.players.values())]


def players_table(report: Report, q: QualityReport) -> Table:
    """One row per player and phase (the phases with some of its counted moves, but not all:
    that row would be the one of every move again)."""
    rows = []
    for player, p in q.players.items():
        for phase in q.phases:
            s = p.phases[phase]
            moves = p.phase_moves[phase]
            if not moves or phase != "all" and moves == p.phase_moves["all"]:
                continue
            rows.append((name(report, player), PHASE_NAMES.get(phase, phase),
                         str(p.phase_moves[phase]), interval(s["mean_loss"], 2),
                         interval(s["katrain_accuracy"]), interval(s["accuracy"]),
                         interval(s["top1"]), interval(s["top5"]),
                         *(interval(s[f"blunders{t}"]) for t in ("3", "6", "12"))))
    return Table(("player", "phase", "moves", "mean point loss [95 %]", "KaTrain accuracy",
                  "go19 accuracy (uniform)", "top-1 %", "top-5 %", "≥ 3 pts /100",
                  "≥ 6 pts /100", "≥ 12 pts /100"), tuple(rows))


def counts_table(report: Report, q: QualityReport) -> Table:
    """Per player: games, counted moves, and the moves counted apart."""
    rows = []
    for player, p in q.players.items():
        e = p.excluded
        fb = p.fallback_mean_loss
        rows.append((name(report, player), str(p.games), str(p.moves), str(e.opening),
                     str(e.fallback) + (f" (mean loss {number(fb, 2)})" if fb is not None
                                        else ""),
                     str(e.unlabelled)))
    return Table(("player", "games", "counted moves", "opening moves", "fallback moves",
                  "unlabelled moves"), tuple(rows))


def pairs_table(q: QualityReport) -> Table:
    phases = [phase for phase in _phases(q) if phase != "all"]
    rows = []
    for p in q.head_to_head:
        rows.append((f"{p.player} vs {p.opponent}", str(p.games),
                     interval(p.difference, 2, sign=True),
                     *(interval(p.by_phase[phase], 2, sign=True) for phase in phases),
                     p.better or "undecided",
                     decided(p.quality_decided, "labelled game"),
                     decided(p.elo_decided, "rated game")))
    return Table(("pair", "games", "opponent's loss − player's [95 %]",
                  *(PHASE_NAMES.get(phase, phase) for phase in phases), "plays better",
                  "quality verdict", "Elo verdict"), tuple(rows))


def worst_table(worst: list[WorstMove]) -> Table:
    rows = tuple((str(k), f"{w.run} #{w.game}", str(w.move), w.color, number(w.loss),
                  w.played, w.katago, str(w.policy_rank), number(w.lead, 1, sign=True))
                 for k, w in enumerate(worst, 1))
    return Table(("#", "game", "move", "colour", "points lost", "played", "KataGo",
                  "policy rank", "Black's lead before"), rows)


def labels_line(q: QualityReport) -> str:
    s, c = q.labels, q.counts
    return (f"KataGo {s.katago or '?'} ({', '.join(s.models or ['?'])}), "
            f"{s.visits} visit{'s' if s.visits != 1 else ''} a position"
            + (f", the first {s.max_moves} moves of each game" if s.max_moves else "")
            + f"; {c.labelled} of {c.games} finished games labelled"
            + (f" ({c.unlabelled} without labels)" if c.unlabelled else "")
            + f"; labels from {', '.join(s.folders)}.")


def method_lines(q: QualityReport) -> list[str]:
    m = q.method
    return [f"point loss = {m['point_loss']}", f"mean point loss = {m['mean_loss']}",
            f"KaTrain accuracy = {m['katrain_accuracy']}", f"go19 accuracy = {m['accuracy']}",
            f"top-5 = {m['top5']}", f"blunders = {m['blunders']}",
            f"intervals: {m['interval']}",
            "fallback and opening-book moves are not counted (their numbers are apart)"]
