"""`go19 review` against the stand-in KataGo (tests/label/standin_katago.py), run in this
process: an engine that crashes, goes silent (from the start or mid-run), answers ids never
sent or sends NaN; a dangling RUN/labels link and another run's label folder. Each run
must end by itself, with every game labelled, refused in one line, or named as left for
--resume."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from orchestrator.cli import main
from orchestrator.label.store import LabelSet, read_manifest
from tests.label.standin import record_games, run_on_frozen_clock, standin
from tests.review.conftest import MOVE_CAP

POSITIONS = MOVE_CAP + 1  # each game's, the one after the last move included


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_games(tmp_path_factory.mktemp("recorded"), 12)


@pytest.fixture
def run(recorded: Path, tmp_path: Path) -> Path:
    """A copy of the recorded run: each test labels its own."""
    return Path(shutil.copytree(recorded, tmp_path / recorded.name))


def review(run: Path, *options: object) -> int:
    return main(["review", str(run), "--out", str(run.parent / "report"), *map(str, options)])


def said(capsys: pytest.CaptureFixture[str]) -> str:
    """What the command printed, stderr then stdout (the summary)."""
    out, err = capsys.readouterr()
    return err + out


def ok_games(run: Path) -> int:
    return read_manifest(run / "labels")["counts"]["status"].get("ok", 0)


@pytest.mark.parametrize("games", [4, 12])
def test_a_crashing_katago_loses_no_game_in_flight(run, tmp_path, capsys, games):
    """Dying at every 3rd query, each KataGo has finished two games (their answers came
    before it died) and had two more in flight: those are asked again on the next one."""
    katago = standin(tmp_path / "katago", "crash", after=2)
    assert review(run, "--max-games", games, *katago.options()) == 0
    err = said(capsys)
    assert f"{games}/{games} games labelled ({games * POSITIONS} positions)" in err
    left = [int(n) for n in re.findall(r"restarting with (\d+) games to go", err)]
    assert left == list(range(games - 2, 0, -2))  # every in-flight game back in the queue
    assert f"engine restarts {games // 2 - 1}" in err
    assert ok_games(run) == games and len(LabelSet(run / "labels")) == games * POSITIONS


def test_a_silent_katago_is_restarted_and_the_review_ends_by_itself(
    run, tmp_path, make_hangs, capsys, monkeypatch
):
    hangs = make_hangs(seconds=1000)  # past any deadline
    run_on_frozen_clock(monkeypatch, hangs)
    katago = standin(tmp_path / "katago", "hang", after=2, announce=hangs.address)
    assert review(run, "--max-games", 4, *katago.options()) == 0
    err = said(capsys)
    assert hangs.count == 1  # the second KataGo answered the last two games
    assert ("KataGo died (KataGo answered nothing for 60 s with 2 queries waiting "
            "(--katago-timeout); stopped it); restarting with 2 games to go (1/3)") in err
    assert "4/4 games labelled" in err and ok_games(run) == 4


def test_a_katago_silent_at_its_start_stops_naming_the_games_left(
    run, tmp_path, make_hangs, capsys, monkeypatch
):
    hangs = make_hangs(seconds=1000)
    run_on_frozen_clock(monkeypatch, hangs)
    katago = standin(tmp_path / "katago", "hang-at-start", announce=hangs.address)
    assert review(run, "--max-games", 4, "--katago-timeout", 5, *katago.options()) == 1
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "not labelled" in line]
    names = sorted(p.name for p in run.glob("*.sgf"))
    assert line == (
        "label: KataGo did not start: KataGo answered nothing for 50 s with 1 query waiting "
        f"(--katago-timeout); stopped it; 4 games not labelled ({names[0]}, {names[1]}, "
        f"{names[2]} and 1 more): the same command with --resume labels them")
    # As the line says: the same command with --resume (a KataGo that answers) ends it.
    katago = standin(tmp_path / "good", "ok")
    assert review(run, "--max-games", 4, "--resume", *katago.options()) == 0
    assert ok_games(run) == 4


def test_a_katago_that_keeps_going_silent_stops_after_max_restarts(
    run, tmp_path, make_hangs, capsys, monkeypatch
):
    hangs = make_hangs(seconds=1000)
    run_on_frozen_clock(monkeypatch, hangs)
    katago = standin(tmp_path / "katago", "hang", after=0, announce=hangs.address)
    assert review(run, "--max-games", 3, "--max-restarts", 1, *katago.options()) == 1
    err = said(capsys)
    assert hangs.count == 2
    (line,) = [line for line in err.splitlines() if line.startswith("label: KataGo died")]
    assert line.startswith("label: KataGo died 2 times in a row without finishing a game; "
                           "last: KataGo answered nothing for 60 s with 3 queries waiting")
    first, second, third = sorted(p.name for p in run.glob("*.sgf"))[:3]
    assert line.endswith(f"3 games not labelled ({first}, {second} and {third}): the same "
                         "command with --resume labels them")
    assert ok_games(run) == 0


def test_answers_to_ids_never_sent_restart_katago(run, tmp_path, capsys):
    katago = standin(tmp_path / "katago", "wrong-id", after=2)
    assert review(run, "--max-games", 4, *katago.options()) == 0
    err = said(capsys)
    assert "KataGo died (KataGo answered query id 'never-sent-go19-" in err
    assert "4/4 games labelled" in err and ok_games(run) == 4


@pytest.mark.parametrize("value", ["nan", "inf", "null"])
def test_nan_or_infinite_values_are_bad_answers_not_labels(run, tmp_path, capsys, value):
    """The 3rd and 4th queries' first answers carry the value: those two games are KataGo
    errors, one line each, and no label holds it."""
    katago = standin(tmp_path / "katago", "bad", after=2, value=value)
    assert review(run, "--max-games", 4, *katago.options()) == 0
    err = said(capsys)
    bad = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(bad) == 2 and all(f"is bad: winrate is {value}" in line for line in bad)
    assert "2/4 games labelled" in err and "KataGo errors 2" in err
    manifest = read_manifest(run / "labels")
    assert manifest["counts"]["status"] == {"error": 2, "ok": 2}
    labels = LabelSet(run / "labels")
    assert len(labels) == 2 * POSITIONS
    for name in ("winrate", "score_lead", "policy"):
        assert np.isfinite(labels.arrays[name]).all()
    report = json.loads((run.parent / "report" / "report.json").read_text())
    assert report["quality"]["counts"]["labelled"] == 2  # the report leaves the others out


def test_a_dangling_labels_link_is_said(run, tmp_path, capsys):
    (run / "labels").symlink_to(tmp_path / "gone")
    katago = standin(tmp_path / "katago", "ok")
    assert review(run, "--max-games", 2, *katago.options()) == 2
    assert capsys.readouterr().err == (
        f"label: {run / 'labels'}: a symbolic link to {tmp_path / 'gone'}, which does not "
        "exist; create that folder or remove the link\n")
    assert not katago.queries() and not (tmp_path / "gone").exists()


def test_resume_into_another_runs_labels_is_refused_naming_both(run, recorded, tmp_path,
                                                               capsys):
    katago = standin(tmp_path / "katago", "ok")
    other = Path(shutil.copytree(recorded, tmp_path / "other" / "demo-other"))
    (other / "run.json").write_text(json.dumps({"run_id": "demo-other"}))
    assert review(other, "--max-games", 2, *katago.options()) == 0
    held = (other / "labels" / "labels.json").read_bytes()
    (run / "labels").symlink_to(other / "labels")
    capsys.readouterr()
    assert review(run, "--max-games", 4, "--resume", *katago.options()) == 2
    assert capsys.readouterr().err == (
        f"label: {run / 'labels'}: holds the labels of run demo-other, not of run "
        f"{run.name}; label run {run.name} into a folder of its own\n")
    assert (other / "labels" / "labels.json").read_bytes() == held  # untouched
