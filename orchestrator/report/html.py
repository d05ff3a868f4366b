"""``report.html``: one self-contained page (inline CSS and SVG, no script, no
network) with the tables of the Markdown report and a chart beside each."""

from __future__ import annotations

from html import escape

from orchestrator.report import svg
from orchestrator.report import tables as t

CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em;
       padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .6em 0; font-size: .92em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; }
th { background: #f3f3f3; }
dl.keys { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; }
dl.keys dt { font-weight: 600; } dl.keys dd { margin: 0; }
figure { margin: .8em 0; } .note { color: #555; font-size: .9em; }
.warning { color: #9c4221; }
"""


def table(tab: t.Table) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in tab.headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in tab.rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figure(chart: str) -> str:
    return f"<figure>{chart}</figure>"


def _bound(value: float | str | None, sign: float) -> float:
    """An interval bound; none (no spread yet) or infinite ones reach the chart's edge."""
    if isinstance(value, str) or value is None:
        return sign * float("inf")
    return value


def elo_chart(section: dict) -> str | None:
    """Elo over games with its 95 % band; points before the Elo is finite (a clean
    sweep so far) are left out, and there is no chart until one is."""
    points = [(p["games"], p["elo"], _bound(p["low"], -1), _bound(p["high"], 1))
              for p in section["curve"] if not isinstance(p["elo"], str)]
    if not points:
        return None
    title = (f"Elo of {section['player']} over {section['opponent']} with 95 % interval "
             f"({section['counts']})")
    return svg.line_with_band(points, (0, section["games"]), title, "games", "Elo difference")


def colour_chart(report: dict) -> str:
    rows = []
    for name, p in report["players"].items():
        for label, key in (("as Black", "as_black"), ("as White", "as_white")):
            r = p[key]
            rows.append((f"{name} {label}", (r["wins"], r["draws"], r["losses"])))
    return svg.stacked_bars(rows, (("wins", svg.WIN), ("draws", svg.DRAW),
                                   ("losses", svg.LOSS)), "Results by colour")


def fallback_chart(report: dict) -> str:
    players = report["players"]
    reasons = sorted({r for p in players.values() for r, c in p["fallbacks"].items() if c})
    series = ["all fallbacks", "illegal", *reasons]
    groups = []
    for name, p in players.items():
        rates = [p["fallback_rate"], p["illegal_rate"],
                 *(p["fallback_rate_by_reason"].get(r, 0.0) for r in reasons)]
        groups.append((name, [None if v is None else 100 * v for v in rates]))
    return svg.bars(groups, series, "Fallbacks and illegal replies per move asked",
                    unit=" %", digits=2, skip_zero=True)


def latency_chart(report: dict) -> str:
    groups = [(name, [p["latency_ms"][k] for k in ("p50", "p95", "p99")])
              for name, p in report["players"].items()]
    return svg.bars(groups, ["p50", "p95", "p99"],
                    "Reply latency per player (its endpoint in the table)", unit=" ms")


def render(report: dict) -> str:
    page = [f"<h1>{escape(t.title(report))}</h1>",
            f"<p class=\"note\">Generated {escape(report['generated'])} by go19 report from "
            "the recordings (SGF + games.jsonl).</p>",
            "<h2>Runs</h2>", table(t.runs_table(report)),
            "<h2>Totals</h2>", table(t.totals_table(report))]
    for section in report["head_to_head"]:
        page.append(f"<h2>{escape(section['player'])} vs {escape(section['opponent'])}</h2>")
        keys = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>"
                       for k, v in t.head_to_head_lines(section))
        page.append(f'<dl class="keys">{keys}</dl>')
        chart = elo_chart(section)
        page.append(_figure(chart) if chart else
                    '<p class="note">No chart: the Elo is not finite yet (one side won '
                    "every game or pair).</p>")
    if t.show_ratings(report):
        page += ["<h2>Ratings</h2>", table(t.ratings_table(report)),
                 f'<p class="note">{escape(t.ratings_note(report))}</p>']
    lengths = report["lengths"]
    page += ["<h2>Results by colour</h2>", table(t.colour_table(report)),
             _figure(colour_chart(report)),
             "<h2>Game length</h2>", f"<p>{escape(t.lengths_line(report))}</p>",
             _figure(svg.histogram(lengths["bin_edges"], lengths["counts"],
                                   "Game length (finished games)", "moves")),
             "<h2>Termination</h2>", table(t.termination_table(report)),
             _figure(svg.bars([(r, [n]) for r, n in report["termination"].items()], ["games"],
                              "How games ended", digits=0)),
             "<h2>Fallbacks and illegal replies</h2>",
             '<p class="note">Rates are per move asked of the player (its own policy was '
             "consulted), void games included.</p>",
             table(t.fallback_table(report)), _figure(fallback_chart(report)),
             "<h2>Latency</h2>", table(t.latency_table(report)),
             _figure(latency_chart(report))]
    if report["notes"] or report["warnings"]:
        page.append("<h2>Notes</h2><ul>")
        page += [f"<li>{escape(n)}</li>" for n in report["notes"]]
        page += [f'<li class="warning">warning: {escape(w)}</li>' for w in report["warnings"]]
        page.append("</ul>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(t.title(report))}</title><style>{CSS}</style></head>"
        f"<body>{''.join(page)}</body></html>\n"
    )
