"""Hand-written run folders for report tests: journal lines and minimal SGFs built as
text here (not by go19's writer), with counts chosen so the numbers can be checked
by hand."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.report.build import write_report
from orchestrator.sgf import SOURCE_PROP

# Six plies: four stones and two passes (9x9 letters). A resigned game stops after four.
PLIES = ("cc", "gg", "cg", "gc", "", "")


@dataclass
class Game:
    number: int
    black: str
    white: str
    winner: str | None  # "black", "white", "draw" or None
    reason: str = "two-passes"  # two-passes | resign | move-cap | void
    moves: int = 6
    sources: dict[int, str] = field(default_factory=dict)  # 1-based ply -> GO19SRC mark
    fallbacks: dict[str, dict[str, int]] = field(default_factory=dict)
    opening_plies: int = 0
    pair: int | None = None
    latency: dict[str, dict] = field(default_factory=dict)
    finished_second: int | None = None

    @property
    def void(self) -> bool:
        return self.reason == "void"

    @property
    def sgf_name(self) -> str:
        return f"baduk-20260101-000000-{self.number:05d}.sgf"


def sgf_text(game: Game) -> str:
    result = {"black": "B+R" if game.reason == "resign" else "B+3.5",
              "white": "W+R" if game.reason == "resign" else "W+3.5",
              "draw": "0", None: "Void"}[game.winner]
    nodes = []
    for ply in range(1, game.moves + 1):
        letter = "B" if ply % 2 else "W"
        mark = game.sources.get(ply)
        node = f";{letter}[{PLIES[(ply - 1) % len(PLIES)]}]"
        if mark:
            node += f"{SOURCE_PROP}[{mark}]"
        nodes.append(node)
    return (f"(;FF[4]CA[UTF-8]GM[1]SZ[9]KM[2.5]RU[Chinese]PB[{game.black}]PW[{game.white}]"
            f"RE[{result}]\n" + "\n".join(nodes) + ")\n")


def journal_line(run: str, game: Game, players: dict[str, dict]) -> dict:
    names = sorted({game.black, game.white})
    second = game.finished_second if game.finished_second is not None else game.number
    return {
        "run": run, "game": game.number, "slot": game.number - 1, "sgf": game.sgf_name,
        "void": game.void, "black": game.black, "white": game.white,
        "players": {n: players[n] for n in names}, "size": 9, "komi": 2.5, "handicap": 0,
        "result": sgf_text(game).split("RE[")[1].split("]")[0],
        "winner": game.winner, "reason": game.reason, "moves": game.moves,
        # as the SGF's RE: Black's margin after komi when counted, none on resign or void
        "score": {"black": 3.5, "white": -3.5, "draw": 0.0}.get(game.winner)
        if game.reason in ("two-passes", "move-cap") else None,
        "opening": (
            {"id": f"o{game.pair}", "plies": game.opening_plies, "pair": game.pair}
            if game.opening_plies or game.pair is not None else None
        ),
        "fallbacks": {n: game.fallbacks.get(n, {}) for n in names},
        "illegal": {n: sum(c for r, c in game.fallbacks.get(n, {}).items()
                           if r.startswith("illegal:")) for n in names},
        "latency_ms": {n: game.latency.get(n, {"n": 0, "p50": None, "p95": None, "max": None})
                       for n in names},
        "started": f"2026-01-01T00:{second // 60:02d}:{second % 60:02d}Z",
        "finished": f"2026-01-01T00:{second // 60:02d}:{second % 60:02d}Z",
    }


def write_run(
    root: Path, run: str, games: list[Game], players: dict[str, dict],
    pairing: tuple[str, str], sprt: dict | None = None,
) -> Path:
    run_dir = root / run
    (run_dir / "void").mkdir(parents=True)
    matchup = {"pairing": {"black": pairing[0], "white": pairing[1], "alternate_colors": True},
               "game": {"size": 9, "komi": 2.5}, "stop": {"sprt": sprt}}
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": run, "matchup_path": "t.toml", "matchup": matchup,
        "started": "2026-01-01T00:00:00Z", "games_target": len(games),
    }))
    lines = []
    for game in games:
        folder = run_dir / "void" if game.void else run_dir
        (folder / game.sgf_name).write_text(sgf_text(game))
        lines.append(json.dumps(journal_line(run, game, players)))
    (run_dir / "games.jsonl").write_text("\n".join(lines) + "\n")
    return run_dir


def report_json(run_dirs: Sequence[Path], out: Path, **options: Any) -> dict:
    """``write_report``, then the ``report.json`` it wrote, as a user reads it."""
    write_report(run_dirs, out, **options)
    return json.loads((Path(out) / "report.json").read_text())
