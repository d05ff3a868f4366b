"""The board picture: a valid PNG of the asked size, stones where coords.py says, the grid found
in the pixels themselves, last-move dot, markers, captions, contact sheets, clear refusals.

Expectations never come from render.py: the grid is found by scanning the empty picture for
dark lines, stones are judged by colour rules written here, and real games are replayed with
sgfmill's board (row 0 at the bottom there) as the independent source of the position.
"""

from __future__ import annotations

import io
import zlib
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from sgfmill import boards, sgf, sgf_moves

from orchestrator.coords import PASS, from_gtp, from_sgf
from orchestrator.render import (
    RenderError,
    caption,
    contact_sheet,
    mark,
    point_center,
    render_image,
    render_png,
)
from tests.conftest import REAL_SGF, requires_real_sgf

SIZES = (9, 13, 19)
PIXELS = (256, 512, 1024)
STARS = {
    19: ["D4", "D10", "D16", "K4", "K10", "K16", "Q4", "Q10", "Q16"],
    13: ["D4", "D10", "G7", "K4", "K10"],
    9: ["C3", "C7", "E5", "G3", "G7"],
}


def decode(png: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(png)) as picture:
        assert picture.format == "PNG"
        return np.asarray(picture.convert("RGB"))


def luma(rgb: np.ndarray) -> float:
    return float(0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2])


def is_wood(rgb: np.ndarray) -> bool:
    r, g, b = (int(v) for v in rgb)
    return r > 150 and r - b > 60 and r >= g >= b


def is_black_stone(rgb: np.ndarray) -> bool:
    return int(rgb.max()) < 110 and int(rgb.max()) - int(rgb.min()) < 25


def is_white_stone(rgb: np.ndarray) -> bool:
    return int(rgb.min()) > 190 and int(rgb.max()) - int(rgb.min()) < 30


def is_red(rgb: np.ndarray) -> bool:
    return int(rgb[0]) > 150 and int(rgb[0]) - int(rgb[1]) > 80


def runs(mask: np.ndarray) -> list[int]:
    """Centres of the runs of True in a 1-D mask (a line 3 px wide is one run)."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8), [0]])))
    return [int(start + end - 1) // 2 for start, end in zip(edges[::2], edges[1::2], strict=True)]


@cache
def grid(size: int, px: int) -> tuple[list[int], list[int]]:
    """Columns and rows of the board lines, found as mostly-dark columns and rows."""
    image = decode(render_png(np.zeros((size, size), np.uint8), None, px))
    dark = image.astype(np.int32).sum(axis=2) < 3 * 100
    return runs(dark.mean(axis=0) > 0.5), runs(dark.mean(axis=1) > 0.5)


def off_centre(size: int, px: int, row: int, col: int) -> tuple[int, int]:
    """(y, x) a quarter-cell down and right of an intersection: inside a stone, off the lines."""
    xs, ys = grid(size, px)
    step = (xs[-1] - xs[0]) // (size - 1)
    return ys[row] + step // 4, xs[col] + step // 4


def board_with(size: int, **stones: str) -> np.ndarray:
    """A board from GTP vertices: board_with(19, black="A19 D4", white="T1")."""
    board = np.zeros((size, size), np.uint8)
    for color, value in (("black", 1), ("white", 2)):
        for vertex in stones.get(color, "").split():
            board.flat[from_gtp(vertex, size)] = value
    return board


def png_chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    """(type, data) of every chunk, checking each CRC on the way."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = [], 8
    while at < len(png):
        length = int.from_bytes(png[at:at + 4], "big")
        kind, data = png[at + 4:at + 8], png[at + 8:at + 8 + length]
        assert int.from_bytes(png[at + 8 + length:at + 12 + length], "big") == zlib.crc32(
            kind + data), f"bad CRC on {kind!r}"
        chunks.append((kind, data))
        at += 12 + length
    return chunks


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("px", PIXELS)
def test_png_is_valid_and_of_the_requested_size(size: int, px: int) -> None:
    board = board_with(size, black="A1 C3", white="B2")
    png = render_png(board, from_gtp("C3", size), px)
    chunks = png_chunks(png)
    assert [kind for kind, _ in chunks] == [b"IHDR", b"PLTE", b"IDAT", b"IEND"]
    width, height = (int.from_bytes(chunks[0][1][i:i + 4], "big") for i in (0, 4))
    assert (width, height) == (px, px)
    # zlib.decompress checks the Adler-32 of the pieces stitched together.
    raw = zlib.decompress(chunks[2][1])
    assert len(raw) == px * (px + 1)
    with Image.open(io.BytesIO(png)) as picture:
        assert picture.size == (px, px)
    assert decode(png).shape == (px, px, 3)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("px", PIXELS)
