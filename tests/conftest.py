"""Shared test helpers: where the real material lives, skips when it is absent, and the
Hypothesis profiles.

Hypothesis profiles: ``derandomized`` is loaded by default, so ``make test`` and CI draw
the same examples on every run (seeded from each test's source, no example database,
no wall-clock deadline or too-slow health check: a busy machine cannot fail a test).
``make test-fuzz`` loads ``fuzz`` (``--hypothesis-profile=fuzz``): fresh random examples
on every run, at least ``GO19_FUZZ_EXAMPLES`` (default 1000) per property test, and the
failing examples kept in an example database under the user's cache folder, outside the
repository. A bug the fuzz run finds becomes an ``@example(...)`` on the test, so that
``make test`` checks it from then on.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, is_hypothesis_test, settings
from hypothesis.database import DirectoryBasedExampleDatabase

if TYPE_CHECKING:
    from tests.label.standin import Hangs

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared").resolve()
REAL_SGF = SHARED / "sgf" / "real"
GNUGO = shutil.which("gnugo") or ("/usr/games/gnugo" if Path("/usr/games/gnugo").exists() else None)

requires_real_sgf = pytest.mark.skipif(
    not REAL_SGF.is_dir(),
    reason=f"real SGF corpus not found at {REAL_SGF} (it lives in ../shared beside the repo)",
)
requires_gnugo = pytest.mark.skipif(
    GNUGO is None, reason="GNU Go not installed (apt-get install gnugo; .ci/run does this)"
)

FUZZ_DATABASE = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "go19" / "hypothesis"
)
FUZZ_EXAMPLES = int(os.environ.get("GO19_FUZZ_EXAMPLES", "1000"))

# Time-based checks are off in both: how long an example takes depends on the machine's
# load, not on the code under test.
settings.register_profile(
    "derandomized",
    derandomize=True,  # implies no example database
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "fuzz",
    derandomize=False,
    database=DirectoryBasedExampleDatabase(FUZZ_DATABASE),
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
# Loaded here, before any test module builds its own settings on top of the current
# profile; `--hypothesis-profile=fuzz` replaces it at pytest_configure, also before.
settings.load_profile("derandomized")


@pytest.fixture
def make_hangs() -> Iterator[Callable[..., Hangs]]:
    """Makes the loopback ports stand-in KataGos announce their hangs to
    (tests/label/standin.py), closed after the test."""
    from tests.label.standin import Hangs

    made: list[Hangs] = []

    def make(seconds: float | None = None) -> Hangs:
        made.append(Hangs(seconds))
        return made[-1]

    yield make
    for port in made:
        port.close()


# Test folders whose session fixtures are costly (a vLLM start, a Ray cluster, the tiny
# model's adapters, a KataGo review): under `pytest -n 2 --dist loadgroup` (make test) each
# folder runs on one worker, so the fixture is built once, not once per worker.
ONE_WORKER = ("vllm", "cluster", "vlm", "review")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Groups the costly folders' tests (``ONE_WORKER``) for xdist; under the fuzz profile,
    raises every property test to at least FUZZ_EXAMPLES examples: most tests fix
    ``max_examples`` for ``make test``, which the profile alone would not override."""
    tests = Path(__file__).parent
    for item in items:
        folder = item.path.relative_to(tests).parts[0] if item.path.is_relative_to(tests) else ""
        if folder in ONE_WORKER:
            item.add_marker(pytest.mark.xdist_group(folder))
    if settings.get_current_profile_name() != "fuzz":
        return
    raised: set[int] = set()
    for item in items:
        test = getattr(item, "obj", None)
        if test is None or not is_hypothesis_test(test) or id(test) in raised:
            continue  # parametrized items share one function: raise it once
        raised.add(id(test))
        own = test._hypothesis_internal_use_settings
        if own.max_examples < FUZZ_EXAMPLES:
            test._hypothesis_internal_use_settings = settings(own, max_examples=FUZZ_EXAMPLES)
