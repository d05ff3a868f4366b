"""Reading exported pictures back the way a person would: which stone (if any) sits on a
point, seen at four pixels inside where the stone would be, off the grid lines and off
the last-move dot. Used to check orientation end to end."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

from orchestrator.render import point_center

EMPTY, BLACK, WHITE = 0, 1, 2


def decode(png: bytes) -> np.ndarray:
    """An RGB array of a PNG, decoded by Pillow (not by go19)."""
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def seen_at(image: np.ndarray, point: int, size: int = 19) -> int:
    """EMPTY, BLACK or WHITE from the mean brightness of four pixels on the diagonals
    of the point, half a stone's radius out: wood there is about 180, a black stone
    under 100, a white one over 215."""
    px = image.shape[0]
    x, y = point_center(point, size, px)
    # The same spacing as the renderer's layout: picture minus margins over size + 1.
    reach = max(1, int(0.24 * ((px - 2 * max(2, px // 80)) // (size + 1))))
    pixels = [image[y + dy, x + dx] for dx in (-reach, reach) for dy in (-reach, reach)]
    light = float(np.mean([0.299 * r + 0.587 * g + 0.114 * b for r, g, b in pixels]))
    return BLACK if light < 120 else WHITE if light > 210 else EMPTY


def orientation_faults(image: np.ndarray, board: np.ndarray, points: list[int]) -> list[str]:
    """Points of ``points`` where the picture does not show what ``board`` holds."""
    size = board.shape[0]
    return [f"point {q}: picture shows {seen_at(image, q, size)}, board holds {board.flat[q]}"
            for q in points if seen_at(image, q, size) != board.flat[q]]


def parquet_rows(folder: Path) -> list[dict]:
    """Every row of an export's parquet shards, in order, read by pyarrow."""
    import pyarrow.parquet as pq

    files = sorted((folder / "data").glob("*.parquet"))
    return [row for f in files for row in pq.read_table(f).to_pylist()]