def test_grid_found_in_pixels_is_even_centred_and_matches_point_center(size: int, px: int) -> None:
    xs, ys = grid(size, px)
    assert len(xs) == size and len(ys) == size
    steps = np.diff(xs)
    assert steps.max() == steps.min() and list(np.diff(ys)) == list(steps)
    assert xs[-1] - xs[0] >= 0.75 * px  # the board fills the picture
    assert abs(xs[0] - (px - 1 - xs[-1])) <= 2 and abs(ys[0] - (px - 1 - ys[-1])) <= 2
    for row in range(size):
        for col in range(size):
            assert point_center((row, col), size, px) == (xs[col], ys[row])
            assert point_center(row * size + col, size, px) == (xs[col], ys[row])


def test_gtp_and_sgf_corners_land_where_coords_says() -> None:
    size, px = 19, 512
    board = np.zeros((size, size), np.uint8)
    board.flat[from_gtp("A19", size)] = 1  # top left
    board.flat[from_gtp("T1", size)] = 2  # bottom right
    board.flat[from_sgf("sa", size)] = 1  # SGF column s, row a: top right (T19)
    board.flat[from_sgf("as", size)] = 2  # bottom left (A1)
    image = decode(render_png(board, None, px))
    assert is_black_stone(image[off_centre(size, px, 0, 0)])
    assert is_white_stone(image[off_centre(size, px, 18, 18)])
    assert is_black_stone(image[off_centre(size, px, 0, 18)])
    assert is_white_stone(image[off_centre(size, px, 18, 0)])
    assert is_wood(image[off_centre(size, px, 0, 1)])  # B19 stays empty
    assert is_wood(image[off_centre(size, px, 9, 9)])


