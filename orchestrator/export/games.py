"""What an export needs about each game beyond the dataset's arrays, read from its SGF
and, for go19 recordings, from the run's ``run.json``.

- the **last move** before each position: the GO19 client marks it with a red dot
  (``players/go19.py`` renders ``game.moves[-1]`` unless it was a pass), so the picture
  of move ``n`` marks move ``n - 1`` of the SGF's main line;
- the **komi** (the prompt may show it);
- the **picture size** each side's player saw: ``image_px`` of that player in the run's
  matchup (``run.json``), found through the SGF's folder and its player names (PB/PW are
  the matchup's player names). A game from elsewhere, or a player that is not a GO19
  endpoint, gets the export's ``--image-px`` or else the matchup default.

The SGF is the file the build read (``games.jsonl`` keeps its path and sha1); a file that
is gone or changed since is an error naming it, not a silent guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from orchestrator.collect.matchup import Go19PlayerSpec
from orchestrator.coords import PASS
from orchestrator.dataset.shards import DatasetError
from orchestrator.files import read_sgf_file
from orchestrator.recordings import read_run_file
from orchestrator.sgf import SgfError, Unreadable

DEFAULT_IMAGE_PX: int = Go19PlayerSpec.model_fields["image_px"].default
NO_LAST = -1


@dataclass(frozen=True, slots=True)
class GameContext:
    komi: float
    last: np.ndarray  # int16 (moves + 1,): at n, the point to mark before move n; NO_LAST
    image_px: tuple[int, int]  # (black's, white's)
    px_from: tuple[str, str]  # per side: "run" (its matchup), "option" (--image-px), "default"
    sgf: str
    source: str | None
    run: str | None


def _last_moves(points: list[int]) -> np.ndarray:
    """``last[n]`` = the stone placed by move ``n - 1`` (none for move 1 or after a pass)."""
    last = np.full(len(points) + 2, NO_LAST, np.int16)
    for number, point in enumerate(points, 2):
        if point != PASS:
            last[number] = point
    return last


@lru_cache(maxsize=64)
def _run_players(run_dir: Path, run_id: str) -> dict[str, int]:
    """Player name -> image_px from a run's ``run.json`` (empty when it is absent or
    belongs to another run)."""
    try:
        info = read_run_file(run_dir)
        players = info["matchup"]["players"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not isinstance(players, dict) or info.get("run_id") not in (None, run_id):
        return {}
    return {name: spec["image_px"] for name, spec in players.items()
            if isinstance(spec, dict) and isinstance(spec.get("image_px"), int)}


def game_context(row: dict, image_px: int | None) -> GameContext:
    """The context of one game-table row (``games.jsonl``) whose samples are exported."""
    path = Path(row["file"])  # where the SGF is (shards.load_games); row["path"] as stored
    try:
        games = read_sgf_file(path)
    except Unreadable as exc:
        raise DatasetError(f"{path}: cannot read the game's SGF ({exc.detail}); the export "
                           "needs it for the last-move mark and the komi") from None
    except SgfError as exc:
        raise DatasetError(f"{path}: changed since the dataset was built ({exc.detail})") \
            from None
    if not games or games[0].sha1 != row["sha1"]:
        raise DatasetError(f"{path}: changed since the dataset was built (sha1 differs)")
    # By its index in the file: a tree that is no game is not in the list.
    game = next((g for g in games if g.game_index == row["game_index"]), None)
    if game is None:
        raise DatasetError(f"{path}: has no game {row['game_index']}")
    px_from = ["option" if image_px is not None else "default"] * 2
    sizes = [image_px or DEFAULT_IMAGE_PX] * 2
    if image_px is None and row.get("run"):
        players = _run_players(path.parent, row["run"])
        for i, name in enumerate((row.get("black"), row.get("white"))):
            if name in players:
                sizes[i], px_from[i] = players[name], "run"
    return GameContext(
        komi=game.komi, last=_last_moves([move.point for move in game.moves]),
        image_px=(sizes[0], sizes[1]), px_from=(px_from[0], px_from[1]), sgf=row["path"],
        source=row.get("source"), run=row.get("run"),
    )
