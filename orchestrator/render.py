"""Board → PNG: the picture a VLM adapter sees with every GO19 request, and eye-check sheets.

Orientation follows :mod:`orchestrator.coords`: row 0 (SGF ``a``, GTP row ``size``) is the
top, column 0 (``A``) the left. Labels are GTP letters (no ``I``) along the top and bottom,
numbers along both sides with ``size`` at the top.

Speed matters (one picture per move, hundreds of games at once), so everything that does not
depend on the position is drawn once per (board size, pixels) into a cached :class:`_Layout`:
the empty board as palette indices, and for every intersection its cell (``spacing`` pixels
square, centred on the intersection) in five variants: empty, black, white, and the two stones
with the last-move dot. Stones fit inside their cell, so a picture is a gather of cells.

Deflate costs far more than the drawing, and consecutive positions of a game differ in a row or
two. So the PNG is written by hand (palette, filter 0) as one zlib stream made of byte-aligned
raw deflate pieces, one per board row's band of pixel rows, each compressed on its own at level
1 and cached by (board size, pixels, row, what its cells show). A request in a running game
compresses one to three bands; a position never seen pays about twice a one-shot zlib call,
and the PNG is larger (about 36 KB instead of 20 KB at 512 px) since bands cannot refer to
each other.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from orchestrator.coords import GTP_COLUMNS, PASS

WOOD = (220, 179, 92)
INK = (45, 33, 18)
LAST_MOVE = (225, 35, 35)
MIN_SIZE, MAX_SIZE = 2, len(GTP_COLUMNS)
MAX_PX = 4096
MIN_SPACING = 6
DEFAULT_IMAGE_PX = 512  # the side of the picture a GO19 request carries, unless set
_EMPTY, _WHITE = 0, 2
_VARIANTS = 5  # empty, black, white, black + last move, white + last move
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class RenderError(ValueError):
    """Input that cannot be drawn: a bad board array, point or picture size."""


def _chunk(kind: bytes, data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")


_IEND = _chunk(b"IEND", b"")
_ZLIB_HEADER = b"\x78\x01"  # deflate, 32 KiB window, fastest level; checksum-valid


def _deflate_piece(rows: np.ndarray, last: bool) -> bytes:
    packer = zlib.compressobj(1, zlib.DEFLATED, -15)  # raw deflate: no header or checksum
    return packer.compress(rows.data) + packer.flush(
        zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)


@dataclass(frozen=True)
class _Layout:
    size: int
    px: int
    spacing: int
    origin: int  # top-left pixel of the grid of cells, the same along x and y
    empty: np.ndarray  # (px, px + 1) palette indices; column 0 is each row's PNG filter byte
    tiles: np.ndarray  # (size * size * _VARIANTS, spacing, spacing) palette indices
    palette: np.ndarray  # (colours, 3) uint8
    header: bytes  # PNG signature, IHDR and PLTE
    top_piece: bytes  # raw deflate of the pixel rows above the grid of cells
    top_adler: int
    bottom_piece: bytes  # ... and below it, which ends the stream
    bottom_adler: int
    bottom_len: int


def _geometry(size: int, px: int) -> tuple[int, int]:
    """Cell spacing and grid origin: a half-cell of wood plus a label band around the lines."""
    pad = max(2, px // 80)
    spacing = (px - 2 * pad) // (size + 1)
    return spacing, (px - size * spacing) // 2


def _check_size(size: int, px: int) -> None:
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise RenderError(f"board size {size} is not drawable (sizes {MIN_SIZE}..{MAX_SIZE})")
    least = (size + 1) * MIN_SPACING + 4
    if not least <= px <= MAX_PX:
        raise RenderError(
            f"size_px {px} is out of range for a {size}x{size} board ({least}..{MAX_PX})"
        )


def point_center(point_or_rowcol: int | tuple[int, int], board_size: int,
                 size_px: int = DEFAULT_IMAGE_PX) -> tuple[int, int]:
    """Pixel ``(x, y)`` at the middle of an intersection (the centre of its line pixels)."""
    _check_size(board_size, size_px)
    if isinstance(point_or_rowcol, tuple):
        row, col = point_or_rowcol
    elif 0 <= point_or_rowcol < board_size * board_size:
        row, col = divmod(point_or_rowcol, board_size)
    else:
        raise RenderError(f"point {point_or_rowcol} is off a {board_size}x{board_size} board")
    if not (0 <= row < board_size and 0 <= col < board_size):
        raise RenderError(f"({row}, {col}) is off a {board_size}x{board_size} board")
    spacing, origin = _geometry(board_size, size_px)
    return origin + col * spacing + spacing // 2, origin + row * spacing + spacing // 2


def _star_points(size: int) -> list[tuple[int, int]]:
    edge = 3 if size >= 13 else 2 if size >= 7 else None
    if edge is None:
        return []
    lines = [edge, size - 1 - edge]
    if size % 2:
        # Tengen on every odd board; the side stars only where the board is big enough.
        lines.insert(1, size // 2)
    points = [(r, c) for r in lines for c in lines]
    if size % 2 and size < 15:
        mid = size // 2
        points = [(r, c) for r, c in points if (r == mid) == (c == mid)]
    return points


def _disc(spacing: int, radius: float) -> np.ndarray:
    """Coverage (0..1) of a disc centred on the intersection pixel of a cell: its anti-aliasing."""
    centre = spacing // 2 + 0.5
    ys, xs = np.mgrid[0:spacing, 0:spacing] + 0.5
    return np.clip(radius + 0.5 - np.hypot(xs - centre, ys - centre), 0.0, 1.0)


def _stone_sprites(spacing: int) -> tuple[np.ndarray, np.ndarray]:
    """Colour (4, s, s, 3) and coverage (4, s, s) of black, white, and both with the dot."""
    # The disc must stay inside its cell, whose centre pixel sits left of the middle when even.
    radius = min(0.48 * spacing, spacing - spacing // 2 - 0.5)
    centre = spacing // 2 + 0.5
    ys, xs = np.mgrid[0:spacing, 0:spacing] + 0.5
    dx, dy = (xs - centre) / radius, (ys - centre) / radius
    # Light from the top left: a soft highlight on black, a shaded lower right rim on white.
    glow = np.exp(-((dx + 0.35) ** 2 + (dy + 0.35) ** 2) / 0.18)[..., None]
    black = np.array([22.0, 22, 24]) + glow * np.array([70.0, 70, 72])
    rim = np.clip(np.hypot(dx - 0.15, dy - 0.15) - 0.55, 0.0, 1.0)[..., None]
    white = np.array([246.0, 244, 236]) - rim * np.array([70.0, 70, 66])
    edge = np.clip(np.hypot(dx, dy) * radius - (radius - 1.0), 0.0, 1.0)[..., None]
    white = white * (1 - 0.45 * edge) + np.array(INK) * 0.45 * edge
    cover = _disc(spacing, radius)
    dot = _disc(spacing, max(1.2, 0.28 * radius))[..., None]
    color = np.stack([black, white, black * (1 - dot) + np.array(LAST_MOVE) * dot,
                       white * (1 - dot) + np.array(LAST_MOVE) * dot])
    return color, np.stack([cover] * 4)


def _font(pixels: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(max(8, pixels))


def _draw_text_centred(draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str,
                       font: ImageFont.FreeTypeFont | ImageFont.ImageFont,
                       fill: tuple[int, int, int]) -> None:
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    draw.text((xy[0] - (left + right) / 2, xy[1] - (top + bottom) / 2), text, fill=fill,
              font=font)


def _empty_board(size: int, px: int, spacing: int, origin: int) -> np.ndarray:
    """The empty board as float RGB: wood, lines, star points, labels."""
    img = np.empty((px, px, 3), np.float32)
    img[:] = WOOD
    half = spacing // 45  # lines 1 px wide, 3 from 45 px cells: always centred on one pixel
    first = origin + spacing // 2
    last = first + (size - 1) * spacing
    for i in range(size):
        at = first + i * spacing
        img[first - half:last + half + 1, at - half:at + half + 1] = INK
        img[at - half:at + half + 1, first - half:last + half + 1] = INK
    star = _disc(spacing, max(1.6, 0.11 * spacing))[..., None]
    for row, col in _star_points(size):
        y, x = origin + row * spacing, origin + col * spacing
        cell = img[y:y + spacing, x:x + spacing]
        cell[:] = cell * (1 - star) + np.array(INK) * star
    picture = Image.fromarray(np.rint(img).astype(np.uint8))
    draw = ImageDraw.Draw(picture)
    band = first - spacing // 2  # wood between the picture's edge and an edge stone
    font = _font(min(int(band * 0.75), spacing * 2 // 3))
    for i in range(size):
        at = first + i * spacing
        for where in (band / 2, px - band / 2):
            _draw_text_centred(draw, (at, where), GTP_COLUMNS[i], font, INK)
            _draw_text_centred(draw, (where, at), str(size - i), font, INK)
    return np.asarray(picture, np.float32)


def _quantise(pixels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A palette of at most 256 colours for (n, 3) uint8 pixels (median cut), and their indices."""
    width = 1024
    padded = np.concatenate([pixels, np.repeat(pixels[:1], -len(pixels) % width, 0)])
    picture = Image.fromarray(padded.reshape(-1, width, 3))
    quantised = picture.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    colors = quantised.getpalette()
    assert colors is not None, "a quantised picture has a palette"
    palette = np.array(colors[:768], np.uint8).reshape(-1, 3)
    indices = np.asarray(quantised).reshape(-1)[:len(pixels)]
    # Median cut averages its boxes; the flat colours that fill most of the picture stay exact.
    keys = pixels.astype(np.uint32) @ np.array([1 << 16, 1 << 8, 1], np.uint32)
    for flat in (WOOD, INK):
        at = np.flatnonzero(keys == (flat[0] << 16 | flat[1] << 8 | flat[2]))
        if len(at):
            palette[indices[at[0]]] = flat
    return palette, indices


