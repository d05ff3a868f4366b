"""Without a terminal, `go19 collect` prints a fastchess-like standings block every N
finished games: a real run over loopback against two embedded GO19 servers."""

from __future__ import annotations

from pathlib import Path

from tests.collect.test_collect_e2e import matchup
from tests.conftest import go19_here


def test_standings_block_every_two_games(tmp_path: Path) -> None:
    path = matchup(tmp_path, concurrency=1)
    done = go19_here("collect", "--matchup", path, "--games", "4", "--recordings",
                     tmp_path / "rec", "--no-dashboard", "--no-report", "--standings-every", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    heads = [i for i, line in enumerate(lines) if "Results of strong vs weak" in line]
    assert len(heads) == 2, done.stdout
    assert "(2/4 games, 0 void)" in lines[heads[0]] and "(4/4 games" in lines[heads[1]]
    # each block follows the line of the game that completed it, and reads like fastchess
    block = [line.split(" ", 1)[1] for line in lines[heads[1] - 1:heads[1] + 6]]
    assert block[0] == "-" * 50
    assert block[2].startswith("Elo: ")
    assert any(line.startswith("Games: 4, Wins: ") for line in block)
    assert "-" * 50 in block[3:]
