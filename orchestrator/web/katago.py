"""KataGo's ownership of a final position, for the scoring phase of ``go19 play``
(:mod:`.scoring`): collect's own adjudication client
(:class:`~orchestrator.collect.adjudicator.Adjudicator`: the query, the Black view of its
config's ``reportAnalysisWinratesAs``, KataGo's deadline per visit), so that a play game's
dead stones are KataGo's as a collect game's are.

KataGo starts at the first scoring phase that asks for it, in the session's nursery, and
serves every later one; a page that only plays never starts it. One that cannot start, or
that dies, is not restarted: every later scoring phase says so and keeps the estimate's
proposal.
"""

from __future__ import annotations

from pathlib import Path

import trio

from orchestrator.collect.adjudicator import Adjudicator
from orchestrator.collect.matchup import Adjudicate
from orchestrator.label.engine import KataGoDied
from orchestrator.rules.game import Game

DEAD_VISITS = Adjudicate.model_fields["dead_visits"].default  # collect's: KataGo's rule


class KataGoOwnership:
    """The session's KataGo: :meth:`ownership` of a game's final position."""

    def __init__(self, nursery: trio.Nursery, binary: Path, model: Path, config: Path,
                 log: Path, visits: int = DEAD_VISITS, timeout: float | None = None) -> None:
        self.nursery = nursery
        self.files = (binary, model, config, log)
        self.visits = visits
        settings = Adjudicate(dead_visits=visits) if timeout is None else Adjudicate(
            dead_visits=visits, timeout=timeout)
        self.adjudicator = Adjudicator(settings, config, seed=0)
        self._ready: trio.Event | None = None
        self._failed: str | None = None

    @property
    def name(self) -> str:
        return f"KataGo ({self.visits} visit{'s' * (self.visits != 1)})"

    async def ownership(self, game: Game) -> list[float] | str:
        """Black's ownership of the position after the game's last move, one value a
        point, or why there is none."""
        if self._ready is None:
            self._ready = trio.Event()
            self.nursery.start_soon(self._hold, self._ready)
        await self._ready.wait()
        if self._failed is not None:
            return self._failed
        answer = await self.adjudicator.ask(game, self.visits, True, None)
        if isinstance(answer, str):
            return answer
        _, ownership = answer
        assert ownership is not None  # asked for
        return [float(value) for value in ownership]

    async def _hold(self, ready: trio.Event) -> None:
        """KataGo started and kept for the session (until its nursery is cancelled)."""
        try:
            async with self.adjudicator.open(*self.files):
                ready.set()
                await trio.sleep_forever()
        except (KataGoDied, OSError, ValueError) as exc:
            self._failed = f"KataGo did not start: {str(exc).split(';')[0]}"
        finally:
            if self._failed is None and not ready.is_set():
                self._failed = "KataGo did not start"
            ready.set()
