"""``report.md``: the report's tables and key lines as GitHub-flavoured Markdown,
the verdict first."""

from __future__ import annotations

import os
from pathlib import Path

from orchestrator.report import adjudication, quality_pages, quality_tables
from orchestrator.report import tables as t
from orchestrator.report.model import GameRow, Report


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(tab: t.Table) -> str:
    lines = [
        "| " + " | ".join(_cell(h) for h in tab.headers) + " |",
        "|" + "|".join("---" for _ in tab.headers) + "|",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in tab.rows]
    return "\n".join(lines)


def verdict_box(report: Report) -> list[str]:
    v = report.verdict
    if not v:
        return ["> **Verdict:** no head-to-head games between two players.", ""]
    out = [f"> **Verdict:** {v.sentence}", ">"]
    out += [f"> - **{label}**: {value}" for label, value in t.verdict_lines(report)]
    out += [f"> - **{label}**: {value}" for label, value in quality_tables.verdict_lines(report)]
    return [*out, ""]


def _adjudication(report: Report) -> list[str]:
    if report.adjudication is None:
        return []
    return ["## Adjudication", "",
            *[f"- **{k}**: {v}" for k, v in adjudication.lines(report.adjudication)], ""]


def render(report: Report, out_dir: Path | None = None) -> str:
    """The page; ``out_dir`` (where it is written) makes the SGF links relative to it."""
    def sgf(game: GameRow) -> str:
        target = Path(game.sgf)
        if out_dir is not None:
            target = Path(os.path.relpath(target.resolve(), Path(out_dir).resolve()))
        return f"[sgf]({target.as_posix()})"

    out = [f"# {t.title(report)}", "", *verdict_box(report),
           f"Generated {report.generated} by go19 report "
           "from the recordings (SGF + games.jsonl). " + t.pace_line(report), "",
           "## Runs", "", table(t.runs_table(report)), "", "## Totals", "",
           table(t.totals_table(report)), ""]
    for section in report.head_to_head:
        out += [f"## {t.name(report, section.player)} vs "
                f"{t.name(report, section.opponent)}", ""]
        out += [f"- **{label}**: {value}" for label, value in t.head_to_head_lines(section)]
        out.append("")
        if section.pairs:
            out += ["### Opening pairs", "", table(t.pairs_table(section)), ""]
    out += quality_pages.markdown(report, table, out_dir)
    if t.show_ratings(report):
        out += ["## Ratings", "", table(t.ratings_table(report)), "",
                t.ratings_note(report), ""]
    out += ["## Results by colour", "", table(t.color_table(report)), "",
            "## Game length", "", t.lengths_line(report), "",
            "## Termination", "", table(t.termination_table(report)), "",
            *_adjudication(report),
            "## Fallbacks and illegal replies", "",
            "Rates are per move asked of the player (its own policy was consulted), "
            "void games included.", "", table(t.fallback_table(report)), "",
            "## Latency", "", table(t.latency_table(report)), ""]
    tokens = t.tokens_table(report)
    if tokens is not None:
        out += ["## Tokens", "", table(tokens), ""]
    out += ["## Games", "", table(t.games_table(report, sgf)), ""]
    if report.notes or report.warnings:
        out += ["## Notes", ""]
        out += [f"- {note}" for note in report.notes]
        out += [f"- warning: {w}" for w in report.warnings]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
