"""The prompt of an exported sample: a template with named placeholders, filled per sample.

A template is plain text with ``{name}`` placeholders (Python ``str.format`` syntax, so a
literal brace is written ``{{`` or ``}}``). The names, documented in docs/formats.md:

================== =============================================================
``{side}``         the side to move as a word: ``Black`` or ``White``
``{side_lower}``   the same in lower case, as a stone colour: ``black``, ``white``
``{side_letter}``  ``B`` or ``W``
``{opponent}``     the other side as a word
``{move_number}``  the number of the move to play (1-based)
``{komi}``         the game's komi (``6.5``, ``7``)
``{board_size}``   ``19``
``{board}``        the position as text: GTP letters on top, numbers on the left,
                   ``X`` black, ``O`` white, ``.`` empty, row 19 first
``{answer_format}`` how the answer is spelled, e.g. ``a GTP vertex such as Q16, or pass``
================== =============================================================

A template is checked once, before any sample: an unknown name, a positional ``{}`` or
a bad brace is one line naming the template's file.

Every path that asks a model fills the same template with the same facts, so the text is
the export's byte for byte; but not every path knows every fact. The export and the
OpenAI player know the game (its move number, its komi); a GO19 request carries only the
board and the side to move (:data:`GO19_FIELDS`), so a server answering GO19 refuses at
start a template that shows anything else, unless it is told the fact (``--komi``). The
shipped template uses only what every path knows.
"""

from __future__ import annotations

import string
from importlib import resources
from pathlib import Path

import numpy as np

from orchestrator.coords import GTP_COLUMNS

SIZE = 19  # the board the template speaks of: go19's datasets and players are 19x19


class PromptError(ValueError):
    """A template that cannot be used; ``str()`` is one line naming its file."""

PLACEHOLDERS = (
    "side", "side_lower", "side_letter", "opponent", "move_number", "komi", "board_size",
    "board", "answer_format",
)
ANSWER_FORMATS = {
    "gtp": 'a GTP vertex such as Q16, or "pass"',
    "sgf": 'SGF letters such as pd (column, then row, from the top left), or "pass"',
    "rowcol": 'row,col such as 3,15 (0-based, row 0 at the top), or "pass"',
}
# What a GO19 request tells (the board and the side to move), hence every path.
GO19_FIELDS = frozenset({"side", "side_lower", "side_letter", "opponent", "board_size",
                         "board", "answer_format"})
_SIDES = {1: ("Black", "B"), 2: ("White", "W")}
_STONE_CHARS = np.frombuffer(b".XO", np.uint8)


def default_template() -> str:
    return resources.files("orchestrator.prompt").joinpath("default.txt").read_text("utf-8")


def read_template(path: Path | None) -> str:
    """The template text from ``path`` (the shipped default when None), checked."""
    if path is None:
        text = default_template()
    else:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise PromptError(f"{path}: cannot read the prompt template: "
                               f"{exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise PromptError(f"{path}: the prompt template is not UTF-8 text") from None
    check_template(text, str(path or "default prompt"))
    return text.strip()


def check_template(text: str, where: str) -> None:
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(text) if name is not None]
    except ValueError as exc:
        raise PromptError(f"{where}: bad prompt template: {exc} (write a literal brace "
                           "as {{ or }})") from None
    for name in fields:
        if name not in PLACEHOLDERS:
            raise PromptError(f"{where}: unknown placeholder {{{name}}} in the prompt "
                               f"template (known: {', '.join(PLACEHOLDERS)})")
    if not text.strip():
        raise PromptError(f"{where}: the prompt template is empty")


def fields(text: str) -> list[str]:
    """The placeholders a (checked) template shows, each once, in order."""
    return list(dict.fromkeys(
        name for _, name, _, _ in string.Formatter().parse(text) if name is not None))


def uses_board(text: str) -> bool:
    return "board" in fields(text)


def text_board(board: np.ndarray) -> str:
    """``X``/``O``/``.`` rows under GTP column letters, numbered ``size`` down to 1."""
    size = board.shape[0]
    cells = _STONE_CHARS[board]
    spaced = np.full((size, 2 * size - 1), ord(" "), np.uint8)
    spaced[:, ::2] = cells
    width = len(str(size))
    lines = [" " * (width + 1) + " ".join(GTP_COLUMNS[:size])]
    lines += [f"{size - row:>{width}} " + spaced[row].tobytes().decode("ascii")
              for row in range(size)]
    return "\n".join(lines)


def fill(template: str, to_play: int, move_number: int | None, komi: float | None,
         answer: str, board: np.ndarray | None = None) -> str:
    """The template for one sample (``board`` only needed when the template shows it; the
    move number and the komi only when it shows them: a path that cannot know them
    refuses such a template at start, and a PromptError names one still missing)."""
    word, letter = _SIDES[to_play]
    values: dict[str, object] = dict(
        side=word, side_lower=word.lower(), side_letter=letter,
        opponent=_SIDES[3 - to_play][0], board_size=SIZE,
        board="" if board is None else text_board(board),
        answer_format=ANSWER_FORMATS[answer],
    )
    if move_number is not None:
        values["move_number"] = move_number
    if komi is not None:
        values["komi"] = f"{komi:g}"
    try:
        return template.format(**values)
    except KeyError as exc:
        raise PromptError(f"the prompt template shows {{{exc.args[0]}}}, which is not known "
                          "here") from None
