"""Ctrl-C in the middle of a run. The first one (or SIGTERM) stops starting games and
lets the games in flight finish and be recorded; a second one drops them. `--resume`
goes on after either, and the report is written in both cases.

Real SIGINT to a real `go19 collect` process, playing against a GO19 server in the test
whose answers wait behind a gate: the signal is sent once every game in flight is held
there, so which games were in flight is known, not guessed from elapsed time."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from orchestrator.collect.run import CollectOptions, collect
from orchestrator.events import Event, Interrupted
from orchestrator.players.base import Answer
from orchestrator.players.random_player import RandomPlayer
from orchestrator.rules.game import Game
from orchestrator.serve import serve_go19
from orchestrator.words import plural
from tests.conftest import REPO
from tests.polling import until

from .harness import check_recordings, journal, two_go19_players

ENV = dict(os.environ, PYTHONPATH=str(REPO))
GATED_CONCURRENCY = 3

GATED = two_go19_players('replicas = ["127.0.0.1:{port}"]', slots=8, run='name = "int"',
                         game="size = 9\nmove_cap = 4\nmove_timeout_s = 600\n"
                         "concurrency = {concurrency}")


class GatedEngine:
    """Random moves; after ``free`` answers, every request waits until ``gate`` opens."""

    def __init__(self, free: int) -> None:
        self.inner = RandomPlayer("engine", seed=1)
        self.free = free
        self.gate = trio.Event()
        self.held = 0

    async def answer(self, game: Game, number: int = 0, picture: bytes | None = None) -> Answer:
        if self.free > 0:
            self.free -= 1
        elif not self.gate.is_set():
            self.held += 1
            await self.gate.wait()
            self.held -= 1
        return await self.inner.answer(game, number, picture)

    async def aclose(self) -> None:
        await self.inner.aclose()


class Output:
    """The lines a process prints, read as they come."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ended = trio.Event()
        self._buffer = b""

    async def read(self, stream: trio.abc.ReceiveStream) -> None:
        while data := await stream.receive_some(65536):
            self._buffer += data
            *done, self._buffer = self._buffer.split(b"\n")
            self.lines += [line.decode() for line in done]
        self.ended.set()

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def collect_cmd(matchup: Path, tmp_path: Path, games: int) -> list[str]:
    return [sys.executable, "-m", "orchestrator.cli", "collect", "--matchup", str(matchup),
            "--games", str(games), "--recordings", str(tmp_path / "rec"),
            "--reports", str(tmp_path / "reports"), "--no-dashboard"]


def started(output: Output) -> list[int]:
    return [int(m[1]) for line in output.lines if (m := re.search(r"game (\d+) started", line))]


def finished(output: Output) -> list[int]:
    return [int(m[1]) for line in output.lines
            if (m := re.search(r"game (\d+): \w+ \(B\) vs", line))]


def in_flight(output: Output) -> list[int]:
    done = set(finished(output))
    return [n for n in started(output) if n not in done]


