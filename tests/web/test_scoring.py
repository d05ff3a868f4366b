"""The scoring phase of `go19 play` (issue 32): a game with a human that ends by two
passes is scored by the players, over the real session driven by the messages a page
sends; the saved game read back by sgfmill, an independent SGF reader."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import sgfmill.sgf
import trio

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS, from_gtp
from orchestrator.players.heuristic import HeuristicChooser
from orchestrator.recordings import record_from_sgf
from orchestrator.rules import Game
from orchestrator.sgf import read_games
from orchestrator.web.seats import AiSeat
from orchestrator.web.session import PlaySession
from tests.label.conftest import KATAGO, requires_katago
from tests.web.test_session import settings, until

# Black walls off the corner A1-B2 (A3 B3 C3 C2 C1); White's B2 inside it is dead (two
# liberties, no eye, a wall of eight); White's Q16 stands alone in the open. With komi
# 6.5 the stones as they stand are Black 5, White 2 (the corner's A1 A2 B1 reach both):
# W+3.5. With B2 lifted Black has 5 + 4, White 1: B+1.5.
CORNER = ["A3", "B2", "B3", "Q16", "C3", None, "C2", None, "C1", None, None]
WALL = {from_gtp(v, 19) for v in ("A3", "B3", "C3", "C2", "C1")}
B2, A1, Q16 = (from_gtp(v, 19) for v in ("B2", "A1", "Q16"))


async def play_out(session: PlaySession, moves: list[str | None]) -> None:
    """The moves clicked (None: pass), each waited for."""
    for n, vertex in enumerate(moves, 1):
        await until(session, lambda: session.waiting_human)
        if vertex is None:
            session.handle({"type": "pass"})
        else:
            session.handle({"type": "click", "point": from_gtp(vertex, 19)})
        await until(session, lambda n=n: session.live.game.move_number == n)


async def test_the_dead_group_is_proposed_toggled_and_its_count_recorded(tmp_path):
    async with trio.open_nursery() as nursery:
        session = PlaySession(nursery, tmp_path)
        session.handle({"type": "new", "settings": settings(komi=6.5)})
        await play_out(session, CORNER)
        await until(session, lambda: session.scoring is not None)
        view = session.snapshot()
        assert view["game"]["scoring"] and not view["game"]["over"]
        assert view["game"]["count"]["dead"] == [B2]
        assert view["turn"].startswith("Scoring (dead stones proposed by the estimate)")
        assert view["estimate"].startswith("Count B 9 vs W 7.5 (komi 6.5) — B +1.5 | dead "
                                           "0/1 · as the stones stand B 5 vs W 8.5 — W +3.5")
        # Lifted, B2 and the corner's three points are Black's area.
        assert {A1, B2} <= set(view["game"]["count"]["black"])
        assert session.saved == [] and session.finished == 0  # nothing is over yet

        # What the page may send that means nothing now: refused, one line each.
        for message, line in [
            ({"type": "toggle", "point": A1}, "no stone at A1: click a stone to mark its group"),
            ({"type": "toggle", "point": 361}, "bad point 361"),
            ({"type": "toggle", "point": "B2"}, "bad point 'B2'"),
            ({"type": "click", "point": A1}, "play is over: click a stone to mark its group "
                                             "dead or alive, then confirm score"),
            ({"type": "pass"}, "play is over: click a stone to mark its group dead or alive, "
                               "then confirm score")]:
            session.handle(message)
            assert session.status[0] == line, message
            assert session.scoring.dead == {B2} and session.live.game.move_number == 11

        session.handle({"type": "toggle", "point": B2})  # alive after all: the plain count
        assert session.status == ("1 white stone at B2 marked alive", "info")
        assert session.scoring.dead == set()
        assert session.snapshot()["estimate"].startswith("Count B 5 vs W 8.5 (komi 6.5) — "
                                                         "W +3.5")
        session.handle({"type": "toggle", "point": from_gtp("C2", 19)})  # the whole string
        assert session.scoring.dead == WALL
        assert session.status == ("5 black stones at C2 marked dead", "info")
        session.handle({"type": "toggle", "point": from_gtp("A3", 19)})
        session.handle({"type": "toggle", "point": B2})
        assert session.scoring.dead == {B2}

        session.handle({"type": "confirm"})
        await until(session, lambda: bool(session.saved))
        assert session.scoring is None and session.finished == 1
        view = session.snapshot()
        assert view["turn"] == ("Game over: B+1.5 (two-passes, 1 dead stone lifted) — area "
                                "count B 9 vs W 1 + komi 6.5 = 7.5; as the stones stood W+3.5")
        assert view["game"]["over"] and view["game"]["count"]["dead"] == [B2]
        for message, line in [
                ({"type": "confirm"}, "nothing to confirm: a score is confirmed after two "
                                      "passes"),
                ({"type": "toggle", "point": B2}, "no stones to mark: groups are marked "
                                                  "dead after two passes")]:
            session.handle(message)
            assert session.status[0] == line
        nursery.cancel_scope.cancel()

    (path,) = session.saved
    sgf = sgfmill.sgf.Sgf_game.from_bytes(path.read_bytes())
    root = sgf.get_root()
    assert root.get("RE") == "B+1.5"
    # The estimate proposed B2 dead; the players changed the marks and came back to it.
    assert json.loads(root.get("GOXIXADJ")) == {
        "area_result": "W+3.5", "adjudicated_result": "B+1.5", "dead_stones": 1,
        "flipped": True, "proposed_by": "estimate", "players_changed": True}
    moves = [node.get_move() for node in sgf.get_main_sequence()[1:]]
    assert len(moves) == 11 and moves[1] == ("w", (1, 1))  # B2: row 1 from the bottom
    record = record_from_sgf(read_games(path.read_bytes())[0])
    assert (record.result, record.winner, record.score, record.reason) == (
        "B+1.5", "black", 1.5, "two-passes")
    assert record.adjudication is not None and record.adjudication.area_result == "W+3.5"


async def test_a_new_game_during_scoring_drops_the_game_unrecorded(tmp_path):
    async with trio.open_nursery() as nursery:
        session = PlaySession(nursery, tmp_path)
        session.handle({"type": "new", "settings": settings()})
        await play_out(session, ["D4", None, None])
        await until(session, lambda: session.scoring is not None)
        first = session.number
        session.handle({"type": "new"})
        await until(session, lambda: session.number == first + 1 and session.waiting_human)
        assert session.scoring is None and session.outcome is None
        assert session.live.game.move_number == 0
        assert (session.finished, session.saved) == (0, [])
        assert not list(tmp_path.glob("*.sgf"))
        session.handle({"type": "confirm"})  # the old game's confirm: nothing to confirm
        assert session.status[0].startswith("nothing to confirm")
        nursery.cancel_scope.cancel()


def test_the_ai_passes_back_when_only_its_dead_stones_are_left():
    """Black (the human) passed on a finished board where White's C10 is dead inside
    Black's column C: the AI against a human passes too; the plain heuristic AI plays on
    beside its dead stone (the 212 passes of issue 32)."""
    game = Game(19, 6.5)
    column = {c: [from_gtp(f"{c}{r}", 19) for r in range(1, 20)] for c in "ABCDEFGHJKLMNOPQRST"}
    game.setup(black=[p for c in "BDFHJ" for p in column[c]],
               white=[p for c in "KMOQS" for p in column[c]] + [from_gtp("C10", 19)],
               to_play=BLACK)
    game.play(PASS)
    assert game.to_play == WHITE
    host = SimpleNamespace(changed=lambda: None)
    agreeing = trio.run(AiSeat(host, "heuristic-ai", 1, agrees_to_end=True).answer, game)
    assert agreeing.point == PASS
    plain = HeuristicChooser(1, 2).choose(game.board, WHITE)
    assert plain != PASS and plain % 19 == 2  # in column C, around its dead stone
    assert trio.run(AiSeat(host, "heuristic-ai", 1).answer, game).point == plain


@requires_katago
async def test_katagos_proposal_replaces_the_estimates(tmp_path):
    """The CPU KataGo of `make katago`, one visit: it starts at the scoring phase and its
    ownership proposes the dead stones; B2 is dead by it too, Black's wall lives."""
    from orchestrator.web.katago import KataGoOwnership

    async with trio.open_nursery() as nursery:
        katago = KataGoOwnership(nursery, KATAGO.binary, KATAGO.model, KATAGO.config,
                                 tmp_path / "katago.log", visits=1)
        session = PlaySession(nursery, tmp_path, katago=katago)
        session.handle({"type": "new", "settings": settings(komi=6.5, training=False)})
        await play_out(session, CORNER)
        await until(session, lambda: session.scoring is not None)
        assert "KataGo (1 visit) is looking…" in session.snapshot()["turn"]
        with trio.fail_after(300):
            while session.scoring.waiting is not None:
                await session.pulse.wait(session.pulse.version)
        text, level = session.status
        assert level == "info" and text.startswith("KataGo (1 visit) proposes "), text
        assert session.scoring.source == "KataGo (1 visit)"
        assert B2 in session.scoring.dead and not session.scoring.dead & WALL
        assert session.snapshot()["turn"].startswith("Scoring (dead stones proposed by "
                                                     "KataGo (1 visit))")
        session.handle({"type": "confirm"})  # KataGo's proposal as it stands
        await until(session, lambda: session.outcome is not None)
        adjudication = session.outcome.adjudication
        assert adjudication is not None
        assert (adjudication.proposed_by, adjudication.players_changed) == ("katago", False)
        nursery.cancel_scope.cancel()


