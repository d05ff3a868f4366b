"""What an export needs about each game beyond the dataset's arrays, read from its SGF
and its line of the game table.

- the **last move** before each position: the GO19 client marks it with a red dot
  (``players/go19.py`` renders ``game.moves[-1]`` unless it was a pass), so the picture
  of move ``n`` marks move ``n - 1`` of the SGF's main line;
- the **komi** (the prompt may show it);
- **where each move came from** (``GOXIXSRC``): the player's own policy, the opening book
  or a fallback, so that a DPO pair's rejected answer is the model's own move;
- **how each side's pictures were drawn** (:class:`~orchestrator.render.RenderSettings`):
  what the game's record says its player saw (``render`` in the player metadata,
  ``GOXIXB``/``GOXIXW``, which the game table keeps), so an SGF moved anywhere keeps it.
  Recordings made before the record carried it get the player's ``image_px`` from the
  run's matchup (``run.json`` beside the SGF, player found by its name in PB/PW), as they
  always did. A game from elsewhere, or a player that saw no picture, gets the export's
  ``--image-px`` or else the default; ``--image-px`` sets the size for every sample.

The SGF is the file the build read (``games.jsonl`` keeps its path and sha1); a file that
is gone or changed since is an error naming it, not a silent guess.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import ValidationError

from orchestrator.coords import PASS
from orchestrator.dataset.shards import DatasetError, GameTableRow
from orchestrator.files import read_sgf_file
from orchestrator.positions.rows import POLICY, origin_of
from orchestrator.recordings import PlayerMeta, read_run_file
from orchestrator.render import DEFAULT_IMAGE_PX, RenderSettings
from orchestrator.sgf import SgfError, Unreadable

NO_LAST = -1
# Where a side's picture settings came from (the export manifest counts samples by it).
SettingsFrom = Literal["record", "run", "option", "default"]


@dataclass(frozen=True, slots=True)
class GameContext:
    komi: float
    last: np.ndarray  # int16 (moves + 1,): at n, the point to mark before move n; NO_LAST
    origin: np.ndarray  # uint8 (moves + 1,): at n, where move n came from (rows.POLICY …)
    render: tuple[RenderSettings, RenderSettings]  # (black's, white's)
    px_from: tuple[SettingsFrom, SettingsFrom]
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


def _recorded(meta: object) -> RenderSettings | None:
    """A side's render settings from its player metadata in the game table, if any."""
    if not isinstance(meta, dict) or "render" not in meta:
        return None
    try:
        return PlayerMeta.model_validate(meta).render
    except ValidationError:
        return None


@lru_cache(maxsize=64)
def _run_players(run_dir: Path, run_id: str) -> dict[str, int]:
    """Player name -> image_px from a run's ``run.json`` (empty when it is absent or
    belongs to another run): for recordings whose metadata does not say."""
    try:
        info = read_run_file(run_dir)
        players = info["matchup"]["players"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not isinstance(players, dict) or info.get("run_id") not in (None, run_id):
        return {}
    return {name: spec["image_px"] for name, spec in players.items()
            if isinstance(spec, dict) and isinstance(spec.get("image_px"), int)}


def _render(row: GameTableRow, path: Path, image_px: int | None
            ) -> tuple[list[RenderSettings], list[SettingsFrom]]:
    """Each side's render settings and where they came from."""
    players = row.players or {}
    renders: list[RenderSettings] = []
    origins: list[SettingsFrom] = []
    for side, name in (("black", row.black), ("white", row.white)):
        recorded = _recorded(players.get(side))
        if recorded is not None:
            renders.append(recorded if image_px is None else replace(recorded,
                                                                      image_px=image_px))
            origins.append("record" if image_px is None else "option")
            continue
        if image_px is not None:
            renders.append(RenderSettings(image_px))
            origins.append("option")
            continue
        legacy = _run_players(path.parent, row.run).get(name) if row.run else None
        renders.append(RenderSettings(legacy or DEFAULT_IMAGE_PX))
        origins.append("run" if legacy else "default")
    return renders, origins


def game_context(row: GameTableRow, image_px: int | None) -> GameContext:
    """The context of one game-table row (``games.jsonl``) whose samples are exported."""
    path = Path(row.file)  # where the SGF is (shards.load_games); row.path as stored
    try:
        games = read_sgf_file(path)
    except Unreadable as exc:
        raise DatasetError(f"{path}: cannot read the game's SGF ({exc.detail}); the export "
                           "needs it for the last-move mark and the komi") from None
    except SgfError as exc:
        raise DatasetError(f"{path}: changed since the dataset was built ({exc.detail})") \
            from None
    if not games or games[0].sha1 != row.sha1:
        raise DatasetError(f"{path}: changed since the dataset was built (sha1 differs)")
    # By its index in the file: a tree that is no game is not in the list.
    game = next((g for g in games if g.game_index == row.game_index), None)
    if game is None:
        raise DatasetError(f"{path}: has no game {row.game_index}")
    renders, origins = _render(row, path, image_px)
    origin = np.array([POLICY, *(origin_of(move.source) for move in game.moves)], np.uint8)
    return GameContext(
        komi=game.komi, last=_last_moves([move.point for move in game.moves]), origin=origin,
        render=(renders[0], renders[1]), px_from=(origins[0], origins[1]), sgf=row.path,
        source=row.source, run=row.run,
    )
