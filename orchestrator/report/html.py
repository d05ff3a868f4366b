"""``report.html``: one self-contained page (inline CSS and SVG, no script, no
network) with the tables of the Markdown report and a chart beside each. The verdict
box comes first; the per-game table folds away (``<details>``) and links each SGF by
a path relative to the report folder."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from html import escape
from pathlib import Path

from orchestrator.report import adjudication, quality_pages, quality_tables, svg
from orchestrator.report import tables as t
from orchestrator.report.model import GameRow, HeadToHead, Report, Sprt

CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em;
       padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .6em 0; font-size: .92em; }
/* A table or chart wider than a phone scrolls in its own box, not the page. */
table { display: block; max-width: 100%; overflow-x: auto; }
svg { max-width: 100%; height: auto; }
code { font-size: .95em; background: #f3f3f3; padding: 0 .2em; }
dd, p, li, figcaption { overflow-wrap: anywhere; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; }
th { background: #f3f3f3; }
dl.keys { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; }
dl.keys dt { font-weight: 600; } dl.keys dd { margin: 0; }
figure { margin: .8em 0; } .note { color: #555; font-size: .9em; }
.warning { color: #9c4221; }
.verdict { border: 2px solid #2b6cb0; border-radius: 6px; padding: .6em 1.2em;
           background: #f0f7ff; margin: 1em 0; }
.verdict.undecided { border-color: #a0aec0; background: #f7f7f7; }
.verdict .sentence { font-size: 1.25em; font-weight: 600; margin: .3em 0 .6em; }
details summary { cursor: pointer; font-weight: 600; margin: .6em 0; }
@media (max-width: 40em) { body { margin: 1em auto; }
  dl.keys { grid-template-columns: minmax(0, 1fr); } dl.keys dd { margin-bottom: .4em; } }
"""


_CODE = re.compile(r"`([^`]+)`")


def inline(text: str) -> str:
    """Text with Markdown's code spans (``go19 review RUN_DIR`` in backticks) as HTML."""
    return _CODE.sub(r"<code>\1</code>", escape(text))


def table(tab: t.Table) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in tab.headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in tab.rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figure(chart: str) -> str:
    return f"<figure>{chart}</figure>"


def _bound(value: float | None, sign: float) -> float:
    """An interval bound; none (no spread yet) or infinite ones reach the chart's edge."""
    return sign * math.inf if value is None or math.isinf(value) else value


def elo_chart(section: HeadToHead) -> str | None:
    """Elo over games with its 95 % band; points before the Elo is finite (a clean
    sweep so far) are left out, and there is no chart until one is."""
    points = [(p.games, p.elo, _bound(p.low, -1), _bound(p.high, 1))
              for p in section.curve if not math.isinf(p.elo)]
    if not points:
        return None
    title = (f"Elo of {section.player} over {section.opponent} with 95 % interval "
             f"({section.counts})")
    return svg.line_with_band(points, (0, section.games), title, "games", "Elo difference")


def color_chart(report: Report) -> str:
    rows = []
    for name, p in report.players.items():
        for label, r in (("as Black", p.as_black), ("as White", p.as_white)):
            rows.append((f"{name} {label}", (r.wins, r.draws, r.losses)))
    return svg.stacked_bars(rows, (("wins", svg.WIN), ("draws", svg.DRAW),
                                   ("losses", svg.LOSS)), "Results by colour")


def fallback_chart(report: Report) -> str:
    """One bar per player, split by reason: each reason once, however many there are."""
    players = report.players
    reasons = sorted({r for p in players.values() for r, c in p.fallbacks.items() if c})
    rows = [(name, [p.fallbacks.get(r, 0) for r in reasons]) for name, p in players.items()]
    segments = [(r, svg.SERIES[i % len(svg.SERIES)]) for i, r in enumerate(reasons)]
    return svg.stacked_bars(rows, segments, "Fallbacks by reason (count per player)")


def fallback_curve_chart(report: Report) -> str | None:
    curves = report.fallback_curves
    if not any(len(points) > 1 for points in curves.values()):
        return None
    series = [(name, [(p.games, p.rate) for p in points])
              for name, points in curves.items() if points]
    return svg.lines(series, (0, report.totals.games),
                     "Fallbacks per move asked over the run", "games", "fallback rate",
                     percent=True)


def llr_chart(sprt: Sprt) -> str | None:
    if not sprt.curve:
        return None
    points = [(p.games, p.llr) for p in sprt.curve]
    return svg.lines([(f"LLR {sprt.player} vs {sprt.opponent}", points)],
                     (0, points[-1][0]),
                     f"SPRT [{sprt.elo0:g}, {sprt.elo1:g}] log-likelihood ratio "
                     f"over games ({sprt.run})", "games", "LLR",
                     rules=[(sprt.upper, f"accept H1 {sprt.upper:+.2f}"),
                            (sprt.lower, f"accept H0 {sprt.lower:+.2f}")])


def margin_chart(report: Report) -> str | None:
    m = report.margins
    if not m.counts:
        return None
    return svg.histogram(m.bin_edges, m.counts,
                         f"Margin of victory, points for {m.player} (counted games; "
                         f"resignations: {m.resign_won} won, {m.resign_lost} lost)",
                         f"points ({m.player} ahead is positive)")


def latency_box_chart(report: Report) -> str | None:
    rows = [(name, p.latency_ms.box) for name, p in report.players.items()
            if p.latency_ms.box]
    if not rows:
        return None
    return svg.boxes(rows, "Reply latency distribution per player", unit=" ms")


