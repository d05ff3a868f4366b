"""A compiled step 2 of SGF reading for the dataset build (numba, the ``fast`` extra).

:func:`main_lines` gives exactly :func:`orchestrator.sgf.grammar.main_lines`'s nodes (or
its :class:`~orchestrator.sgf.Truncated`) from one pass over the text's code points: the
grammar's token regex, its main-line walk and its game starts, done in a loop that
costs about a nanosecond a character, where the regex costs twenty and hands back a
tuple per token. Python then only builds the main lines' nodes.

The regex stays the reference: without numba, for texts over :data:`MAX_CHARS`
characters (the loop's arrays cost 27 bytes a character; the grammar streams), and for
any text where a token would start with a non-ASCII character (the regex's ``\\s`` and
``str.isalpha`` know Unicode, this loop does not), :func:`main_lines` is the grammar's
own. The nodes are built by the grammar's rules of what a node keeps. Non-ASCII characters
inside ``[values]`` are fine: both read them the same way. tests/dataset/
tests/sgf/test_fastgrammar.py checks the two agree on the whole real corpus and on random text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from orchestrator.sgf import grammar
from orchestrator.sgf.grammar import Node
from orchestrator.sgf.model import Truncated

njit: Callable[..., Any] | None
try:
    import numba

    njit = numba.njit
except ImportError:  # the regex only
    njit = None

# Tokens (pass 1) and the main line's events (pass 2). An unclosed value (the rest of
# the text) counts for nothing: the grammar drops it, and the tree around it is truncated.
_RUN, _VALUE, _NAME, _SEMI, _OPEN, _CLOSE, _STRAY, _UNCLOSED = range(8)
_NODE, _END = 8, 9
_BAIL, _TRUNCATED = -1, -2


def _space(c: int) -> bool:
    """The regex's ``\\s`` on ASCII (``str.isspace``: 0x1c-0x1f are separators too)."""
    return c == 32 or 9 <= c <= 13 or 28 <= c <= 31


def _letter(c: int) -> bool:
    return 65 <= c <= 90 or 97 <= c <= 122


def _digit(c: int) -> bool:
    return 48 <= c <= 57


def _unit(b: Any, p: int, n: int, timed: bool) -> int:
    """The end of one plain move node at ``p`` (``;B[pd]``, with timed: then any
    ``BL[..]WL[..]OB[..]OW[..]``), its trailing space included; -1 if there is none."""
    if p >= n or b[p] != 59:  # ;
        return -1
    q = p + 1
    while q < n and _space(b[q]):
        q += 1
    if q + 1 >= n or (b[q] != 66 and b[q] != 87) or b[q + 1] != 91:  # B or W, [
        return -1
    q += 2
    k = 0
    while k < 2 and q < n and _letter(b[q]):
        q += 1
        k += 1
    if q >= n or b[q] != 93:  # ]
        return -1
    q += 1
    while timed:
        r = q
        while r < n and _space(b[r]):
            r += 1
        if r + 2 >= n or b[r + 2] != 91:
            break
        if not ((b[r + 1] == 76 and (b[r] == 66 or b[r] == 87))  # BL WL
                or (b[r] == 79 and (b[r + 1] == 66 or b[r + 1] == 87))):  # OB OW
            break
        r += 3
        while r < n and (_digit(b[r]) or b[r] == 46):
            r += 1
        if r >= n or b[r] != 93:
            break
        q = r + 1
    while q < n and _space(b[q]):
        q += 1
    return q


def _run(b: Any, p: int, n: int, timed: bool) -> int:
    """The end of the run of plain move nodes at ``p``, as the regex's greedy
    ``(?:unit)+(?=[;()])`` finds it: all the units, else all but the last (the next
    unit's ``;`` satisfies the look-ahead); -1 if not even one unit fits."""
    last = prev = -1
    q = p
    while True:
        end = _unit(b, q, n, timed)
        if end < 0:
            break
        prev, last, q = last, end, end
    if last >= 0 and last < n and (b[last] == 59 or b[last] == 40 or b[last] == 41):
        return last
    return prev


def _tokens(b: Any, kinds: Any, starts: Any, ends: Any) -> int:
    """Pass 1: the grammar's ``_TOKEN_RE.findall``, as kinds and spans; the token count,
    or _BAIL where a token would start with a non-ASCII character."""
    n = b.shape[0]
    i = t = 0
    while True:
        while i < n and _space(b[i]):
            i += 1
        if i >= n:
            return t
        c = b[i]
        if c > 127:
            return _BAIL
        end = i + 1
        kind = _STRAY
        if c == 59:  # ;
            kind = _SEMI
            run = _run(b, i, n, False)
            if run < 0:
                run = _run(b, i, n, True)
            if run >= 0:
                kind, end = _RUN, run
        elif c == 91:  # [: a value up to its unescaped ], else the rest of the text
            kind, end = _UNCLOSED, n
            j = i + 1
            while j < n:
                if b[j] == 93:
                    kind, end = _VALUE, j + 1
                    break
                j += 2 if b[j] == 92 else 1
        elif c == 40:
            kind = _OPEN
        elif c == 41:
            kind = _CLOSE
        elif _letter(c):
            kind = _NAME
            while end < n and (_letter(b[end]) or _digit(b[end])):
                end += 1
        kinds[t] = kind
        starts[t] = i
        ends[t] = end
        t += 1
        i = end


