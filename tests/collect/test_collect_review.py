"""``collect --review`` with the CPU KataGo of `make katago` and real embedded GO19 servers
(`make demo`'s matchup cut to games of a few moves, so that each test asks KataGo about
tens of positions): the quality line in the plain log and the dashboard, labels that `go19
review --labels` reuses, Ctrl-C and resume, a review that falls behind the games, KataGo
failing before and during the run."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import trio
from rich.console import Console

from orchestrator.collect.collector import Collector
from orchestrator.collect.dashboard import Dashboard
from orchestrator.collect.review import LiveReview, ReviewOptions
from orchestrator.collect.run import EXIT_DOWN, CollectOptions, RunSummary, collect
from orchestrator.collect.standings import PlainLog, ReviewLine, words
from orchestrator.collect.state import RunState
from orchestrator.events import (
    Event,
    GameRecorded,
    GameReviewed,
    ReviewEngineDied,
    ReviewFinishing,
    ReviewLagging,
    ReviewQueueFull,
    ReviewStopped,
)
from orchestrator.label.store import LabelSet, read_manifest
from tests.conftest import REPO
from tests.label.conftest import KATAGO, requires_katago

pytestmark = requires_katago

MOVE_CAP = 3  # 4 positions a game, the one after the last move included (a second each)
POSITIONS = MOVE_CAP + 1


def short_demo(folder: Path, move_cap: int = MOVE_CAP) -> Path:
    text = (REPO / "matchups" / "demo.toml").read_text()
    demo = tomllib.loads(text)
    text = text.replace(f"move_cap = {demo['game']['move_cap']}", f"move_cap = {move_cap}")
    text = text.replace("random_plies = 4", "random_plies = 2")
    path = folder / "short-demo.toml"
    path.write_text(text)
    return path


def go19(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=600)


def review(**options: object) -> LiveReview:
    # Tests run KataGo at the normal priority: at nice 19 a busy machine slows it down.
    return LiveReview(ReviewOptions(KATAGO.binary, KATAGO.model, KATAGO.config,
                                    **{"background": False, **options}))  # type: ignore[arg-type]


def ok_games(run_dir: Path) -> int:
    return read_manifest(run_dir / "labels")["counts"]["status"].get("ok", 0)


class Heard:
    """Every event of a run, in order; ``then`` is called with each."""

    def __init__(self, then=None) -> None:
        self.events: list[Event] = []
        self.then = then

    def __call__(self, event: Event) -> None:
        self.events.append(event)
        if self.then is not None:
            self.then(event)

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]


async def play(tmp_path: Path, games: int, live: LiveReview, on_event=None, view=None,
               resume: bool | Path = False) -> RunSummary:
    options = CollectOptions(matchup_path=short_demo(tmp_path), games=games, resume=resume,
                             recordings=tmp_path / "rec", dashboard=False)
    return await collect(options, on_event, view, lambda line: None, live)


def test_plain_log_shows_the_quality_line_and_go19_review_reuses_the_labels(tmp_path):
    played = go19("collect", "--matchup", short_demo(tmp_path), "--games", 2, "--review",
                  "--no-dashboard", "--recordings", tmp_path / "rec", "--reports",
                  tmp_path / "reports", cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    out = played.stdout
    assert "● OK      review: KataGo" in out  # the preflight line
    reviewed = [line for line in out.splitlines() if f" reviewed ({POSITIONS} positions" in line]
    assert len(reviewed) == 2
    assert "move quality over 2 reviewed games: strong " in reviewed[-1]
    assert "review up to date" in reviewed[-1]
    assert "review: 2 games labelled into" in out
    (run,) = (tmp_path / "rec").iterdir()
    assert ok_games(run) == 2
    manifest = (run / "labels" / "labels.json").read_bytes()
    # the run's report has the section, as go19 report has it with RUN_DIR/labels
    report = json.loads((tmp_path / "reports" / run.name / "report.json").read_text())
    assert report["quality"]["available"] and report["quality"]["counts"]["labelled"] == 2
    # go19 review takes the folder as it is: no KataGo (a binary that is none), same line
    again = go19("review", run, "--labels", run / "labels", "--katago", "/nonexistent",
                 "--out", tmp_path / "again", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert (run / "labels" / "labels.json").read_bytes() == manifest
    sentence = next(line for line in again.stdout.splitlines()
                    if line.startswith("move quality: ")).removeprefix("move quality: ")
    # the live line words the verdict as the report does; the report adds its coverage
    verdict, coverage = sentence.removesuffix(").").rsplit(" (", 1)
    assert coverage == "2 of 2 games labelled, every move"
    assert reviewed[-1].endswith(verdict + ".")
    assert f"move quality: {sentence}" in out  # the collect report's closing lines too


async def test_the_dashboard_shows_the_quality_line(tmp_path):
    console = Console(file=io.StringIO(), width=120, height=40, force_terminal=False)
    dashboard = Dashboard(console)

    async def view(collector: Collector) -> None:
        dashboard.attach(collector)

    summary = await play(tmp_path, 2, review(), dashboard.on_event, view)
    assert summary.exit_code == 0
    console.print(dashboard.render())
    frame = console.file.getvalue()  # type: ignore[attr-defined]
    verdict_area = frame.split("\n")[:3]
    assert any("move quality over 2 reviewed games: strong" in line for line in verdict_area)
    assert any("(review up to date)" in line for line in verdict_area)
    assert re.search(r"game \d reviewed, review up to date", frame)  # recent events


async def test_ctrl_c_keeps_the_labels_and_resume_labels_the_rest(tmp_path):
    def interrupt(event: Event) -> None:
        if isinstance(event, GameReviewed) and event.game == heard.of(GameReviewed)[0].game:
            os.kill(os.getpid(), signal.SIGINT)  # as a terminal's Ctrl-C reaches collect

    heard = Heard(interrupt)
    # one game at a time on KataGo: the others are still queued when the first is written
    summary = await play(tmp_path, 3, review(max_in_flight=1), heard)
    assert summary.interrupted and summary.state.done == 3
    labelled = ok_games(summary.run_dir)
    assert 1 <= labelled < 3
    kept = LabelSet(summary.run_dir / "labels")
    assert len(kept) == POSITIONS * labelled

    again = Heard()  # two engines this time, sharing the queue and the folder
    resumed = await play(tmp_path, 3, review(engines=2), again, resume=summary.run_dir)
    assert not resumed.interrupted and resumed.state.done == 3
    assert len(again.of(GameReviewed)) == 3 - labelled  # only the missing ones asked
    assert ok_games(summary.run_dir) == 3
    assert again.of(GameReviewed)[-1].quality.games == 3  # the kept ones count too
    assert (summary.run_dir / "labels" / "katago-1.log").is_file()
    folder = LabelSet(summary.run_dir / "labels")
    for name in ("key", "score_lead"):
        assert (folder.arrays[name][:len(kept)] == kept.arrays[name]).all()


async def test_a_review_slower_than_the_games_never_holds_them(tmp_path):
    """KataGo stopped (SIGSTOP) from before the first game until every game is recorded: the
    games do not wait for it, the queue (2 games) overflows into games left for a resume."""
    heard = Heard()
    paused: list[int] = []

    async def pause_katago(collector: Collector) -> None:
        paused.extend(_katago_pids(collector.run_dir / "labels"))
        for pid in paused:
            os.kill(pid, signal.SIGSTOP)
        while collector.state.done < 4:
            await trio.sleep(0.05)  # polls for a state: every game recorded
        for pid in paused:
            os.kill(pid, signal.SIGCONT)

    summary = await play(tmp_path, 4, review(queue=2, max_in_flight=1), heard, pause_katago)
    assert paused and summary.exit_code == 0 and summary.state.done == 4
    kinds = [type(e) for e in heard.events]
    last_recorded = max(i for i, k in enumerate(kinds) if k is GameRecorded)
    assert last_recorded < kinds.index(GameReviewed)  # every game before KataGo's first
    line = ReviewLine()  # what the dashboard said just before KataGo's first answer
    for event in heard.events[:kinds.index(GameReviewed)]:
        line.on_event(event)
    assert line.text() == "move quality: no game reviewed yet (review 3 games behind)"
    # one game taken by the stopped KataGo, two in the queue, the fourth left out
    (full,) = heard.of(ReviewQueueFull)
    assert full.game == summary.state.records[-1].game
    assert ok_games(summary.run_dir) == 3
    # Once the games are over the run says that it waits for the review, and for how many.
    (finishing,) = heard.of(ReviewFinishing)
    assert finishing.behind >= 1 and kinds.index(ReviewFinishing) > last_recorded
    assert words(finishing).startswith(
        f"games over: waiting for the review of {finishing.behind} more game")


def _katago_pids(folder: Path) -> set[int]:
    """The KataGo processes logging into ``folder`` (the run's, not the preflight's)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"analysis" in command and str(folder).encode() in command:
                found.add(int(entry.name))
    return found


