"""What watch pages are sent (``collect --web``): each part built once per change and
shared by every page, so that a hundred pages cost the run about what one does.

Rather than hear every move (a run with no page open pays nothing), while a page is
open one task looks at the run every ``POLL_S`` and rebuilds only what changed: the
board of each game in flight that a page follows, and every ``RUN_EVERY_S`` the
finished games and the run part (headline, games in flight, the end of the run). Each
page has its own sender (:class:`WatchPage`), woken by a change, which sends the parts
it has not sent yet: the latest state, never a backlog.
Finished games and the estimates a replay asks for come from :class:`ReplayCache`,
computed off the loop; a page waiting for one holds up no other page.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from html import unescape
from pathlib import Path

import trio

from orchestrator.collect.standings import stop_reason
from orchestrator.web import views
from orchestrator.web.replays import ReplayCache
from orchestrator.web.watch import WatchHub

MEDIA = {".png": "image/png", ".svg": "image/svg+xml"}
_RELATIVE_SRC = re.compile(r'src="([^":]+)"')  # no scheme: a file beside the report
POLL_S = 0.5  # a followed game's board: a VLM's move takes longer than that
RUN_EVERY_S = 1.0  # the games tables and headline: a table needs no refresh per move


def _json(data: object) -> str:
    return json.dumps(data, separators=(",", ":"))


@dataclass
class Part:
    """One shared message: its JSON text, rebuilt (and its version bumped) on change."""

    version: int = 0
    text: str = ""
    key: object = None

    def update(self, key: object, build: Callable[[], object]) -> bool:
        """Rebuild from ``build()`` when ``key`` (what the part depends on) changed."""
        if key == self.key and self.version:
            return False
        text = _json(build())
        self.key = key
        if text == self.text:
            return False
        self.text, self.version = text, self.version + 1
        return True


@dataclass(frozen=True)
class ReportPage:
    """The run's ``report.html`` as watch pages are sent it when the run is over: a page
    opens its own copy, so the link still works once collect (and this server) has
    exited. The pictures it shows from the report folder are inlined; its SGF links,
    relative to that folder, work only in the file itself."""

    path: Path
    html: str

    @classmethod
    def read(cls, path: Path) -> ReportPage | None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            return None
        folder = path.parent.resolve()

        def inline(match: re.Match) -> str:
            target = (folder / unescape(match[1])).resolve()
            media = MEDIA.get(target.suffix.lower())
            if media is None or not target.is_relative_to(folder):
                return match[0]
            try:
                data = base64.b64encode(target.read_bytes()).decode()
            except OSError:
                return match[0]
            return f'src="data:{media};base64,{data}"'

        return cls(path, _RELATIVE_SRC.sub(inline, text))


class WatchFeed:
    """The shared parts for one run, and the pages open on it."""

    def __init__(self, hub: WatchHub, replays: ReplayCache | None = None) -> None:
        self.hub = hub
        self.report: ReportPage | None = None  # the run's, once it is over
        self.replays = replays or ReplayCache()
        self.hello = _json({"type": "hello", "page": "watch",
                            "board": views.board_info(hub.collector.matchup.game.size)})
        self.run_part = Part()
        self.finished = Part()
        self.games: dict[int, Part] = {}  # games in flight that some page follows
        self.pages: set[WatchPage] = set()
        self.over = False
        self._left = trio.Event()
        self._run_built = -RUN_EVERY_S

    # -- building -------------------------------------------------------------------------

    def refresh(self) -> None:
        hub = self.hub
        state = hub.collector.state
        now = time.monotonic()
        changed = False
        if self.over or now - self._run_built >= RUN_EVERY_S:
            self._run_built = now
            changed = self.finished.update(len(state.records), lambda: {
                "type": "finished", "finished": hub.finished_rows()})
            changed |= self.run_part.update(object(), lambda: {
                "type": "run", "headline": hub.headline(), "live": hub.live_rows(now),
                "over": self._over()})
        followed = {page.selected for page in self.pages if page.selected is not None}
        for gone in [n for n in self.games if n not in followed or n not in state.live]:
            del self.games[gone]
        for number in followed:
            entry = state.live.get(number)
            if entry is not None:
                part = self.games.setdefault(number, Part())
                key = (entry.game.move_number, entry.waiting_on, hub.fallbacks.get(number))
                changed |= part.update(key, partial(hub.live_view, number))
        if changed:
            for page in self.pages:
                page.wake()

    def _over(self) -> dict | None:
        if not self.over:
            return None
        state = self.hub.collector.state
        text = f"run over: {state.done}/{state.target} games"
        if state.stop is not None:
            text += f" — {stop_reason(state.stop)}"
        report = self.report
        return {"text": text, "report": None if report is None else
                {"path": str(report.path.resolve()), "html": report.html}}

    # -- running --------------------------------------------------------------------------

    async def run(self) -> None:
        while not self.over:
            if self.pages:
                self.refresh()
            await trio.sleep(POLL_S)

    async def finish(self, report: ReportPage | None = None) -> None:
        """The run is over: every page gets the last state, saying so (with ``report``),
        then its socket closes; returns once no page is left (the caller bounds the
        wait)."""
        self.report = report
        self.over = True
        self.refresh()
        for page in self.pages:
            page.wake()
        while self.pages:
            await self._left.wait()

    @asynccontextmanager
    async def page(self) -> AsyncIterator[WatchPage]:
        page = WatchPage(self)
        self.pages.add(page)
        try:
            yield page
        finally:
            self.pages.discard(page)
            self._left.set()
            self._left = trio.Event()


class WatchPage:
    """One open page: the game it follows, and its sender."""

    def __init__(self, feed: WatchFeed) -> None:
        self.feed = feed
        self.selected: int | None = None
        self.fresh = False  # the page asked for its game: send it in full
        self.asked: tuple[int, int] | None = None  # (game, move) whose estimate it wants
        self._wake = trio.Event()

    def wake(self) -> None:
        self._wake.set()

    def on_message(self, message: dict) -> None:
        kind, number, move = message.get("type"), message.get("game"), message.get("move")
        if kind == "watch" and (number is None or type(number) is int):
            self.selected, self.fresh = number, True
            if number in self.feed.hub.collector.state.live and number not in self.feed.games:
                self.feed.refresh()  # a game in flight gets its board now, not next poll
        elif kind == "estimate" and type(number) is int and type(move) is int and move >= 0:
            self.asked = (number, move)
        else:
            return
        self.wake()

    async def send_all(self, send: Callable[[str], Awaitable[bool]]) -> None:
        """Send what changed until the page goes (``send`` returns False) or the run ends:
        what is due at one wake goes as one message (a JSON array of the shared texts,
        joined, not encoded again), since each message costs the loop more than its bytes."""
        feed = self.feed
        if not await send(feed.hello):
            return
        sent_run = sent_finished = 0
        sent_game: tuple | None = None
        while True:
            self._wake = trio.Event()  # armed before reading, so no change is missed
            due = []
            run, finished = feed.run_part, feed.finished
            if run.version != sent_run:
                due.append(run.text)
                sent_run = run.version
            if finished.version != sent_finished:
                due.append(finished.text)
                sent_finished = finished.version
            game = await self._game_text(sent_game)
            if game is not None:
                due.append(game[1])
                sent_game = game[0]
            if self.asked is not None:
                text = await self._estimate_text(*self.asked)
                self.asked = None
                if text is not None:
                    due.append(text)
            if due and not await send(due[0] if len(due) == 1 else f"[{','.join(due)}]"):
                return
            if feed.over and sent_run == feed.run_part.version:
                return
            await self._wake.wait()

    async def _game_text(self, sent: tuple | None) -> tuple[tuple, str] | None:
        """(what it is, text) of the followed game when the page lacks it, else None."""
        number, feed = self.selected, self.feed
        if number is None:
            return None
        fresh, self.fresh = self.fresh, False
        part = feed.games.get(number)
        if part is not None:
            what: tuple = ("live", number, part.version)
            return (what, part.text) if fresh or what != sent else None
        if number in feed.hub.collector.state.live:
            return None  # its board comes with the next poll
        record = feed.hub.record(number)
        what = ("replay", number) if record is not None else ("gone", number)
        if not fresh and what == sent:
            return None
        if record is None:
            return what, _json({"type": "game", "kind": "gone", "number": number})
        path = feed.hub.sgf_path(record.sgf)
        if path is None:
            return what, _json({"type": "game", "kind": "gone", "number": number})
        about = {"number": number, "black": record.black, "white": record.white,
                 "result": record.result, "reason": record.reason,
                 "sgf": f"sgf/{record.sgf}"}
        return what, await feed.replays.replay(record.sgf, path, about)

    async def _estimate_text(self, number: int, move: int) -> str | None:
        record = self.feed.hub.record(number)
        path = self.feed.hub.sgf_path(record.sgf) if record is not None else None
        if record is None or path is None or move > record.moves:
            return None
        return await self.feed.replays.estimate(record.sgf, path, number, move)
