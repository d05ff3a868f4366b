"""Step 2 of reading: text to the main-line nodes of each game tree, nothing interpreted."""

from __future__ import annotations

import re

from orchestrator.sgf.model import Truncated

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


def _game_starts(tokens: list[Token], i: int) -> bool:
    """A ``(`` that opens a game: followed by ``;``, or (Nihon Kiin exports, which
    leave out the root's ``;``) by a property with a value."""
    if i + 1 >= len(tokens):
        return False
    run, nxt = tokens[i + 1]
    if run or nxt == ";":
        return True
    return nxt[:1].isalpha() and i + 2 < len(tokens) and tokens[i + 2][1][:1] == "["


def _read_tree(tokens: list[Token], start: int) -> tuple[list[Node], int]:
    """The main-line nodes of the game tree opening at ``tokens[start]`` and the
    index after its closing ``)``. The main line ends at the first ``)``."""
    nodes: list[Node] = []
    props: dict[str, list[str]] | None = None
    values: list[str] | None = None
    on_main = True
    depth = 0
    for j in range(start, len(tokens)):
        run, tok = tokens[j]
        if run:
            values = props = None
            if on_main:
                nodes.append(run)
            continue
        c = tok[0]
        if c == "[":
            if values is not None:
                values.append(tok[1:-1])
        elif c == ";":
            values = None
            if on_main:
                props = {}
                nodes.append(props)
        elif c == "(":
            values = None
            depth += 1
        elif c == ")":
            values = props = None
            on_main = False
            depth -= 1
            if depth == 0:
                return nodes, j + 1
        elif c.isalpha():
            values = None
            if on_main:
                name = tok if tok.isupper() else tok.translate(_LOWER)
                if name:
                    if props is None:
                        props = {}
                        nodes.append(props)
                    values = props.get(name)
                    if values is None:
                        values = props[name] = []
        # Anything else is a stray character: skipped, as most readers do.
    raise Truncated("the file ends inside a game tree (missing ')')")


def main_lines(text: str) -> list[list[Node]]:
    tokens: list[Token] = _TOKEN_RE.findall(text)
    if tokens and tokens[-1][1][:1] == "[" and not _VALUE_RE.fullmatch(tokens[-1][1]):
        tokens.pop()  # an unclosed value: the tree around it reports the truncation
    games = []
    i = 0
    while i < len(tokens):
        if tokens[i][1] == "(" and _game_starts(tokens, i):
            nodes, i = _read_tree(tokens, i)
            if nodes:
                games.append(nodes)
        else:
            i += 1
    return games


