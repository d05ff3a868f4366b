"""Matchup files: the shipped ones load, and every mistake is one line naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.collect.matchup import MatchupError, load_matchup
from tests.conftest import REPO

GOOD = """
[players.a]
kind = "go19"
replicas = ["127.0.0.1:5019"]
[players.b]
kind = "heuristic"
[pairing]
black = "a"
white = "b"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["demo.toml", "r5_vs_r4.toml", "vs_gnugo.toml",
                                  "vllm_r5_vs_r4.toml"])
def test_shipped_matchups_load(name: str) -> None:
    matchup = load_matchup(REPO / "matchups" / name)
    assert matchup.pairing.black in matchup.players
    assert matchup.pairing.white in matchup.players


def test_defaults_follow_the_seed_client(tmp_path: Path) -> None:
    matchup = load_matchup(write(tmp_path, GOOD))
    assert matchup.game.komi == 2.5
    assert matchup.game.move_cap == 722
    assert matchup.pairing.alternate_colors


def test_self_play_is_one_player_on_both_sides(tmp_path: Path) -> None:
    text = GOOD.replace('white = "b"', 'white = "a"')
    assert load_matchup(write(tmp_path, text)).self_play


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda t: t.replace('"127.0.0.1:5019"', '"127.0.0.1"'), "players.a.replicas"),
        (lambda t: t.replace('white = "b"', 'white = "zz"'), "'zz' is not a player"),
        (lambda t: t + "[game]\nkomi = 31.0\n", "game.komi"),
        (lambda t: t + "[game]\nkomi = 6.3\n", "multiple of 0.5"),
        (lambda t: t + "[game]\nconcurency = 3\n", "game.concurency"),
        (lambda t: t.replace('kind = "heuristic"', 'kind = "telepathy"'), "players.b"),
        (lambda t: t + "[stop]\nsprt = { elo0 = 10, elo1 = 5 }\n", "stop.sprt"),
        (lambda t: t + '[stop]\ngate = { candidate = "c" }\n',
         "stop.gate.candidate = 'c' is not a player of the pairing (a, b)"),
        (lambda t: t.replace('white = "b"', 'white = "b"\nalternate_colors = false')
         + '[stop]\ngate = { candidate = "a" }\n', "set pairing.alternate_colors = true"),
        (lambda t: t + '[stop]\ngate = { candidate = "a", elo0 = 40 }\n', "stop.gate"),
        (lambda t: t.replace("[pairing]", "[pairing\n"), "not valid TOML"),
    ],
)
def test_mistakes_name_file_and_key(tmp_path: Path, edit, expected: str) -> None:
    path = write(tmp_path, edit(GOOD))
    with pytest.raises(MatchupError) as info:
        load_matchup(path)
    message = str(info.value)
    assert str(path) in message
    assert expected in message
    assert "\n" not in message


@pytest.mark.parametrize(("added", "expected"), [
    ("[game]\nmove_timeout = 3\n", "game.move_timeout: unknown key; did you mean "
     "move_timeout_s?"),
    ("[gmae]\nkomi = 7.5\n", "gmae: unknown key; did you mean game?"),
    ("[stop]\nsprt = { elo2 = 30 }\n", "stop.sprt.elo2: unknown key; did you mean elo1?"),
    ("[players.c]\nkind = \"go19\"\nslotz = 2\n", "players.c.slotz: unknown key; did you "
     "mean slots?"),
    ("[players.c]\nkind = \"go19\"\nembedded = { levle = 1 }\n",
     "players.c.embedded.levle: unknown key; did you mean level?"),
    ("[game]\nqqqq = 1\n", "game.qqqq: unknown key (the keys here: size, komi, move_cap, "),
])
def test_a_typo_names_the_nearest_valid_key(tmp_path: Path, added: str, expected: str) -> None:
    """Issue 30, item 11: a mistyped key said only pydantic's "Extra inputs are not
    permitted"; it now names the key meant (difflib's nearest), or the keys there are."""
    path = write(tmp_path, GOOD + added)
    with pytest.raises(MatchupError) as info:
        load_matchup(path)
    assert str(info.value).startswith(f"{path}: {expected}")


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(MatchupError, match="no such matchup file"):
        load_matchup(tmp_path / "nope.toml")
