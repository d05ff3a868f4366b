"""A change counter that tasks can wait on: the game bumps it, each page's sender
waits for a version it has not sent yet. Coalescing by design: a sender that was
busy sends the latest state once, never a backlog."""

from __future__ import annotations

import trio


class Pulse:
    def __init__(self) -> None:
        self.version = 0
        self._event = trio.Event()

    def bump(self) -> None:
        self.version += 1
        self._event.set()
        self._event = trio.Event()

    async def wait(self, seen: int) -> int:
        """Return the current version once it differs from ``seen``."""
        while self.version == seen:
            await self._event.wait()
        return self.version
