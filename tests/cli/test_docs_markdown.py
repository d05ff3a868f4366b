"""The project's Markdown renders as written (issue 21, item 8): the README's paragraph
right after the exit-status table rendered as more table rows (no blank line between)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_a_table_ends_with_a_blank_line(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    fenced = False
    for number, (line, following) in enumerate(itertools.pairwise(lines), 1):
        fenced ^= line.startswith("```")
        if not fenced and line.startswith("|") and following.strip() \
                and not following.startswith("|"):
            pytest.fail(f"{path.name}:{number + 1}: {following[:60]!r} would render as a "
                        "table row: a blank line must end the table")
