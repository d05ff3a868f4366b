"""GO19 requests built by hand, byte by byte, for the tests that send what go19's own client
never would (a length that lies, a header alone, a board byte out of range): the one builder,
so that each test says only what it changes (docs/DESIGN.md, "GO19 wire format")."""

from __future__ import annotations


def request_prefix(body_len: int) -> bytes:
    """A request's first 8 bytes: ``"GO19"`` and the body's length."""
    return b"GO19" + body_len.to_bytes(4, "big")


def request_head(size: int = 19, side: int = 1, png_len: int = 0, *,
                 body_len: int | None = None) -> bytes:
    """A request up to its PNG: the prefix and the body's header (size, ai_side, png_len);
    ``body_len`` by default the one they add up to, ``6 + png_len + size * size``."""
    if body_len is None:
        body_len = 6 + png_len + size * size
    return request_prefix(body_len) + bytes((size, side)) + png_len.to_bytes(4, "big")


def request_frame(board: bytes, png: bytes = b"", size: int = 19, side: int = 1) -> bytes:
    """A whole request (the board's bytes as given, row-major)."""
    return request_head(size, side, len(png)) + png + board