@lru_cache(maxsize=16)
def _layout(size: int, px: int) -> _Layout:
    spacing, origin = _geometry(size, px)
    board = _empty_board(size, px, spacing, origin)
    span = size * spacing
    grid = board[origin:origin + span, origin:origin + span]
    cells = grid.reshape(size, spacing, size, spacing, 3).transpose(0, 2, 1, 3, 4)
    cells = cells.reshape(size * size, 1, spacing, spacing, 3)
    color, cover = _stone_sprites(spacing)
    color = np.concatenate([np.zeros((1, spacing, spacing, 3)), color])[None]
    cover = np.concatenate([np.zeros((1, spacing, spacing)), cover])[None, ..., None]
    tiles = np.rint(cells * (1 - cover) + color * cover).astype(np.uint8)
    # Most cells look alike (the same stone over the same lines): quantise each look once.
    looks: dict[bytes, int] = {}  # in order of first sight, so the keys line up with the ids
    look_of = np.array([looks.setdefault(tile.tobytes(), len(looks))
                        for tile in tiles.reshape(size * size * _VARIANTS, -1)])
    pixels = np.concatenate([np.rint(board).astype(np.uint8).reshape(-1, 3),
                             np.frombuffer(b"".join(looks), np.uint8).reshape(-1, 3)])
    palette, indices = _quantise(pixels)
    empty = np.zeros((px, px + 1), np.uint8)
    empty[:, 1:] = indices[:px * px].reshape(px, px)
    tiles = indices[px * px:].reshape(-1, spacing, spacing)[look_of.reshape(-1)]
    ihdr = px.to_bytes(4, "big") * 2 + bytes([8, 3, 0, 0, 0])  # 8-bit palette, no interlace
    header = _PNG_SIGNATURE + _chunk(b"IHDR", ihdr) + _chunk(b"PLTE", palette.tobytes())
    top, bottom = empty[:origin], empty[origin + span:]
    return _Layout(size, px, spacing, origin, empty, tiles, palette, header,
                   _deflate_piece(top, last=False), zlib.adler32(top.data),
                   _deflate_piece(bottom, last=True), zlib.adler32(bottom.data),
                   bottom.size)


