"""The connection panel of a server row: a one-off PING/PONG on its own connection
(never the in-game one), or for an OpenAI-compatible base URL one ``GET /v1/models``
that must list the row's model, and the seed client's coloured label, with optional
auto-reconnect: after a failure, wait 1.5 s, 3 s, 4.5 s … (capped at 15 s),
counting down on the label every 0.25 s, and stop after 6 failures in a row.

A host name the page (or ``go19 play --host``) gives is checked by
:mod:`orchestrator.players.address` first: ``a..b`` would make the resolver raise
UnicodeError deep inside trio, ending the whole server instead of failing one check."""

from __future__ import annotations

from collections.abc import Callable

import trio

from orchestrator.players.address import AddressError, check_host
from orchestrator.players.go19 import format_address
from orchestrator.players.openai_http import check_model
from orchestrator.players.ping import Result, ping_once

GREY, AMBER, GREEN, RED = "grey", "amber", "green", "red"
BACKOFF_STEP_S = 1.5
BACKOFF_CAP_S = 15.0
MAX_FAILURES = 6
TICK_S = 0.25


def host_problem(host: str) -> str | None:
    """Why ``host`` is no host name or address, in a few words; None when it is one."""
    if not host:
        return "empty host name"
    try:
        check_host(host)
    except AddressError as exc:
        return str(exc)
    return None


def is_base_url(host: str) -> bool:
    """A row's host field holds an OpenAI-compatible base URL (``http(s)://...``)."""
    return "://" in host


def row_address(host: str, port: int) -> str:
    """What a row's label calls its server: the base URL, or ``host:port``."""
    return host if is_base_url(host) else format_address((host, port))


async def probe_row(host: str, port: int, model: str | None, timeout: float) -> Result:
    if is_base_url(host):
        ok, reason, ms, _ = await check_model(host, model or None, timeout=timeout)
        return ok, reason, ms
    return await ping_once((host, port), timeout)


def _ms(ms: float) -> str:
    return f"{ms:.1f}" if ms < 10 else f"{ms:.0f}"


class ServerCheck:
    """One server row's label and reconnect loop; ``changed`` is called on every update,
    ``on_ok`` after each successful check (the game's endpoint forgets its failures)."""

    def __init__(self, changed: Callable[[], None], on_ok: Callable[[], None]) -> None:
        self.label = "● unchecked"
        self.color = GREY
        self.failures = 0
        self._changed = changed
        self._on_ok = on_ok
        self._scope: trio.CancelScope | None = None

    @property
    def running(self) -> bool:
        return self._scope is not None

    def _set(self, label: str, color: str) -> None:
        self.label, self.color = label, color
        self._changed()

    def check(self, nursery: trio.Nursery, host: str, port: int, timeout: float,
              auto: bool, model: str = "") -> None:
        """A new check: cancels the one running and resets the failure counter."""
        self.stop()
        self.failures = 0
        nursery.start_soon(self._run, host, port, timeout, auto, True, model)

    def failed(self, nursery: trio.Nursery, host: str, port: int, reason: str, timeout: float,
               auto: bool, model: str = "") -> None:
        """The in-game connection failed: show it, and start reconnecting if asked to."""
        if self.running:
            return
        self.failures += 1
        self._set(f"● FAILED {row_address(host, port)}: {reason}", RED)
        if auto:
            nursery.start_soon(self._run, host, port, timeout, auto, False, model)

    def forget(self) -> None:
        """The row now names another server: stop, and say nothing about the new one yet."""
        self.stop()
        self.failures = 0
        self._set("● unchecked", GREY)

    def stop(self) -> None:
        if self._scope is not None:
            self._scope.cancel()
            self._scope = None

    async def _run(self, host: str, port: int, timeout: float, auto: bool, first: bool,
                   model: str) -> None:
        with trio.CancelScope() as scope:
            self._scope = scope
            try:
                await self._loop(host, port, timeout, auto, first, model)
            finally:
                if self._scope is scope:
                    self._scope = None

    async def _loop(self, host: str, port: int, timeout: float, auto: bool, first: bool,
                    model: str) -> None:
        where = row_address(host, port)
        while True:
            if not first:
                await self._count_down(where)
            first = False
            self._set("● checking…", AMBER)
            ok, reason, ms = await probe_row(host, port, model, timeout)
            if ok:
                self.failures = 0
                about = f": {reason}" if reason else ""  # a base URL's: what it serves
                self._set(f"● OK {where}{about} ({_ms(ms)} ms)", GREEN)
                self._on_ok()
                return
            self.failures += 1
            if not auto:
                self._set(f"● FAILED {where}: {reason} ({_ms(ms)} ms)", RED)
                return
            if self.failures >= MAX_FAILURES:
                self._set(f"● FAILED {where}: {reason} ({_ms(ms)} ms) — gave up after "
                          f"{self.failures} failures in a row; check again to retry", RED)
                return
            self._set(f"● FAILED {where}: {reason} ({_ms(ms)} ms)", RED)

    async def _count_down(self, where: str) -> None:
        delay = min(BACKOFF_STEP_S * self.failures, BACKOFF_CAP_S)
        deadline = trio.current_time() + delay
        while (left := deadline - trio.current_time()) > 0:
            self._set(f"● reconnect wait #{self.failures} — {left:.1f} s ({where})", AMBER)
            await trio.sleep(min(TICK_S, left))
