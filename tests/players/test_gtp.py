"""GTP engines as players: real GNU Go, plus small Python engines that record
what they are told or misbehave on purpose (real child processes, real pipes)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import trio

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS, from_gtp
from orchestrator.players.base import RESIGN, EngineDied, ProtocolViolation, RefusedMove
from orchestrator.players.gtp import GtpPlayer
from orchestrator.players.heuristic import HeuristicChooser
from orchestrator.rules import Game
from tests.conftest import GNUGO, requires_gnugo

# A GTP engine in a few lines: logs its pid and every command (without its id) to
# stderr, answers `genmove` with a pass and everything else with an empty success,
# echoing the command's id. Modes: "record" (quits on `quit`), "stubborn" (ignores
# `quit`), "garbage" (answers every command with a vertex off any board), "chatter"
# (answers with no GTP at all), "anonymous" (replies without the command's id).
FAKE_ENGINE = r"""
import os, sys
mode = sys.argv[1]
sys.stderr.write(f"pid {os.getpid()}\n")
sys.stderr.flush()
while True:
    line = sys.stdin.readline()
    if not line:
        break
    ident, _, command = line.strip().partition(" ")
    if not ident.isdigit():
        ident, command = "", line.strip()
    sys.stderr.write(command + "\n")
    sys.stderr.flush()
    if mode == "anonymous":
        ident = ""
    if mode == "garbage":
        reply = f"={ident} ZZ99"
    elif mode == "chatter":
        reply = "hello, I am not an engine"
    elif command.startswith("genmove"):
        reply = f"={ident} pass"
    else:
        reply = f"={ident}"
    sys.stdout.write(reply + "\n\n")
    sys.stdout.flush()
    if command == "quit" and mode != "stubborn":
        break
