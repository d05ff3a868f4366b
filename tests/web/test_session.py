"""The play session and the connection panel without a browser: the state the page
draws, driven by the messages the page sends, over real loopback sockets."""

from __future__ import annotations

import math
from functools import partial
from types import SimpleNamespace

import pytest
import trio
import trio.testing
from pydantic import ValidationError

from orchestrator.collect.referee import GameSpec, LiveGame, RefereeSettings, play_game
from orchestrator.collect.state import RunState
from orchestrator.color import BLACK
from orchestrator.coords import PASS, from_gtp
from orchestrator.players.base import Answer, RefusedMove
from orchestrator.players.heuristic import HeuristicPlayer
from orchestrator.recordings import PlayerMeta, record_from_sgf
from orchestrator.rules import Game
from orchestrator.serve import serve_go19
from orchestrator.sgf import read_games
from orchestrator.web.connection import AMBER, GREY, RED, ServerCheck
from orchestrator.web.session import PlaySession
from orchestrator.web.watch import WatchHub
from tests.web.harness import free_port


async def until(session: PlaySession, predicate) -> None:
    with trio.fail_after(30):
        while not predicate():
            await session.pulse.wait(session.pulse.version)


def settings(**changes) -> dict:
    base = {"mode": "hh", "color": "black", "host1": "127.0.0.1", "port1": 5019, "host2": "",
            "port2": None, "timeout": 5, "komi": 2.5, "training": True, "auto_restart": False,
            "auto_reconnect1": False, "auto_reconnect2": False}
    return {**base, **changes}


async def test_clicks_refusals_and_the_recorded_game(tmp_path):
    async with trio.open_nursery() as nursery:
        session = PlaySession(nursery, tmp_path)
        session.handle({"type": "new", "settings": settings()})
        await until(session, lambda: session.waiting_human)
        d4, q16 = from_gtp("D4", 19), from_gtp("Q16", 19)
        session.handle({"type": "click", "point": d4})
        await until(session, lambda: session.live.game.move_number == 1 and session.waiting_human)
        session.handle({"type": "click", "point": d4})
        await until(session, lambda: "occupied" in session.status[0])
        assert session.status == ("illegal move D4: occupied", "error")
        session.handle({"type": "click", "point": 400})
        assert session.status == ("bad point 400", "error")
        session.handle({"type": "click", "point": True})
        assert session.status == ("bad point True", "error")
        session.handle({"type": "settings", "settings": settings(komi=2.7)})
        assert session.status[0].startswith("bad setting komi")
        session.handle({"type": "click", "point": q16})
        await until(session, lambda: session.live.game.move_number == 2 and session.waiting_human)
        session.handle({"type": "pass"})
        await until(session, lambda: session.live.game.move_number == 3 and session.waiting_human)
        session.handle({"type": "pass"})
        await until(session, lambda: session.scoring is not None)  # no stone dead here
        session.handle({"type": "confirm"})
        await until(session, lambda: bool(session.saved))
        assert session.outcome.result == "W+2.5" and session.outcome.reason == "two-passes"
        assert session.snapshot()["turn"].startswith("Game over: W+2.5 (two-passes, 0 dead "
                                                     "stones lifted) — area count B 1 vs W 1")
        game = read_games(session.saved[0].read_bytes())[0]
        assert [(m.point, m.source) for m in game.moves] == [
            (d4, None), (q16, None), (PASS, None), (PASS, None)]
        assert game.root_props["GOXIXEND"] == "two-passes"
        nursery.cancel_scope.cancel()


