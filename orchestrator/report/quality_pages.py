"""The move-quality section of ``report.md`` and ``report.html``: the tables of
:mod:`orchestrator.report.quality_tables`, the charts (point loss over move number per player,
histograms of losses; inline SVG in the html, SVG files beside the report for the Markdown)
and each player's worst moves with their board pictures and SGF links."""

from __future__ import annotations

import os
from collections.abc import Callable
from html import escape
from pathlib import Path

from orchestrator.quality.report import QualityReport, QualityUnavailable
from orchestrator.report import svg
from orchestrator.report import tables as t
from orchestrator.report.model import Report
from orchestrator.report.quality_tables import (
    counts_table,
    labels_line,
    method_lines,
    number,
    pairs_table,
    players_table,
    section,
    worst_table,
)

CHART_FOLDER = "moves"
LOSS_CURVE = "loss-by-move.svg"


def loss_curve_chart(report: Report, q: QualityReport) -> str | None:
    series = [(t.name(report, player), [(c.move, c.loss) for c in p.curve])
              for player, p in q.players.items() if p.curve]
    if not series:
        return None
    last = max(x for _, points in series for x, _ in points)
    return svg.lines(series, (0, last + 5), "Mean point loss over move number (per 10 moves)",
                     "move number", "points lost a move")


def histogram_charts(report: Report, q: QualityReport) -> list[tuple[str, str]]:
    """(player, chart) for each player with counted moves."""
    edges = q.histogram_edges
    return [(player, svg.histogram(edges, p.histogram, f"Point loss of {t.name(report, player)}"
                                   f"'s moves (the last bar: {edges[-2]:g} and more)",
                                   "points lost"))
            for player, p in q.players.items() if p.moves]


def charts(report: Report) -> dict[str, str]:
    """Chart files for the Markdown page, by name (under CHART_FOLDER)."""
    q = section(report)
    if q is None:
        return {}
    out = {}
    curve = loss_curve_chart(report, q)
    if curve:
        out[LOSS_CURVE] = curve
    for k, (_, chart) in enumerate(histogram_charts(report, q), 1):
        out[f"loss-histogram-{k}.svg"] = chart
    return out


def _relative(out_dir: Path | None) -> Callable[[str], str]:
    def link(path: str) -> str:
        target = Path(path)
        if out_dir is not None:
            target = Path(os.path.relpath(target.resolve(), Path(out_dir).resolve()))
        return target.as_posix()
    return link


Render = Callable[[t.Table], str]
Text = Callable[[str], str]


def markdown(report: Report, table: Render, out_dir: Path | None = None) -> list[str]:
    """The section's lines (a ``## Move quality`` heading first); ``table`` is the page's
    own table writer."""
    q = report.quality
    if q is None:
        return []
    out = ["## Move quality (KataGo)", ""]
    if isinstance(q, QualityUnavailable):
        return [*out, q.hint, ""]
    link = _relative(out_dir)
    out += [labels_line(q), "", table(pairs_table(q)), "",
            table(players_table(report, q)), "", table(counts_table(report, q)), ""]
    files = charts(report)
    out += [f"![{name}]({CHART_FOLDER}/{name})" for name in files] + [""]
    for player, p in q.players.items():
        if not p.worst:
            continue
        out += [f"### The {len(p.worst)} costliest moves of {t.name(report, player)}", "",
                "Red ring: the move played; green: KataGo's.", "",
                table(worst_table(p.worst)), ""]
        for k, w in enumerate(p.worst, 1):
            picture = f"![#{k}]({w.picture}) " if w.picture else ""
            out.append(f"- {picture}#{k}: [game {w.game}, move {w.move}]"
                       f"({link(w.sgf)}) ({w.played} lost {number(w.loss)} points; "
                       f"KataGo {w.katago})")
        out.append("")
    out += [f"- {line}" for line in method_lines(q)] + [""]
    return out


def html(report: Report, table: Render, text: Text, out_dir: Path | None = None) -> str:
    """The section's HTML; ``table`` and ``text`` are the page's own writers."""
    q = report.quality
    if q is None:
        return ""
    head = "<h2>Move quality (KataGo)</h2>"
    if isinstance(q, QualityUnavailable):
        return f'{head}<p class="note">{text(q.hint)}</p>'
    link = _relative(out_dir)
    page = [head, f'<p class="note">{escape(labels_line(q))}</p>',
            table(pairs_table(q)), table(players_table(report, q)),
            table(counts_table(report, q))]
    curve = loss_curve_chart(report, q)
    if curve:
        page.append(f"<figure>{curve}</figure>")
    page += [f"<figure>{chart}</figure>" for _, chart in histogram_charts(report, q)]
    for player, p in q.players.items():
        if not p.worst:
            continue
        cells = []
        for k, w in enumerate(p.worst, 1):
            img = (f'<img src="{escape(w.picture)}" width="190" height="190" '
                   f'alt="game {w.game} move {w.move}">' if w.picture else "")
            cells.append(
                f'<figure class="move">{img}<figcaption>#{k}: '
                f'<a href="{escape(link(w.sgf))}">game {w.game}, move {w.move}</a>'
                f"<br>{escape(w.played)} lost {number(w.loss)} points; KataGo "
                f"{escape(w.katago)}</figcaption></figure>")
        page += [f"<h3>The {len(p.worst)} costliest moves of "
                 f"{escape(t.name(report, player))}</h3>",
                 '<p class="note">Red ring: the move played; green: KataGo\'s.</p>',
                 '<div class="moves">' + "".join(cells) + "</div>",
                 f"<details><summary>as a table</summary>{table(worst_table(p.worst))}"
                 "</details>"]
    page.append('<ul class="note">' + "".join(f"<li>{escape(line)}</li>"
                                              for line in method_lines(q)) + "</ul>")
    return "".join(page)


CSS = """
.moves { display: flex; flex-wrap: wrap; gap: .6em; }
figure.move { margin: 0; width: 190px; font-size: .85em; }
"""
