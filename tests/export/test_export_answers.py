"""The answer spellings of `go19 dataset export --answer`: every one of the 362 moves of
a 19x19 board reads back to itself in each, landmarks are where docs/formats.md says,
and text that names no move is refused."""

from __future__ import annotations

import pytest

from orchestrator.coords import (
    MOVE_TEXTS,
    PASS,
    CoordinateError,
    from_gtp,
    move_from_text,
    move_to_text,
)

ALL_MOVES = [*range(19 * 19), PASS]


@pytest.mark.parametrize("spelling", MOVE_TEXTS)
def test_every_move_round_trips(spelling: str) -> None:
    texts = [move_to_text(point, 19, spelling) for point in ALL_MOVES]
    assert len(set(texts)) == 362  # no two moves share a spelling
    assert [move_from_text(text, 19, spelling) for text in texts] == ALL_MOVES
    # What a model writes back may differ in case and spaces.
    assert [move_from_text(f"  {t.upper()} ", 19, spelling) for t in texts] == ALL_MOVES


@pytest.mark.parametrize(("vertex", "gtp", "sgf", "rowcol"), [
    ("A19", "A19", "aa", "0,0"),  # top left: row 0, column 0
    ("T19", "T19", "sa", "0,18"),
    ("A1", "A1", "as", "18,0"),
    ("Q16", "Q16", "pd", "3,15"),  # the upper right star point; GTP has no I
    ("J10", "J10", "ij", "9,8"),  # J is the 9th GTP column (no I), SGF i
])
def test_landmarks(vertex: str, gtp: str, sgf: str, rowcol: str) -> None:
    point = from_gtp(vertex, 19)
    assert [move_to_text(point, 19, s) for s in MOVE_TEXTS] == [gtp, sgf, rowcol]
    assert move_from_text("(3, 15)", 19, "rowcol") == from_gtp("Q16", 19)


@pytest.mark.parametrize(("spelling", "text"), [
    ("gtp", "I5"), ("gtp", "Z19"), ("gtp", ""), ("sgf", "zz"), ("sgf", ""),
    ("rowcol", "19,0"), ("rowcol", "3"), ("rowcol", "a,b"), ("rowcol", "-1,2"),
])
def test_text_that_names_no_move_is_refused(spelling: str, text: str) -> None:
    with pytest.raises(CoordinateError):
        move_from_text(text, 19, spelling)


def test_unknown_spelling_is_refused() -> None:
    with pytest.raises(CoordinateError, match="unknown move spelling"):
        move_to_text(0, 19, "xy")
