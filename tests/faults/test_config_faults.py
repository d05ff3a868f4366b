"""Configurations that would fail on every move are refused when the run starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.collect.matchup import MatchupError, load_matchup

MATCHUP = """
[players.a]
kind = "go19"
replicas = ["127.0.0.1:5019"]
image_px = {px}
[pairing]
black = "a"
white = "a"
[game]
size = {size}
"""


def test_an_image_too_small_for_the_board_is_refused_at_load(tmp_path: Path) -> None:
    """64 px draws a 9x9 board but not a 19x19 one: the referee would record an
    ``error`` fallback on every move and void every game."""
    path = tmp_path / "m.toml"
    path.write_text(MATCHUP.format(px=64, size=9))
    assert load_matchup(path).players["a"].image_px == 64
    path.write_text(MATCHUP.format(px=64, size=19))
    with pytest.raises(MatchupError) as caught:
        load_matchup(path)
    assert str(caught.value) == (
        f"{path}: (top level): players.a.image_px: size_px 64 is out of range for a "
        "19x19 board (124..4096)"
    )


async def test_an_openings_folder_without_usable_games_is_one_line_and_no_folder(
    tmp_path: Path,
) -> None:
    """A folder of 9x9 openings for a 19x19 run: refused before any run folder exists."""
    from orchestrator.collect.run import CollectError, CollectOptions, collect

    openings = tmp_path / "openings"
    openings.mkdir()
    (openings / "a.sgf").write_text("(;FF[4]GM[1]SZ[9];B[ee];W[cc];B[gg];W[cg])")
    path = tmp_path / "m.toml"
    path.write_text(MATCHUP.format(px=512, size=19).replace('kind = "go19"\nreplicas = '
                                                           '["127.0.0.1:5019"]',
                                                           'kind = "heuristic"')
                    .replace("image_px = 512\n", "")
                    + "[openings]\nsgf_dir = \"openings\"\nplies = 4\n")
    with pytest.raises(CollectError) as caught:
        await collect(CollectOptions(path, games=2, recordings=tmp_path / "rec",
                                     dashboard=False))
    assert str(caught.value) == f"{openings}: no SGF with 4 opening moves on 19x19"
    assert not (tmp_path / "rec").exists()
