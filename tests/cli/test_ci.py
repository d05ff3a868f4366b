"""`.ci/run` ends with `make test`, so CI's status is the tests' (exit 5, "no tests
ran", included), after installing what they need; and the Hypothesis profile."""

from __future__ import annotations

import re
import shlex

import pytest
from hypothesis import settings

from tests.conftest import REPO


def test_ci_ends_by_running_the_tests_of_make_test() -> None:
    script = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    commands = [line for line in script if line and not line.startswith("#")]
    assert shlex.split(commands[-1]) == ["exec", "make", "test"]
    needed = {"gnugo", "chromium", "chromium-driver"}
    assert needed <= set(re.findall(r"missing\+=\(([\w-]+)\)", "\n".join(script)))


def test_ci_lints_with_the_type_checker_before_the_tests() -> None:
    script = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    commands = [line for line in script if line and not line.startswith("#")]
    assert commands.index("make lint") < commands.index("exec make test")
    makefile = (REPO / "Makefile").read_text()
    lint = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "ruff check orchestrator tests bench" in lint and "/mypy" in lint


def test_property_tests_draw_the_same_examples_on_every_run() -> None:
    """Outside `make test-fuzz`, every property test is seeded from its own source and
    keeps no example database, so no run draws examples another run did not."""
    if settings.get_current_profile_name() == "fuzz":
        pytest.skip("make test-fuzz explores at random on purpose")
    current = settings()
    assert current.derandomize and current.database is None and current.deadline is None