def _board_size(board: np.ndarray) -> int:
    if not isinstance(board, np.ndarray) or board.ndim != 2 or board.shape[0] != board.shape[1]:
        shape = getattr(board, "shape", type(board).__name__)
        raise RenderError(f"board must be a square 2-D numpy array, got {shape}")
    if board.dtype.kind not in "iu":
        raise RenderError(f"board must hold integers 0, 1, 2, got dtype {board.dtype}")
    bad = np.flatnonzero((board < _EMPTY) | (board > _WHITE))
    if len(bad):
        row, col = divmod(int(bad[0]), board.shape[0])
        raise RenderError(
            f"board holds {board[row, col]} at ({row}, {col}); expected 0 empty, 1 black, 2 white"
        )
    return board.shape[0]


def _variants(board: np.ndarray, last_move: int | None, size_px: int) -> np.ndarray:
    """What each cell shows: its ``_VARIANTS`` index (board value, +2 for the last move)."""
    size = _board_size(board)
    _check_size(size, size_px)
    variants = board.astype(np.uint8)  # a copy, whatever the caller's dtype
    if last_move is not None and last_move != PASS:
        if not 0 <= last_move < size * size:
            raise RenderError(f"last_move {last_move} is off a {size}x{size} board")
        # A last move whose point is empty again (a suicide some rules allow) has no stone to mark.
        if variants.flat[last_move] != _EMPTY:
            variants.flat[last_move] += 2
    return variants