async def test_saves_of_the_same_second_and_number_each_say_their_own_file(tmp_path):
    """Another go19 play saving game 1 in the same second gets ``…-2.sgf``: the record in
    that file names that file (resume rebuilds a lost journal line only from such a one)."""
    async with trio.open_nursery() as nursery:
        session = PlaySession(nursery, tmp_path)
        session.handle({"type": "new", "settings": settings()})
        for _ in range(2):
            await until(session, lambda: session.waiting_human)
            moves = session.live.game.move_number
            session.handle({"type": "pass"})
            await until(session, lambda moves=moves: session.live.game.move_number > moves)
        await until(session, lambda: session.scoring is not None)
        session.handle({"type": "confirm"})
        await until(session, lambda: bool(session.saved))
        meta = {name: PlayerMeta(kind="human") for name in ("human-black", "human-white")}
        again = [session._save(session.outcome, meta) for _ in range(2)]
        nursery.cancel_scope.cancel()
    first = session.saved[0]
    assert [p.name for p in again] == [first.name.replace(".sgf", f"-{n}.sgf") for n in (2, 3)]
    for path in (first, *again):
        record = record_from_sgf(read_games(path.read_bytes())[0])
        assert record.sgf == path.name and record.game == 1


async def test_retaking_a_ko_at_once_is_refused_as_superko(tmp_path):
    def at(row: int, col: int) -> int:
        return row * 19 + col

    ko_fight = [at(0, 1), at(0, 2), at(1, 0), at(1, 1), at(2, 1), at(2, 2), at(10, 10),
                at(1, 3), at(1, 2)]  # the last takes White's (1, 1): a ko
    async with trio.open_nursery() as nursery:
        session = PlaySession(nursery, tmp_path)
        session.handle({"type": "new", "settings": settings(training=False)})
        for n, point in enumerate(ko_fight, 1):
            await until(session, lambda: session.waiting_human)
            session.handle({"type": "click", "point": point})
            await until(session, lambda n=n: session.live.game.move_number == n)
        await until(session, lambda: session.waiting_human)
        session.handle({"type": "click", "point": at(1, 1)})
        await until(session, lambda: "superko" in session.status[0])
        assert session.status == ("illegal move B18: superko", "error")
        assert session.live.game.move_number == len(ko_fight)
        nursery.cancel_scope.cancel()


async def test_human_as_white_against_the_ai_waits_for_blacks_first_move(tmp_path):
    async with trio.open_nursery() as nursery:
        session = PlaySession(nursery, tmp_path)
        session.handle({"type": "new", "settings": settings(mode="ha", color="white")})
        await until(session, lambda: session.waiting_human)
        game = session.live.game
        assert game.move_number == 1 and game.moves[0].color == BLACK
        assert (session.live.spec.black, session.live.spec.white) == ("heuristic-ai", "human")
        assert session.snapshot()["turn"] == "White to play: your move"
        nursery.cancel_scope.cancel()


async def test_a_vlm_that_cannot_be_reached_falls_back_marked(tmp_path):
    port = free_port()
    async with trio.open_nursery() as nursery:
        session = PlaySession(nursery, tmp_path)
        session.handle({"type": "new", "settings": settings(mode="hv", port1=port)})
        await until(session, lambda: session.waiting_human)
        session.handle({"type": "click", "point": from_gtp("Q16", 19)})
        await until(session, lambda: session.live.game.move_number == 2 and session.waiting_human)
        assert session.checks[1].color == RED
        assert session.snapshot()["game"]["fallbacks"] == [session.live.game.moves[1].point]
        session.handle({"type": "resign"})
        await until(session, lambda: bool(session.saved))
        moves = read_games(session.saved[0].read_bytes())[0].moves
        assert moves[1].source == "fallback:connection" and moves[0].source is None
        assert session.outcome.result == "W+R"
        nursery.cancel_scope.cancel()


