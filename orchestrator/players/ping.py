"""One-off GO19 PING on its own connection (never a game's), and the status line for it:
what ``go19 ping``, the collect preflight and the web connection panel all check with."""

from __future__ import annotations

import trio

from orchestrator.players.address import AddressError, check_host
from orchestrator.players.base import PlayerError
from orchestrator.players.connection import Go19Connection, format_address

Result = tuple[bool, str, float]  # ok, failure reason, milliseconds


async def ping_once(address: tuple[str, int], timeout: float) -> Result:
    """(ok, reason, ms): connect, PING, wait for PONG, close within ``timeout``; the PING
    round trip when ok, else the time until the failure."""
    start = trio.current_time()
    where = format_address(address)
    try:
        check_host(address[0])
    except AddressError:
        return False, "bad host name", 0.0
    try:
        with trio.fail_after(timeout):
            conn = await Go19Connection.connect(*address)
            try:
                rtt = await conn.ping()
            finally:
                await conn.aclose()
    except trio.TooSlowError:
        return False, f"no answer within {timeout:g} s", (trio.current_time() - start) * 1000
    except PlayerError as exc:
        return False, str(exc).removeprefix(f"{where}: "), (trio.current_time() - start) * 1000
    return True, "", rtt


def ping_text(ok: bool, where: str, detail: str, ms: float) -> str:
    """The line after the ``● `` bullet: ``OK where (NN ms)`` (``: detail`` when there is
    one) or ``FAILED where: reason (NN ms)``; callers colour the bullet their own way."""
    if ok:
        about = f": {detail}" if detail else ""
        return f"OK {where}{about} ({ms:.1f} ms)"
    return f"FAILED {where}: {detail} ({ms:.1f} ms)"
