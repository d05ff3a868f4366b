"""Build a report from run folders and write ``report.{md,json,html}``.

    from orchestrator.report.build import write_report
    report = write_report([run_dir], out_dir, console=True)   # what report.json holds, typed

Warnings (a journal line that does not parse, a missing SGF, a folder that is not a
run) are printed to stderr as they are found, one line each, and listed in the report.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.files import atomic_write
from orchestrator.recordings import JOURNAL, RUN_FILE
from orchestrator.report import html, markdown, quality, quality_pictures
from orchestrator.report.console import print_summary
from orchestrator.report.load import load_runs
from orchestrator.report.model import RatingsFailed, Report, to_json
from orchestrator.report.stats import compute


class ReportError(ValueError):
    """No report can be built (no run folder, an anchor that played no game); one line."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


def default_out(run_dirs: Sequence[Path], reports: Path = Path("reports")) -> Path:
    """``reports/<run>`` for one run, ``reports/combined-<UTC stamp>`` for several."""
    if len(run_dirs) == 1:
        return reports / Path(run_dirs[0]).resolve().name
    return reports / f"combined-{_utc_now():%Y%m%d-%H%M%S}"


def build_report(run_dirs: Sequence[Path], anchor: Mapping[str, float] | None = None,
                 labels: Sequence[Path] | None = None) -> Report:
    """The report (what ``report.json`` holds) for these run folders; the move-quality
    section from ``labels`` (label folders), else from each run's ``labels/`` folder."""
    warnings: list[str] = []

    def warn(line: str) -> None:
        warnings.append(line)
        print(f"report: warning: {line}", file=sys.stderr)

    runs = load_runs([Path(p) for p in run_dirs], warn)
    if not runs:
        raise ReportError(f"no go19 run folders given (a run folder holds {RUN_FILE} or "
                          f"{JOURNAL})")
    report = compute(runs, anchor, warn)
    ratings = report.ratings
    if anchor and isinstance(ratings, RatingsFailed):
        raise ReportError(f"--anchor: {ratings.error}")
    if anchor and not ratings:
        raise ReportError("--anchor given, but fewer than two players have rated games")
    return dataclasses.replace(
        report, generated=f"{_utc_now():%Y-%m-%dT%H:%M:%SZ}",
        quality=quality.section(runs, report.head_to_head, labels, warn), warnings=warnings)


def _write(path: Path, text: str) -> None:
    atomic_write(path, text.encode("utf-8"))


def write_report(
    run_dirs: Sequence[Path],
    out_dir: Path,
    console: bool = False,
    anchor: Mapping[str, float] | None = None,
    labels: Sequence[Path] | None = None,
) -> Report:
    """Write ``report.md``, ``report.json`` and ``report.html`` into ``out_dir`` and
    return the report written to ``report.json``. ``console=True`` also prints a short
    summary to the terminal. Raises :class:`ReportError` (one line) and OSError."""
    report = build_report(run_dirs, anchor, labels)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = quality_pictures.write(report, out_dir)
    _write(out_dir / "report.json",
           json.dumps(to_json(report), indent=2, allow_nan=False) + "\n")
    _write(out_dir / "report.md", markdown.render(report, out_dir))
    _write(out_dir / "report.html", html.render(report, out_dir))
    if console:
        print_summary(report, out_dir)
    return report
