"""The reader and replay on the real corpus in ../shared/sgf/real (PROVENANCE.md).

Main lines are cross-checked against sgfmill, an independent parser: for every
file sgfmill can parse, both must see the same board size, moves and setup
stones. Legality is checked with our referee; PROVENANCE.md reports that GNU Go
with positional superko found every game in pro19/, handicap/, small-boards/
and counted/ legal, and one superko violation in odd/gnugo-gorimu.sgf.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sgfmill import sgf as sgfmill_sgf
from sgfmill import sgf_grammar

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS
from orchestrator.files import read_sgf_file
from orchestrator.rules.replay import IllegalMoveInRecord, replay, replay_positions
from orchestrator.sgf import (
    EmptyFile,
    SgfError,
    SgfGame,
    Truncated,
    read_games,
)
from tests.conftest import REAL_SGF, requires_real_sgf

pytestmark = requires_real_sgf

LEGAL_FOLDERS = ("pro19", "handicap", "small-boards", "counted")


def sgf_paths(folder: str = "") -> list[Path]:
    root = REAL_SGF / folder
    return sorted(p for p in root.rglob("*") if p.suffix.lower() == ".sgf")


@pytest.fixture(scope="module")
def corpus() -> dict[str, list[SgfGame] | SgfError]:
    """Every file read once: its games, or the SgfError it raised (anything else fails)."""
    result: dict[str, list[SgfGame] | SgfError] = {}
    for path in sgf_paths():
        try:
            result[path.relative_to(REAL_SGF).as_posix()] = read_sgf_file(path)
        except SgfError as exc:
            result[path.relative_to(REAL_SGF).as_posix()] = exc
    return result


def test_every_file_reads_or_gives_one_typed_line(corpus) -> None:
    assert len(corpus) == 869  # PROVENANCE.md: 869 files
    failures = {name: r for name, r in corpus.items() if isinstance(r, SgfError)}
    assert set(failures) == {"odd/nightmare.sgf", "odd/owl42.sgf"}
    assert isinstance(failures["odd/nightmare.sgf"], EmptyFile)
    assert isinstance(failures["odd/owl42.sgf"], Truncated)
    for name, exc in failures.items():
        text = str(exc)
        assert text.startswith(str(REAL_SGF / name) + ": ") and "\n" not in text


@pytest.mark.parametrize("folder", LEGAL_FOLDERS)
def test_every_game_replays_to_the_last_move(corpus, folder: str) -> None:
    names = [n for n in corpus if n.startswith(folder + "/")]
    assert names
    for name in names:
        games = corpus[name]
        assert not isinstance(games, SgfError), name
        for game in games:
            final = replay(game)
            assert final.move_number == len(game.moves), name


def _sgfmill_games(data: bytes) -> list[sgfmill_sgf.Sgf_game]:
    # Latin-1 never fails to decode, and moves and setup are ASCII anyway.
    return [
        sgfmill_sgf.Sgf_game.from_coarse_game_tree(tree, override_encoding="iso-8859-1")
        for tree in sgf_grammar.parse_sgf_collection(data)
    ]


def _our_point(rc: tuple[int, int] | None, size: int) -> int:
    if rc is None:
        return PASS
    row, col = rc  # sgfmill counts rows from the bottom
    return (size - 1 - row) * size + col


def test_main_lines_match_sgfmill(corpus) -> None:
    compared = 0
    for name, games in corpus.items():
        data = (REAL_SGF / name).read_bytes()
        try:
            theirs = _sgfmill_games(data)
        except ValueError:
            continue  # sgfmill cannot parse it; the tests below cover these files
        assert not isinstance(games, SgfError), name
        assert len(games) == len(theirs), name
        for ours, other in zip(games, theirs, strict=True):
            size = other.get_size()
            assert ours.size == size, name
            moves, setup = [], []
            for node in other.get_main_sequence():
                black, white, empty = node.get_setup_stones()
                if black or white or empty:
                    setup.append((
                        sorted(_our_point(p, size) for p in black),
                        sorted(_our_point(p, size) for p in white),
                        sorted(_our_point(p, size) for p in empty),
                    ))
                color, rc = node.get_move()
                if color is not None:
                    moves.append((BLACK if color == "b" else WHITE, _our_point(rc, size)))
                # A node with both B and W (buzco1 ends "B[tt]W[tt]"): sgfmill's
                # get_move gives B only; we read both moves, B first.
                if color == "b" and node.has_property("W"):
                    moves.append((WHITE, _our_point(node.get("W"), size)))
            assert [(m.color, m.point) for m in ours.moves] == moves, name
            assert [
                (sorted(s.black), sorted(s.white), sorted(s.empty)) for s in ours.setup
            ] == setup, name
            compared += 1
    assert compared >= 865


def test_superko_game_is_rejected_at_move_381(corpus) -> None:
    (game,) = corpus["odd/gnugo-gorimu.sgf"]
    assert len(game.moves) == 381
    numbers = []
    with pytest.raises(IllegalMoveInRecord) as info:
        for _, _, number in replay_positions(game):
            numbers.append(number)
    # The 381st move was offered, and every one before it was played.
    assert numbers == list(range(1, 382))
    assert (info.value.move, info.value.rule) == (381, "superko")
    assert "move 381 B[km] (L7): superko" in str(info.value)


def test_two_games_in_reading10(corpus) -> None:
    games = corpus["odd/reading10.sgf"]
    assert [g.game_index for g in games] == [0, 1]
    for game in games:
        assert game.size == 9 and game.moves == ()
        final = replay(game)
        # 21 AB and 13 AW values in each tree (counted in the file).
        assert final.board.stone_count(BLACK) == 21 and final.board.stone_count(WHITE) == 13


def test_buzco1_handicap_in_the_second_node(corpus) -> None:
    (game,) = corpus["odd/buzco1.sgf"]
    assert game.handicap == 3 and len(game.setup) == 1
    setup = game.setup[0]
    # AB[dp][pd][dd]: (row, col) (15, 3), (3, 15), (3, 3).
    assert (setup.node, setup.before_move) == (1, 0)
    assert sorted(setup.black) == sorted([15 * 19 + 3, 3 * 19 + 15, 3 * 19 + 3])
    first = next(replay_positions(game))
    live, move, number = first
    assert number == 1 and move.color == WHITE
    assert live.board.stone_count(BLACK) == 3 and live.board.stone_count(WHITE) == 0


def test_fox_handicap_in_a_move_node(corpus) -> None:
    (game,) = corpus["handicap/fox_go_server_handicap.sgf"]
    assert game.handicap == 2 and game.setup[0].node == 1
    assert replay(game).move_number == len(game.moves)


def test_xmgt97_ff1_names(corpus) -> None:
    (game,) = corpus["odd/xmgt97.sgf"]
    assert (game.size, game.komi, game.black_name, game.white_name) == (9, -1.5, "hi", "ka")
    # Black[ff] in the root is the first move; White[id] closes the file.
    assert game.moves[0].point == 5 * 9 + 5 and game.moves[-1].point == 3 * 9 + 8
    assert game.moves[-1].comment.startswith("Black: 13 + 4 = 17")


@pytest.mark.parametrize(
    ("name", "komi"),
    [
        ("odd/S 1-1 ELFOpenGo vs Golaxy.SGF", 7.5),  # KM[375]: 3.75 stones, Chinese rules
        ("odd/fox_go_server_komi.sgf", 7.5),  # KM[375]
        ("odd/2018.01.27 舞者 VS 绝艺指导B (010001281).SGF", 6.5),  # KM[650]
        ("odd/non_fox_game.sgf", 11.0),  # KM[11]: OGS integer komi, not x100
        ("odd/3-6 DeepZenGo VS Leela.sgf", 7.5),  # KM[7.5] with HA[7.5]
    ],
)
def test_komi_as_written_by_fox_and_others(corpus, name: str, komi: float) -> None:
    (game,) = corpus[name]
    assert game.komi == komi


def test_odd_handicap_and_missing_size(corpus) -> None:
    (leela,) = corpus["odd/3-6 DeepZenGo VS Leela.sgf"]
    assert leela.handicap == 0 and leela.root_props["HA"] == "7.5"
    (crazy,) = corpus["odd/gnu-crazystone.sgf"]
    assert crazy.size == 19 and "SZ" not in crazy.root_props


# Player names per file in encoding/, established from the bytes by hand (xxd) and
# decoded with the codec named in each comment; the pro names are well-known players,
# which confirms the codec. The YuanYu exports declare UTF-8 but their writer cut a
# name in the middle of a character: "correct" there is the valid prefix followed
# by one U+FFFD where the cut character was.
EXPECTED_NAMES = {
    # PB e5b08f e5bf83 e68891 e68db6 e4bd(cut): 4 characters then a cut one.
    "2016.10.25 pooryou01 vs 骊龙 (66460705).SGF": ("小心我捶\ufffd", "骊龙"),
    "2016.10.25 骊龙 vs pooryou01 (65098166).SGF": ("骊龙", "小心我捶\ufffd"),
    # e5b7a7 e88ab1 e58c(cut)
    "2016.10.26 巧花匠 vs 骊龙 (50095077).SGF": ("巧花\ufffd", "骊龙"),
    "2016.10.26 骊龙 vs 巧花匠 (50946073).SGF": ("骊龙", "巧花\ufffd"),
    # e4bda0 e88ba5 e69c89 e59b(cut)
    "2017.09.23 神的血脉 vs CGI (65495949).SGF": ("你若有\ufffd", "CGI"),
    # PW e8889e e880(cut)
    "2018.04.04 金毛测试 VS 舞者 (010001820).SGF": ("金毛测试", "舞\ufffd"),
    "9handicap.sgf": ("GNU Go", "白"),  # PW b0d7 in GB2312
    "CrazyStone1.sgf": ("Crazy Stone:0003-11", "GNU Go:3.6"),
    "CrazyStone2.sgf": ("GNU Go:3.6", "Crazy Stone:0003-11"),
    "chinese.sgf": ("古力", "柯洁"),  # GB2312 b9c5 c1a6 / bfc2 bde0: Gu Li, Ke Jie
    "fox sgf works.sgf": ("whatiskale", "注号用名"),  # UTF-8 e6b3a8 e58fb7 e794a8 e5908d
    "gnu-aya.sgf": ("GNU Go 3.7.10", "Aya"),
    # Shift_JIS 88e4 8e52 20 9754 91be / 8e52 89ba 20 8c68 8ce1: Iyama Yuta, Yamashita Keigo
    "japanese.sgf": ("井山 裕太", "山下 敬吾"),
    # Valid UTF-8 (ef bf bd = U+FFFD) under a wrong MS_KANJI label: the damage was
    # done before the file was written; the bytes say U+FFFD, so that is the name.
    "japanese_bad.sgf": (
        "\ufffd\ufffd\ufffdR \ufffdT\ufffd\ufffd", "\ufffdR\ufffd\ufffd \ufffdh\ufffd\ufffd"
    ),
    # EUC-KR c0cc bcbc b5b9 / b9da c1a4 c8af: Lee Sedol, Park Junghwan
    "korean.sgf": ("이세돌", "박정환"),
    "nicklas12.sgf": ("GnuGo", "kossa"),
    # Shift_JIS 905c e1c1 835c / 937d 8b42 94f2, no CA: 申眞ソ (Shin Jinseo as the
    # Nihon Kiin spells him) and 党毅飛 (Dang Yifei). Both 5c bytes are second bytes.
    "nihon-kiin.sgf": ("申眞ソ", "党毅飛"),
    "no-ca.sgf": ("", ""),
    "tg-gg.sgf": ("Gnu Go", "TurboGo v5.01"),
    "trevor_42.sgf": ("GnuGo-3.0.0", "FunGo"),
    "utf16le.sgf": ("Kitani Minoru", "Go Seigen"),  # UTF-16LE after an ff fe BOM
    "utf8bom.sgf": ("Kitani Minoru", "Go Seigen"),
}


def test_every_encoding_file_is_listed() -> None:
    assert sorted(p.name for p in sgf_paths("encoding")) == sorted(EXPECTED_NAMES)


@pytest.mark.parametrize("name", sorted(EXPECTED_NAMES))
def test_player_names_decode(corpus, name: str) -> None:
    (game,) = corpus[f"encoding/{name}"]
    assert (game.black_name, game.white_name) == EXPECTED_NAMES[name]


def test_comments_in_other_encodings(corpus) -> None:
    # no-ca.sgf root C starts a1be b5da c8fd d0cd a1bf 20 bada cfc8 (GBK): 【第三型】 黑先
    (problem,) = corpus["encoding/no-ca.sgf"]
    assert problem.root_props["C"].startswith("【第三型】 黑先")
    # nicklas12.sgf: "h\xf6rru" in a move comment, Latin-1 ö.
    (swedish,) = corpus["encoding/nicklas12.sgf"]
    assert any(m.comment and "hörru" in m.comment for m in swedish.moves)
    # nihon-kiin.sgf RE: 3235 37 8ee8 8aae 2c20 8d95 9286 899f 82b5 8f9f 82bf (Shift_JIS).
    (kiin,) = corpus["encoding/nihon-kiin.sgf"]
    assert kiin.result == "257手完, 黒中押し勝ち"


def test_utf16_and_utf8_copies_are_the_same_game(corpus) -> None:
    (utf16,) = corpus["encoding/utf16le.sgf"]
    (utf8,) = corpus["encoding/utf8bom.sgf"]
    assert len(utf8.moves) == 164
    assert utf16.moves == utf8.moves and utf16.size == utf8.size == 19


def _mutations() -> st.SearchStrategy[tuple[Path, int, bytes]]:
    paths = sgf_paths("odd") + sgf_paths("encoding") + sgf_paths("handicap")[:10]
    return st.tuples(
        st.sampled_from(paths),
        st.integers(0, 1 << 20),  # where: cut there, or overwrite there
        st.binary(max_size=4),  # what to write ("" cuts the file)
    )


def _check_mutation(path: Path, where: int, patch: bytes) -> None:
    data = path.read_bytes()
    where %= len(data) + 1
    mutated = data[:where] + patch + (data[where + len(patch):] if patch else b"")
    try:
        games = read_games(mutated)
    except SgfError as exc:
        assert "\n" not in str(exc)
        return
    for game in games:
        try:
            replay(game)
        except SgfError as exc:
            assert "\n" not in str(exc)


@settings(max_examples=60, deadline=None)
@given(_mutations())
def test_damaged_real_files_give_games_or_one_line(mutation) -> None:
    _check_mutation(*mutation)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(_mutations())
def test_damaged_real_files_many(mutation) -> None:
    _check_mutation(*mutation)
