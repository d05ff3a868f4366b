"""The run-folder contract: one record model written and read back, the journal
read line by line, the record an SGF carries, records as rated games."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.ratings import Pentanomial, Wdl
from orchestrator.recordings import (
    RECORD_PROP,
    WINNER_NAMES,
    JournalRecord,
    RecordError,
    head_to_head,
    move_origin,
    parse_record,
    rated_games,
    read_journal,
    record_from_sgf,
)
from orchestrator.sgf import SgfGame, read_games, write_sgf


def record(game: int, winner: str | None = "black", *, void: bool = False,
           pair: int | None = None, **kw) -> JournalRecord:
    opening = {"id": "o", "plies": 2, "pair": pair} if pair is not None else None
    return JournalRecord(run="r", game=game, slot=game, sgf=f"baduk-x-{game:05d}.sgf",
                         void=void, black=kw.get("black", "a"), white=kw.get("white", "b"),
                         size=9, komi=7.5, winner=winner, reason="score", moves=3,
                         opening=opening)


def test_a_record_reads_back_equal_and_keeps_fields_it_does_not_know() -> None:
    first = record(1)
    assert parse_record(first.to_json()) == first
    newer = first.to_json()[:-1] + ',"future":{"x":1}}'
    again = parse_record(newer)
    assert again.to_json() == newer  # a resume that rewrites the journal keeps it


def test_the_journal_says_which_lines_are_unusable_and_whether_it_was_cut(
    tmp_path: Path,
) -> None:
    path = tmp_path / "games.jsonl"
    assert read_journal(path).lines == []
    path.write_text(record(1).to_json() + "\n{not json\n\n" + '{"run":"r"}\n'
                    + record(2).to_json()[:-5])
    journal = read_journal(path)
    assert [r.game for r in journal.records] == [1]
    assert [(line.number, line.problem) for line in journal.lines][1] == (2, "not valid JSON")
    assert journal.lines[2].number == 4 and "game" in (journal.lines[2].problem or "")
    assert not journal.whole


def test_the_sgf_carries_its_record() -> None:
    first = record(3)
    (game,) = read_games(write_sgf(SgfGame(size=9), {RECORD_PROP: first.to_json()}))
    assert record_from_sgf(game) == first
    with pytest.raises(RecordError, match="no GOXIXREC"):
        record_from_sgf(SgfGame())
    with pytest.raises(RecordError, match="GOXIXREC: not valid JSON"):
        record_from_sgf(SgfGame(root_props={RECORD_PROP: "{"}))


def test_source_words_and_winner_names() -> None:
    assert [move_origin(s) for s in (None, "opening", "fallback:timeout")] == [
        "own", "opening", "fallback"
    ]
    assert WINNER_NAMES == {1: "black", 2: "white", 0: "draw", None: None}


def test_records_become_rated_games_and_counts() -> None:
    records = [record(1), record(2, "white"), record(3, None), record(4, void=True),
               record(5, black="a", white="a")]
    games = rated_games(records)
    assert [(g.black, g.winner) for g in games] == [("a", "black"), ("a", "white")]
    assert head_to_head(games, "a", "b") == Wdl(wins=1, losses=1)
    paired = rated_games([record(1, pair=0),
                          record(2, "black", pair=0, black="b", white="a")])
    counts = head_to_head(paired, "a", "b")
    assert counts == Pentanomial(wl_dd=1)  # one pair, each side won with Black


def test_the_line_written_is_the_line_go19_always_wrote() -> None:
    # docs/formats.md's games.jsonl line, in the order and spelling the recorder wrote
    # before the model existed (json.dumps with compact separators).
    line = {
        "run": "demo-1", "game": 7, "slot": 6, "sgf": "baduk-20261129-171000-00007.sgf",
        "void": False, "black": "r5", "white": "gnugo",
        "players": {"gnugo": {"kind": "gtp"}, "r5": {"kind": "go19", "endpoint": "h:1"}},
        "size": 19, "komi": 7.5, "handicap": 0, "result": "W+R", "winner": "white",
        "reason": "resign", "score": None, "moves": 212,
        "opening": {"id": "book-3", "plies": 4, "pair": 3},
        "fallbacks": {"gnugo": {}, "r5": {"timeout": 2}}, "illegal": {"gnugo": 0, "r5": 0},
        "latency_ms": {"gnugo": {"n": 0, "p50": None, "p95": None, "max": None},
                       "r5": {"n": 104, "p50": 410.5, "p95": 980.0, "max": 1500.25}},
        "started": "2026-11-29T17:05:00Z", "finished": "2026-11-29T17:10:00Z",
    }
    written = json.dumps(line, separators=(",", ":"))
    assert JournalRecord.model_validate(line).to_json() == written
    assert parse_record(written).as_dict() == line


def test_old_lines_without_slot_or_handicap_still_read() -> None:
    old = json.loads(record(1).to_json())
    del old["slot"], old["handicap"]
    back = parse_record(json.dumps(old))
    assert (back.slot, back.handicap, back.game) == (None, 0, 1)
