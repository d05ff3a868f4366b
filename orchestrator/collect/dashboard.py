"""The live dashboard (rich).

It reads the collector's state, and hears the run's events (``on_event``, subscribed
from the start, so a resumed run's repairs show too) for its recent events. Rendering is
driven by a trio task calling ``Live.refresh`` (``auto_refresh=False``), so rich starts
no thread of its own.
Score estimates are computed here for the visible games only, at refresh time,
so the per-move cost of the referee does not grow with the dashboard.

The screen is laid out by priority, to fit the terminal: the verdict line first
(always), then the players' names, progress, endpoints per replica and fallbacks by
reason; games in flight get the rows that are left (as many as fit), then recent
events; on a terminal tall and wide enough, a live board of the newest game sits
beside them. Nothing is cut mid-section: a section that does not fit says how many
rows it left out.

Without a terminal, :class:`orchestrator.collect.standings.PlainLog` stands in for it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import trio
from rich.console import Console, Group, JustifyMethod, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from orchestrator.collect.standings import (
    RecentEvents,
    ReviewLine,
    pairing_stats,
    stop_reason,
    verdict_text,
)
from orchestrator.color import BLACK, WHITE
from orchestrator.coords import GTP_COLUMNS, PASS
from orchestrator.report.names import describe
from orchestrator.rules.estimate import estimate

if TYPE_CHECKING:
    from orchestrator.collect.collector import Collector
    from orchestrator.events import Event
    from orchestrator.players.go19 import ReplicaStats

# The seed client's endpoint colours; a failing replica's whole row takes its colour.
STATUS_STYLE = {
    "ok": "green",
    "idle": "dim",
    "connecting": "yellow",
    "backoff": "bold red",
    "throttled": "bold yellow",  # the server asked for a pause (HTTP 429/503 Retry-After)
    "down": "bold white on red",
    "local": "cyan",
}
FAILING = ("backoff", "throttled", "down")
SLOW_FACTOR = 2.0  # a replica whose p95 is this many times its siblings' median is "slow"
BOARD_MIN = (110, 40)  # width, height from which the live board is shown
EVENTS_MIN = 3
LOWER_MIN = 6  # rows kept for games in flight and events: two titles, a header, three rows
REFRESH_S = 0.5
WOOD, WOOD_LINE = "#dcb35c", "#6b4f1d"


def fmt_duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "--"
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _pct(samples, q: float) -> str:
    if not samples:
        return "-"
    return f"{np.percentile(np.fromiter(samples, float), q):.0f}"


def _now() -> float | None:
    try:
        return trio.current_time()
    except RuntimeError:  # rendered outside a trio run (a test, a final snapshot)
        return None


# -- the screen --------------------------------------------------------------------


def _height(console: Console, renderable: RenderableType, width: int) -> int:
    return len(console.render_lines(renderable, console.options.update(width=width),
                                    pad=False))


def _title(text: str, extra: str = "") -> Text:
    return Text.assemble((text, "bold blue"), (f"  {extra}" if extra else "", "dim"))


class Dashboard:
    """The screen; a subscriber of the run state (``on_event``) for its recent events."""

    def __init__(self, console: Console | None = None,
                 recent: RecentEvents | None = None) -> None:
        self.console = console or Console()
        self.recent = recent if recent is not None else RecentEvents()
        self.review = ReviewLine()  # collect --review's quality line, under the verdict
        self._collector: Collector | None = None
        self._cache: dict = {}

    def on_event(self, event: Event) -> None:
        self.recent.on_event(event)
        self.review.on_event(event)

    def attach(self, collector: Collector) -> None:
        self._collector = collector

    async def run(self, collector: Collector) -> None:
        self._collector = collector
        with Live(
            self.render(), console=self.console, auto_refresh=False, transient=False,
            vertical_overflow="crop",
        ) as live:
            try:
                while True:
                    live.update(self.render(), refresh=True)
                    await trio.sleep(REFRESH_S)
            finally:
                live.update(self.render(), refresh=True)

    def render(self) -> RenderableType:
        collector = self._collector
        if collector is None:
            return Text("starting…")
        width, height = self.console.size
        budget = height - 1  # Live keeps the cursor on a line of its own
        top: list[RenderableType] = [self._verdict(collector), self._names(collector, width),
                                     self._progress(collector, width)]
        used = sum(_height(self.console, part, width) for part in top)
        fallbacks = self._fallbacks(collector)
        fb_height = _height(self.console, fallbacks, width) if fallbacks else 0
        endpoints = self._endpoints(
            collector, max(4, budget - used - fb_height - LOWER_MIN))
        used += _height(self.console, endpoints, width)
        top.append(endpoints)
        if fallbacks is not None and used + fb_height <= budget - LOWER_MIN:
            top.append(fallbacks)
            used += fb_height
        rest = budget - used
        board = self._board(collector) if (width, height) >= BOARD_MIN else None
        if board is not None and width >= BOARD_MIN[0] and rest >= 22:
            left_w = width - 44
            lower = Table.grid(expand=True)
            lower.add_column(ratio=1)
            lower.add_column(width=42)
            lower.add_row(self._lower(collector, rest, left_w), board)
            return Group(*top, lower)
        return Group(*top, self._lower(collector, rest, width))

    def _lower(self, collector: Collector, rows: int, width: int) -> RenderableType:
        """Games in flight (as many as fit, keeping EVENTS_MIN rows of events), then
        events in what is left."""
        live_games = sorted(collector.state.live.values(), key=lambda g: -g.number)
        events = list(self.recent.entries)
        want_events = 1 + max(1, min(len(events), EVENTS_MIN - 1))  # its title and lines
        game_rows = max(0, min(len(live_games), rows - 2 - want_events))
        if game_rows < len(live_games):  # the "… and N more" line takes a row
            game_rows = max(0, min(len(live_games), rows - 3 - want_events))
        parts: list[RenderableType] = []
        games_height = 2 + game_rows + (game_rows < len(live_games))
        if rows >= games_height:
            parts.append(self._games(live_games, game_rows))
            rows -= games_height
        if rows >= 2:
            parts.append(self._events(events, rows - 1))
        return Group(*parts)

    # -- sections ------------------------------------------------------------------

    def _verdict(self, collector: Collector) -> Text:
        text = verdict_text(pairing_stats(collector, self._cache), collector.state)
        quality = self.review.text()
        if quality is not None:
            text.append(f"\n{quality}")
        if collector.state.stop is not None:
            text.append(f"\nstopping: {stop_reason(collector.state.stop)}", style="bold yellow")
        return text

    def _names(self, collector: Collector, width: int) -> Text:
        parts = []
        for name, handle in sorted(collector.players.items()):
            what = describe(handle.meta.as_dict())
            if what and what != name:
                parts.append(f"{name} = {what}")
        return Text("  ·  ".join(parts), style="cyan", no_wrap=False) if parts else Text("")

    def _progress(self, collector: Collector, width: int) -> Table:
        state = collector.state
        bar = ProgressBar(total=max(state.target, 1), completed=state.done,
                          width=max(10, min(width - 2, 60)))
        line = Text.assemble(
            (f"{state.done}/{state.target} games", "bold"),
            f"  {state.games_per_hour:.0f} games/h  elapsed {fmt_duration(state.elapsed_s)}"
            f"  ETA {fmt_duration(state.eta_s)}  in flight {len(state.live)}"
            f"  void {state.void}",
        )
        grid = Table.grid()  # a bar alone in a Group shares its line with what follows
        grid.add_row(bar)
        grid.add_row(line)
        return grid

    def _replica_rows(self, collector: Collector) -> list[tuple[int, list, str]]:
        """(priority, cells, row style) per replica; failing ones first when cut."""
        state = collector.state
        now = _now()
        rows = []
        for name, handle in sorted(collector.players.items()):
            replicas: list[ReplicaStats] = (
                handle.endpoint.replica_stats() if handle.endpoint is not None else [])
            if not replicas:
                samples = state.latency.get(name, ())
                rows.append((2, [Text("●", style=STATUS_STYLE["local"]), name,
                                 handle.describe(), "local", _pct(samples, 50),
                                 _pct(samples, 95), "", "", "", ""], ""))
                continue
            p95s = [float(np.percentile(r.latency_ms, 95)) for r in replicas if r.latency_ms]
            typical = float(np.median(p95s)) if len(p95s) > 1 else None
            for replica in replicas:
                status = replica.status
                style = ""
                priority = 2
                if status in FAILING:
                    style, priority = STATUS_STYLE[status], 0
                    if replica.retry_at is not None and now is not None:
                        status += f" {max(replica.retry_at - now, 0):.0f}s"
                elif typical and replica.latency_ms and np.percentile(
                        replica.latency_ms, 95) > SLOW_FACTOR * typical:
                    style, priority, status = "yellow", 1, f"{status} slow"
                elif replica.errors or replica.timeouts:
                    priority = 1
                rows.append((priority, [
                    Text("●", style=STATUS_STYLE.get(replica.status, "white")), name,
                    replica.address, status, _pct(replica.latency_ms, 50),
                    _pct(replica.latency_ms, 95), str(replica.in_flight),
                    # red counts, except on a row already red
                    Text(str(replica.errors), style="red" if replica.errors and not style
                         else ""),
                    Text(str(replica.timeouts), style="red" if replica.timeouts and not style
                         else ""),
                    str(replica.reconnects),
                ], style))
        return rows

    def _endpoints(self, collector: Collector, max_rows: int) -> Table:
        rows = self._replica_rows(collector)
        shown = rows
        if len(rows) + 2 > max_rows:  # keep the failing and the slow ones
            keep = sorted(range(len(rows)), key=lambda i: (rows[i][0], i))[:max(max_rows - 3, 1)]
            shown = [rows[i] for i in sorted(keep)]
        table = Table(title=_title("endpoints", "p50/p95 ms per replica"), title_justify="left",
                      box=None, expand=False, padding=(0, 1), pad_edge=False)
        columns: tuple[tuple[str, JustifyMethod], ...] = (
            ("", "left"), ("player", "left"), ("replica", "left"), ("status", "left"),
            ("p50", "right"), ("p95", "right"), ("busy", "right"), ("err", "right"),
            ("t/o", "right"), ("rec", "right"))
        for column, justify in columns:
            table.add_column(column, justify=justify, no_wrap=True,
                             overflow="ellipsis" if column in ("replica", "player") else "fold",
                             max_width=22 if column == "replica" else None)
        for _, cells, style in shown:
            table.add_row(*cells, style=style)
        if len(shown) < len(rows):
            table.caption = f"… {len(rows) - len(shown)} healthy replicas not shown"
            table.caption_justify = "left"
        return table

    def _fallbacks(self, collector: Collector) -> Text | None:
        """Per player: fallbacks by reason, as counts and as a share of its moves."""
        lines = []
        for name, tally in sorted(collector.state.tally.items()):
            total = sum(tally.fallbacks.values())
            if not total:
                continue
            asked = tally.moves_asked

            def share(n: int, asked: int = asked) -> str:
                return f"{100 * n / asked:.1f} %" if asked else "n/a"

            reasons = ", ".join(f"{r} {n} ({share(n)})"
                                for r, n in tally.fallbacks.most_common())
            lines.append(Text.assemble((f"{name}", "bold"), f" {total} = {share(total)} of "
                                       f"{asked} moves: {reasons}"))
        if not lines:
            return None
        return Text("\n").join([_title("fallbacks by reason"), *lines])

    def _games(self, live_games: list, rows: int) -> Table:
        table = Table(title=_title("games in flight"), title_justify="left", box=None,
                      padding=(0, 1), pad_edge=False)
        for column in ("game", "black", "white", "move", "estimate", "waiting on"):
            table.add_column(column, no_wrap=True, overflow="ellipsis")
        for live in live_games[:rows]:
            game = live.game
            table.add_row(
                str(live.number), live.spec.black, live.spec.white,
                f"{game.move_number} {'B' if game.to_play == BLACK else 'W'}",
                estimate(game.board, game.komi).summary(), live.waiting_on or "",
            )
        hidden = len(live_games) - rows
        if hidden > 0:
            table.caption = f"… and {hidden} more"
            table.caption_justify = "left"
        return table

    def _events(self, events: list, rows: int) -> Group:
        lines = [Text.assemble((f"{e.stamp} ", "dim"),
                               (f"×{e.count} ", "bold yellow") if e.count > 1 else "", e.text,
                               no_wrap=True, overflow="ellipsis")
                 for e in events[-rows:]] if rows > 0 else []
        return Group(_title("recent events"), *(lines or [Text("—", style="dim")]))

    def _board(self, collector: Collector) -> Text | None:
        """The newest game in flight: stones, the last move marked, coordinates."""
        if not collector.state.live:
            return None
        live = max(collector.state.live.values(), key=lambda g: g.number)
        game = live.game
        size = game.size
        last = game.moves[-1].point if game.moves else PASS
        letters = GTP_COLUMNS[:size]
        text = Text()
        text.append(f"game {live.number}: {live.spec.black} ● vs {live.spec.white} ○  "
                    f"move {game.move_number}\n", style="bold")
        text.append("   " + " ".join(letters) + "\n", style="dim")
        board = game.board
        for row in range(size):
            text.append(f"{size - row:>2} ", style="dim")
            for col in range(size):
                point = row * size + col
                color = board[point]
                if color in (BLACK, WHITE):
                    glyph, fg = "●", "#000000" if color == BLACK else "#ffffff"
                else:
                    glyph, fg = ("╋" if _hoshi(row, col, size) else "┼"), WOOD_LINE
                bg = "on red" if point == last else f"on {WOOD}"
                text.append(glyph, style=f"{fg} {bg}")
                text.append("─" if col < size - 1 else "", style=f"{WOOD_LINE} on {WOOD}")
            text.append("\n")
        return text


def _hoshi(row: int, col: int, size: int) -> bool:
    """Star points, drawn heavier, so the board reads like a board."""
    edge = 3 if size >= 13 else 2
    marks = {edge, size - 1 - edge} | ({size // 2} if size % 2 else set())
    return row in marks and col in marks