async def interrupted_run(tmp_path: Path, engine: GatedEngine, games: int, signals: int,
                          first: signal.Signals = signal.SIGINT):
    """Start collect, wait until every game in flight is held at the gate, send
    ``signals`` signals (``first``, then SIGINT once the first was heard), then open the gate and
    let collect end; then --resume to the end. Returns the first run's exit status, its
output, the games in flight at the signal, and its journal."""
    output = Output()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(lambda task_status: serve_go19(
            engine, "127.0.0.1", 0, slots=64, allowed_sizes=(9,), task_status=task_status))
        matchup = tmp_path / "int.toml"
        matchup.write_text(GATED.format(port=port, concurrency=GATED_CONCURRENCY))
        proc = await trio.lowlevel.open_process(
            collect_cmd(matchup, tmp_path, games), cwd=REPO, env=ENV,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        nursery.start_soon(output.read, proc.stdout)
        await until(lambda: engine.held == GATED_CONCURRENCY, "every slot held by the server")
        # Everything is held now, so collect has nothing more to say until the signal.
        await until(lambda: len(in_flight(output)) == GATED_CONCURRENCY,
                    "every held game in flight in the output")
        held = in_flight(output)
        proc.send_signal(first)
        finishing = f"interrupted: finishing {GATED_CONCURRENCY} games — Ctrl-C again to drop them"
        await until(lambda: any(line.endswith(finishing) for line in output.lines),
                    f"a line ending {finishing!r}")
        if signals == 2:
            proc.send_signal(signal.SIGINT)
            await until(lambda: proc.poll() is not None, "collect's exit")
        engine.gate.set()
        with trio.fail_after(120):
            await proc.wait()
            await output.ended.wait()
        (run_dir,) = (tmp_path / "rec").glob("int-*")
        first_run = journal(run_dir)
        # The report is written after either kind of interrupt.
        assert (tmp_path / "reports" / run_dir.name / "report.md").is_file(), output.text
        # --resume goes on, against the same server, to the games asked for.
        resumed = await trio.run_process(
            [*collect_cmd(matchup, tmp_path, games), "--resume"], cwd=REPO, env=ENV,
            capture_stdout=True, stderr=subprocess.STDOUT, check=False)
        nursery.cancel_scope.cancel()
    assert resumed.returncode == 0, resumed.stdout.decode()
    check_recordings(run_dir, games)
    return proc.returncode, output, held, first_run


@pytest.mark.parametrize("first", [signal.SIGINT, signal.SIGTERM])
async def test_first_ctrl_c_finishes_the_games_in_flight(
    tmp_path: Path, first: signal.Signals
) -> None:
    engine = GatedEngine(free=0)  # every game is held on its first move
    status, output, held, records = await interrupted_run(tmp_path, engine, 5, signals=1,
                                                          first=first)
    assert status == 130, output.text
    assert held == [1, 2, 3]
    assert started(output) == held  # nothing started after the signal
    # The three games held at the signal were played out and recorded.
    assert sorted(r["game"] for r in records) == held and not any(r["void"] for r in records)
    assert "interrupted: 3 game(s) in flight were finished and recorded. Continue with " \
        "--resume." in output.lines


async def test_second_ctrl_c_drops_the_games_in_flight(tmp_path: Path) -> None:
    # Twelve free answers (a game is at most 4 moves): at least one game finishes before
    # the gate holds three others, and at most 6 (so 20 are never all in flight or done).
    engine = GatedEngine(free=12)
    status, output, held, records = await interrupted_run(tmp_path, engine, 20, signals=2)
    assert status == 130, output.text
    assert "interrupted: 3 game(s) in flight were dropped (not recorded); finished games " \
        "are safe. Continue with --resume." in output.lines
    before = finished(output)
    assert before and set(before).isdisjoint(held)
    assert started(output) == sorted(before + held)  # nothing started after the signals
    # Recorded: exactly the games that finished before the signals.
    assert sorted(r["game"] for r in records) == sorted(before)


CONCURRENCY = 500
EMBEDDED = two_go19_players('embedded = { engine = "random", seed = 1 }',
                            'embedded = { engine = "random", seed = 2 }', slots=512,
                            game=f"size = 9\nmove_cap = 4\nconcurrency = {CONCURRENCY}")


@pytest.mark.slow
def test_ctrl_c_twice_in_a_busy_run_accounts_for_every_game(tmp_path: Path) -> None:
    """500 short games at once finish in waves, so Ctrl-C often lands while the scheduler
    has just been woken to refill the free slots: it used to start hundreds of games that
    were cancelled at once (930 "in flight" out of 500). The signals are sent once a
    seeded number of games is recorded; every game started is then either recorded or
    counted as dropped, and none starts after the first Ctrl-C."""
    rng = random.Random(23)
    matchup = tmp_path / "m.toml"
    matchup.write_text(EMBEDDED)
    for i in range(8):
        wanted = rng.randint(1, 600)
        seen: dict[str, int] = {}

        def log(event: Event, seen=seen) -> None:
            if isinstance(event, Interrupted):
                seen["in_flight"] = event.in_flight  # what the collector had in flight then

        async def ctrl_c_twice(collector, wanted=wanted, seen=seen) -> None:
            while collector.state.done < wanted:
                await trio.sleep(0.005)
            os.kill(os.getpid(), signal.SIGINT)
            while not collector.draining:
                await trio.sleep(0)
            seen["started"] = collector.next_number - 1
            os.kill(os.getpid(), signal.SIGINT)

        options = CollectOptions(matchup, games=10**6, recordings=tmp_path / f"rec{i}",
                                 dashboard=False)
        summary = trio.run(collect, options, log, ctrl_c_twice)
        assert summary.interrupted
        assert summary.dropped_in_flight + summary.finished_after_interrupt == seen["in_flight"]
        assert 0 < seen["in_flight"] <= CONCURRENCY
        records = journal(summary.run_dir)
        assert len(records) == summary.state.done >= wanted
        assert max(r["game"] for r in records) <= seen["started"]
        assert len(records) + summary.dropped_in_flight == seen["started"]


# -- which run --resume continues (issue 21, item 4) ----------------------------------


async def start_held(tmp_path: Path, matchup: Path, engine: GatedEngine, games: int,
                     nursery: trio.Nursery) -> tuple[trio.Process, Output]:
    """A collect process whose games are all held at the gate (closed anew here)."""
    engine.gate = trio.Event()
    output = Output()
    proc = await trio.lowlevel.open_process(
        collect_cmd(matchup, tmp_path, games), cwd=REPO, env=ENV,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    nursery.start_soon(output.read, proc.stdout)
    await until(lambda: engine.held == GATED_CONCURRENCY
                and len(in_flight(output)) == GATED_CONCURRENCY,
                "every slot held and every held game in flight")
    return proc, output


async def ctrl_c_twice(proc: trio.Process, output: Output, engine: GatedEngine) -> None:
    proc.send_signal(signal.SIGINT)
    await until(lambda: any("Ctrl-C again to drop them" in line for line in output.lines),
                "the 'Ctrl-C again' line")
    proc.send_signal(signal.SIGINT)
    with trio.fail_after(120):
        await proc.wait()
        await output.ended.wait()
    engine.gate.set()
    await until(lambda: engine.held == 0, "no slot held")


def run_dirs(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "rec").glob("int-*"))


async def test_an_interrupted_run_with_no_game_leaves_no_folder_and_resume_skips_empty_ones(
    tmp_path: Path,
) -> None:
    """Two Ctrl-Cs early left an empty run folder, and `--resume` continued it ("0 of 20
    games already done"), leaving the run with games unfinished."""
    engine = GatedEngine(free=12)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(lambda task_status: serve_go19(
            engine, "127.0.0.1", 0, slots=64, allowed_sizes=(9,), task_status=task_status))
        matchup = tmp_path / "int.toml"
        matchup.write_text(GATED.format(port=port, concurrency=GATED_CONCURRENCY))
        # A run with games: some finish before the gate holds the next three.
        proc, output = await start_held(tmp_path, matchup, engine, 20, nursery)
        await ctrl_c_twice(proc, output, engine)
        (with_games,) = run_dirs(tmp_path)
        recorded = len(journal(with_games))
        assert 0 < recorded < 20
        # A newer run interrupted twice before any game ended: nothing is left of it.
        proc, output = await start_held(tmp_path, matchup, engine, 20, nursery)
        await ctrl_c_twice(proc, output, engine)
        assert proc.returncode == 130
        assert run_dirs(tmp_path) == [with_games], output.text
        assert any(line.startswith("interrupted: 3 game(s) in flight dropped and no game was "
                                   "recorded: removed ") for line in output.lines), output.text
        # A newer one killed before any game ended (no chance to clean up): left empty.
        proc, output = await start_held(tmp_path, matchup, engine, 20, nursery)
        proc.kill()
        await proc.wait()
        engine.gate.set()
        (empty,) = set(run_dirs(tmp_path)) - {with_games}
        # --resume skips the empty one, says which run it continues, and finishes it.
        resumed = await trio.run_process(
            [*collect_cmd(matchup, tmp_path, 20), "--resume"], cwd=REPO, env=ENV,
            capture_stdout=True, stderr=subprocess.STDOUT, check=False)
        nursery.cancel_scope.cancel()
    text = resumed.stdout.decode()
    assert resumed.returncode == 0, text
    assert f"resume: continuing {with_games} ({plural(recorded, 'game')} recorded)" in text
    assert "skipped 1 newer run folder with no recorded game" in text
    check_recordings(with_games, 20)
    assert not list(empty.glob("*.sgf"))
