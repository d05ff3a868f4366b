"""One SGF file in, every game's positions out: the part of a build that runs in workers.

A game is read with :func:`orchestrator.files.read_sgf_file` and replayed with
:func:`orchestrator.rules.replay.replay_positions`, the code ``go19 replay`` runs, so a game
is rejected here exactly when ``go19 replay --require-19`` rejects it and for the same
reason (:attr:`SgfError.reason`). Every move of a game that replays to the end becomes
one row of :class:`Positions`; choosing which rows become samples happens later, in
the build's single process, so that the output does not depend on the worker count.

The rows and the reference replay that makes them are :mod:`.rows`'; the compiled twin
(:mod:`.fastreplay`) makes the same rows faster where it can.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.files import MAX_SGF_BYTES, read_sgf_file
from orchestrator.positions.rows import SIZE, Positions
from orchestrator.sgf import (
    BLACK_PLAYER_PROP,
    GAME_PROP,
    RUN_PROP,
    VOID_PROP,
    WHITE_PLAYER_PROP,
    NotNineteen,
    SgfError,
    SgfGame,
)
from orchestrator.sgf.grammar import Node, main_lines
from orchestrator.untrusted import BadJson, read_json

MAX_MOVE_NUMBER = np.iinfo(np.int16).max


@dataclass(frozen=True, slots=True)
class GameRead:
    """One game of a file (or a file no game could be read from): what the build
    needs to account for it, and its positions when it replayed to the end."""

    path: str
    game_index: int | None  # None when the file itself could not be read
    status: str  # "ok", "rejected", "void" or "skipped"
    sha1: str | None = None
    reason: str | None = None  # rejected: SgfError.reason, as go19 replay reports it
    detail: str | None = None
    at_move: int | None = None
    black: str = ""
    white: str = ""
    result: str = ""
    winner: int = 0  # 1 black, 2 white, 0 draw or unknown (SgfGame.winner)
    komi: float = 0.0
    setup_at: tuple[int, ...] = ()  # before_move of each setup (AB/AW/AE) on the main line
    moves: int = 0
    run: str | None = None
    game: str | None = None
    players: dict | None = None  # go19 recordings: GOXIXB / GOXIXW metadata
    positions: Positions | None = None


def _metadata(raw: str | None) -> object:
    """A GOXIXB/GOXIXW value: compact JSON as go19 writes it, else the text as is."""
    if raw is None:
        return None
    try:
        return read_json(raw, None)  # bounded by the SGF file's own bound
    except BadJson:
        return raw


def _game_read(path: str, game: SgfGame, nodes: list[Node] | None = None) -> GameRead:
    props = game.root_props
    players = None
    if BLACK_PLAYER_PROP in props or WHITE_PLAYER_PROP in props:
        players = {"black": _metadata(props.get(BLACK_PLAYER_PROP)),
                   "white": _metadata(props.get(WHITE_PLAYER_PROP))}
    common: dict[str, Any] = dict(
        path=path, game_index=game.game_index, sha1=game.sha1, black=game.black_name,
        white=game.white_name, result=game.result, winner=game.winner, komi=game.komi,
        setup_at=tuple(s.before_move for s in game.setup), moves=len(game.moves),
        run=props.get(RUN_PROP), game=props.get(GAME_PROP), players=players,
    )
    if props.get(VOID_PROP, "").strip() not in ("", "0"):
        return GameRead(status="void", **common)
    from orchestrator.positions import fastreplay  # numba's import, only where games replay
    try:
        positions = fastreplay.positions(game, nodes)
    except SgfError as exc:
        return GameRead(status="rejected", reason=exc.reason, detail=exc.detail,
                        at_move=getattr(exc, "move", None), **common)
    if len(positions) > MAX_MOVE_NUMBER:
        # Far beyond any move cap; int16 move numbers would wrap. Legal, so not "rejected".
        return GameRead(status="skipped", reason="too-long", **common)
    return GameRead(status="ok", positions=positions, **common)


def read_file(path: str | Path, max_bytes: int | None = MAX_SGF_BYTES) -> list[GameRead]:
    """Every game of one SGF file, replayed; a file that cannot be read (or is over
    ``max_bytes``) is one rejected entry with the reason ``go19 replay --require-19``
    gives."""
    try:
        return [read for _, read in read_games_of(path, max_bytes)]
    except SgfError as exc:
        return [GameRead(path=str(path), game_index=None, status="rejected",
                         reason=exc.reason, detail=exc.detail,
                         at_move=getattr(exc, "move", None))]


def read_games_of(path: str | Path, max_bytes: int | None = MAX_SGF_BYTES
                  ) -> list[tuple[SgfGame, GameRead]]:
    """Every game of one SGF file as read (its :class:`SgfGame`) and as replayed (its
    :class:`GameRead`, :func:`read_file`'s), from one reading; raises the SgfError of a
    file that cannot be read."""
    from orchestrator.positions import fastreplay  # numba's import, only where games replay
    from orchestrator.sgf import fastgrammar

    path = str(path)
    trees: list[list[Node]] = []
    step2 = fastgrammar.main_lines if fastreplay.ENABLED else main_lines

    def lines(text: str) -> list[list[Node]]:
        trees.extend(step2(text))  # kept: the compiled replay reads plain moves from them
        return trees

    games = read_sgf_file(path, require_size=SIZE, lines=lines, max_bytes=max_bytes)
    return [(game, _game_read(path, game, trees[game.game_index])) for game in games]


def read_files(paths: list[str], max_bytes: int | None = MAX_SGF_BYTES
               ) -> list[list[GameRead]]:
    """:func:`read_file` over a batch: one call per worker task."""
    return [read_file(path, max_bytes) for path in paths]


def read_game(path: str | Path, game: SgfGame) -> GameRead:
    """One game already read from ``path`` (by :func:`orchestrator.files.read_sgf_file`),
    replayed as :func:`read_file` replays it; a game not on a 19x19 board is rejected as
    :func:`read_file` rejects its file."""
    if game.size != SIZE:
        exc = NotNineteen(f"board is {game.size}x{game.size}, not {SIZE}x{SIZE}", str(path))
        return GameRead(path=str(path), game_index=game.game_index, sha1=game.sha1,
                        status="rejected", reason=exc.reason, detail=exc.detail)
    return _game_read(str(path), game)
