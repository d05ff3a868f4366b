"""Running `collect` against a farm of fault servers and reading back what it recorded.

The recordings are read with sgfmill and plain json, not with go19's own reader, so
the counts compared with the servers' come from the files alone.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import trio
from sgfmill import sgf

from orchestrator.collect.run import CollectOptions, RunSummary, collect
from orchestrator.events import Event

from .server import Farm

RESULT = re.compile(r"^(0|[BW]\+(R|\d+(\.5)?))$")

PLAYER = """
[players.{name}]
kind = "go19"
replicas = [{replicas}]
slots = {slots}
image_px = 64
"""

MATCHUP = """
[run]
name = "{name}"
seed = {seed}
{players}
[pairing]
black = "{black}"
white = "{white}"
[game]
size = 9
komi = 7.5
move_cap = {move_cap}
move_timeout_s = {move_timeout}
concurrency = {concurrency}
down_pause_s = {down_pause}
[fallback]
void_after = {void_after}
"""


def write_matchup(
    folder: Path, farm: Farm, *, name: str = "faults", seed: int = 7, concurrency: int = 8,
    move_timeout: float = 5.0, move_cap: int = 60, void_after: int = 15,
    black: str | None = None, white: str | None = None, down_pause: float = 300.0,
) -> Path:
    names = sorted(farm.servers)
    players = "".join(
        PLAYER.format(
            name=player,
            replicas=", ".join(f'"{r}"' for r in farm.replicas(player)),
            # Never queue behind the slot limit: a request queued past its deadline would
            # be a timeout no server saw.
            slots=concurrency,
        )
        for player in names
    )
    path = folder / f"{name}.toml"
    path.write_text(MATCHUP.format(
        name=name, seed=seed, players=players, black=black or names[0],
        white=white or names[-1], move_cap=move_cap, move_timeout=move_timeout,
        concurrency=concurrency, void_after=void_after, down_pause=down_pause,
    ))
    return path



def two_go19_players(a: str, b: str | None = None, *, slots: int, game: str,
                     run: str = "") -> str:
    """A matchup of GO19 players ``a`` (black) and ``b`` (white; default: like ``a``) on
    64 px images, as TOML: ``a``/``b`` are where each plays (``replicas = [...]`` or
    ``embedded = {...}``), ``run`` and ``game`` the lines of those tables. Text passes
    through unchanged, so callers may leave ``str.format`` fields in it."""
    head = f"\n[run]\n{run}" if run else ""
    return f"""{head}
[players.a]
kind = "go19"
{a}
slots = {slots}
image_px = 64
[players.b]
kind = "go19"
{a if b is None else b}
slots = {slots}
image_px = 64
[pairing]
black = "a"
white = "b"
[game]
{game}
"""

@dataclass
class Run:
    summary: RunSummary
    log: list[tuple[float, Event]] = field(default_factory=list)  # (trio time, event)

    @property
    def run_dir(self) -> Path:
        return self.summary.run_dir


async def run_collect(matchup: Path, recordings: Path, games: int, resume: bool = False) -> Run:
    log: list[tuple[float, Event]] = []
    options = CollectOptions(
        matchup_path=matchup, games=games, resume=resume, recordings=recordings, dashboard=False
    )
    summary = await collect(options, lambda event: log.append((trio.current_time(), event)))
    return Run(summary, log)


def journal(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "games.jsonl").read_text().splitlines()]


def sgf_path(run_dir: Path, record: dict) -> Path:
    return run_dir / ("void" if record["void"] else "") / record["sgf"]


def sgf_marks(path: Path, record: dict) -> dict[str, Counter]:
    """Fallback reasons marked on the moves of one SGF, per player name (via sgfmill)."""
    game = sgf.Sgf_game.from_bytes(path.read_bytes())
    names = {"b": record["black"], "w": record["white"]}
    marks: dict[str, Counter] = {n: Counter() for n in set(names.values())}
    for node in game.get_main_sequence()[1:]:
        if node.has_property("GOXIXSRC"):
            source = node.get("GOXIXSRC")
            if source.startswith("fallback:"):
                color, _ = node.get_move()
                marks[names[color]][source.removeprefix("fallback:")] += 1
    return marks


def recorded(records: list[dict]) -> dict[str, Counter]:
    """Fallbacks per player and reason, summed over every journal line (void games too)."""
    total: dict[str, Counter] = {}
    for record in records:
        for name, counts in record["fallbacks"].items():
            total.setdefault(name, Counter()).update(counts)
    return {name: +counts for name, counts in total.items()}


def check_recordings(run_dir: Path, games: int) -> list[dict]:
    """The invariants every run keeps, whatever it went through; returns the journal."""
    records = journal(run_dir)
    finished = [r for r in records if not r["void"]]
    assert len(finished) == games
    assert sorted(r["slot"] for r in finished) == list(range(games))
    assert len({r["game"] for r in records}) == len(records)
    on_disk = sorted(p.name for p in run_dir.glob("*.sgf"))
    assert on_disk == sorted(r["sgf"] for r in finished)
    voided = sorted(p.name for p in (run_dir / "void").glob("*.sgf"))
    assert voided == sorted(r["sgf"] for r in records if r["void"])
    assert not list(run_dir.rglob(".*.tmp"))
    for record in records:
        path = sgf_path(run_dir, record)
        game = sgf.Sgf_game.from_bytes(path.read_bytes())
        root = game.get_root()
        assert root.get("RE") == record["result"]
        assert len(game.get_main_sequence()) - 1 == record["moves"]
        if record["void"]:
            assert record["result"] == "Void" and record["winner"] is None
            continue
        assert RESULT.match(record["result"]), record["result"]
        assert record["reason"] in ("two-passes", "move-cap")
        # Every fallback in the journal is a marked move in the SGF...
        assert sgf_marks(path, record) == {n: +Counter(c) for n, c in record["fallbacks"].items()}
    for record in (r for r in records if r["void"]):
        # ...except the one that made the game void, which was counted but never played.
        marks = sgf_marks(sgf_path(run_dir, record), record)
        diff = Counter()
        for name, counts in record["fallbacks"].items():
            for reason, n in counts.items():
                diff[(name, reason)] += n - marks[name][reason]
        assert +diff == Counter({next(iter(+diff)): 1})
    return records
