"""A bad host name where an address enters (issue 21, item 2): `a..b`, a label over 63
characters, a typo like `10.0.0..5`. Each was a traceback (Python's IDNA codec raises
UnicodeError inside the resolver); now one line and exit 2, from the real commands."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import go19_here

BAD_HOSTS = ["a..b", "x" * 64 + ".example", "10.0.0..5"]


def refusal(result: subprocess.CompletedProcess[str]) -> str:
    """Exit 2, no traceback, one line on stderr."""
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("host", BAD_HOSTS)
def test_go19_ping(host: str) -> None:
    line = refusal(go19_here("ping", f"{host}:5019"))
    assert line.startswith(f"ping: bad endpoint '{host}:5019': bad host name")


@pytest.mark.parametrize("command", ["serve", "play"])
def test_serve_and_play_host(command: str) -> None:
    line = refusal(go19_here(command, "--host", "a..b", "--port", "0"))
    assert line.startswith(f"{command}: --host: bad host name 'a..b': empty label")


def test_collect_replicas(tmp_path: Path) -> None:
    matchup = tmp_path / "bad.toml"
    matchup.write_text("""
[players.far]
kind = "go19"
replicas = ["127.0.0.1:5019", "a..b:5019"]
[players.ai]
kind = "heuristic"
[pairing]
black = "far"
white = "ai"
""")
    line = refusal(go19_here("collect", "--matchup", matchup, "--games", "1",
                             "--recordings", tmp_path / "rec", "--no-dashboard"))
    assert line.startswith(f"collect: {matchup}: players.far.replicas[1]: 'a..b:5019': "
                           "bad host name 'a..b': empty label")
    assert not (tmp_path / "rec").exists()