def _fill(layout: _Layout, rows: np.ndarray, first_row: int, variants: np.ndarray) -> None:
    """Copy the cells of board rows ``first_row...`` into ``rows``, their band of pixel rows."""
    size, spacing, lo = layout.size, layout.spacing, layout.origin
    count = len(variants)
    base = first_row * size * _VARIANTS + np.arange(0, count * size * _VARIANTS, _VARIANTS)
    tiles = layout.tiles[base + variants.reshape(-1)].reshape(count, size, spacing, spacing)
    # Splitting both axes of this slice is always a view, so the copy lands in ``rows``.
    grid = rows[:, lo + 1:lo + 1 + size * spacing].reshape(count, spacing, size, spacing)
    grid[...] = tiles.transpose(0, 2, 1, 3)


@lru_cache(maxsize=8192)  # about 2 KB each at 512 px: 16 MB, the rows of 400 games in flight
def _band(size: int, px: int, row: int, variants: bytes) -> tuple[bytes, int]:
    """One board row's band of pixel rows as a byte-aligned raw deflate piece, and its Adler-32."""
    layout = _layout(size, px)
    top = layout.origin + row * layout.spacing
    rows = layout.empty[top:top + layout.spacing].copy()
    _fill(layout, rows, row, np.frombuffer(variants, np.uint8)[None])
    return _deflate_piece(rows, last=False), zlib.adler32(rows.data)


def _adler_combine(first: int, second: int, second_len: int) -> int:
    """Adler-32 of two buffers end to end from theirs (zlib's adler32_combine)."""
    base = 65521
    rem = second_len % base
    low = (first & 0xFFFF) + (second & 0xFFFF) + base - 1
    high = rem * (first & 0xFFFF) + (first >> 16) + (second >> 16) + base - rem
    return (low % base) | (high % base) << 16


def render_png(board: np.ndarray, last_move: int | None = None,
               size_px: int = DEFAULT_IMAGE_PX) -> bytes:
    """The position as a ``size_px`` square palette PNG; ``last_move`` (a point) gets a red dot."""
    variants = _variants(board, last_move, size_px)
    layout = _layout(len(variants), size_px)
    band_len = layout.spacing * (size_px + 1)
    pieces = [layout.top_piece]
    adler = layout.top_adler
    for row, cells in enumerate(variants):
        piece, band_adler = _band(layout.size, size_px, row, cells.tobytes())
        pieces.append(piece)
        adler = _adler_combine(adler, band_adler, band_len)
    pieces.append(layout.bottom_piece)
    adler = _adler_combine(adler, layout.bottom_adler, layout.bottom_len)
    stream = _ZLIB_HEADER + b"".join(pieces) + adler.to_bytes(4, "big")
    return layout.header + _chunk(b"IDAT", stream) + _IEND