async def test_ai_only_games_are_scored_as_they_stand(tmp_path):
    """No scoring phase without a human: AI vs VLM (the heuristic AI on both sides, one
    behind a real GO19 server) ends at its two passes with the plain count."""
    from functools import partial

    from orchestrator.players.heuristic import HeuristicPlayer
    from orchestrator.serve import serve_go19
    from orchestrator.web.views import COUNTED

    async with trio.open_nursery() as nursery:
        port = await nursery.start(partial(serve_go19, HeuristicPlayer("engine", seed=4),
                                           "127.0.0.1", 0))
        session = PlaySession(nursery, tmp_path)
        session.handle({"type": "new", "settings": settings(mode="av", port1=port,
                                                            training=False)})
        with trio.fail_after(300):
            while session.outcome is None:
                assert session.scoring is None
                await session.pulse.wait(session.pulse.version)
        assert session.outcome.reason in COUNTED and session.outcome.adjudication is None
        assert session.snapshot()["turn"].startswith(f"Game over: {session.outcome.result} "
                                                     f"({session.outcome.reason}) — area count")
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("broken", ["no binary", "no ownership"])
async def test_a_katago_that_gives_no_ownership_leaves_the_estimates_proposal(tmp_path, broken):
    """A KataGo that cannot start, and the stand-in KataGo of tests/label (a real process
    that answers without ownership): the phase says why once, the estimate's proposal
    stands, and the game is confirmed as ever."""
    from orchestrator.web.katago import KataGoOwnership
    from tests.label.standin import standin

    fake = standin(tmp_path / "katago")
    binary = tmp_path / "missing" if broken == "no binary" else fake.binary
    async with trio.open_nursery() as nursery:
        katago = KataGoOwnership(nursery, binary, fake.model, fake.config,
                                 tmp_path / "katago.log", visits=1)
        session = PlaySession(nursery, tmp_path, katago=katago)
        session.handle({"type": "new", "settings": settings(komi=6.5)})
        await play_out(session, CORNER)
        await until(session, lambda: session.scoring is not None
                    and session.scoring.waiting is None and session.status[0] != "")
        why = (f"KataGo did not start: KataGo binary not found at {binary} (run `make "
               "katago`)" if broken == "no binary" else "KataGo answered without a win rate")
        assert session.status == (f"{why}; the dead stones are the estimate's", "error")
        assert session.scoring.source == "the estimate" and session.scoring.dead == {B2}
        session.handle({"type": "confirm"})
        await until(session, lambda: bool(session.saved))
        assert session.outcome.result == "B+1.5"
        nursery.cancel_scope.cancel()
