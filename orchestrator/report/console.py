"""The short terminal summary of a report (rich)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from orchestrator.report import tables as t
from orchestrator.report.model import Report
from orchestrator.words import plural

RATINGS_SHOWN = 10


def print_summary(report: Report, out_dir: Path, console: Console | None = None) -> None:
    console = console or Console()
    totals = report.totals
    console.print(f"[bold]{t.title(report)}[/bold]")
    if report.verdict:
        console.print(f"[bold]{report.verdict.sentence}[/bold]", highlight=False)
    reasons = ", ".join(f"{r} {n}" for r, n in report.termination.items() if n)
    console.print(f"{totals.finished} finished games, {totals.void} void, "
                  f"{totals.rated} rated ({reasons or 'none'})")
    for s in report.head_to_head:
        est = s.estimate
        line = (f"{t.name(report, s.player)} vs {t.name(report, s.opponent)}: "
                f"{t.wld(s.results)}, "
                f"Elo {t.elo_interval(est)}, LOS {t.pct(est.los)}")
        for sprt in s.sprt:
            line += f", SPRT {sprt.status} (LLR {sprt.llr:+.2f})"
        console.print(line, highlight=False)
    if t.show_ratings(report):
        tab = Table(*t.ratings_table(report).headers[:5], box=None, pad_edge=False)
        for row in t.ratings_table(report).rows[:RATINGS_SHOWN]:
            tab.add_row(*row[:5])
        console.print(tab)
    for name, p in report.players.items():
        if p.fallback_total:
            console.print(f"{t.name(report, name)}: {plural(p.fallback_total, 'fallback')} "
                          f"({t.pct(p.fallback_rate, 2)} of moves asked)", highlight=False)
    if report.warnings:
        console.print(f"[yellow]{len(report.warnings)} warning(s), listed in the report[/]")
    console.print(f"report: {out_dir}/report.html (also .md, .json)", highlight=False)
