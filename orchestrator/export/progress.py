"""How ``go19 dataset export`` shows its progress: a rich bar on a terminal, a plain line
every few seconds otherwise (logs, CI)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)

LINE_EVERY_S = 5.0


class ExportProgress:
    """Use as a context manager around the export; call with (samples done, total)."""

    def __init__(self, stream: TextIO | None = None, every: float = LINE_EVERY_S) -> None:
        self.stream = stream or sys.stderr  # looked up now: a redirected stderr counts
        self.every = every
        self._started = time.monotonic()
        self._last_line = -float("inf")
        self._shown = -1  # the count of the last line printed
        self._bar: Progress | None = None
        if self.stream.isatty():
            # No auto refresh: rich would start a thread; each update refreshes instead.
            self._bar = Progress(
                TextColumn("[bold]export"), BarColumn(), MofNCompleteColumn(),
                TextColumn("samples"), TaskProgressColumn(), TimeRemainingColumn(),
                console=Console(file=self.stream), auto_refresh=False,
            )
            self._task = self._bar.add_task("export", total=None)

    def __enter__(self) -> ExportProgress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def __call__(self, done: int, total: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=total, refresh=True)
            return
        now = time.monotonic()
        if done != self._shown and (now - self._last_line >= self.every or done == total):
            self._last_line, self._shown = now, done
            rate = done / max(now - self._started, 1e-9)
            print(f"export: {done}/{total} samples ({100 * done / max(total, 1):.0f} %), "
                  f"{rate:.0f} samples/s", file=self.stream, flush=True)
