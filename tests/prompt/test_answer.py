"""Replies read as moves: the export's own spellings exactly, chatty replies by their
first token that spells a move, and no guess from a reply without one."""

import pytest

from orchestrator.coords import PASS, from_gtp, from_rowcol, from_sgf, move_to_text
from orchestrator.prompt import read_move, unparsed_detail


@pytest.mark.parametrize("spelling", ["gtp", "sgf", "rowcol"])
def test_every_point_and_pass_as_the_export_writes_them(spelling):
    for point in [*range(19 * 19), PASS]:
        assert read_move(move_to_text(point, 19, spelling), 19, spelling) == point


@pytest.mark.parametrize(("text", "spelling", "expected"), [
    ("I play Q16.", "gtp", from_gtp("Q16", 19)),
    ("**q16**", "gtp", from_gtp("Q16", 19)),
    ("Move: D4\nbecause it is a corner", "gtp", from_gtp("D4", 19)),
    ("pass", "gtp", PASS),
    ("I will Pass now", "gtp", PASS),
    ("[pd]", "sgf", from_sgf("pd", 19)),
    ("answer: (3, 15)", "rowcol", from_rowcol(3, 15, 19)),
    ("Z99 then Q16", "gtp", from_gtp("Q16", 19)),  # off-board words are skipped
])
def test_the_first_token_that_spells_a_move(text, spelling, expected):
    assert read_move(text, 19, spelling) == expected


@pytest.mark.parametrize(("text", "spelling"), [
    ("", "gtp"), ("I don't know", "gtp"), ("19,19", "rowcol"), ("T20", "gtp"),
])
def test_no_move_reads_as_none(text, spelling):
    assert read_move(text, 19, spelling) is None


def test_unparsed_detail_is_one_line_of_at_most_80_characters_of_the_reply():
    assert unparsed_detail("no\nmove  here") == "unparsed: no move here"
    long = "x" * 200
    assert unparsed_detail(long) == "unparsed: " + "x" * 80 + "…"
