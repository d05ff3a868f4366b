"""How ``go19 label`` shows its progress: a rich bar on a terminal (positions, positions/s,
ETA, games), plain lines every few seconds otherwise. Both print per-game messages."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from orchestrator.label.games import LabelGame


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


class _Rate(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("-- pos/s" if speed is None else f"{speed:.2f} pos/s")


class RichReporter:
    """A live bar on stderr; use as a context manager around the run."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("[bold]label"), BarColumn(), MofNCompleteColumn(),
            TextColumn("positions"), _Rate(), TimeRemainingColumn(),
            TextColumn("games {task.fields[games]}"),
            console=self.console, speed_estimate_period=60,
        )
        self._task = self._progress.add_task("label", total=None, start=False, games="0/0")
        self._games = 0
        self._total_games = 0

    def __enter__(self) -> RichReporter:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def start(self, games: int, positions: int) -> None:
        self._total_games = games
        self._progress.update(self._task, total=positions, games=f"0/{games}")

    def engine_started(self, pid: int) -> None:
        self._progress.start_task(self._task)  # the rate leaves out KataGo's start

    def advance(self, positions: int) -> None:
        self._progress.advance(self._task, positions)

    def game_done(self, game: LabelGame) -> None:
        self._games += 1
        self._progress.update(self._task, games=f"{self._games}/{self._total_games}")

    def message(self, line: str) -> None:
        self._progress.console.print(line, markup=False, highlight=False)


class PlainReporter:
    """One line every ``interval`` seconds (and at the end of each game past it)."""

    def __init__(self, out: TextIO | None = None, interval: float = 10.0) -> None:
        self.out = out or sys.stderr
        self.interval = interval
        self._done = self._total = self._games = self._total_games = 0
        self._since: float | None = None
        self._last = 0.0

    def start(self, games: int, positions: int) -> None:
        self._total, self._total_games = positions, games
        print(f"label: {positions} positions in {games} games to ask", file=self.out, flush=True)

    def engine_started(self, pid: int) -> None:
        if self._since is None:
            self._since = time.monotonic()
            self._last = self._since

    def advance(self, positions: int) -> None:
        self._done += positions
        self._maybe_line()

    def game_done(self, game: LabelGame) -> None:
        self._games += 1
        self._maybe_line(force=self._games == self._total_games)

    def message(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    def _maybe_line(self, force: bool = False) -> None:
        now = time.monotonic()
        if self._since is None or (not force and now - self._last < self.interval):
            return
        self._last = now
        rate = self._done / max(now - self._since, 1e-9)
        left = self._total - self._done
        eta = _duration(left / rate) if rate > 0 else "--"
        print(f"label: {self._done}/{self._total} positions, {self._games}/{self._total_games}"
              f" games, {rate:.2f} positions/s, ETA {eta}", file=self.out, flush=True)
