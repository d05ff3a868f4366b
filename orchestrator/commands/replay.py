"""`go19 replay`: read SGF files, replay each main line under go19's rules and say,
per game, whether it is legal to the end (and how it scores when it ended by two
passes) or why it was rejected."""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.commands import SUMMARIES, add_max_file_mib, max_file_bytes
from orchestrator.files import MAX_SGF_BYTES, read_sgf_file
from orchestrator.rules.replay import replay
from orchestrator.sgf import SgfError, SgfGame
from orchestrator.words import plural


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "replay",
        help=SUMMARIES["replay"],
        description="Read SGF files (folders are searched recursively for *.sgf), replay "
        "every game's main line under area rules with positional superko and print one "
        "line per game: ok with its move count and result, or the reason it was rejected. "
        "Exits 0 when it ran, even if files were rejected; 2 when there was no SGF file.",
        epilog="examples:\n  go19 replay ../shared/sgf/real --require-19\n"
        "  go19 replay recordings/demo-20261130-150000 --json > replay.jsonl",
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="file or folder")
    parser.add_argument(
        "--json", action="store_true", help="one JSON object per game on stdout"
    )
    parser.add_argument(
        "--require-19", action="store_true", help="reject boards other than 19x19"
    )
    add_max_file_mib(parser)
    parser.set_defaults(func=run)


def sgf_files(paths: list[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(
                p for p in path.rglob("*") if p.suffix.lower() == ".sgf" and p.is_file()
            )
        else:
            yield path


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """One game of a file (or a file no game could be read from): what ``--json`` prints."""

    path: str
    status: str  # ok | rejected
    reason: str | None  # rejected: SgfError.reason
    detail: str | None
    at_move: int | None
    moves: int | None
    size: int | None
    re: str | None  # the SGF's RE, when it has one
    tromp_taylor: str | None  # the area count of a game that ended by two passes
    game_index: int | None = None  # in a file of several games

    def as_dict(self) -> dict[str, Any]:
        record = {name: getattr(self, name) for name in self.__dataclass_fields__
                  if name != "game_index"}
        if self.game_index is not None:
            record["game_index"] = self.game_index
        return record


def check_file(path: Path, require_size: int | None,
               max_bytes: int | None = MAX_SGF_BYTES) -> list[ReplayResult]:
    """One record per game in the file, or a single record when it cannot be read."""
    try:
        games = read_sgf_file(path, require_size=require_size, max_bytes=max_bytes)
    except SgfError as exc:
        return [_record(path, None, None, exc)]
    records = []
    for game in games:
        try:
            live = replay(game)
        except SgfError as exc:
            records.append(_record(path, game, None, exc, several=len(games) > 1))
            continue
        score = live.score().result if live.over_by_passes else None
        records.append(_record(path, game, score, None, several=len(games) > 1))
    return records


def _record(
    path: Path, game: SgfGame | None, score: str | None, error: SgfError | None,
    several: bool = False,
) -> ReplayResult:
    return ReplayResult(
        path=str(path),
        status="rejected" if error else "ok",
        reason=error.reason if error else None,
        detail=error.detail if error else None,
        at_move=getattr(error, "move", None),
        moves=len(game.moves) if game else None,
        size=game.size if game else None,
        re=(game.result or None) if game else None,
        tromp_taylor=score,
        game_index=game.game_index if several and game is not None else None,
    )


def _line(record: ReplayResult) -> str:
    where = record.path
    if record.game_index is not None:
        where += f" (game {record.game_index + 1})"
    if record.status == "rejected":
        return f"{where}: rejected ({record.reason}): {record.detail}"
    text = f"{where}: ok, {plural(record.moves or 0, 'move')}"  # an ok game has its moves
    if record.re:
        text += f", RE[{record.re}]"
    if record.tromp_taylor:
        text += f", two passes, Tromp-Taylor {record.tromp_taylor}"
    return text


def _summary(files: int, records: list[ReplayResult]) -> str:
    ok = sum(r.status == "ok" for r in records)
    reasons = Counter(r.reason for r in records if r.status != "ok")
    text = f"{plural(files, 'file')}: {plural(ok, 'game')} ok, {len(records) - ok} rejected"
    if reasons:
        text += " (" + ", ".join(f"{k} {n}" for k, n in sorted(reasons.items())) + ")"
    return text


def run(args: argparse.Namespace) -> int:
    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        print(f"replay: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    require_size = 19 if args.require_19 else None
    # File names need not be valid UTF-8; show their odd bytes escaped, never crash.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    files = 0
    records: list[ReplayResult] = []
    try:
        for path in sgf_files(args.paths):
            files += 1
            for record in check_file(path, require_size, max_file_bytes(args)):
                records.append(record)
                print(json.dumps(record.as_dict(), ensure_ascii=False) if args.json
                      else _line(record))
        if files == 0:
            print(f"replay: no SGF file (*.sgf) in {', '.join(map(str, args.paths))}",
                  file=sys.stderr)
            return 2
        summary = _summary(files, records)
        print(summary, file=sys.stderr if args.json else sys.stdout)
    except BrokenPipeError:
        # The reader (head, less) went away: stop quietly, as command-line tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
