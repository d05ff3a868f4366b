"""Watch mode: a read-only view of a running collection (``collect --web``).

It reads the collector's live state (``RunState.live``, ``records``, ``tally``) and
never writes it. What pages are sent is built from these reads once per change and
shared (:mod:`.feed`); finished games are replayed from their SGF, the one source of
truth, in a worker thread (:mod:`.replays`), never on the collector's loop.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.collect.standings import ReviewLine, pairing_stats, stop_reason, verdict_text
from orchestrator.color import BLACK, WHITE
from orchestrator.events import Event, Fallback
from orchestrator.recordings import VOID_DIR, JournalRecord
from orchestrator.rules.estimate import estimate
from orchestrator.web import views

if TYPE_CHECKING:
    from orchestrator.collect.collector import Collector

FINISHED_SHOWN = 200
LIVE_SHOWN = 100
ESTIMATE_EVERY_S = 2.0


class WatchHub:
    """What watch pages read about one collector."""

    def __init__(self, collector: Collector) -> None:
        self.collector = collector
        self.fallbacks: Counter[int] = Counter()  # game number -> fallbacks so far
        # game number -> (move number, estimate, when): the games table's estimates.
        self._estimates: dict[int, tuple[int, str, float]] = {}
        self._verdict_cache: dict = {}  # the head-to-head, recomputed per recorded game
        self.review = ReviewLine()  # collect --review's quality line, as the dashboard's
        collector.state.subscribe(self.on_event)

    def on_event(self, event: Event) -> None:
        self.review.on_event(event)
        if isinstance(event, Fallback):
            self.fallbacks[event.game] += 1

    def headline(self) -> dict:
        """The run's name, its progress and the terminal dashboard's verdict line (W–L–D,
        Elo with its interval, the statistic's kind, LOS, LLR), word for word, once."""
        collector = self.collector
        state = collector.state
        verdict = verdict_text(pairing_stats(collector, self._verdict_cache), state).plain
        return {
            "run": state.run_id,
            "progress": f"{state.done}/{state.target} games · void {state.void} · "
                        f"in flight {len(state.live)}",
            "verdict": verdict,
            "quality": self.review.text() or "",
            "stopping": stop_reason(state.stop) if state.stop is not None else "",
        }

    def live_rows(self, now: float) -> list[dict]:
        """The games in flight, oldest first; each one's estimate is refreshed at most every
        ``ESTIMATE_EVERY_S`` (a table cell needs no estimate per move)."""
        state = self.collector.state
        self._estimates = {n: e for n, e in self._estimates.items() if n in state.live}
        rows = []
        for number in sorted(state.live)[:LIVE_SHOWN]:
            entry = state.live[number]
            game = entry.game
            cached = self._estimates.get(number)
            if cached is None or (cached[0] != game.move_number
                                  and now - cached[2] >= ESTIMATE_EVERY_S):
                cached = (game.move_number, estimate(game.board, game.komi).summary(), now)
                self._estimates[number] = cached
            rows.append({
                "number": number,
                "black": entry.spec.black,
                "white": entry.spec.white,
                "move": game.move_number,
                "estimate": cached[1],
                "fallbacks": self.fallbacks.get(number, 0),
                "waiting_on": entry.waiting_on or "",
            })
        return rows

    def finished_rows(self) -> list[dict]:
        """The latest finished games, newest first."""
        return [{
            "number": r.game, "black": r.black, "white": r.white,
            "result": r.result, "moves": r.moves,
            "fallbacks": sum(sum(c.values()) for c in r.fallbacks.values()),
            "sgf": f"sgf/{r.sgf}",
        } for r in reversed(self.collector.state.records[-FINISHED_SHOWN:])]

    def live_view(self, number: int) -> dict | None:
        """A game in flight as the board draws it, or None once it is over."""
        entry = self.collector.state.live.get(number)
        if entry is None:
            return None
        game = entry.game
        board = game.board
        return {
            "type": "game",
            "kind": "live",
            "number": number,
            "black": entry.spec.black,
            "white": entry.spec.white,
            "stones": views.stones(board),
            "move": game.move_number,
            "moves": views.move_points(game),
            "last": views.last_stone(game),
            "to_play": "black" if game.to_play == BLACK else "white",
            "captures": {"black": board.captures[BLACK], "white": board.captures[WHITE]},
            "estimate": views.estimate_line(board, game.komi),
            "waiting_on": entry.waiting_on or "",
            "fallbacks": self.fallbacks.get(number, 0),
        }

    def record(self, number: int) -> JournalRecord | None:
        return next((r for r in reversed(self.collector.state.records) if r.game == number),
                    None)

    def _path(self, record: JournalRecord) -> Path:
        folder = self.collector.run_dir
        return folder / VOID_DIR / record.sgf if record.void else folder / record.sgf

    def sgf_path(self, name: str) -> Path | None:
        """A finished game's SGF, by the name its journal record gives (nothing else)."""
        for record in self.collector.state.records:
            if record.sgf == name:
                return self._path(record)
        return None
