"""`go19 label` (without --review) against the stand-in KataGo (standin_katago.py), in this
process: a KataGo that dies with games in flight, and one that goes silent. go19 review
and collect --review have their own (tests/review, tests/collect)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.label.store import LabelSet, read_manifest
from tests.label.standin import record_games, run_on_frozen_clock, standin

GAMES = 6
MOVES = 4


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_games(tmp_path_factory.mktemp("recorded"), GAMES)


def label(recorded: Path, out: Path, *options: object) -> int:
    return main(["label", str(recorded), "--out", str(out), "--max-moves", str(MOVES),
                 *map(str, options)])


def test_every_game_in_flight_goes_back_when_katago_dies(recorded, tmp_path, capsys):
    katago = standin(tmp_path / "katago", "crash", after=2)
    assert label(recorded, tmp_path / "labels", *katago.options()) == 0
    out, err = capsys.readouterr()
    assert re.findall(r"restarting with (\d+) games? to go", err) == ["4", "2"]
    assert f"{GAMES}/{GAMES} games labelled ({GAMES * MOVES} positions)" in out
    assert "engine restarts 2" in out
    assert len(LabelSet(tmp_path / "labels")) == GAMES * MOVES
    # Each KataGo was sent the four games in flight: two answered, two asked again.
    asked = [q["pid"] for q in katago.queries()]
    assert [asked.count(pid) for pid in dict.fromkeys(asked)] == [3, 3, 2]


def test_a_silent_katago_is_restarted_and_the_run_ends(recorded, tmp_path, capsys,
                                                       monkeypatch, make_hangs):
    hangs = make_hangs(seconds=1000)
    run_on_frozen_clock(monkeypatch, hangs)
    katago = standin(tmp_path / "katago", "hang", after=2, announce=hangs.address)
    assert label(recorded, tmp_path / "labels", "--visits", 4, "--katago-timeout", 7,
                 *katago.options()) == 0
    out, err = capsys.readouterr()
    assert hangs.count == 2
    # 4 visits x 7 s. The first KataGo answered two games, whose workers asked for the
    # last two: four in flight when it went silent, all asked again.
    for waiting, left in ((4, 4), (2, 2)):
        assert (f"KataGo died (KataGo answered nothing for 28 s with {waiting} queries "
                f"waiting (--katago-timeout); stopped it); restarting with {left} games to "
                "go") in err
    assert read_manifest(tmp_path / "labels")["counts"]["status"] == {"ok": GAMES}


@pytest.mark.parametrize("value", ["0", "-1", "inf", "x"])
def test_the_timeout_must_be_a_positive_number(recorded, tmp_path, capsys, value):
    with pytest.raises(SystemExit) as exited:
        label(recorded, tmp_path / "labels", "--katago-timeout", value)
    assert exited.value.code == 2
    assert f"--katago-timeout: {value!r}: expected a positive number of seconds" in (
        capsys.readouterr().err)
