"""``report.md``: the report's tables and key lines as GitHub-flavoured Markdown."""

from __future__ import annotations

from orchestrator.report import tables as t


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(tab: t.Table) -> str:
    lines = [
        "| " + " | ".join(_cell(h) for h in tab.headers) + " |",
        "|" + "|".join("---" for _ in tab.headers) + "|",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in tab.rows]
    return "\n".join(lines)


def render(report: dict) -> str:
    out = [f"# {t.title(report)}", "", f"Generated {report['generated']} by go19 report "
           "from the recordings (SGF + games.jsonl).", "", "## Runs", "",
           table(t.runs_table(report)), "", "## Totals", "", table(t.totals_table(report)), ""]
    for section in report["head_to_head"]:
        out += [f"## {section['player']} vs {section['opponent']}", ""]
        out += [f"- **{label}**: {value}" for label, value in t.head_to_head_lines(section)]
        out.append("")
    if t.show_ratings(report):
        out += ["## Ratings", "", table(t.ratings_table(report)), "",
                t.ratings_note(report), ""]
    out += ["## Results by colour", "", table(t.colour_table(report)), "",
            "## Game length", "", t.lengths_line(report), "",
            "## Termination", "", table(t.termination_table(report)), "",
            "## Fallbacks and illegal replies", "",
            "Rates are per move asked of the player (its own policy was consulted), "
            "void games included.", "", table(t.fallback_table(report)), "",
            "## Latency", "", table(t.latency_table(report)), ""]
    if report["notes"] or report["warnings"]:
        out += ["## Notes", ""]
        out += [f"- {note}" for note in report["notes"]]
        out += [f"- warning: {w}" for w in report["warnings"]]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
