"""A local Ray for the cluster tests (skipped, saying why, where Ray is not installed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

NO_RAY = "Ray is not installed (pip install 'go19[cluster]'; .ci/run installs it)"

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / ".." / "shared" / "sgf" / "real"

requires_real = pytest.mark.skipif(
    not REAL.is_dir(), reason=f"the real SGF corpus is not at {REAL.resolve()}")


@pytest.fixture(scope="session")
def local_ray() -> Iterator[Any]:
    """``ray.init(num_cpus=2)``: two CPU slots, as this machine has two cores."""
    ray = pytest.importorskip("ray", reason=NO_RAY)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()
