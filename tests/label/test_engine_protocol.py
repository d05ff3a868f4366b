"""The client's protocol handling, without KataGo: query building, answer parsing, and a
real subprocess that misbehaves on purpose (answers turns backwards, sends progress
reports, late answers and warnings, garbage, or dies at start)."""

from __future__ import annotations

import json
import stat
import sys
import textwrap

import pytest
import trio
import trio.testing

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS
from orchestrator.label.engine import (
    DEFAULT_TIMEOUT,
    GO19_RULES,
    MAX_LINE_BYTES,
    START_FACTOR,
    KataGoBadAnswer,
    KataGoDied,
    _LineReader,
    game_query,
    open_katago,
    parse_response,
)
from orchestrator.rules.game import Move
from tests.label.standin import standin

Q16, D4 = 3 * 19 + 15, 15 * 19 + 3  # (row, col) from the top-left corner A19


def test_game_query_sends_gtp_vertices_and_every_turn_by_default():
    query = game_query([Move(BLACK, Q16), Move(WHITE, PASS), Move(BLACK, D4)], komi=6.5,
                       initial_stones=[Move(BLACK, 0), Move(WHITE, 18 * 19 + 18)])
    assert query["moves"] == [["B", "Q16"], ["W", "pass"], ["B", "D4"]]
    assert query["initialStones"] == [["B", "A19"], ["W", "T1"]]
    assert query["analyzeTurns"] == [0, 1, 2, 3]
    assert query["rules"] == dict(GO19_RULES) and query["rules"]["suicide"] is False
    assert (query["boardXSize"], query["boardYSize"], query["komi"]) == (19, 19, 6.5)
    assert "initialPlayer" not in query and "id" not in query


def test_game_query_options_and_bad_color():
    query = game_query([], komi=0.5, size=9, initial_player=WHITE, analyze_turns=[0],
                       max_visits=16, include_ownership=True, priority=3, rules="japanese")
    assert query["initialPlayer"] == "W" and query["boardXSize"] == 9
    assert (query["maxVisits"], query["includeOwnership"], query["priority"]) == (16, True, 3)
    assert query["rules"] == "japanese"
    with pytest.raises(ValueError, match="color"):
        game_query([Move(0, Q16)], komi=7.5)


def test_parse_response_turns_vertices_into_points_and_sorts_by_order():
    msg = json.loads(
        '{"id":"go19-4","isDuringSearch":false,"turnNumber":2,'
        '"moveInfos":[{"move":"D4","order":1,"visits":3,"winrate":0.4,"scoreLead":-1.5,'
        '"prior":0.2,"pv":["D4","pass"]},{"move":"Q16","order":0,"visits":7,"winrate":0.6,'
        '"scoreLead":2.5,"prior":0.7,"pv":["Q16","D4"]}],'
        '"rootInfo":{"winrate":0.55,"scoreLead":1.25,"visits":10}}'
    )
    response = parse_response(msg, 19, ["rules: converted"])
    assert [m.move for m in response.move_infos] == [Q16, D4]
    assert response.best_move == Q16
    assert response.move_infos[1].pv == (D4, PASS)
    assert (response.turn, response.winrate, response.score_lead) == (2, 0.55, 1.25)
    assert response.warnings == ("rules: converted",)
    assert response.policy is None
    with pytest.raises(ValueError, match="includePolicy"):
        response.policy_of(Q16)


def test_one_visit_best_move_is_the_policy_top_including_pass():
    policy = [0.0] * 82
    policy[80], policy[81] = 0.3, 0.7  # 9x9: index 81 is the pass
    msg = {"id": "x", "turnNumber": 0, "moveInfos": [], "rootInfo": {}, "policy": policy}
    response = parse_response(msg, 9)
    assert response.best_move == PASS
    assert response.policy_of(PASS) == 0.7 and response.policy_of(80) == 0.3
    policy[80] = 0.9
    assert parse_response({**msg, "policy": policy}, 9).best_move == 80


async def test_line_reader_joins_chunks_and_caps_lines():
    send, receive = trio.testing.memory_stream_one_way_pair()
    reader = _LineReader(receive, max_line=10)
    await send.send_all(b'{"a"')
    await send.send_all(b':1}\n{}\n{"b":')
    assert await reader.next_line() == b'{"a":1}'
    assert await reader.next_line() == b"{}"
    await send.send_all(b"12345678901\n")
    with pytest.raises(KataGoDied, match="longer than 10 bytes"):
        await reader.next_line()
    assert MAX_LINE_BYTES >= 1 << 20


