"""A game go19 recorded, read once: its record and its positions from one reading and one
replay of its SGF, for ``collect --review``, which needs both for every game. The report
reads each SGF once too (``report.load.read_game``) but replays it only when its
move-quality section asks, and the dataset build, ``go19 label`` and ``go19 review`` read
any SGF corpus, recorded or not, by the same ``positions.samples.read_games_of``.

    from orchestrator.positions.recorded import read_recorded_game
    record, read = read_recorded_game("recordings/run/baduk-20250101-120000-00001.sgf")
    record.journal.black, record.moves[0].origin   # the journal record, the typed moves
    read.status, read.positions                    # as the dataset build reads the game
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.positions.samples import GameRead, read_games_of
from orchestrator.recordings import GameRecord, game_record_from_sgf


def read_recorded_game(path: str | Path) -> tuple[GameRecord, GameRead]:
    """The first game of a recorded SGF as its :class:`GameRecord` (the journal record it
    carries in ``GOXIXREC`` and its moves; no reply details) and as the dataset build reads
    it (:func:`orchestrator.positions.samples.read_file`'s :class:`GameRead`: ``sha1`` and
    ``game_index``, the label folders' key; ``status``; ``positions``, one row per move,
    when the game replays to the end, else None: ``void``, ``rejected`` with the replay's
    reason, ``skipped``).

    The file is read and the game replayed once; a game that is not 19x19 is not read (the
    build's rule). Raises :class:`~orchestrator.sgf.SgfError` (with its ``reason``) when
    the file cannot be read as a 19x19 SGF, :class:`~orchestrator.recordings.RecordError`
    when it has no go19 record."""
    game, read = read_games_of(path)[0]
    return game_record_from_sgf(game), read
