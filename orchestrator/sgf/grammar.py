"""Step 2 of reading: text to the main-line nodes of each game tree, nothing interpreted
but what a node keeps.

A node keeps what step 3 reads, so that a file's cost is its games, not its bytes
(a 50 MB file of 12.5 million ``C[1]`` held 2.8 GB): the root keeps every property
with a value; a later node only its moves and setup (``B``, ``W``, ``AB``, ``AW``,
``AE``) and, beside them, ``C``, ``GOXIXSRC`` and ``GOXIXMS`` (a node with none of the
first five is :data:`EMPTY`, one shared dict). A property keeps its first value only,
but for the point lists ``AB``, ``AW`` and ``AE`` (every value counts), and a name
repeated in a node adds nothing more than that. A root with more than
:data:`MAX_ROOT_PROPERTIES` properties is not a game record (:class:`Unparseable`).

Tokens are read as they are needed (the regex's ``finditer``) for texts over
:data:`STREAM_CHARS` characters, all at once (``findall``, faster) below.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import chain

from orchestrator.sgf.model import (
    LATENCY_PROP,
    REPLY_PROP,
    SOURCE_PROP,
    Truncated,
    Unparseable,
)

# One token is either a run of plain move nodes (``;B[pd];W[dp]``, or with the
# servers' time left ``BL[1797]WL[1795]``, which go19 does not keep: most of any
# file, matched in C and split in bulk; the timeless form is tried first because
# it is twice as fast) or one of: a whole
# [value], a property name, a delimiter, an unclosed [value (it swallows the rest,
# so a truncated file costs one scan), one stray character.
_TOKEN_RE = re.compile(
    r"\s*(?:((?:;\s*[BW]\[[a-zA-Z]{0,2}\]\s*)+(?=[;()])"
    r"|(?:;\s*[BW]\[[a-zA-Z]{0,2}\](?:\s*(?:[BW]L|O[BW])\[[0-9.]*\])*\s*)+(?=[;()]))"
    r"|(\[[^\\\]]*(?:\\.[^\\\]]*)*\]|[A-Za-z][A-Za-z0-9]*|[;()]|\[.*|\S))",
    re.S,
)
RUN_MOVE_RE = re.compile(r";\s*([BW]\[[a-zA-Z]*\])")
_VALUE_RE = re.compile(r"\[[^\\\]]*(?:\\.[^\\\]]*)*\]", re.S)
_LOWER = str.maketrans("", "", "abcdefghijklmnopqrstuvwxyz")

# A main-line node: its properties, or the text of a run of plain move nodes.
Node = dict[str, list[str]] | str
Token = tuple[str, str]

STREAM_CHARS = 1 << 20
MAX_ROOT_PROPERTIES = 1000
# What a node after the root keeps (MOVE_NODE) and what makes it worth keeping (PLAYED).
PLAYED = frozenset({"B", "W", "AB", "AW", "AE"})
MOVE_NODE = PLAYED | {"C", SOURCE_PROP, LATENCY_PROP, REPLY_PROP}
LISTS = frozenset({"AB", "AW", "AE"})  # every value counts
EMPTY: dict[str, list[str]] = {}  # shared: never written to


def property_name(token: str) -> str:
    """The name as step 3 knows it: FF[1-3] lower-case letters dropped (``SiZe`` is
    ``SZ``); empty when nothing is left."""
    return token if token.isupper() else token.translate(_LOWER)


def kept(node: dict[str, list[str]], root: bool) -> dict[str, list[str]]:
    """A finished node as it stays on the main line (see the module's docstring)."""
    if root or not PLAYED.isdisjoint(node):
        return node
    return EMPTY


def too_many_properties() -> Unparseable:
    return Unparseable(f"the root node holds over {MAX_ROOT_PROPERTIES} properties: not a "
                       "game record")


def _read_tree(tokens: Iterator[Token], start: Iterable[Token]) -> list[Node]:
    """The main-line nodes of the game tree whose ``(`` was just read, ``start`` being the
    tokens read after it to know it is one; ``tokens`` is left after its closing ``)``.
    The main line ends at the first ``)``."""
    nodes: list[Node] = []
    props: dict[str, list[str]] | None = None  # the node being read, on the main line
    name: str | None = None  # whose values the next [value]s are
    on_main = True
    depth = 1
    for run, tok in chain(start, tokens):
        if run:
            name = None
            if props is not None:
                nodes[-1] = kept(props, len(nodes) == 1)
                props = None
            if on_main:
                nodes.append(run)
            continue
        c = tok[0]
        if c == "[":
            if name is not None:
                assert props is not None
                values = props.get(name)
                if values is None:
                    props[name] = [tok[1:-1]]
                    if len(nodes) == 1 and len(props) > MAX_ROOT_PROPERTIES:
                        raise too_many_properties()
                elif name in LISTS:
                    values.append(tok[1:-1])
        elif c == ";":
            name = None
            if props is not None:
                nodes[-1] = kept(props, len(nodes) == 1)
                props = None
            if on_main:
                props = {}
                nodes.append(props)
        elif c == "(" or c == ")":
            name = None
            if c == "(":
                depth += 1
                continue
            if props is not None:
                nodes[-1] = kept(props, len(nodes) == 1)
                props = None
            on_main = False
            depth -= 1
            if depth == 0:
                return nodes
        elif c.isalpha():
            name = None
            if on_main:
                spelled = property_name(tok)
                if spelled:
                    if props is None:  # a property outside any node: the node starts here
                        props = {}
                        nodes.append(props)
                    if len(nodes) == 1 or spelled in MOVE_NODE:
                        name = spelled
        # Anything else is a stray character: skipped, as most readers do.
    raise Truncated("the file ends inside a game tree (missing ')')")


def _tokens(text: str) -> Iterator[Token]:
    if len(text) <= STREAM_CHARS:
        return iter(_TOKEN_RE.findall(text))
    return (match.groups() for match in _TOKEN_RE.finditer(text))  # type: ignore[misc]


def main_lines(text: str) -> list[list[Node]]:
    """The main line of every game tree in ``text``. A ``(`` opens a game when followed by
    ``;`` (or a run of moves), or (Nihon Kiin exports, which leave out the root's ``;``)
    by a property with a whole value."""
    tokens = _tokens(text)
    games = []
    token = next(tokens, None)
    while token is not None:
        if token[1] != "(":
            token = next(tokens, None)
            continue
        first = next(tokens, None)
        if first is None:
            break
        start: tuple[Token, ...] | None = None
        if first[0] or first[1] == ";":
            start = (first,)
        elif first[1][:1].isalpha():
            second = next(tokens, None)
            if second is None:
                break
            # Only the last token can be an unclosed value; it opens no game.
            if second[1][:1] == "[" and _VALUE_RE.fullmatch(second[1]):
                start = (first, second)
            else:
                token = second
                continue
        if start is None:
            token = first  # perhaps a "(" itself
            continue
        nodes = _read_tree(tokens, start)
        if nodes:
            games.append(nodes)
        token = next(tokens, None)
    return games