async def test_a_dying_katago_is_restarted_then_given_up_while_the_games_go_on(tmp_path):
    heard = Heard()
    kills: list[int] = []

    async def killer(collector: Collector) -> None:
        """Kill each KataGo of the run as soon as it is there, twice."""
        while len(kills) < 2:
            for pid in _katago_pids(collector.run_dir / "labels") - set(kills):
                os.kill(pid, signal.SIGKILL)
                kills.append(pid)
            await trio.sleep(0.05)  # polls for a state: the next KataGo's process

    summary = await play(tmp_path, 2, review(max_restarts=1), heard, killer)
    assert summary.exit_code == 0 and summary.state.done == 2  # the games went on
    assert len(heard.of(ReviewEngineDied)) == 1
    (stopped,) = heard.of(ReviewStopped)
    assert "KataGo died 2 times in a row" in stopped.reason and len(stopped.left) == 2
    lines: list[str] = []
    log = PlainLog(0, lines.append)
    for event in heard.events:
        log.on_event(event)
    assert any(line.startswith("review: KataGo 0 died") for line in lines)
    assert any(line.startswith("review stopped: KataGo died 2 times") for line in lines)


async def test_a_label_folder_that_cannot_be_written_stops_the_review_not_the_games(tmp_path):
    heard = Heard()

    async def spoil(collector: Collector) -> None:
        """Once KataGo is up, RUN_DIR/labels becomes a file: every write there fails."""
        labels = collector.run_dir / "labels"
        shutil.rmtree(labels)
        labels.write_text("not a folder")

    summary = await play(tmp_path, 2, review(), heard, spoil)
    assert summary.exit_code == 0 and summary.state.done == 2
    # said once, though both workers' writes can fail (their writes are shielded: the
    # second one runs after the first stopped the review)
    (stopped,) = heard.of(ReviewStopped)
    assert stopped.reason.startswith("cannot write ") and "Not a directory" in stopped.reason
    assert not heard.of(GameReviewed)


