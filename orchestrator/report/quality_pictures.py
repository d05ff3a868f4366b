"""The move-quality section's files beside the report, under ``moves/``: the worst moves'
board pictures (the position before the move as ``render.render_image`` draws it for the
GO19 client, a red ring on the move played and a green one on KataGo's) and the charts as
SVG files for the Markdown page."""

from __future__ import annotations

import dataclasses
import io
import re
from pathlib import Path

import numpy as np
from PIL import Image

from orchestrator import render
from orchestrator.coords import PASS, from_index
from orchestrator.files import atomic_write
from orchestrator.quality.report import WorstMove
from orchestrator.report.model import Report
from orchestrator.report.quality_pages import CHART_FOLDER, charts
from orchestrator.report.quality_tables import section

FOLDER = CHART_FOLDER
PX = 190
PLAYED = (220, 30, 30)
KATAGO = (20, 160, 60)
_STONES = {ord("."): 0, ord("X"): 1, ord("O"): 2}


def board_array(board: str) -> np.ndarray:
    """A worst move's ``board`` (361 of ``.XO``, row 0 at the top) as a uint8 19x19 board."""
    codes = np.frombuffer(board.encode("ascii"), np.uint8)
    table = np.zeros(256, np.uint8)
    for char, stone in _STONES.items():
        table[char] = stone
    return table[codes].reshape(19, 19)


def picture(move: WorstMove, px: int = PX) -> bytes:
    """The PNG of one worst move."""
    image = render.render_image(board_array(move.board), None, px)
    for index, color in ((move.katago_index, KATAGO), (move.played_index, PLAYED)):
        point = from_index(index, 19)
        if point != PASS:
            image = render.mark(image, point, 19, color)
    out = io.BytesIO()
    Image.fromarray(image).save(out, "PNG", optimize=True)
    return out.getvalue()


def _slug(player: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", player).strip("_") or "player"


def write(report: Report, out_dir: Path) -> Report:
    """Draw every worst move of the section into ``out_dir/moves/`` and write the charts
    there; the report with each move's ``picture`` (its file, relative to ``out_dir``)."""
    quality = section(report)
    if quality is None:
        return report
    folder = Path(out_dir) / FOLDER
    for name, chart in charts(report).items():
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / name, chart.encode("utf-8"))
    players = {}
    for k, (player, p) in enumerate(quality.players.items()):
        worst = []
        for n, move in enumerate(p.worst, 1):
            folder.mkdir(parents=True, exist_ok=True)
            name = f"{k + 1}-{_slug(player)}-{n:02d}.png"
            atomic_write(folder / name, picture(move))
            worst.append(dataclasses.replace(move, picture=f"{FOLDER}/{name}"))
        players[player] = dataclasses.replace(p, worst=worst)
    return dataclasses.replace(report, quality=dataclasses.replace(quality, players=players))