"""


def fake_engine(mode: str, log: Path | None = None) -> GtpPlayer:
    return GtpPlayer(f"fake-{mode}", [sys.executable, "-c", FAKE_ENGINE, mode], log)


def gnugo(level: int = 0) -> GtpPlayer:
    return GtpPlayer("gnugo", f"{GNUGO} --mode gtp --level {level} --seed 1")


def commands_in(log: Path) -> list[str]:
    """What the fake engine was told, without its pid line."""
    return [line for line in log.read_text().splitlines() if not line.startswith("pid ")]


def play_heuristic(game: Game, ai: HeuristicChooser, plies: int) -> None:
    for _ in range(plies):
        game.play(ai.choose(game.board, game.to_play))


# -- what is sent, checked on the recording engine -----------------------------


async def test_sends_setup_once_then_only_new_moves(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    engine = fake_engine("record", log)
    game = Game(9, komi=6.5)
    game.play(from_gtp("E5", 9))
    try:
        assert await engine.genmove(game) == PASS
        game.play(PASS)  # the engine's own answer, as the referee applies it
        game.play(from_gtp("C3", 9))
        assert await engine.genmove(game) == PASS
    finally:
        await engine.aclose()
    assert commands_in(log) == [
        "boardsize 9", "komi 6.5", "clear_board", "play black E5", "genmove white",
        "play black C3", "genmove white",
        "quit",
    ]


async def test_setup_stones_are_replayed_before_the_moves(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    engine = fake_engine("record", log)
    game = Game(9, komi=0.5)
    game.place_handicap([from_gtp("C3", 9), from_gtp("G7", 9)])
    game.play(from_gtp("E5", 9))
    try:
        await engine.genmove(game)
    finally:
        await engine.aclose()
    assert commands_in(log) == [
        "boardsize 9", "komi 0.5", "clear_board", "play black C3", "play black G7",
        "play white E5", "genmove black", "quit",
    ]


async def test_another_game_or_a_replaced_answer_means_a_full_replay(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    engine = fake_engine("record", log)
    first = Game(9)
    first.play(from_gtp("E5", 9))
    second = Game(13)
    try:
        await engine.genmove(first)  # white: the engine answers pass
        # The referee did not take the pass (say it was a fallback): White played D4.
        first.play(from_gtp("D4", 9), WHITE)
        await engine.genmove(first)
        await engine.genmove(second)
    finally:
        await engine.aclose()
    setup9 = ["boardsize 9", "komi 7.5", "clear_board"]
    assert commands_in(log) == [
        *setup9, "play black E5", "genmove white",
        *setup9, "play black E5", "play white D4", "genmove black",
        "boardsize 13", "komi 7.5", "clear_board", "genmove black",
        "quit",
    ]


async def test_engine_stderr_goes_to_its_log_and_never_to_ours(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    for log in (tmp_path / "engine.log", None):
        engine = fake_engine("record", log)
        try:
            await engine.genmove(Game(9))
        finally:
            await engine.aclose()
    out, err = capfd.readouterr()
    assert "genmove" not in out + err and "pid" not in out + err
    assert "genmove black" in commands_in(tmp_path / "engine.log")


async def test_aclose_kills_an_engine_that_ignores_quit(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    engine = fake_engine("stubborn", log)
    await engine.genmove(Game(9))
    await engine.aclose()
    assert commands_in(log)[-1] == "quit"
    pid = int(log.read_text().splitlines()[0].split()[1])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


# -- faults ----------------------------------------------------------------------


async def test_an_engine_that_exits_raises_engine_died() -> None:
    engine = GtpPlayer("dies", [sys.executable, "-c", "import sys; sys.exit(3)"])
    with pytest.raises(EngineDied, match=r"'dies' .* exited with status 3 while answering"):
        await engine.genmove(Game(9))
    await engine.aclose()


async def test_an_engine_that_cannot_start_raises_engine_died(tmp_path: Path) -> None:
    engine = GtpPlayer("ghost", [str(tmp_path / "no-such-engine")])
    with pytest.raises(EngineDied, match="cannot start .*no-such-engine"):
        await engine.genmove(Game(9))


async def test_a_vertex_off_the_board_is_a_protocol_violation() -> None:
    engine = fake_engine("garbage")
    try:
        with pytest.raises(ProtocolViolation, match="'ZZ99' to 'genmove black'"):
            await engine.genmove(Game(9))
    finally:
        await engine.aclose()


def pids_in(log: Path) -> list[int]:
    return [int(line.split()[1]) for line in log.read_text().splitlines()
            if line.startswith("pid ")]


async def test_after_an_answer_that_is_not_a_move_the_engine_is_started_afresh(
    tmp_path: Path,
) -> None:
    """Its board, and what it may still send, are unknown: the old process must go (it
    was kept, and with it a stray reply that every later command read one behind)."""
    log = tmp_path / "engine.log"
    engine = fake_engine("garbage", log)
    try:
        for _ in range(2):
            with pytest.raises(ProtocolViolation, match="'ZZ99' to 'genmove black'"):
                await engine.genmove(Game(9))
    finally:
        await engine.aclose()
    first, second = pids_in(log)
    assert first != second
    with pytest.raises(ProcessLookupError):
        os.kill(first, 0)


async def test_a_reply_without_the_command_id_is_never_taken_as_its_answer(
    tmp_path: Path,
) -> None:
    log = tmp_path / "engine.log"
    engine = fake_engine("anonymous", log)
    try:
        with pytest.raises(ProtocolViolation, match="to 1 'boardsize 9': a reply without an id"):
            await engine.genmove(Game(9))
        with pytest.raises(ProtocolViolation):
            await engine.genmove(Game(9))
    finally:
        await engine.aclose()
    assert len(set(pids_in(log))) == 2  # out of step: a fresh engine for the next request


async def test_a_reply_that_is_not_gtp_is_a_protocol_violation() -> None:
    engine = fake_engine("chatter")
    try:
        with pytest.raises(ProtocolViolation, match="not a GTP reply"):
            await engine.genmove(Game(9))
    finally:
        await engine.aclose()


# -- GNU Go ----------------------------------------------------------------------


@requires_gnugo
@pytest.mark.parametrize("engine_color", [BLACK, WHITE])
async def test_a_game_against_gnugo_runs_to_the_end(engine_color: int) -> None:
    engine = gnugo()
    ai = HeuristicChooser(seed=engine_color)
    game = Game(9)
    resigned = False
    try:
        while not game.over_by_passes and game.move_number < 722:
            if game.to_play == engine_color:
                move = await engine.genmove(game)
                if move == RESIGN:
                    resigned = True
                    break
            else:
                move = ai.choose(game.board, game.to_play)
            game.play(move)  # raises IllegalMove if our referee disagrees
    finally:
        await engine.aclose()
    assert resigned or game.over_by_passes
    engine_stones = [m for m in game.moves if m.color == engine_color and m.point != PASS]
    assert len(engine_stones) >= 10


@requires_gnugo
async def test_incremental_updates_match_a_fresh_engine_given_the_whole_game() -> None:
    engine = gnugo()
    ai = HeuristicChooser(seed=5)
    game = Game(9)
    game.place_handicap([from_gtp("C3", 9), from_gtp("G7", 9)])
    checked = 0
    try:
        for _ in range(3):
            # A few moves each side, the engine answering for White as it goes.
            for _ in range(4):
                game.play(await engine.genmove(game))
                game.play(ai.choose(game.board, game.to_play))
            fresh = gnugo()
            try:
                expected = await fresh.genmove(game)
            finally:
                await fresh.aclose()
            assert await engine.genmove(game) == expected
            game.play(expected)
            game.play(ai.choose(game.board, game.to_play))
            checked += 1
    finally:
        await engine.aclose()
    assert checked == 3


@requires_gnugo
async def test_an_engine_error_reply_is_reported_with_its_message() -> None:
    engine = gnugo()
    try:
        # Our board goes to 25x25; GNU Go stops at 19x19.
        with pytest.raises(RefusedMove, match="'boardsize 21'.*unacceptable size"):
            await engine.genmove(Game(21))
        # The exchange was complete, so the engine is still usable.
        assert await engine.genmove(Game(9)) != RESIGN
    finally:
        await engine.aclose()


@requires_gnugo
async def test_after_a_cancelled_genmove_the_next_answer_is_for_the_new_position() -> None:
    """The reply to the cancelled request is still coming; it must not be taken
    as the answer to the next one."""
    game = Game(19)
    ai = HeuristicChooser(seed=11)
    engine = gnugo(level=1)
    try:
        game.play(await engine.genmove(game))  # the engine is up and in step
        play_heuristic(game, ai, 59)
        # A 19x19 middle game takes GNU Go far longer than this to answer.
        with trio.move_on_after(0.05) as scope:
            await engine.genmove(game)
        if not scope.cancelled_caught:
            pytest.skip("GNU Go answered before the deadline; nothing was cancelled")
        play_heuristic(game, ai, 2)  # the referee's fallback, then the opponent
        answer = await engine.genmove(game)
    finally:
        await engine.aclose()
    fresh = gnugo(level=1)
    try:
        assert answer == await fresh.genmove(game)
    finally:
        await fresh.aclose()
    game.play(answer)
