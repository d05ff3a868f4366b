"""The live dashboard (rich) and its plain-log stand-in.

It only reads the collector's state. Rendering is driven by a trio task calling
``Live.refresh`` (``auto_refresh=False``), so rich starts no thread of its own.
Score estimates are computed here for the visible games only, at refresh time,
so the per-move cost of the referee does not grow with the dashboard.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np
import trio
from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from orchestrator.collect.stopping import elo_line
from orchestrator.rules.board import BLACK
from orchestrator.rules.estimate import estimate

if TYPE_CHECKING:
    from orchestrator.collect.run import Collector

# The seed client's endpoint colours.
STATUS_STYLE = {
    "ok": "green",
    "connecting": "yellow",
    "backoff": "yellow",
    "down": "red",
    "local": "cyan",
}
VISIBLE_GAMES = 12


def plain_log(line: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {line}", flush=True)


def _fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "--"
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _pct(samples, q: float) -> str:
    if not samples:
        return "-"
    return f"{np.percentile(np.fromiter(samples, float), q):.0f}"


class Dashboard:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()
        self._collector: Collector | None = None

    def log(self, line: str) -> None:
        """Finished games and fallbacks already show in the events panel."""

    async def run(self, collector: Collector) -> None:
        self._collector = collector
        with Live(
            self.render(), console=self.console, auto_refresh=False, transient=False
        ) as live:
            try:
                while True:
                    live.update(self.render(), refresh=True)
                    await trio.sleep(0.5)
            finally:
                live.update(self.render(), refresh=True)

    def render(self) -> Group:
        collector = self._collector
        if collector is None:
            return Group(Text("starting…"))
        return Group(
            self._header(collector),
            self._games(collector),
            self._endpoints(collector),
            self._results(collector),
            self._events(collector),
        )

    def _header(self, collector: Collector) -> Panel:
        state = collector.state
        bar = ProgressBar(total=max(state.target, 1), completed=state.done, width=40)
        line = Text.assemble(
            (f"{state.done}/{state.target} games", "bold"),
            f"  void {state.void}  in flight {len(state.live)}",
        )
        speed = Text(f"{state.games_per_hour:.0f} games/h  ETA {_fmt_duration(state.eta_s)}")
        rows = [Group(bar, line, speed)]
        if state.sprt_line:
            rows.append(Text(f"SPRT {state.sprt_line}"))
        if state.stop_reason:
            rows.append(Text(f"stopping: {state.stop_reason}", style="bold yellow"))
        return Panel(Group(*rows), title=f"go19 collect · {state.run_id}", border_style="blue")

    def _games(self, collector: Collector) -> Table:
        table = Table(title="games in flight", expand=True, title_justify="left")
        for column in ("game", "black", "white", "move", "to move", "estimate", "waiting on"):
            table.add_column(column, no_wrap=True)
        live_games = sorted(collector.state.live.values(), key=lambda g: g.number)
        for live in live_games[:VISIBLE_GAMES]:
            game = live.game
            est = estimate(game.board, game.komi)
            table.add_row(
                str(live.number),
                live.spec.black,
                live.spec.white,
                str(game.move_number),
                "B" if game.to_play == BLACK else "W",
                est.summary(),
                live.waiting_on or "",
            )
        hidden = len(live_games) - VISIBLE_GAMES
        if hidden > 0:
            table.caption = f"… and {hidden} more"
        return table

    def _endpoints(self, collector: Collector) -> Table:
        state = collector.state
        table = Table(title="players and endpoints", expand=True, title_justify="left")
        for column in ("", "player", "endpoint", "p50ms", "p95ms", "busy", "err", "fb",
                       "reconn", "status"):
            table.add_column(column, no_wrap=column in ("player", "endpoint", "status"))
        now = trio.current_time()
        for name, handle in sorted(collector.players.items()):
            samples = state.latency.get(name, ())
            fallbacks = sum(state.tally[name].fallbacks.values()) if name in state.tally else 0
            replicas = handle.endpoint.replica_stats() if handle.endpoint is not None else []
            if not replicas:
                table.add_row(
                    Text("●", style=STATUS_STYLE["local"]), name, handle.describe(),
                    _pct(samples, 50), _pct(samples, 95), "", "", str(fallbacks), "", "local",
                )
                continue
            for i, replica in enumerate(replicas):
                status = replica.status
                if replica.retry_at is not None and replica.retry_at > now:
                    status += f" (retry in {replica.retry_at - now:.0f}s)"
                table.add_row(
                    Text("●", style=STATUS_STYLE.get(replica.status, "white")),
                    name if i == 0 else "",
                    replica.address,
                    _pct(samples, 50) if i == 0 else "",
                    _pct(samples, 95) if i == 0 else "",
                    str(replica.in_flight),
                    str(replica.errors),
                    str(fallbacks) if i == 0 else "",
                    str(replica.reconnects),
                    status,
                )
        return table

    def _results(self, collector: Collector) -> Panel:
        state = collector.state
        table = Table(expand=True, box=None)
        for column in ("player", "W-L-D", "as black", "as white"):
            table.add_column(column)
        for name, tally in sorted(state.tally.items()):
            b, w = tally.as_black, tally.as_white
            table.add_row(
                name,
                f"{tally.wins}-{tally.losses}-{tally.draws}",
                f"{b['W']}-{b['L']}-{b['D']}",
                f"{w['W']}-{w['L']}-{w['D']}",
            )
        pairing = collector.matchup.pairing
        parts = [table]
        if pairing.black != pairing.white:
            parts.append(Text(elo_line(state.records, pairing.black, pairing.white)))
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(state.reasons.items()))
        if reasons:
            parts.append(Text(f"endings: {reasons}"))
        return Panel(Group(*parts), title="results", border_style="green")

    def _events(self, collector: Collector) -> Panel:
        lines = [f"{stamp} {text}" for stamp, text in collector.state.events]
        return Panel(Text("\n".join(lines) or "—"), title="recent events")