async def test_line_reader_ends_at_eof():
    send, receive = trio.testing.memory_stream_one_way_pair()
    reader = _LineReader(receive, max_line=100)
    await send.send_all(b"{}\n")
    await send.aclose()
    assert await reader.next_line() == b"{}"
    assert await reader.next_line() is None


# A stand-in for `katago analysis`: answers query_version, then answers each analysis
# query's turns in reverse order, after a warning, a progress report and a late answer to
# a query answered already (the version query's id, go19-1); a
# query whose komi is 666 gets a line of garbage; exits at once if argv asks it to.
FAKE = textwrap.dedent('''
    import json, sys
    if any("die.log" in arg for arg in sys.argv):
        sys.stderr.write("fake katago: cannot load model\\n")
        sys.exit(3)
    for line in sys.stdin:
        q = json.loads(line)
        if q.get("action") == "query_version":
            print(json.dumps({**q, "version": "0.0-fake"}), flush=True)
            continue
        if q.get("komi") == 666:
            print("Segmentation fault (not JSON)", flush=True)
            continue
        print(json.dumps({"warning": "fake warning", "field": "rules", "id": q["id"]}))
        print(json.dumps({"id": "go19-1", "turnNumber": 0, "moveInfos": []}))
        size = q["boardXSize"]
        for turn in reversed(q["analyzeTurns"]):
            policy = [0.0] * (size * size + 1)
            policy[turn] = 1.0
            base = {"id": q["id"], "turnNumber": turn, "moveInfos": [],
                    "rootInfo": {"winrate": 0.5, "scoreLead": 0.0, "visits": 1}}
            print(json.dumps({**base, "isDuringSearch": True}))
            print(json.dumps({**base, "isDuringSearch": False, "policy": policy}))
        sys.stdout.flush()
''')


@pytest.fixture
def fake_katago(tmp_path):
    script = tmp_path / "fake-katago"
    script.write_text(f"#!{sys.executable}\n{FAKE}")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    for name in ("model.bin.gz", "analysis.cfg"):
        (tmp_path / name).write_text("")
    return script


def _open(tmp_path, script, log="katago.log"):
    return open_katago(script, tmp_path / "model.bin.gz", tmp_path / "analysis.cfg",
                       tmp_path / log)


async def test_answers_out_of_order_are_matched_to_their_turns(tmp_path, fake_katago):
    async with _open(tmp_path, fake_katago) as engine:
        assert engine.version == "0.0-fake"
        moves = [Move(BLACK, Q16), Move(WHITE, D4)]
        results = await engine.analyze_game(moves, komi=7.5, size=9, analyze_turns=[2, 0, 1])
        streamed = [r.turn async for r in engine.analyze_game_stream(moves, komi=7.5, size=9)]
    assert sorted(results) == [0, 1, 2]
    for turn, response in results.items():
        assert response.turn == turn and response.best_move == turn  # the fake's marker
        assert response.warnings == ("rules: fake warning",)
    assert streamed == [2, 1, 0]  # as they arrived, each once (progress reports skipped)


async def test_garbage_from_the_engine_fails_the_waiting_query_and_later_ones(
    tmp_path, fake_katago
):
    async with _open(tmp_path, fake_katago) as engine:
        with pytest.raises(KataGoDied, match="not JSON"):
            await engine.analyze_game([], komi=666)
        with pytest.raises(KataGoDied, match="not JSON"):
            await engine.query_version()


async def test_an_engine_that_dies_at_start_reports_its_stderr(tmp_path, fake_katago):
    with pytest.raises(KataGoDied, match="status 3.*cannot load model"):
        async with _open(tmp_path, fake_katago, log="die.log"):
            pass


async def test_missing_files_are_named(tmp_path):
    with pytest.raises(KataGoDied, match="KataGo binary not found at .*make katago"):
        async with open_katago(tmp_path / "katago", tmp_path / "m", tmp_path / "c",
                               tmp_path / "log"):
            pass


# -- the stand-in KataGo (tests/label/standin_katago.py): deadlines, stray ids, bad values


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock()  # no autojump: only the tests move time, after a hang


