"""Where `make katago` put KataGo, and a skip for when it has not been run."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from orchestrator.label.config import KataGoPaths
from orchestrator.label.engine import KataGoEngine, open_katago

REPO = Path(__file__).resolve().parents[2]
KATAGO = KataGoPaths(REPO / ".katago")

requires_katago = pytest.mark.skipif(
    bool(KATAGO.missing()),
    reason=f"KataGo not prepared in {KATAGO.root} (run `make katago`)",
)


def katago(log_dir: Path) -> AbstractAsyncContextManager[KataGoEngine]:
    return open_katago(KATAGO.binary, KATAGO.model, KATAGO.config, log_dir / "katago.log")
