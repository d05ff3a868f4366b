"""One typed game record from the referee to every reader: a move's origin and fallback
reason travel as values and become the SGF's words only in the file; the game read back
from its SGF (once, with its positions) is the record the referee's outcome made."""

from __future__ import annotations

import pytest
import trio

from orchestrator.collect.referee import GameSpec, Opening, RefereeSettings, play_game
from orchestrator.collect.sgf_record import game_sgf
from orchestrator.events import Fallback, MovePlayed
from orchestrator.move_record import MoveRecord, Origin, ReplyDetails
from orchestrator.players.base import Answer, RefusedMove
from orchestrator.players.heuristic import HeuristicPlayer
from orchestrator.positions import rows
from orchestrator.positions.recorded import read_recorded_game
from orchestrator.recordings import PlayerMeta, RecordError
from orchestrator.rules.game import Game
from orchestrator.sgf import NotNineteen, SgfGame, SgfMove, write_sgf
from tests.dataset.games import p


def test_origins_become_the_files_words_and_are_read_back_from_them() -> None:
    moves = [MoveRecord(1, p("D4")), MoveRecord(2, p("Q16"), Origin.OPENING),
             MoveRecord(1, p("C3"), Origin.FALLBACK, "illegal:superko", 12.0)]
    assert [m.source for m in moves] == [None, "opening", "fallback:illegal:superko"]
    back = [MoveRecord.from_sgf(SgfMove(m.color, m.point, m.source, ms=m.ms)) for m in moves]
    assert back == moves


def test_a_fallback_has_a_reason_and_no_other_move_has_one() -> None:
    with pytest.raises(ValueError, match="reason"):
        MoveRecord(1, 0, Origin.FALLBACK)
    with pytest.raises(ValueError, match="reason"):
        MoveRecord(1, 0, Origin.OWN, "timeout")


def test_which_reply_texts_a_record_keeps() -> None:
    own, fallback = MoveRecord(1, 0), MoveRecord(1, 0, Origin.FALLBACK, "unparsed")
    assert [m.keeps_text(keep) for keep in ("none", "fallbacks", "all", None)
            for m in (own, fallback)] == [False, False, False, True, True, True, False, False]


class Faulty:
    """Every third answer a refusal (with what its reply said), else the heuristic AI's."""

    name = "faulty"

    def __init__(self) -> None:
        self.inner = HeuristicPlayer("inner", seed=4)
        self.asked = 0

    async def answer(self, game: Game, number: int = 0, picture: bytes | None = None) -> Answer:
        self.asked += 1
        details = ReplyDetails.cut("http://r", 5.0, text="no " * 600, reasoning=None,
                                   prompt_tokens=100, completion_tokens=3, finish_reason="stop")
        if self.asked % 3 == 0:
            return Answer(None, RefusedMove("faulty: no"), details)
        said = await self.inner.answer(game)
        return Answer(said.point, None, details)

    async def aclose(self) -> None:
        return None


async def test_the_refereed_game_reads_back_from_its_sgf_as_its_record(tmp_path) -> None:
    events: list = []
    spec = GameSpec(slot=3, black="faulty", white="ai",
                    opening=Opening("o", (p("D4"), p("Q16")), pair=1))
    outcome = await play_game(
        spec, 5, {"faulty": Faulty(), "ai": HeuristicPlayer("ai", seed=2)},
        RefereeSettings(komi=7.5, move_cap=40), on_event=events.append)
    meta = {"faulty": PlayerMeta(kind="openai", keep_reply="fallbacks"),
            "ai": PlayerMeta(kind="heuristic", level=2, seed=2)}
    game = outcome.record("run-1", meta)
    journal = game.journal
    fallbacks = [(n, m) for n, m in enumerate(game.moves, 1) if m.origin is Origin.FALLBACK]
    assert [m.origin for m in game.moves[:2]] == [Origin.OPENING] * 2
    assert fallbacks and all(m.reason == "error" and m.color == 1 for _, m in fallbacks)
    assert journal.fallbacks["faulty"] == {"error": len(fallbacks)}
    # The events said the same moves the record keeps.
    assert [e.move for e in events if isinstance(e, MovePlayed)] == list(game.moves)
    assert [e.move for e in events if isinstance(e, Fallback)] == [n for n, _ in fallbacks]
    # What the replies said: tokens of every answer, texts of the fallbacks only (cut).
    own = [m for m in game.moves if m.color == 1 and m.origin is Origin.OWN]
    assert journal.tokens["faulty"].moves == len(own) + len(fallbacks)
    assert [(n.move, n.reason, len(n.reply or "")) for n in journal.replies["faulty"]] == [
        (n, "error", 1000) for n, _ in fallbacks]

    path = tmp_path / journal.sgf
    path.write_bytes(game_sgf(game, "test"))
    record, read = read_recorded_game(path)
    assert record.journal == journal
    assert [(m.color, m.point, m.origin, m.reason) for m in record.moves] == [
        (m.color, m.point, m.origin, m.reason) for m in game.moves]
    assert [m.ms for m in record.moves] == [
        None if m.ms is None else round(m.ms, 1) for m in game.moves]
    assert all(m.reply is None for m in record.moves)  # GOXIXREPLY is for other readers
    assert read.status == "ok" and read.positions is not None
    assert len(read.positions) == journal.moves == len(game.moves)
    codes = {Origin.OWN: rows.POLICY, Origin.OPENING: rows.OPENING,
             Origin.FALLBACK: rows.FALLBACK}
    assert read.positions.origin.tolist() == [codes[m.origin] for m in game.moves]


def test_a_file_that_is_no_go19_recording_is_one_clear_error(tmp_path) -> None:
    foreign = tmp_path / "foreign.sgf"
    foreign.write_bytes(write_sgf(SgfGame(size=19, moves=(SgfMove(1, p("D4")),))))
    with pytest.raises(RecordError, match="no GOXIXREC"):
        read_recorded_game(foreign)
    small = tmp_path / "small.sgf"
    small.write_bytes(write_sgf(SgfGame(size=9)))
    with pytest.raises(NotNineteen):
        read_recorded_game(small)


def test_resign_latency_is_counted_though_it_is_no_move() -> None:
    class Resigns:
        name = "quitter"

        async def answer(self, game, number=0, picture=None) -> Answer:
            return Answer(-2)

        async def aclose(self) -> None:
            return None

    outcome = trio.run(play_game, GameSpec(0, "quitter", "ai"), 1,
                       {"quitter": Resigns(), "ai": HeuristicPlayer("ai", seed=1)},
                       RefereeSettings())
    game = outcome.record("r", {})
    assert (game.journal.result, game.moves) == ("W+R", ())
    assert game.journal.latency_ms["quitter"].n == 1
