"""The run's verdict in words: the head-to-head line the dashboard and the watch page
show (W–L–D, Elo with its interval, the statistic's kind, LOS, LLR), and, without a
terminal, :class:`PlainLog`: one timestamped line per event and, every N finished games,
a standings block like fastchess's ``Results of … vs …``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text

from orchestrator.collect.state import HeadToHead, RunState, head_to_head_live

if TYPE_CHECKING:
    from orchestrator.collect.collector import Collector


def plain_log(line: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {line}", flush=True)


def _signed(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "n/a"
    if math.isinf(value):
        return "+∞" if value > 0 else "−∞"
    return f"{value:+.{digits}f}".replace("-", "−")


def pairing_stats(collector: Collector, cache: dict | None = None) -> HeadToHead | None:
    """The matchup's head-to-head, recomputed only when a game was recorded."""
    pairing = collector.matchup.pairing
    if pairing.black == pairing.white:
        return None
    records = collector.state.records
    if cache is not None and cache.get("n") == len(records):
        return cache["stats"]
    stats = head_to_head_live(records, pairing.black, pairing.white,
                              collector.matchup.stop.sprt)
    if cache is not None:
        cache.update(n=len(records), stats=stats)
    return stats


def verdict_text(h: HeadToHead | None, state: RunState) -> Text:
    """``r5 vs r4: 212–188–0 (53.0 %)  Elo +20.9 [−13.1, +55.0] …  LOS 88 %  LLR …``"""
    if h is None:
        return Text(f"self-play: {state.done} games", style="bold")
    r = h.results
    est = h.estimate
    text = Text()
    text.append(f"{h.player} vs {h.opponent}: ", style="bold")
    if not r.games:
        text.append("no rated games yet")
        return text
    text.append(f"{r.wins}–{r.losses}–{r.draws} ({100 * r.points / r.games:.1f} %)")
    if est.elo is not None:
        style = "green" if est.los and est.los >= 0.95 else (
            "red" if est.los is not None and est.los <= 0.05 else "bold")
        text.append("  Elo ")
        text.append(_signed(est.elo), style=style)
        if est.elo_low is not None:
            text.append(f" [{_signed(est.elo_low)}, {_signed(est.elo_high)}]")
        text.append(f" {h.kind} {h.samples}", style="dim")
    if est.los is not None:
        text.append(f"  LOS {100 * est.los:.1f} %")
    if h.sprt is not None:
        c = h.sprt_config
        decided = {"H1": " H1 ✓", "H0": " H0 ✓"}.get(h.sprt.decision or "", "")
        text.append(f"  LLR {_signed(h.sprt.llr, 2)} ({_signed(h.sprt.lower, 2)}, "
                    f"{_signed(h.sprt.upper, 2)}) [{c.elo0:g}, {c.elo1:g}]{decided}")
    return text


def standings_block(collector: Collector, h: HeadToHead | None = None) -> str:
    """fastchess's ``Results of A vs B`` block for the plain log."""
    state = collector.state
    h = h or pairing_stats(collector)
    rule = "-" * 50
    if h is None:
        return f"{rule}\nSelf-play: {state.done} of {state.target} games\n{rule}"
    r, est = h.results, h.estimate
    lines = [rule, f"Results of {h.player} vs {h.opponent} ({state.done}/{state.target} "
             f"games, {state.void} void):"]
    if est.elo is None:
        lines.append("Elo: no rated games yet")
    else:
        err = f" +/- {est.error:.1f}" if est.error is not None else ""
        nelo = (f", nElo: {est.nelo:.1f} +/- {est.nelo_error:.1f}"
                if est.nelo is not None else "")
        lines.append(f"Elo: {est.elo:.1f}{err}{nelo} ({h.kind}, {h.samples})")
        if est.los is not None:
            draws = 100 * r.draws / r.games if r.games else 0.0
            lines.append(f"LOS: {100 * est.los:.1f} %, DrawRatio: {draws:.1f} %")
    points = r.points
    share = f" ({100 * points / r.games:.1f} %)" if r.games else ""
    lines.append(f"Games: {r.games}, Wins: {r.wins}, Losses: {r.losses}, Draws: {r.draws}, "
                 f"Points: {points:.1f}{share}")
    if h.kind == "pentanomial":
        lines.append(f"Ptnml(0-2): [{', '.join(map(str, h.counts.counts))}]")
    if h.sprt is not None:
        c = h.sprt_config
        lines.append(f"LLR: {h.sprt.llr:.2f} ({h.sprt.lower:.2f}, {h.sprt.upper:.2f}) "
                     f"[{c.elo0:.2f}, {c.elo1:.2f}]")
    lines.append(rule)
    return "\n".join(lines)


class PlainLog:
    """The dashboard's stand-in without a terminal: timestamped lines, and a standings
    block whenever ``every`` more games have finished (0: never)."""

    def __init__(self, every: int = 10, out: Callable[[str], None] = plain_log) -> None:
        self.every = every
        self.out = out
        self._collector: Collector | None = None
        self._shown_at = 0

    def log(self, line: str) -> None:
        self.out(line)
        collector = self._collector
        if collector is None or self.every <= 0:
            return
        done = collector.state.done
        if done // self.every > self._shown_at // self.every:
            self._shown_at = done
            for text in standings_block(collector).splitlines():
                self.out(text)

    async def run(self, collector: Collector) -> None:
        self._collector = collector
        self._shown_at = collector.state.done  # a resumed run's old games were shown before