def verdict_box(report: Report) -> str:
    v = report.verdict
    if not v:
        return ('<div class="verdict undecided"><p class="sentence">No head-to-head games '
                "between two players: no verdict.</p></div>")
    keys = "".join(f"<dt>{escape(k)}</dt><dd>{inline(val)}</dd>"
                   for k, val in [*t.verdict_lines(report),
                                  *quality_tables.verdict_lines(report)])
    kind = "" if v.stronger else " undecided"
    return (f'<div class="verdict{kind}"><p class="sentence">{escape(v.sentence)}</p>'
            f'<dl class="keys">{keys}</dl></div>')


def _sgf_link(out_dir: Path | None) -> Callable[[GameRow], str]:
    def cell(game: GameRow) -> str:
        target = Path(game.sgf)
        if out_dir is not None:
            target = Path(os.path.relpath(target.resolve(), Path(out_dir).resolve()))
        return target.as_posix()
    return cell


def games_section(report: Report, out_dir: Path | None) -> str:
    tab = t.games_table(report, _sgf_link(out_dir))
    head = "".join(f"<th>{escape(h)}</th>" for h in tab.headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row[:-1])
        + f'<td><a href="{escape(row[-1])}">sgf</a></td></tr>' for row in tab.rows
    )
    return (f"<details><summary>All {len(tab.rows)} games (click to open)</summary>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></details>")


def latency_chart(report: Report) -> str:
    groups = [(name, [p.latency_ms.p50, p.latency_ms.p95, p.latency_ms.p99])
              for name, p in report.players.items()]
    return svg.bars(groups, ["p50", "p95", "p99"],
                    "Reply latency per player (its endpoint in the table)", unit=" ms")


def render(report: Report, out_dir: Path | None = None) -> str:
    """The page; ``out_dir`` (where it is written) makes the SGF links relative to it."""
    page = [f"<h1>{escape(t.title(report))}</h1>", verdict_box(report),
            f"<p class=\"note\">Generated {escape(report.generated)} by go19 report from "
            "the recordings (SGF + games.jsonl). "
            f"{escape(t.pace_line(report))}</p>",
            "<h2>Runs</h2>", table(t.runs_table(report)),
            "<h2>Totals</h2>", table(t.totals_table(report))]
    for section in report.head_to_head:
        page.append(f"<h2>{escape(t.name(report, section.player))} vs "
                    f"{escape(t.name(report, section.opponent))}</h2>")
        keys = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>"
                       for k, v in t.head_to_head_lines(section))
        page.append(f'<dl class="keys">{keys}</dl>')
        chart = elo_chart(section)
        page.append(_figure(chart) if chart else
                    '<p class="note">No chart: the Elo is not finite yet (one side won '
                    "every game or pair).</p>")
        for sprt in section.sprt:
            llr = llr_chart(sprt)
            if llr:
                page.append(_figure(llr))
        if section.pairs:
            done = sum(p.points is not None for p in section.pairs)
            page.append(f"<details><summary>Opening pairs: {done} complete of "
                        f"{len(section.pairs)} (click to open)</summary>"
                        f"{table(t.pairs_table(section))}</details>")
    page.append(quality_pages.html(report, table, inline, out_dir))
    if t.show_ratings(report):
        page += ["<h2>Ratings</h2>", table(t.ratings_table(report)),
                 f'<p class="note">{escape(t.ratings_note(report))}</p>']
    lengths = report.lengths
    page += ["<h2>Results by colour</h2>", table(t.color_table(report)),
             _figure(color_chart(report)),
             "<h2>Game length</h2>", f"<p>{escape(t.lengths_line(report))}</p>",
             _figure(svg.histogram(lengths.bin_edges, lengths.counts,
                                   "Game length (finished games)", "moves"))]
    margin = margin_chart(report)
    if margin:
        page += ["<h2>Margin of victory</h2>", _figure(margin)]
    page += ["<h2>Termination</h2>", table(t.termination_table(report)),
             _figure(svg.bars([(r, [n]) for r, n in report.termination.items()], ["games"],
                              "How games ended", digits=0)),
             *_adjudication(report),
             "<h2>Fallbacks and illegal replies</h2>",
             '<p class="note">Rates are per move asked of the player (its own policy was '
             "consulted), void games included.</p>",
             table(t.fallback_table(report)), _figure(fallback_chart(report))]
    curve = fallback_curve_chart(report)
    if curve:
        page.append(_figure(curve))
    page += ["<h2>Latency</h2>", table(t.latency_table(report)),
             _figure(latency_chart(report))]
    box = latency_box_chart(report)
    if box:
        page.append(_figure(box))
    tokens = t.tokens_table(report)
    if tokens is not None:
        page += ["<h2>Tokens</h2>", table(tokens)]
    page += ["<h2>Games</h2>", games_section(report, out_dir)]
    if report.notes or report.warnings:
        page.append("<h2>Notes</h2><ul>")
        page += [f"<li>{escape(n)}</li>" for n in report.notes]
        page += [f'<li class="warning">warning: {escape(w)}</li>' for w in report.warnings]
        page.append("</ul>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(t.title(report))}</title><style>{CSS}{quality_pages.CSS}</style>"
        "</head>"
        f"<body>{''.join(page)}</body></html>\n"
    )


def _adjudication(report: Report) -> list[str]:
    if report.adjudication is None:
        return []
    items = "".join(f"<li><b>{escape(k)}</b>: {escape(v)}</li>"
                    for k, v in adjudication.lines(report.adjudication))
    return ["<h2>Adjudication</h2>", f"<ul>{items}</ul>"]