async def test_training_mode_that_cannot_save_says_so_and_plays_on(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    async with trio.open_nursery() as nursery:
        session = PlaySession(nursery, blocked / "recordings")
        session.handle({"type": "new", "settings": settings()})
        await until(session, lambda: session.waiting_human)
        session.handle({"type": "resign"})
        await until(session, lambda: session.status[0].startswith("training mode"))
        assert session.status == (f"training mode: cannot save in {blocked / 'recordings'}: "
                                   "Not a directory", "error")
        session.handle({"type": "new", "settings": settings()})
        await until(session, lambda: session.outcome is None and session.waiting_human)
        nursery.cancel_scope.cancel()


class Silent:
    """A GO19 engine that never answers (a model stuck on a request)."""

    name = "silent"

    async def answer(self, game, number=0, picture=None) -> Answer:
        await trio.sleep_forever()

    async def aclose(self) -> None:
        return None


async def vlm_asked(nursery: trio.Nursery, tmp_path, timeout: float
                    ) -> tuple[PlaySession, int]:
    """A human-vs-VLM game whose server never answers, once the human has played move 1
    and the VLM seat is asked (the session, and the server's port)."""
    port = await nursery.start(partial(serve_go19, Silent(), "127.0.0.1", 0))
    session = PlaySession(nursery, tmp_path)
    session.handle({"type": "new", "settings": settings(mode="hv", port1=port, timeout=timeout)})
    await until(session, lambda: session.waiting_human)
    session.handle({"type": "click", "point": from_gtp("Q16", 19)})
    await until(session, lambda: session.snapshot()["can_cancel"])
    return session, port


async def test_cancel_vlm_response_lets_the_local_ai_play_marked(tmp_path):
    async with trio.open_nursery() as nursery:
        session, port = await vlm_asked(nursery, tmp_path, timeout=600)
        assert session.snapshot()["turn"] == f"vlm-127.0.0.1:{port} is thinking…"
        session.handle({"type": "cancel"})
        await until(session, lambda: session.live.game.move_number == 2 and session.waiting_human)
        assert session.marks == {1: "cancelled"}
        assert session.status == (f"vlm-127.0.0.1:{port}'s response cancelled — the local AI "
                                   "played move 2", "info")
        session.handle({"type": "resign"})
        await until(session, lambda: bool(session.saved))
        assert read_games(session.saved[0].read_bytes())[0].moves[1].source == "fallback:cancelled"
        nursery.cancel_scope.cancel()


async def test_the_vlm_seat_has_the_pages_timeout_and_the_human_no_clock(
        tmp_path, loopback_clock):
    """One clock, the referee's: the silent server's move falls back at the page's timeout
    to the tick; the human then thinks for an hour of virtual time and plays on, no
    fallback."""
    async with trio.open_nursery() as nursery:
        session, _ = await vlm_asked(nursery, tmp_path, timeout=7)
        asked = trio.current_time()
        await until(session, lambda: session.live.game.move_number == 2 and session.waiting_human)
        assert session.marks == {1: "timeout"}
        assert trio.current_time() - asked == pytest.approx(7, abs=0.2)
        await trio.sleep(3600)
        assert session.waiting_human and session.marks == {1: "timeout"}
        # An empty point: the local AI's move 2 is seeded by the clock, D4 may be taken.
        board = session.live.game.board
        empty = next(p for p in map(from_gtp, ("D4", "C3", "K10"), [19] * 3) if board[p] == 0)
        session.handle({"type": "click", "point": empty})
        await until(session, lambda: session.live.game.move_number == 3)
        assert session.marks == {1: "timeout"}
        nursery.cancel_scope.cancel()


async def test_vlm_pictures_have_the_settings_size_and_the_record_says_so(tmp_path):
    async with trio.open_nursery() as nursery:
        port = await nursery.start(partial(serve_go19, HeuristicPlayer("engine", seed=3),
                                           "127.0.0.1", 0))
        session = PlaySession(nursery, tmp_path)
        session.handle({"type": "new", "settings": settings(mode="hv", port1=port,
                                                            image_px=200)})
        await until(session, lambda: session.waiting_human)
        session.handle({"type": "click", "point": from_gtp("Q16", 19)})
        await until(session, lambda: session.live.game.move_number == 2 and session.waiting_human)
        assert session.vlm_png is not None
        assert decode_png_size(session.vlm_png) == (200, 200)
        session.handle({"type": "resign"})
        await until(session, lambda: bool(session.saved))
        text = session.saved[0].read_text()
        assert '"render":{"image_px":200,"mark_last":true}' in text
        nursery.cancel_scope.cancel()


def decode_png_size(png: bytes) -> tuple[int, int]:
    """Width and height from the PNG's IHDR chunk."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def test_a_picture_size_the_renderer_cannot_draw_is_refused(tmp_path):
    from orchestrator.web.settings import PlaySettings, settings_error

    with pytest.raises(ValidationError) as caught:
        PlaySettings.model_validate(settings(image_px=40))
    assert settings_error(caught.value).startswith("bad setting image_px: ")


class Counting:
    """The heuristic AI over GO19, counting the requests it answered."""

    def __init__(self) -> None:
        self.inner = HeuristicPlayer("engine", seed=9)
        self.answered = 0

    async def answer(self, game, number=0, picture=None) -> Answer:
        self.answered += 1
        return await self.inner.answer(game, number, picture)

    async def aclose(self) -> None:
        return None


async def test_vlm_vs_vlm_on_two_servers_asks_each_for_its_color(tmp_path):
    first, second = Counting(), Counting()
    async with trio.open_nursery() as nursery:
        port1 = await nursery.start(partial(serve_go19, first, "127.0.0.1", 0))
        port2 = await nursery.start(partial(serve_go19, second, "127.0.0.1", 0))
        session = PlaySession(nursery, tmp_path)
        session.handle({"type": "new", "settings": settings(
            mode="vv", port1=port1, host2="127.0.0.1", port2=port2, training=False)})
        await until(session, lambda: session.live is not None
                    and session.live.game.move_number >= 10)
        assert (session.live.spec.black, session.live.spec.white) == (
            f"vlm-127.0.0.1:{port1}", f"vlm-127.0.0.1:{port2}")
        assert session.marks == {}
        assert first.answered >= 5 and second.answered >= 5
        assert abs(first.answered - second.answered) <= 1
        nursery.cancel_scope.cancel()


@pytest.fixture
def loopback_clock() -> trio.testing.MockClock:
    """Virtual time that jumps after 5 ms of real idleness: a refused loopback connect
    is over long before that."""
    return trio.testing.MockClock(autojump_threshold=0.005)


async def test_reconnect_countdown_backs_off_and_gives_up_after_six(loopback_clock):
    clock_start = trio.current_time()
    labels: list[tuple[str, str]] = []
    check: ServerCheck

    def changed() -> None:
        labels.append((check.label, check.color))

    check = ServerCheck(changed, lambda: None)
    assert (check.label, check.color) == ("● unchecked", GREY)
    port = free_port()
    async with trio.open_nursery() as nursery:
        check.check(nursery, "127.0.0.1", port, 2.0, auto=True)
    waits: dict[int, list[str]] = {}
    for text, _ in labels:
        if text.startswith("● reconnect wait #"):
            waits.setdefault(int(text.split("#")[1].split()[0]), []).append(text)
    assert sorted(waits) == [1, 2, 3, 4, 5]  # the 6th failure gives up instead of waiting
    for n, delay in zip(range(1, 6), (1.5, 3.0, 4.5, 6.0, 7.5), strict=True):
        assert waits[n][0] == f"● reconnect wait #{n} — {delay:.1f} s (127.0.0.1:{port})"
        assert len(waits[n]) == math.ceil(delay / 0.25)  # the label counts down every 0.25 s
    assert all(color == AMBER for text, color in labels if "reconnect wait" in text)
    assert labels[-1][1] == RED and "gave up after 6 failures" in labels[-1][0]
    assert check.failures == 6
    assert trio.current_time() - clock_start >= 1.5 + 3 + 4.5 + 6 + 7.5


async def test_the_watch_page_counts_the_referees_fallback_events():

    class Broken:
        name = "broken"

        async def answer(self, game: Game, number: int = 0, picture=None) -> Answer:
            return Answer(None, RefusedMove("broken: no"))

        async def aclose(self) -> None:
            return None

    spec = GameSpec(slot=0, black="broken", white="ai")
    state = RunState(run_id="r", target=1, players=["ai", "broken"])
    hub = WatchHub(SimpleNamespace(state=state))
    live = LiveGame(number=7, spec=spec, game=Game())
    state.live[7] = live
    seen_live = []

    def on_event(event) -> None:
        state.emit(event)
        seen_live.append(hub.live_view(7)["fallbacks"])

    await play_game(spec, 7, {"broken": Broken(), "ai": HeuristicPlayer("ai", seed=1)},
                    RefereeSettings(move_cap=6), live=live, on_event=on_event)
    assert hub.fallbacks == {7: 3}  # moves 1, 3 and 5: Black's
    # After each event: a fallback, its move, White's move; three times.
    assert seen_live == [1, 1, 1, 2, 2, 2, 3, 3, 3]


async def test_a_training_game_whose_vlm_is_down_is_void_and_kept_apart(tmp_path):
    """collect's void_after rule (issue 21): a side with more fallbacks than that voids the
    game, and a void training game is not saved with the finished ones."""
    from orchestrator.collect.matchup import Fallback

    void_after = Fallback().void_after
    async with trio.open_nursery() as nursery:
        session = PlaySession(nursery, tmp_path)
        session.handle({"type": "new", "settings": settings(mode="hv", port1=free_port())})
        far_apart = iter(range(0, 361, 2))
        for n in range(void_after + 5):  # the human is Black: its turn after 2n moves
            await until(session, lambda n=n: session.outcome is not None or (
                session.waiting_human and session.live.game.move_number == 2 * n))
            if session.outcome is not None:
                break
            board = session.live.game.board
            session.handle({"type": "click",
                            "point": next(p for p in far_apart if board[p] == 0)})
        await until(session, lambda: session.outcome is not None and bool(session.saved))
        assert session.outcome.void and session.outcome.fallbacks[
            session.live.spec.white]["connection"] == void_after + 1
        assert "void" in session.snapshot()["turn"]
        assert not list(tmp_path.glob("*.sgf"))
        (kept,) = session.saved
        assert kept.parent == tmp_path / "void"
        assert read_games(kept.read_bytes())[0].result == "Void"
        nursery.cancel_scope.cancel()


async def test_auto_restart_stops_after_collects_streak_of_void_games(tmp_path, loopback_clock):
    """Issue 30: VLM vs VLM against a host that cannot be reached, training mode,
    auto-restart and stop after 2 played a void game every ~7 s for ever (the void games
    never count towards the 2). Collect's rule now stops it: 10 void games in a row."""
    from orchestrator.collect.collector import MAX_VOID_STREAK

    port = free_port()
    async with trio.open_nursery() as nursery:
        session = PlaySession(nursery, tmp_path)
        session.handle({"type": "new", "settings": settings(
            mode="vv", port1=port, auto_restart=True, stop_after=2, training=False)})
        # Until it stops, or plays a game past the streak (virtual seconds: a save runs in
        # a thread, which virtual time would jump past to the deadline: no training mode).
        with trio.fail_after(3600):
            while ("auto-restart stopped" not in session.status[0]
                   and session.number <= MAX_VOID_STREAK + 1):
                await session.pulse.wait(session.pulse.version)
        text, level = session.status
        assert "auto-restart stopped" in text, f"game {session.number} started: no stop"
        with trio.fail_after(3600):
            await session._games_done.wait()  # and no other game starts
        assert level == "error"
        assert text.startswith(f"auto-restart stopped: {MAX_VOID_STREAK} void games in a row "
                               f"(fallbacks vlm-127.0.0.1:{port}: connection ")
        assert (session.void, session.finished, session.number) == (MAX_VOID_STREAK, 0,
                                                                    MAX_VOID_STREAK)
        assert session.snapshot()["status"]["text"] == text  # what every page shows
        nursery.cancel_scope.cancel()
