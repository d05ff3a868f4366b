"""Shared test helpers: where the real material lives, and skips when it is absent."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

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