def test_a_katago_that_does_not_start_stops_the_run_before_any_game(tmp_path):
    matchup = short_demo(tmp_path)
    played = go19("collect", "--matchup", matchup, "--games", 2, "--review", "--no-dashboard",
                  "--katago", "/bin/false", "--model", matchup, "--config", matchup,
                  "--recordings", tmp_path / "rec", cwd=tmp_path)
    assert played.returncode == EXIT_DOWN
    assert "● FAILED  review: KataGo did not start" in played.stdout
    assert played.stderr.strip().count("\n") == 0  # one line, no traceback
    assert played.stderr.startswith("collect: --review: KataGo did not start")
    assert not (tmp_path / "rec").exists() or not any((tmp_path / "rec").iterdir())


@pytest.mark.parametrize("option", ["--review-engines", "--visits"])
def test_review_counts_must_be_positive(tmp_path, option):
    played = go19("collect", "--matchup", short_demo(tmp_path), "--review", option, 0,
                  cwd=tmp_path)
    assert played.returncode == 2 and option in played.stderr


async def test_a_review_ten_games_behind_says_so_once(tmp_path):
    """The queue's side alone (no KataGo asked): ten recorded games waiting are one
    ReviewLagging, worded as the dashboard's recent events show it."""
    played = await collect(CollectOptions(matchup_path=short_demo(tmp_path), games=10,
                                          recordings=tmp_path / "rec", dashboard=False),
                           None, None, lambda line: None)
    state = RunState(played.run_dir.name, 10, ["strong", "weak"])
    heard = Heard()
    state.subscribe(heard)
    live = review()
    live.open(played.run_dir, state, ("strong", "weak"))
    for record in played.state.records:
        state.add_record(record)
        state.emit(GameRecorded(record))
    (lagging,) = heard.of(ReviewLagging)
    assert lagging.behind == 10 and live.behind == 10
    assert words(lagging) == ("review 10 games behind: KataGo labels slower than the games "
                              "are played (the games never wait for it)")
