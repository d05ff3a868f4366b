"""Bytes that came from outside go19's own process, decoded within bounds: a server's HTTP
reply, a client's request, a file a user names. Each reader raises one ``ValueError``
subclass whose text fits on one line, and nothing else, whatever the bytes are.

- JSON (:func:`read_json`): at most ``limit`` bytes, nested at most :data:`MAX_JSON_DEPTH`
  levels. The standard library's ``json`` recurses once per level and raises
  ``RecursionError`` (not a ``ValueError``) for about a thousand ``[``, which no caller
  expected; pydantic-core's parser stops at its recursion limit with a ``ValueError``.
- Pictures (:func:`open_png`): PNG and nothing else, at most ``max_pixels`` pixels, checked
  from the header before a pixel is decoded. Pillow's ``Image.open`` tries every format it
  knows; for EPS it starts Ghostscript on the bytes (a ``{ } loop`` of 150 bytes kept a
  server's core busy for ever).
"""

from __future__ import annotations

import io
from typing import Any

import pydantic_core
from PIL import Image, UnidentifiedImageError

MAX_JSON_DEPTH = 200  # pydantic-core's own recursion limit (JSON nested deeper is refused)
_SHOWN = 80  # characters of a parser's message in an error's text


class BadJson(ValueError):
    """Not JSON, over its byte bound, or nested too deep."""


class BadPicture(ValueError):
    """Not a PNG, over its pixel bound, or a PNG that does not decode."""


def read_json(data: bytes | bytearray | str, limit: int | None) -> Any:
    """The JSON value in ``data`` (UTF-8), at most ``limit`` bytes long (None: the caller
    bounded the bytes as they came in) and :data:`MAX_JSON_DEPTH` levels deep; BadJson
    otherwise."""
    if limit is not None:
        size = len(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
        if size > limit:
            raise BadJson(f"{size} bytes, over the {limit}-byte bound")
    try:
        return pydantic_core.from_json(data)
    except ValueError as exc:  # pydantic-core's one error type, depth included
        text = " ".join(str(exc).split())
        if "recursion limit" in text:
            raise BadJson(f"nested deeper than {MAX_JSON_DEPTH} levels") from None
        raise BadJson(text[:_SHOWN]) from None


def open_png(data: bytes, max_pixels: int) -> Image.Image:
    """``data`` decoded as a PNG of at most ``max_pixels`` pixels (the image loaded, in its
    own mode); BadPicture for anything else, no other format even tried."""
    try:
        image = Image.open(io.BytesIO(data), formats=["PNG"])
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        raise BadPicture("not a PNG") from None
    except Image.DecompressionBombError as exc:  # Pillow's own bound, far above ours
        raise BadPicture(str(exc)[:_SHOWN]) from None
    width, height = image.size
    if width * height > max_pixels:
        raise BadPicture(f"the PNG is {width}x{height} pixels, over the {max_pixels} "
                         "pixels allowed")
    try:
        image.load()
    except Exception as exc:  # Pillow's many ways of saying a PNG is broken
        raise BadPicture(f"the PNG does not decode: {' '.join(str(exc).split())[:_SHOWN]}"
                         ) from None
    return image
