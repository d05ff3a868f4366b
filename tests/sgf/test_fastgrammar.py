"""The compiled main-line reader (orchestrator.sgf.fastgrammar) gives the grammar's
nodes, in the same order, or its error, for every text: the whole real corpus and
random SGF-like text full of runs, time-left properties, escapes, unclosed values,
variations, lower-case names, stray and non-ASCII characters and Unicode spaces."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from orchestrator.dataset.sources import find_sgf_files
from orchestrator.files import read_sgf_file
from orchestrator.sgf import SgfError, decode_text, fastgrammar, grammar
from tests.conftest import REAL_SGF, requires_real_sgf

pytestmark = pytest.mark.skipif(
    not fastgrammar.ENABLED,
    reason="numba is not installed (pip install 'go19[fast]'): the regex is all there is")


def _outcome(lines, text: str) -> object:
    """The main lines with each node's properties in order, or the error."""
    try:
        games = lines(text)
    except SgfError as exc:
        return type(exc), str(exc)
    return [[node if isinstance(node, str) else list(node.items()) for node in nodes]
            for nodes in games]


def _assert_same(text: str) -> object:
    expected = _outcome(grammar.main_lines, text)
    assert _outcome(fastgrammar.main_lines, text) == expected
    return expected


@requires_real_sgf
def test_whole_real_corpus() -> None:
    files, _ = find_sgf_files([REAL_SGF])
    games = truncated = 0
    for path in files:
        data = path.read_bytes()
        result = _assert_same(decode_text(data)[0])
        games += len(result) if isinstance(result, list) else 0
        truncated += not isinstance(result, list)
        try:
            expected = [(g, g.sha1, g.game_index) for g in read_sgf_file(path)]
        except SgfError as exc:
            with pytest.raises(type(exc)) as raised:
                read_sgf_file(path, lines=fastgrammar.main_lines)
            assert str(raised.value) == str(exc)
            continue
        fast = read_sgf_file(path, lines=fastgrammar.main_lines)
        assert [(g, g.sha1, g.game_index) for g in fast] == expected, path
        assert [list(g.root_props) for g in fast] == [list(g.root_props) for g, _, _ in expected]
    assert games > 800 and truncated >= 1


_PIECES = [
    "(", ")", ";", "[", "]", "\\", "\\]", ":", ".", "9", "19", "é", "中", "[中]", "[a\\]b]",
    "[\\\\]", "B", "W", "B[pd]", "W[dp]", "B[]", "W[tt]", "B[p]", "B[pdq]", "B[P1]", ";B[pd]",
    ";W[dp]", ";B[aa]", ";W[bb]", ";B[]", ";W[pdq]", "BL[12.5]", "WL[3]", "OB[2]", "OW[]", "BL[x]",
    "SZ[19]", "SiZe", "abc", "GM[1]", "AB[aa][bb]", "C[hi]", "x", "Z9", "(;", ")(", "((",
]
# Between pieces: nothing, or one of the regex's \s (ASCII and Unicode) or a near miss.
_GAPS = ["", "", "", " ", "\n", "\r", "\t", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f",
         "\x85", "\xa0", "\u2003", "\u3000", "\x1b", "\x7f", "\x00"]


@st.composite
def _sgf_like(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(st.sampled_from(_PIECES), max_size=40))
    gaps = draw(st.lists(st.sampled_from(_GAPS), min_size=len(pieces), max_size=len(pieces)))
    return "".join(piece + gap for piece, gap in zip(pieces, gaps, strict=True))


@settings(max_examples=600, deadline=None, derandomize=True)
@given(_sgf_like())
@example("(;B[pd];W[dp]BL[1];B[aa]WL[2]OB[3](;W[bb]))")
@example("(;GM[1];B[pd]\u3000;W[dp])")
@example("(;B[pd]\x1f;W[dp] BL[5]\x1c)")
@example("(;B[pd](;W[aa])(;B[cc]))")
@example("(;GM[1];B[pd](C[x]))")
@example("(;C[a\\]b]GM[1];C[\\\\]B[aa])")
@example("(;abc[x]B[pd];B[pd];W[pdq];B[aa])")
@example("(SZ[9];B[aa]")
@example("(;C[unclosed \\")
def test_random_text(text: str) -> None:
    _assert_same(text)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(alphabet="()[];\\BWLOaZ1. \n\x1f\u2003é", max_size=80))
def test_random_characters(text: str) -> None:
    _assert_same(text)
