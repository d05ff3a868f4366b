"""Watch mode: a read-only view of a running collection (``collect --web``).

It reads the collector's live state (``RunState.live``, ``records``, ``tally``) when
a page asks, and never writes it: watching costs the run nothing but these reads,
and a page that cannot keep up is dropped by its sender, not waited for. Finished
games are replayed from their SGF, the one source of truth, not from memory.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.collect.standings import pairing_stats, sprt_line, stop_reason, verdict_text
from orchestrator.color import BLACK
from orchestrator.coords import PASS
from orchestrator.events import Event, Fallback
from orchestrator.recordings import VOID_DIR, JournalRecord
from orchestrator.rules.board import IllegalMove
from orchestrator.rules.estimate import estimate
from orchestrator.rules.game import Game
from orchestrator.sgf import SgfError, read_games
from orchestrator.web import views

if TYPE_CHECKING:
    from orchestrator.collect.collector import Collector

FINISHED_SHOWN = 200
LIVE_SHOWN = 100


class WatchHub:
    """What watch pages read about one collector."""

    def __init__(self, collector: Collector) -> None:
        self.collector = collector
        self.fallbacks: Counter[int] = Counter()  # game number -> fallbacks so far
        # game number -> (move number, estimate): one estimate per new move, however many
        # pages look and however often, so watching costs the run next to nothing.
        self._estimates: dict[int, tuple[int, str]] = {}
        self._verdict_cache: dict = {}  # the head-to-head, recomputed per recorded game
        collector.state.subscribe(self.on_event)

    def on_event(self, event: Event) -> None:
        if isinstance(event, Fallback):
            self.fallbacks[event.game] += 1

    def headline(self) -> dict:
        collector = self.collector
        state = collector.state
        pairing = collector.matchup.pairing
        tally = state.tally.get(pairing.black)
        if pairing.black != pairing.white and tally is not None:
            wld = (f"{pairing.black} vs {pairing.white}: "
                   f"{tally.wins}–{tally.losses}–{tally.draws} (W–L–D)")
            # The terminal dashboard's verdict line, word for word: W–L–D, Elo with its
            # interval (±∞ before a game is lost), the statistic's kind, LOS, LLR.
            elo = verdict_text(pairing_stats(collector, self._verdict_cache), state).plain
        else:
            wld, elo = f"{pairing.black} self-play", ""
        return {
            "run": state.run_id,
            "progress": f"{state.done}/{state.target} games · void {state.void} · "
                        f"in flight {len(state.live)}",
            "wld": wld,
            "elo": elo,
            "sprt": sprt_line(state.sprt) if state.sprt is not None else "",
            "stopping": stop_reason(state.stop) if state.stop is not None else "",
        }

    def overview(self) -> dict:
        state = self.collector.state
        live = []
        numbers = sorted(state.live)[:LIVE_SHOWN]
        self._estimates = {n: e for n, e in self._estimates.items() if n in state.live}
        for number in numbers:
            entry = state.live[number]
            game = entry.game
            cached = self._estimates.get(number)
            if cached is None or cached[0] != game.move_number:
                cached = (game.move_number, estimate(game.board, game.komi).summary())
                self._estimates[number] = cached
            live.append({
                "number": number,
                "black": entry.spec.black,
                "white": entry.spec.white,
                "move": game.move_number,
                "estimate": cached[1],
                "fallbacks": self.fallbacks.get(number, 0),
                "waiting_on": entry.waiting_on or "",
            })
        finished = [{
            "number": r.game, "black": r.black, "white": r.white,
            "result": r.result, "reason": r.reason, "moves": r.moves,
            "fallbacks": sum(sum(c.values()) for c in r.fallbacks.values()),
            "sgf": f"sgf/{r.sgf}",
        } for r in reversed(state.records[-FINISHED_SHOWN:])]
        return {"headline": self.headline(), "live": live, "finished": finished}

    def live_view(self, number: int) -> dict | None:
        entry = self.collector.state.live.get(number)
        if entry is None:
            return None
        game = entry.game
        return {
            "kind": "live",
            "number": number,
            "black": entry.spec.black,
            "white": entry.spec.white,
            "stones": views.stones(game.board),
            "move": game.move_number,
            "last": views.last_stone(game),
            "to_play": "black" if game.to_play == BLACK else "white",
            "estimate": views.estimate_line(game.board, game.komi),
            "waiting_on": entry.waiting_on or "",
            "fallbacks": self.fallbacks.get(number, 0),
        }

    def _path(self, record: JournalRecord) -> Path:
        folder = self.collector.run_dir
        return folder / VOID_DIR / record.sgf if record.void else folder / record.sgf

    def sgf_path(self, name: str) -> Path | None:
        """A finished game's SGF, by the name its journal record gives (nothing else)."""
        for record in self.collector.state.records:
            if record.sgf == name:
                return self._path(record)
        return None

    def finished_view(self, number: int) -> dict | None:
        record = next((r for r in self.collector.state.records if r.game == number), None)
        if record is None:
            return None
        path = self._path(record)
        view: dict = {"kind": "replay", "number": number, "black": record.black,
                      "white": record.white, "result": record.result,
                      "reason": record.reason, "sgf": f"sgf/{record.sgf}"}
        try:
            view.update(replay_frames(path, path.stat().st_mtime_ns))
        except (OSError, SgfError, ReplayError) as exc:
            view["error"] = f"cannot replay {record.sgf}: {exc}"
        return view


@lru_cache(maxsize=32)
def replay_frames(path: Path, _mtime: int) -> dict:
    """Every position of the SGF's first game (``frames[k]``: after k moves) under the
    referee's rules, the moves (point or null for a pass, with their fallback mark) and the
    estimate line per frame. Raises ReplayError for a game the rules reject."""
    record = read_games(path.read_bytes())[0]
    if record.setup:
        raise ReplayError("setup stones (not a go19 recording)")
    game = Game(record.size, record.komi)
    frames = [views.stones(game.board)]
    lines = [views.estimate_line(game.board, game.komi)]
    moves = []
    for number, move in enumerate(record.moves, 1):
        try:
            game.play(move.point, move.color)
        except IllegalMove as exc:
            raise ReplayError(f"move {number}: {exc}") from None
        frames.append(views.stones(game.board))
        lines.append(views.estimate_line(game.board, game.komi))
        moves.append({"point": None if move.point == PASS else move.point,
                      "colour": "black" if move.color == BLACK else "white",
                      "source": move.source})
    return {"frames": frames, "moves": moves, "estimates": lines}


class ReplayError(ValueError):
    """A recording the referee cannot replay."""
