"""A bad host name in the play page's server rows (issue 21, item 2): the check
connection used to raise UnicodeError out of the resolver and take the whole `go19 play`
server down. Now the setting is refused in one line, and a check of such a name that
gets past it says `bad host name`; the session carries on."""

from __future__ import annotations

import trio

from orchestrator.web.connection import RED, ServerCheck
from orchestrator.web.session import PlaySession
from tests.web.test_session import settings, until


async def test_a_bad_host_setting_is_refused_and_the_session_lives_on(tmp_path) -> None:
    async with trio.open_nursery() as nursery:
        session = PlaySession(nursery, tmp_path)
        session.handle({"type": "check", "server": 1, "settings": settings(host1="a..b")})
        assert session.status == ("bad setting host1: bad host name 'a..b': empty label (two "
                                  "dots in a row, or a dot at the start)", "error")
        session.handle({"type": "settings", "settings": settings(host2="x" * 64 + ".lab")})
        assert session.status[0].startswith("bad setting host2: bad host name")
        session.handle({"type": "new", "settings": settings()})  # still playing
        await until(session, lambda: session.waiting_human)
        nursery.cancel_scope.cancel()


async def test_a_check_of_a_bad_name_fails_in_one_line() -> None:
    async with trio.open_nursery() as nursery:
        check = ServerCheck(lambda: None, lambda: None)
        check.check(nursery, "10.0.0..5", 5019, 5.0, auto=False)
        with trio.fail_after(10):
            while check.color != RED:
                await trio.sleep(0)  # a state to wait for: the check's task runs meanwhile
        assert check.label == "● FAILED 10.0.0..5:5019: bad host name (0.0 ms)"
