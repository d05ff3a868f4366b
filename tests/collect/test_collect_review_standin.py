"""``collect --review`` against the stand-in KataGo (tests/label/standin_katago.py): an engine
that crashes every few queries, goes silent, sends NaN, or a label folder of another run.
The run must end by itself, and every recorded game be labelled, not labelled (one line),
or named as left.

The crash runs ``go19 collect`` as a process (before the fix it waited for ever: the test
then fails on its timeout); the hangs run in this process on a clock only the stand-ins'
announcements move (a resumed run whose games are all recorded, so no move deadline is
in flight when the clock jumps)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import trio.testing

from orchestrator.collect.review import LiveReview, ReviewOptions
from orchestrator.collect.run import CollectError, CollectOptions, RunSummary, collect
from orchestrator.collect.standings import words
from orchestrator.commands.collect import review_summary
from orchestrator.events import GameNotReviewed, GameReviewed, ReviewEngineDied, ReviewStopped
from orchestrator.label.store import read_manifest
from tests.collect.test_collect_review import Heard
from tests.conftest import REPO
from tests.label.standin import Standin, record_games, standin
from tests.review.conftest import MOVE_CAP, short_demo

GAMES = 12
POSITIONS = MOVE_CAP + 1


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_games(tmp_path_factory.mktemp("recorded"), GAMES)


@pytest.fixture
def clock() -> trio.testing.MockClock:
    return trio.testing.MockClock()  # no autojump: only the stand-ins' hangs move time


@pytest.fixture
def run(recorded: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(recorded, tmp_path / "rec" / recorded.name))


def ok_games(run: Path) -> int:
    return read_manifest(run / "labels")["counts"]["status"].get("ok", 0)


def review(katago: Standin, **options: object) -> LiveReview:
    return LiveReview(ReviewOptions(katago.binary, katago.model, katago.config,
                                    **{"background": False, **options}))  # type: ignore[arg-type]


async def resume(run: Path, live: LiveReview, heard: Heard) -> RunSummary:
    """``collect --resume RUN --review``: every game recorded, only the review runs."""
    options = CollectOptions(matchup_path=short_demo(run.parent.parent), games=GAMES, resume=run,
                             recordings=run.parent, dashboard=False)
    return await collect(options, heard, None, lambda line: None, live)


def test_a_crashing_katago_loses_no_game_and_the_run_ends_by_itself(tmp_path):
    katago = standin(tmp_path / "katago", "crash", after=2)
    played = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "collect", "--matchup",
         str(short_demo(tmp_path)), "--games", str(GAMES), "--review", "--no-dashboard",
         "--no-report", "--recordings", str(tmp_path / "rec"), *katago.options()],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert played.returncode == 0, played.stderr
    (run,) = (tmp_path / "rec").iterdir()
    last = played.stdout.strip().splitlines()[-1]
    # Each KataGo finishes two games and dies with two more in flight, which go back.
    assert last == (f"review: {GAMES} games labelled into {run / 'labels'} "
                    f"({GAMES * POSITIONS} positions, KataGo restarts {GAMES // 2 - 1})")
    assert played.stdout.count("review: KataGo 0 died") == GAMES // 2 - 1
    assert ok_games(run) == GAMES


async def test_a_silent_katago_is_restarted_with_its_games(run, tmp_path, clock, nursery,
                                                           make_hangs):
    hangs = make_hangs(seconds=1000)
    await nursery.start(hangs.serve, clock)
    katago = standin(tmp_path / "katago", "hang", after=2, announce=hangs.address)
    heard = Heard()
    live = review(katago)
    summary = await resume(run, live, heard)
    assert summary.exit_code == 0 and hangs.count == GAMES // 2 - 1
    died = heard.of(ReviewEngineDied)
    assert len(died) == GAMES // 2 - 1 and "answered nothing for 60 s" in died[0].error
    assert len(heard.of(GameReviewed)) == GAMES and ok_games(run) == GAMES
    assert live.behind == 0 and live.left == ()


async def test_a_katago_that_keeps_going_silent_stops_the_review_naming_the_games_left(
    run, tmp_path, clock, nursery, make_hangs
):
    hangs = make_hangs(seconds=1000)
    await nursery.start(hangs.serve, clock)
    katago = standin(tmp_path / "katago", "hang", after=0, announce=hangs.address)
    heard = Heard()
    live = review(katago, max_restarts=1)
    summary = await resume(run, live, heard)
    assert summary.exit_code == 0 and hangs.count == 2  # the collection ended by itself
    (stopped,) = heard.of(ReviewStopped)
    assert stopped.left == tuple(range(1, GAMES + 1))  # every game, none lost or twice
    # (how many queries were out when it went silent depends on the SGF reads' threads)
    assert re.fullmatch(
        r"review stopped: KataGo died 2 times in a row without labelling a game; last: "
        r"KataGo answered nothing for 60 s with \d quer(y|ies) waiting \(--katago-timeout\); "
        r"stopped it; 12 recorded games left unlabelled \(games 1, 2, 3 and 9 more\); "
        r"the games go on \(`collect --resume RUN_DIR --review` labels the rest\)",
        words(stopped))
    assert review_summary(live, summary) == (
        f"review: 0 games labelled into {run / 'labels'} (0 positions, KataGo restarts 1); "
        f"stopped: {stopped.reason}; 12 recorded games not labelled (games 1, 2, 3 and 9 "
        f"more): `go19 collect --matchup ... --resume {run} --review` labels them")


async def test_a_katago_silent_at_its_start_fails_the_preflight(run, tmp_path, clock, nursery,
                                                                make_hangs):
    hangs = make_hangs(seconds=1000)
    await nursery.start(hangs.serve, clock)
    katago = standin(tmp_path / "katago", "hang-at-start", announce=hangs.address)
    with pytest.raises(CollectError, match="--review: KataGo did not start: KataGo answered "
                       "nothing for 600 s"):
        await resume(run, review(katago), Heard())
    assert hangs.count == 1


async def test_nan_answers_are_games_not_reviewed(run, tmp_path):
    katago = standin(tmp_path / "katago", "bad", after=2, value="nan")
    heard = Heard()
    summary = await resume(run, review(katago), heard)
    assert summary.exit_code == 0
    refused = heard.of(GameNotReviewed)
    assert len(refused) == GAMES - 2 and len(heard.of(GameReviewed)) == 2
    assert all("is bad: winrate is nan" in event.reason for event in refused)
    assert read_manifest(run / "labels")["counts"]["status"] == {"error": GAMES - 2, "ok": 2}


async def test_another_runs_label_folder_is_refused(run, recorded, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    katago = standin(tmp_path / "katago", "ok")
    summary = await resume(run, review(katago), Heard())  # run's own labels, run.json's id
    assert summary.exit_code == 0 and ok_games(run) == GAMES
    shutil.move(run / "labels", other / "labels")
    copy = Path(shutil.copytree(recorded, tmp_path / "copy" / "demo-copy"))
    (copy / "run.json").write_text((copy / "run.json").read_text().replace(
        recorded.name, "demo-copy"))
    (copy / "labels").symlink_to(other / "labels")
    with pytest.raises(CollectError, match=f"holds the labels of run {recorded.name}, not of "
                       "run demo-copy"):
        await resume(copy, review(katago), Heard())