def render_image(board: np.ndarray, last_move: int | None = None,
                 size_px: int = DEFAULT_IMAGE_PX) -> np.ndarray:
    """The same picture as :func:`render_png`, as an RGB ``(size_px, size_px, 3)`` uint8 array."""
    variants = _variants(board, last_move, size_px)
    layout = _layout(len(variants), size_px)
    lo = layout.origin
    raw = layout.empty.copy()
    _fill(layout, raw[lo:lo + layout.size * layout.spacing], 0, variants)
    return layout.palette.take(raw[:, 1:], axis=0)  # take: several times faster than []


@dataclass(frozen=True, slots=True)
class RenderSettings:
    """How one player's pictures are drawn: everything :func:`render_png` takes besides
    the position. A game's record keeps them per player (``render`` in its metadata), so
    a training export draws exactly what the model saw."""

    image_px: int = DEFAULT_IMAGE_PX
    mark_last: bool = True  # the red dot on the last stone played

    def picture(self, board: np.ndarray, last_move: int | None) -> bytes:
        """The PNG of ``board``; ``last_move``, the stone last played (None after a pass
        or at the start), is marked when ``mark_last``."""
        return render_png(board, last_move if self.mark_last else None, self.image_px)


def _square_size(image: np.ndarray, board_size: int) -> int:
    if image.ndim != 3 or image.shape[2] != 3 or image.shape[0] < image.shape[1]:
        raise RenderError(f"expected an RGB board picture (h, w, 3), got shape {image.shape}")
    _check_size(board_size, image.shape[1])
    return image.shape[1]


def mark(image: np.ndarray, point_or_rowcol: int | tuple[int, int], board_size: int,
         color: tuple[int, int, int] = (0, 150, 255), cross: bool = False) -> np.ndarray:
    """A copy of a board picture with a ring (or a cross) on one intersection, e.g. a target."""
    px = _square_size(image, board_size)
    x, y = point_center(point_or_rowcol, board_size, px)
    spacing, _ = _geometry(board_size, px)
    reach, width = spacing * 0.42, max(2, spacing // 8)
    picture = Image.fromarray(image)
    draw = ImageDraw.Draw(picture)
    if cross:
        draw.line([(x - reach, y - reach), (x + reach, y + reach)], color, width)
        draw.line([(x - reach, y + reach), (x + reach, y - reach)], color, width)
    else:
        draw.ellipse([x - reach, y - reach, x + reach, y + reach], outline=color, width=width)
    return np.asarray(picture).copy()


def caption(image: np.ndarray, text: str) -> np.ndarray:
    """The picture with a white band underneath holding ``text`` (may span several lines)."""
    width = image.shape[1]
    font = _font(max(10, width // 32))
    probe = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    left, top, right, bottom = probe.multiline_textbbox((0, 0), text, font=font)
    pad = max(3, width // 100)
    band = Image.new("RGB", (width, bottom + 2 * pad), (255, 255, 255))
    ImageDraw.Draw(band).multiline_text((pad - left, pad), text, fill=(0, 0, 0), font=font)
    return np.concatenate([image, np.asarray(band)])


def contact_sheet(images: Sequence[np.ndarray], cols: int) -> bytes:
    """RGB pictures in a grid of ``cols`` columns on grey, as one PNG; cells fit the largest."""
    if not images or cols < 1:
        raise RenderError(f"contact sheet needs pictures and cols >= 1, got {len(images)}, {cols}")
    gap = 8
    cell_h = max(image.shape[0] for image in images) + gap
    cell_w = max(image.shape[1] for image in images) + gap
    rows = -(-len(images) // cols)
    sheet = np.full((rows * cell_h + gap, min(cols, len(images)) * cell_w + gap, 3), 128, np.uint8)
    for i, image in enumerate(images):
        y, x = gap + (i // cols) * cell_h, gap + (i % cols) * cell_w
        sheet[y:y + image.shape[0], x:x + image.shape[1]] = image[..., :3]
    out = io.BytesIO()
    Image.fromarray(sheet).save(out, "PNG", compress_level=6)
    return out.getvalue()