def _named(b: Any, start: int, end: int) -> bool:
    """A name that keeps a letter once its lower case is dropped (FF[1-3] ``SiZe``)."""
    for i in range(start, end):
        if not 97 <= b[i] <= 122:
            return True
    return False


def _lines(b: Any, out: Any, lo: Any, hi: Any) -> int:
    """Pass 2: the grammar's ``main_lines`` walk over pass 1's tokens; events (a run, a
    node, a name, a value, the end of a game) in ``out`` with their spans; the count,
    _BAIL or _TRUNCATED."""
    n = b.shape[0]
    kinds = np.empty(n, np.uint8)
    starts = np.empty(n, np.int32)
    ends = np.empty(n, np.int32)
    count = _tokens(b, kinds, starts, ends)
    if count < 0:
        return count
    e = 0
    i = 0
    while i < count:
        if kinds[i] != _OPEN or i + 1 >= count:
            i += 1
            continue
        nxt = kinds[i + 1]
        if not (nxt == _RUN or nxt == _SEMI
                or (nxt == _NAME and i + 2 < count and kinds[i + 2] == _VALUE)):
            i += 1
            continue
        props = values = False
        on_main = True
        depth = 0
        j = i
        while True:
            if j >= count:
                return _TRUNCATED
            k = kinds[j]
            if k == _RUN:
                values = props = False
                if on_main:
                    out[e], lo[e], hi[e] = _RUN, starts[j], ends[j]
                    e += 1
            elif k == _VALUE:
                if values:
                    out[e], lo[e], hi[e] = _VALUE, starts[j] + 1, ends[j] - 1
                    e += 1
            elif k == _SEMI:
                values = False
                if on_main:
                    props = True
                    out[e] = _NODE
                    e += 1
            elif k == _OPEN:
                values = False
                depth += 1
            elif k == _CLOSE:
                values = props = False
                on_main = False
                depth -= 1
                if depth == 0:
                    break
            elif k == _NAME:
                values = False
                if on_main and _named(b, starts[j], ends[j]):
                    if not props:
                        props = True
                        out[e] = _NODE
                        e += 1
                    out[e], lo[e], hi[e] = _NAME, starts[j], ends[j]
                    e += 1
                    values = True
            j += 1
        out[e] = _END
        e += 1
        i = j + 1
    return e


ENABLED = njit is not None
if njit is not None:
    _space = njit(cache=True, nogil=True)(_space)
    _letter = njit(cache=True, nogil=True)(_letter)
    _digit = njit(cache=True, nogil=True)(_digit)
    _unit = njit(cache=True, nogil=True)(_unit)
    _run = njit(cache=True, nogil=True)(_run)
    _tokens = njit(cache=True, nogil=True)(_tokens)
    _named = njit(cache=True, nogil=True)(_named)
    _lines = njit(cache=True, nogil=True)(_lines)

# The kernel's arrays take 27 bytes a character (spans as int32): texts longer than this
# go to the grammar, which reads them as it goes. Real game records are far shorter.
MAX_CHARS = 1 << 20
_CHUNK = 1 << 16  # events turned into Python values at a time


def main_lines(text: str) -> list[list[Node]]:
    """``grammar.main_lines(text)``, the compiled way where it can be."""
    if not ENABLED or len(text) > MAX_CHARS:
        return grammar.main_lines(text)
    if text.isascii():
        b = np.frombuffer(text.encode("ascii"), np.uint8)
    else:
        b = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    size = 2 * b.shape[0] + 1  # at most a node and a name per character, and an end
    out = np.empty(size, np.uint8)
    lo = np.empty(size, np.int32)
    hi = np.empty(size, np.int32)
    count = _lines(b, out, lo, hi)
    if count == _BAIL:
        return grammar.main_lines(text)
    if count == _TRUNCATED:
        raise Truncated("the file ends inside a game tree (missing ')')")
    return _nodes(text, out[:count], lo[:count], hi[:count])


def _nodes(text: str, out: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> list[list[Node]]:
    """The events as the grammar's nodes, with its rules of what a node keeps
    (:func:`grammar.kept`): the same loop as ``grammar._read_tree``, over events."""
    games: list[list[Node]] = []
    nodes: list[Node] = []
    props: dict[str, list[str]] | None = None
    name: str | None = None
    for at in range(0, len(out), _CHUNK):
        chunk = zip(out[at:at + _CHUNK].tolist(), lo[at:at + _CHUNK].tolist(),
                    hi[at:at + _CHUNK].tolist(), strict=True)
        for kind, start, end in chunk:
            if kind == _VALUE:
                if name is not None:
                    assert props is not None
                    values = props.get(name)
                    if values is None:
                        props[name] = [text[start:end]]
                        if len(nodes) == 1 and len(props) > grammar.MAX_ROOT_PROPERTIES:
                            raise grammar.too_many_properties()
                    elif name in grammar.LISTS:
                        values.append(text[start:end])
                continue
            name = None
            if kind == _NAME:
                spelled = grammar.property_name(text[start:end])
                if props is None:
                    props = {}
                    nodes.append(props)
                if len(nodes) == 1 or spelled in grammar.MOVE_NODE:
                    name = spelled
                continue
            if props is not None:
                nodes[-1] = grammar.kept(props, len(nodes) == 1)
                props = None
            if kind == _RUN:
                nodes.append(text[start:end])
            elif kind == _NODE:
                props = {}
                nodes.append(props)
            else:  # the end of a game tree
                if nodes:
                    games.append(nodes)
                nodes = []
    return games
