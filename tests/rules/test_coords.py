"""coords.py: the landmarks of its docstring table, and every conversion's round trip."""

from __future__ import annotations

import pytest

from orchestrator.coords import (
    PASS,
    CoordinateError,
    from_go19,
    from_gtp,
    from_index,
    from_sgf,
    to_go19,
    to_gtp,
    to_index,
    to_sgf,
)


def test_landmarks_on_19x19() -> None:
    # top-left, top-right, bottom-left, pass: the table in the module docstring.
    points = [0, 18, 18 * 19, PASS]
    assert [to_index(p, 19) for p in points] == [0, 18, 342, 361]
    assert [to_sgf(p, 19) for p in points] == ["aa", "sa", "as", ""]
    assert [to_gtp(p, 19) for p in points] == ["A19", "T19", "A1", "pass"]
    assert [to_go19(p, 19) for p in points] == [(0, 0), (0, 18), (18, 0), (255, 255)]


@pytest.mark.parametrize("size", [2, 9, 13, 19, 20, 25])
def test_every_point_round_trips(size: int) -> None:
    for point in (*range(size * size), PASS):
        assert from_index(to_index(point, size), size) == point
        assert from_sgf(to_sgf(point, size), size) == point
        assert from_gtp(to_gtp(point, size), size) == point
        assert from_go19(*to_go19(point, size), size) == point
    assert sorted(to_index(p, size) for p in (*range(size * size), PASS)) == list(
        range(size * size + 1)
    )


def test_tt_is_a_pass_only_up_to_19x19() -> None:
    assert from_sgf("tt", 19) == PASS
    assert from_sgf("tt", 20) == 19 * 20 + 19
    assert to_sgf(51 * 52 + 51, 52) == "ZZ"


@pytest.mark.parametrize("index", [-1, 362])
def test_an_index_off_the_board_is_refused(index: int) -> None:
    with pytest.raises(CoordinateError, match="off a 19x19"):
        from_index(index, 19)
