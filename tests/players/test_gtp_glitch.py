"""A GTP engine that sends an extra empty reply after a genmove (issue 21, item 1), in real
collect runs: the run still finishes, and every move recorded as the engine's own is the
answer the engine gave to that very genmove, never a reply read one exchange late."""

from __future__ import annotations

import json
import shlex
import sys
from collections import Counter
from pathlib import Path

from sgfmill import sgf

from orchestrator.collect.run import CollectOptions, collect

ENGINE = Path(__file__).with_name("glitchy_gtp.py")
LETTERS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"


def matchup(tmp_path: Path, glitch: str) -> Path:
    command = shlex.join([sys.executable, str(ENGINE), str(tmp_path / "genmoves.jsonl"),
                          "--glitch", *glitch.split()])
    path = tmp_path / "glitchy.toml"
    path.write_text(f"""
[run]
name = "glitchy"
seed = 3
[players.glitchy]
kind = "gtp"
command = {json.dumps(command)}
[players.random]
kind = "random"
seed = 4
[pairing]
black = "glitchy"
white = "random"
[game]
size = 9
komi = 7.5
move_cap = 60
move_timeout_s = 30
concurrency = 1
""")
    return path


async def run(tmp_path: Path, glitch: str, games: int):
    options = CollectOptions(matchup_path=matchup(tmp_path, glitch), games=games,
                             recordings=tmp_path / "rec", dashboard=False)
    return await collect(options, lambda event: None, preflight_log=lambda line: None)


def gtp(color: str, point: tuple[int, int] | None) -> str:
    word = "black" if color == "b" else "white"
    return f"{word} pass" if point is None else f"{word} {LETTERS[point[1]]}{point[0] + 1}"


def engine_moves(run_dir: Path) -> list[tuple[list[str], str, str | None]]:
    """Per move of the engine in every recorded game (void ones too): the moves before it (as GTP
    ``play`` arguments), the move, and its fallback mark (None: recorded as its own)."""
    found = []
    for path in sorted(run_dir.rglob("*.sgf")):  # void games too
        game = sgf.Sgf_game.from_bytes(path.read_bytes())
        engine = "b" if game.get_player_name("b") == "glitchy" else "w"
        before: list[str] = []
        for node in game.get_main_sequence()[1:]:
            color, point = node.get_move()
            move = gtp(color, point)
            if color == engine:
                mark = node.get("GOXIXSRC") if node.has_property("GOXIXSRC") else None
                found.append((list(before), move.split()[1], mark))
            before.append(move)
    return found


def answers(tmp_path: Path) -> dict[tuple[str, ...], set[str]]:
    """The engine's own log: the answers it gave, by the moves its board held."""
    given: dict[tuple[str, ...], set[str]] = {}
    for line in (tmp_path / "genmoves.jsonl").read_text().splitlines():
        entry = json.loads(line)
        given.setdefault(tuple(entry["history"]), set()).add(entry["answer"])
    return given


def check_own_moves(tmp_path: Path, run_dir: Path) -> tuple[int, Counter]:
    """(own moves, fallbacks by mark); fails on an own move that is not its genmove's
    answer. (The engine knows nothing of captures or suicide: some of its answers are
    illegal, and marked so.)"""
    given = answers(tmp_path)
    own, fallbacks = 0, Counter()
    for before, move, mark in engine_moves(run_dir):
        if mark is not None:
            fallbacks[mark] += 1
            continue
        own += 1
        assert move in given.get(tuple(before), set()), (
            f"move {len(before) + 1} {move} is recorded as the engine's own, but the engine "
            f"never answered it for that position (it answered "
            f"{sorted(given.get(tuple(before), set()))})"
        )
    return own, fallbacks


async def test_one_stray_reply_costs_one_fallback_and_the_run_finishes(tmp_path: Path) -> None:
    """It was 210 protocol fallbacks, 10 void games and exit 4: every later reply was
    read one behind."""
    glitch = f"once {tmp_path / 'glitched'}"
    summary = await run(tmp_path, glitch, games=3)
    assert summary.exit_code == 0 and summary.state.done == 3 and summary.state.void == 0
    own, fallbacks = check_own_moves(tmp_path, summary.run_dir)
    assert (tmp_path / "glitched").exists()  # the engine did glitch
    assert fallbacks["fallback:protocol"] == 1 and own > 50


async def test_a_repeated_glitch_never_records_a_stale_answer(tmp_path: Path) -> None:
    """It was: the answer meant for move 190 recorded, unmarked, as the engine's move 192."""
    summary = await run(tmp_path, "every 4", games=3)
    own, fallbacks = check_own_moves(tmp_path, summary.run_dir)
    assert summary.state.done == 3
    # Each glitch costs the exchange after it (a protocol fallback), nothing more.
    assert fallbacks["fallback:protocol"] >= 5 and own > 3 * fallbacks["fallback:protocol"]