def _standin_open(folder, mode, after=0, value="nan", hangs=None, timeout=DEFAULT_TIMEOUT):
    s = standin(folder / "standin", mode, after, value,
                announce=None if hangs is None else hangs.address)
    return open_katago(s.binary, s.model, s.config, folder / "katago.log", timeout=timeout)


async def test_a_silent_engine_is_stopped_at_its_deadline_scaled_by_visits(
    tmp_path, clock, nursery, make_hangs
):
    hangs = make_hangs()
    await nursery.start(hangs.serve, clock)
    async with _standin_open(tmp_path, "hang", after=1, hangs=hangs, timeout=5) as engine:
        await engine.analyze_game([], komi=7.5, max_visits=3)  # answered: the engine is up
        asked = trio.current_time()
        failed: list[BaseException] = []

        async def ask() -> None:
            try:
                await engine.analyze_game([Move(BLACK, Q16)], komi=7.5, max_visits=3)
            except KataGoDied as exc:
                failed.append(exc)

        nursery.start_soon(ask)
        await hangs.wait(1)  # the stand-in has read the query and will never answer it
        clock.jump(3 * 5 - 0.01)  # 3 visits x 5 s, less a hair
        await trio.testing.wait_all_tasks_blocked()
        assert engine.death is None and not failed
        clock.jump(0.02)
        await engine.wait_dead()
        await trio.testing.wait_all_tasks_blocked()
        assert trio.current_time() - asked == pytest.approx(15, abs=0.02)
        (death,) = failed
        assert str(death).startswith("KataGo answered nothing for 15 s with 1 query waiting")
        with pytest.raises(KataGoDied, match="answered nothing"):
            await engine.query_version()  # and every later query


async def test_an_engine_that_never_answers_its_version_does_not_start(
    tmp_path, clock, nursery, make_hangs
):
    hangs = make_hangs(seconds=START_FACTOR * 5)
    await nursery.start(hangs.serve, clock)
    started = trio.current_time()
    with pytest.raises(KataGoDied, match=f"answered nothing for {START_FACTOR * 5} s"):
        async with _standin_open(tmp_path, "hang-at-start", hangs=hangs, timeout=5):
            pass
    assert hangs.count == 1 and trio.current_time() - started == START_FACTOR * 5


async def test_an_answer_to_an_id_never_sent_stops_the_engine(tmp_path):
    async with _standin_open(tmp_path, "wrong-id", after=1) as engine:
        await engine.analyze_game([], komi=7.5)
        with pytest.raises(KataGoDied, match="query id 'never-sent-go19-3', which was never"):
            await engine.analyze_game([], komi=7.5)


@pytest.mark.parametrize("value,said", [("nan", "winrate is nan"), ("inf", "winrate is inf"),
                                        ("null", "winrate is null, not a number")])
async def test_a_value_that_is_no_finite_number_is_a_bad_answer(tmp_path, value, said):
    async with _standin_open(tmp_path, "bad", after=0, value=value) as engine:
        with pytest.raises(KataGoBadAnswer, match=f"query go19-2 turn 0 is bad: {said}"):
            await engine.analyze_game([Move(BLACK, Q16)], komi=7.5)
        assert engine.death is None  # a bad answer, not a dead engine: it answers on
        assert await engine.query_version() == "0.0-standin"


def test_an_answer_of_the_wrong_shape_or_missing_a_field_is_a_bad_answer():
    msg = {"id": "go19-2", "turnNumber": 0, "moveInfos": [],
           "rootInfo": {"winrate": 0.5, "scoreLead": 0.0}, "policy": [0.5, 0.5]}
    with pytest.raises(KataGoBadAnswer, match=r"policy has shape \(2,\), not \(362,\)"):
        parse_response(msg, 19)
    with pytest.raises(KataGoBadAnswer, match="turn None is bad: missing 'turnNumber'"):
        parse_response({k: v for k, v in msg.items() if k != "turnNumber"}, 1)
    info = {"move": "A1", "order": 0, "visits": 2, "winrate": 0.5, "scoreLead": "x",
            "prior": 0.1}
    with pytest.raises(KataGoBadAnswer, match='moveInfos scoreLead is "x", not a number'):
        parse_response({**msg, "policy": None, "moveInfos": [info]}, 19)
    ownership = [0.0] * 360 + [float("-inf")]
    with pytest.raises(KataGoBadAnswer, match="ownership holds -inf"):
        parse_response({**msg, "policy": None, "ownership": ownership}, 19)
