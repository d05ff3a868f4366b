"""The analysis-engine client against the real KataGo that `make katago` prepares.

KataGo on a CPU evaluates about one position a second, so each test asks for a handful.
Expected points are written out as row * 19 + col from the diagrams, not computed by
go19's coordinate code.
"""

from __future__ import annotations

import os
import signal
from functools import partial

import numpy as np
import pytest
import trio
import trio.testing

from orchestrator.color import BLACK, WHITE
from orchestrator.label.engine import KataGoDied, KataGoQueryError, open_katago
from orchestrator.rules.game import Move
from tests.label.conftest import KATAGO, katago, requires_katago

pytestmark = requires_katago

# Q16, D4, C16 on a 19x19 board: (row, col) = (3, 15), (15, 3), (3, 2).
Q16, D4, C16 = 3 * 19 + 15, 15 * 19 + 3, 3 * 19 + 2


async def test_engine_reports_version_and_model(tmp_path):
    async with katago(tmp_path) as engine:
        assert engine.version == "1.18.1"
        models = await engine.query_models()
    assert [m["internalName"] for m in models] == ["b10c384h6nbttflrs"]
    assert (tmp_path / "katago.log").read_text().count("Started, ready") == 1


async def test_every_turn_of_a_short_game_has_a_policy_over_its_own_board(tmp_path):
    moves = [Move(BLACK, Q16), Move(WHITE, D4), Move(BLACK, C16)]
    async with katago(tmp_path) as engine:
        results = await engine.analyze_game(moves, komi=7.5, max_visits=1)
    assert sorted(results) == [0, 1, 2, 3]
    for turn, response in results.items():
        policy = response.policy
        assert policy is not None and policy.shape == (362,)
        # The -1s are exactly the stones on the board at that turn: turns are matched
        # to their answers, and the policy is indexed like go19's points.
        stones = {m.point for m in moves[:turn]}
        assert set(np.flatnonzero(policy == -1)) == stones
        assert policy[policy >= 0].sum() == pytest.approx(1.0, abs=1e-3)
        assert response.move_infos == ()  # one visit: the position is evaluated, no move
        assert response.best_move == int(np.argmax(policy))
        assert response.best_move not in stones
        assert 0.0 <= response.winrate <= 1.0


def _capturing_race() -> tuple[list[Move], int]:
    """Ten white stones on row 1 (A1-K1, row index 18) and eleven black ones on row 2
    (A2-L2) inside a white wall (A3-L3, M2) share their one liberty L1 = (18, 10): whoever
    moves there captures. Mirrored or transposed, L1 would be L19, J1 (a white stone) or
    T9: only the right orientation finds the capture."""
    white = [18 * 19 + c for c in range(10)] + [16 * 19 + c for c in range(11)] + [17 * 19 + 11]
    black = [17 * 19 + c for c in range(11)]
    stones = [Move(BLACK, p) for p in black] + [Move(WHITE, p) for p in white]
    return stones, 18 * 19 + 10


async def test_capturing_a_large_group_in_atari_is_the_best_move(tmp_path):
    stones, liberty = _capturing_race()
    options = {"initial_stones": stones, "komi": 7.5}
    async with katago(tmp_path) as engine:
        black_raw = (await engine.analyze_game([], max_visits=1, **options))[0]
        white_raw = (await engine.analyze_game([], max_visits=1, initial_player=WHITE,
                                               **options))[0]
        black_searched = (await engine.analyze_game([], max_visits=4, **options))[0]
    assert black_raw.best_move == liberty and white_raw.best_move == liberty
    assert black_raw.policy_of(liberty) > 0.5
    assert black_searched.move_infos[0].move == liberty == black_searched.best_move
    # Values are Black's whoever moves: White to move captures eleven and leads, so
    # Black's lead is negative there and far below Black's lead with Black to move.
    assert white_raw.score_lead < 0 and white_raw.winrate < 0.5
    assert black_raw.score_lead - white_raw.score_lead > 20


async def test_a_rejected_query_fails_alone_and_the_engine_goes_on(tmp_path):
    async with katago(tmp_path) as engine:
        with pytest.raises(KataGoQueryError) as caught:
            await engine.analyze_game([Move(BLACK, Q16), Move(WHITE, Q16)], komi=7.5)
        assert caught.value.field == "moves"
        assert "Illegal move" in caught.value.message
        assert await engine.query_version() == "1.18.1"
        response = await engine.query({
            "moves": [["B", "Q16"]], "rules": "tromp-taylor", "komi": 7.5,
            "boardXSize": 19, "boardYSize": 19, "maxVisits": 1, "includePolicy": True,
            "go19Typo": 1,
        })
    assert response.turn == 1
    assert response.policy_of(Q16) == -1
    assert any("go19Typo" in w for w in response.warnings)


async def in_katago(engine) -> None:
    """Return once KataGo has read every query the other tasks have sent: they have all
    written their query and wait for its answer, and KataGo, which reads its input in
    order, has answered a version query sent after them."""
    await trio.testing.wait_all_tasks_blocked()
    await engine.query_version()


async def test_killing_katago_fails_every_outstanding_query(tmp_path):
    failures: list[BaseException] = []

    async def long_query(engine, point):
        try:
            await engine.analyze_game([Move(BLACK, point)], komi=7.5, max_visits=100_000)
        except KataGoDied as exc:
            failures.append(exc)

    async with katago(tmp_path) as engine:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(long_query, engine, Q16)
            nursery.start_soon(long_query, engine, D4)
            await in_katago(engine)  # both queries read by KataGo, far from answered
            os.kill(engine.pid, signal.SIGKILL)
        assert len(failures) == 2
        assert all("status -9" in str(f) for f in failures)
        with pytest.raises(KataGoDied):
            await engine.query_version()


async def test_a_cancelled_query_stops_its_search(tmp_path):
    async with katago(tmp_path) as engine:
        # Two turns at a million visits each would hold both analysis threads for days.
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(engine.analyze_game, [Move(BLACK, Q16)], komi=7.5,
                                       max_visits=1_000_000))
            await in_katago(engine)
            nursery.cancel_scope.cancel()
        with trio.fail_after(120):  # a hang guard: this answers in seconds once terminated
            results = await engine.analyze_game([Move(BLACK, D4)], analyze_turns=[1],
                                                komi=7.5, max_visits=1)
    assert results[1].policy_of(D4) == -1


async def test_a_katago_that_cannot_start_says_why(tmp_path):
    not_a_model = tmp_path / "model.bin.gz"
    not_a_model.write_bytes(b"not a neural net")
    with pytest.raises(KataGoDied) as caught:
        async with open_katago(KATAGO.binary, not_a_model, KATAGO.config, tmp_path / "k.log"):
            pass
    assert "exited with status" in str(caught.value)
    assert "stderr" in str(caught.value)