def test_board_is_wood_with_dark_lines() -> None:
    image = render_image(np.zeros((19, 19), np.uint8))
    xs, ys = grid(19, 512)
    assert is_wood(image[0, 0]) and is_wood(image[(ys[3] + ys[4]) // 2, (xs[3] + xs[4]) // 2])
    assert luma(image[ys[5], xs[7]]) < 90  # a line crossing
    assert luma(image[ys[5], (xs[7] + xs[8]) // 2]) < 90  # a line between crossings


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("px", (256, 512))
def test_star_points_are_dots_and_other_points_are_not(size: int, px: int) -> None:
    image = decode(render_png(np.zeros((size, size), np.uint8), None, px))
    xs, ys = grid(size, px)
    across = image[(ys[0] + ys[1]) // 2, xs[1] + 3:xs[3] - 2]  # crosses only the line at xs[2]
    line = int((across.astype(np.int32).sum(axis=1) < 3 * 100).sum())
    beside = line // 2 + 1
    stars = {from_gtp(vertex, size) for vertex in STARS[size]}
    for point in range(size * size):
        row, col = divmod(point, size)
        # One pixel diagonally off the lines: on a dot's disc, and wood elsewhere.
        pixel = image[ys[row] + beside, xs[col] + beside]
        if point in stars:
            assert luma(pixel) < 120, f"no star dot at {point}"
        else:
            assert is_wood(pixel), f"unexpected mark at {point}"


def ink_width(image: np.ndarray, y: int, right: int, half: int) -> int:
    """Width of the dark marks in rows y +- half, left of column ``right``."""
    band = image[y - half:y + half, :right].astype(np.int32).sum(axis=2)
    columns = np.flatnonzero((band < 3 * 120).any(axis=0))
    return int(columns[-1] - columns[0] + 1)


@pytest.mark.parametrize("size", (13, 19))
def test_side_labels_put_the_two_digit_number_at_the_top(size: int) -> None:
    image = render_image(np.zeros((size, size), np.uint8))
    xs, ys = grid(size, 512)
    half = (ys[1] - ys[0]) // 3
    top, bottom = (ink_width(image, y, xs[0] - half, half) for y in (ys[0], ys[-1]))
    assert top > 1.5 * bottom  # "19" (or "13") above, "1" below
    for x in xs:  # a letter above and below every line
        for band in (image[: ys[0] - half, x - half:x + half],
                     image[ys[-1] + half:, x - half:x + half]):
            assert (band.astype(np.int32).sum(axis=2) < 3 * 120).any()


@pytest.mark.parametrize("color,vertices", [(1, ("D4", "F4")), (2, ("D4", "F4"))])
def test_last_move_dot_shows_on_either_color(color: int, vertices: tuple[str, str]) -> None:
    board = np.zeros((19, 19), np.uint8)
    marked, plain = (from_gtp(vertex, 19) for vertex in vertices)
    board.flat[[marked, plain]] = color
    image = decode(render_png(board, marked))
    xs, ys = grid(19, 512)
    at_marked = image[ys[marked // 19], xs[marked % 19]]
    at_plain = image[ys[plain // 19], xs[plain % 19]]
    assert not np.array_equal(at_marked, at_plain)
    assert is_red(at_marked) and not is_red(at_plain)
    stone = is_black_stone if color == 1 else is_white_stone
    assert stone(image[off_centre(19, 512, marked // 19, marked % 19)])


def test_no_marker_for_none_pass_or_an_empty_last_move_point() -> None:
    board = board_with(19, black="D4 Q16", white="C3")
    plain = decode(render_png(board))
    assert np.array_equal(decode(render_png(board, PASS)), plain)
    assert np.array_equal(decode(render_png(board, from_gtp("K10", 19))), plain)
    assert not np.array_equal(decode(render_png(board, from_gtp("D4", 19))), plain)


@settings(max_examples=25, deadline=None)
@given(
    size=st.sampled_from(SIZES),
    px=st.sampled_from((256, 300, 512)),
    cells=st.lists(st.integers(0, 2), min_size=361, max_size=361),
    last=st.integers(-1, 360),
)
def test_png_equals_image_and_every_point_shows_its_stone(
        size: int, px: int, cells: list[int], last: int) -> None:
    board = np.array(cells[:size * size], np.uint8).reshape(size, size)
    last_move = last if last < size * size else PASS
    image = decode(render_png(board, last_move, px))
    assert np.array_equal(image, render_image(board, last_move, px))
    rows, cols = np.divmod(np.arange(size * size), size)
    ys, xs = zip(*(off_centre(size, px, r, c) for r, c in zip(rows, cols, strict=True)),
                 strict=True)
    for value, pixel in zip(board.reshape(-1), image[list(ys), list(xs)], strict=True):
        judge = {0: is_wood, 1: is_black_stone, 2: is_white_stone}[int(value)]
        assert judge(pixel), (value, pixel)


def real_games() -> list[Path]:
    """The first 19x19 pro game and the first 9x9 and 13x13 small-board games, by name."""
    picked: dict[int, Path] = {}
    for folder in ("pro19", "small-boards"):
        for path in sorted((REAL_SGF / folder).rglob("*.sgf")):
            try:
                size = sgf.Sgf_game.from_bytes(path.read_bytes()).get_size()
            except ValueError:
                continue
            picked.setdefault(size, path)
    return [picked[size] for size in SIZES]


@requires_real_sgf
def test_real_games_replayed_move_by_move_match_sgfmill_everywhere() -> None:
    for path in real_games():
        game = sgf.Sgf_game.from_bytes(path.read_bytes())
        size = game.get_size()
        start, plays = sgf_moves.get_setup_and_moves(game)
        theirs = boards.Board(size)
        for color, (row, col) in start.list_occupied_points():
            theirs.play(row, col, color)
        spots = [off_centre(size, 512, r, c) for r in range(size) for c in range(size)]
        ys, xs = (list(axis) for axis in zip(*spots, strict=True))
        for color, move in plays[:120]:
            last_move = PASS
            if move is not None:
                theirs.play(move[0], move[1], color)
                last_move = (size - 1 - move[0]) * size + move[1]  # sgfmill row 0 is the bottom
            ours = np.zeros((size, size), np.uint8)
            for stone, (row, col) in theirs.list_occupied_points():
                ours[size - 1 - row, col] = 1 if stone == "b" else 2
            image = decode(render_png(ours, last_move))
            for value, pixel in zip(ours.reshape(-1), image[ys, xs], strict=True):
                judge = {0: is_wood, 1: is_black_stone, 2: is_white_stone}[int(value)]
                assert judge(pixel), f"{path.name}: {value} shows as {pixel}"
            if last_move != PASS:
                x, y = point_center(last_move, size, 512)
                assert is_red(image[y, x]), f"{path.name}: no dot on the last move"


@pytest.mark.parametrize(
    "board,last_move,px,words",
    [
        (np.zeros((19, 18), np.uint8), None, 512, "square 2-D"),
        ([[0] * 19] * 19, None, 512, "numpy array"),
        (np.zeros((19, 19), np.float32), None, 512, "dtype float32"),
        (board_with(19, black="A1") * 3, None, 512, "holds 3 at (18, 0)"),
        (np.zeros((19, 19), np.uint8), 361, 512, "last_move 361"),
        (np.zeros((19, 19), np.uint8), None, 60, "size_px 60"),
        (np.zeros((19, 19), np.uint8), None, 9000, "size_px 9000"),
        (np.zeros((1, 1), np.uint8), None, 512, "board size 1"),
        (np.zeros((26, 26), np.uint8), None, 512, "board size 26"),
    ],
)
def test_bad_input_is_one_clear_line(board, last_move, px: int, words: str) -> None:
    for draw in (render_png, render_image):
        with pytest.raises(RenderError) as caught:
            draw(board, last_move, px)
        message = str(caught.value)
        assert words in message and "\n" not in message


def test_point_center_refuses_points_off_the_board() -> None:
    for where in (361, PASS, (19, 0), (0, -1)):
        with pytest.raises(RenderError, match="off a 19x19 board"):
            point_center(where, 19, 512)


def test_mark_draws_a_ring_or_a_cross_on_a_copy() -> None:
    image = render_image(board_with(19, black="K10"))
    before = image.copy()
    target = from_gtp("Q4", 19)
    x, y = point_center(target, 19, 512)
    step = grid(19, 512)[0][1] - grid(19, 512)[0][0]

    def blue(patch: np.ndarray) -> bool:
        rgb = patch.reshape(-1, 3).astype(np.int32)
        return bool(((rgb[:, 2] > 200) & (rgb[:, 0] < 60)).any())

    ringed = mark(image, target, 19, color=(0, 150, 255))
    assert np.array_equal(image, before)
    reach = int(step * 0.42)
    assert blue(ringed[y - 2:y + 3, x + reach - 2:x + reach + 3])  # on the ring
    assert not blue(ringed[y - 2:y + 3, x - 2:x + 3])  # the middle stays clear
    crossed = mark(image, (15, 15), 19, color=(0, 150, 255), cross=True)
    assert blue(crossed[y - 2:y + 3, x - 2:x + 3])
    assert not blue(crossed[y - 2:y + 3, x + reach - 2:x + reach + 3])


def test_caption_adds_a_text_band_underneath() -> None:
    image = render_image(np.zeros((9, 9), np.uint8), None, 256)
    captioned = caption(image, "#7  black to play\ntarget E5")
    assert captioned.shape[1] == 256 and captioned.shape[0] > 256 + 20
    assert np.array_equal(captioned[:256], image)
    band = captioned[256:].astype(np.int32).sum(axis=2)
    assert (band < 3 * 80).sum() > 50  # text
    assert (band > 3 * 250).mean() > 0.7  # on white
    marked = mark(captioned, from_gtp("E5", 9), 9)  # marks still land on a captioned picture
    assert not np.array_equal(marked[:256], image)


def test_contact_sheet_lays_pictures_out_in_rows() -> None:
    images = []
    for i in range(5):
        board = np.zeros((9, 9), np.uint8)
        board.flat[i * 10] = 1
        images.append(render_image(board, None, 128))
    sheet = decode(contact_sheet(images, cols=3))
    height, width = sheet.shape[:2]
    assert 3 * 128 <= width < 4 * 128 and 2 * 128 <= height < 3 * 128
    cell_w, cell_h = width // 3, height // 2
    for i, image in enumerate(images):
        top, left = (i // 3) * cell_h, (i % 3) * cell_w
        found = [
            (dy, dx)
            for dy in range(cell_h - 128 + 1)
            for dx in range(cell_w - 128 + 1)
            if np.array_equal(sheet[top + dy:top + dy + 128, left + dx:left + dx + 128], image)
        ]
        assert found, f"picture {i} is not in its cell"
    with pytest.raises(RenderError):
        contact_sheet([], cols=3)
