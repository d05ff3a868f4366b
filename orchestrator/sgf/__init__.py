"""SGF bytes in, games out; and the FF[4] files go19 writes. No file I/O here: callers
read the bytes (and name the file in errors); replaying a game under the rules is
:mod:`orchestrator.rules.replay`.

Modules: :mod:`~orchestrator.sgf.model` (games, moves, setup, private property names,
errors), :mod:`~orchestrator.sgf.text` (step 1), :mod:`~orchestrator.sgf.grammar`
(step 2), :mod:`~orchestrator.sgf.reader` (step 3, :func:`read_games`),
:mod:`~orchestrator.sgf.writer` (:func:`write_sgf`).

Reading happens in three steps, each with one job:

1. **Text.** The file's bytes become one ``str``: a byte-order mark decides first,
   then the declared ``CA[]``, then UTF-8, then the best of GB18030, EUC-KR
   (CP949), Shift_JIS (CP932) and Latin-1 (see :func:`decode_text`). Decoding the
   whole file before tokenising matters: Shift_JIS and GBK use ``\\`` and ``]`` as
   the second byte of some characters, which a byte-level parser misreads as
   SGF escapes (``encoding/nihon-kiin.sgf`` ends ``PB[...]`` with such a ``ソ``).
2. **Main line.** One regex splits the text into tokens; only the nodes before the
   first ``)`` of each game tree are kept, which is exactly the first-child-each-time
   line; later variations are only skipped over. Property names lose their lower
   case letters (FF[1-3] ``SiZe`` is ``SZ``).
3. **Game.** Root properties become typed fields; ``B``/``W``/``AB``/``AW``/``AE``
   letters become points once (:mod:`orchestrator.coords`); nothing later sees letters.

Choices where real files disagree with the standard:

- no ``SZ`` means 19; boards up to 52x52 read (FF[4]'s a-z then A-Z), though the
  rules replay only up to 25x25; ``tt`` is a pass on boards up to 19x19, like ``B[]``,
  and a real point on larger ones (the writer always writes a pass as ``[]``);
- ``|KM| >= 100`` is Fox's komi x100 (no real komi is that large), in points
  (``KM[650]`` = 6.5, ``KM[750]`` = 7.5) or, where the value is a quarter and not a
  half, in Chinese stones that count twice (``KM[375]``: 3.75 stones = 7.5 points);
  ``KM[6,5]`` is 6.5; no or unreadable komi is 0; a non-integer ``HA`` (``HA[7.5]``)
  is 0 (the replay, not the reader, refuses a komi that is not a multiple of 0.5);
- setup (``AB``/``AW``/``AE``) may sit in any main-line node and takes effect there,
  before that node's move (a node with both is old-style but seen);
- several values where one is expected (``CA[UTF-8][UTF-8]``): the first counts;
- property names may contain digits when read (lenient), never when written: SGF
  identifiers are upper-case letters only and sgfmill, Sabaki and others stop at a digit.

Every unusable file raises one :class:`SgfError` subclass whose ``str()`` is one line;
nothing else escapes :func:`read_games`.
"""


from orchestrator.sgf.model import (
    ADJ_PROP,
    BLACK_PLAYER_PROP,
    END_PROP,
    GAME_PROP,
    LATENCY_PROP,
    MAX_SIZE,
    REPLY_PROP,
    RUN_PROP,
    SOURCE_PROP,
    VOID_PROP,
    WHITE_PLAYER_PROP,
    CorruptCoordinate,
    EmptyFile,
    NotNineteen,
    NotSupported,
    Setup,
    SgfError,
    SgfGame,
    SgfMove,
    TooLarge,
    Truncated,
    Unparseable,
    Unreadable,
)
from orchestrator.sgf.reader import read_games
from orchestrator.sgf.text import decode_text
from orchestrator.sgf.writer import write_sgf

__all__ = [
    "ADJ_PROP", "BLACK_PLAYER_PROP", "END_PROP", "GAME_PROP", "LATENCY_PROP", "MAX_SIZE",
    "REPLY_PROP", "RUN_PROP", "SOURCE_PROP", "VOID_PROP", "WHITE_PLAYER_PROP",
    "CorruptCoordinate", "EmptyFile",
    "NotNineteen", "NotSupported", "Setup", "SgfError", "SgfGame", "SgfMove", "TooLarge",
    "Truncated", "Unparseable", "Unreadable", "decode_text", "read_games", "write_sgf",
]
