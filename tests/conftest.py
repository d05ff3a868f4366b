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

import contextlib
import io
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import trio.testing
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



def go19_here(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``go19 ARGS`` run in this process, in ``cwd`` (default: where the test runs): its exit
    status (argparse's exit included) and its stdout and stderr, as a subprocess's would be,
    without the interpreter's start (0.5-1 s a command on a busy machine). For tests that
    check only those; a test of the real process (signals, Ctrl-C, its environment, the
    installed entry point, its memory) starts one. An exception the command raises is
    raised here, where a subprocess would print its traceback and exit 1."""
    from orchestrator.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd or Path.cwd()), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        try:
            status = main([str(a) for a in args])
        except SystemExit as exc:  # argparse: a usage error (2), or --help / --version (0)
            if isinstance(exc.code, str):
                print(exc.code, file=err)
            status = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    return subprocess.CompletedProcess([str(a) for a in args], status, out.getvalue(),
                                       err.getvalue())


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
def loopback_clock() -> trio.testing.MockClock:
    """Virtual time that jumps only after 0.1 s of real idleness: loopback bytes in flight
    keep it still, while deadlines, backoff and Retry-After cost no wall time. A test
    takes it by naming it (pytest-trio runs the test on the clock a fixture returns)."""
    return trio.testing.MockClock(autojump_threshold=0.1)


@pytest.fixture
def idle_clock() -> trio.testing.MockClock:
    """Virtual time that jumps when the loop has been idle 10 ms: a send that never
    completes is idle, so a page's 5 s deadline comes at once."""
    return trio.testing.MockClock(autojump_threshold=0.01)


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
# model's adapters, a KataGo review), the costliest first: under `make test`'s two xdist
# workers each folder runs whole on one worker, so its fixtures are built once, and they
# start first, so that no worker is left with one at the end. Every other file is one unit
# (its module fixtures built once). xdist's own `loadgroup` cannot do it: its group suffix
# is lost on pytest 9.2's node ids.
ONE_WORKER = ("vllm", "cluster", "review", "vlm")
TESTS = Path(__file__).parent


def skip_folder(items: list[pytest.Item], folder: str, reason: str | None) -> None:
    """A folder conftest's skip of its own tests (``tests/<folder>/``), when ``reason``."""
    if reason:
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if f"tests/{folder}/" in str(item.fspath):
                item.add_marker(skip)


def _folder(nodeid: str) -> str:
    parts = nodeid.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else ""


@pytest.hookimpl(optionalhook=True)  # an xdist hook: only called under `pytest -n`
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    from xdist.scheduler import LoadScopeScheduling

    class FolderScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            folder = _folder(nodeid)
            return f"tests/{folder}" if folder in ONE_WORKER else nodeid.split("::", 1)[0]

    config.option.loadscopereorder = False  # keep the order below: costly folders first
    return FolderScheduling(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Puts the costly folders' tests first (``ONE_WORKER``); under the fuzz profile,
    raises every property test to at least FUZZ_EXAMPLES examples: most tests fix
    ``max_examples`` for ``make test``, which the profile alone would not override."""
    rank = {folder: order for order, folder in enumerate(ONE_WORKER)}
    items.sort(key=lambda item: rank.get(_folder(item.nodeid), len(ONE_WORKER)))
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
