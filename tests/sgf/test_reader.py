"""The SGF reader on small hand-written inputs, one quirk per test.

Expected points are worked out by hand from the SGF letters: column letter
first, row letter second, row ``a`` at the top, so ``pd`` on 19x19 is row 3,
column 15, point 3 * 19 + 15 = 72 (GTP Q16).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import PASS
from orchestrator.files import read_sgf_file
from orchestrator.rules.replay import IllegalMoveInRecord, IllegalSetup, replay, replay_positions
from orchestrator.sgf import (
    CorruptCoordinate,
    EmptyFile,
    NotNineteen,
    NotSupported,
    SgfError,
    SgfMove,
    Truncated,
    Unparseable,
    Unreadable,
    read_games,
)

PD, DP, DD, PP = 3 * 19 + 15, 15 * 19 + 3, 3 * 19 + 3, 15 * 19 + 15


def one(data: bytes, **kw) -> object:
    games = read_games(data, **kw)
    assert len(games) == 1
    return games[0]


def test_plain_game_fields() -> None:
    game = one(
        b"(;GM[1]FF[4]SZ[19]KM[6.5]HA[0]RU[Chinese]PB[Black One]PW[White Two]"
        b"RE[W+R]DT[2020-01-02]EV[Cup];B[pd];W[dp];B[pp];W[dd])"
    )
    assert (game.size, game.komi, game.handicap, game.rules) == (19, 6.5, 0, "Chinese")
    assert (game.black_name, game.white_name, game.result, game.date) == (
        "Black One", "White Two", "W+R", "2020-01-02"
    )
    assert game.root_props["EV"] == "Cup" and game.root_props["FF"] == "4"
    assert [(m.color, m.point) for m in game.moves] == [
        (BLACK, PD), (WHITE, DP), (BLACK, PP), (WHITE, DD)
    ]
    assert game.setup == () and not game.has_setup


def test_missing_size_is_19_and_tt_is_a_pass_up_to_19() -> None:
    game = one(b"(;GM[1];B[pd];W[tt];B[])")
    assert game.size == 19
    assert [m.point for m in game.moves] == [PD, PASS, PASS]
    # On 21x21 ``tt`` is the point in column 19, row 19.
    big = one(b"(;SZ[21];B[tt])")
    assert big.moves[0].point == 19 * 21 + 19
    # FF[4] goes to 52x52, columns and rows a-z then A-Z; ``[]`` is the pass there.
    widest = one(b"(;SZ[52];B[ZZ];W[aZ];B[])")
    assert [m.point for m in widest.moves] == [52 * 52 - 1, 51 * 52, PASS]


def test_boards_the_rules_cannot_play_read_but_do_not_replay() -> None:
    game = one(b"(;SZ[30];B[dd])")
    assert game.size == 30 and game.moves[0].point == 3 * 30 + 3
    with pytest.raises(NotSupported, match="size 30 cannot be replayed"):
        replay(game)
    with pytest.raises(NotSupported, match="size 30"):
        replay_positions(game)


def test_main_line_takes_the_first_child_each_time() -> None:
    game = one(b"(;SZ[9];B[aa](;W[bb](;B[cc];W[hh])(;B[dd]))(;W[ee];B[ff])(;W[gg]))")
    # aa, then the first variation: bb, then its first: cc, hh.
    assert [m.point for m in game.moves] == [0, 10, 20, 70]


def test_variations_around_every_move() -> None:
    # OGS style: each move opens its own nested variation, with siblings after.
    game = one(b"(;SZ[9](;B[aa](;W[bb](;B[cc])(;B[dd]))(;W[ee]))(;B[ff]))")
    assert [m.point for m in game.moves] == [0, 10, 20]


def test_ff3_long_property_names_lose_their_lower_case() -> None:
    game = one(b"(;FileFormat[1]GaMe[1]SiZe[9]PlayerBlack[hi]KoMi[-1.5]Black[ff];White[gd])")
    assert game.size == 9 and game.black_name == "hi" and game.komi == -1.5
    assert [(m.color, m.point) for m in game.moves] == [(BLACK, 5 * 9 + 5), (WHITE, 3 * 9 + 6)]


@pytest.mark.parametrize(
    ("km", "komi"),
    [(b"750", 7.5), (b"375", 7.5), (b"325", 6.5), (b"-375", -7.5), (b"6,5", 6.5), (b"650", 6.5),
     (b"-750", -7.5), (b"7.5", 7.5), (b"99.5", 99.5), (b"11", 11.0), (b"0", 0.0), (b"", 0.0),
     (b"seven", 0.0), (b"0.3", 0.3), (b"3.75", 3.75), (b"333", 3.33)],
)
def test_komi_fox_times_100(km: bytes, komi: float) -> None:
    """Fox's x100 komi is points (650), or Chinese stones that count twice: KM[375] is
    3.75 stones, 7.5 points (it was read as 3.75: "komi 3.75" in exported prompts, and
    KataGo refused those games). A komi that is still no multiple of 0.5 is read as it
    is; the replay refuses it (test_replay)."""
    assert one(b"(;SZ[19]KM[" + km + b"])").komi == komi


def test_komi_absent_is_zero_and_odd_handicap_is_zero() -> None:
    game = one(b"(;SZ[19]HA[7.5])")
    assert game.komi == 0.0 and game.handicap == 0
    assert game.root_props["HA"] == "7.5"
    assert one(b"(;SZ[19]HA[ 4 ])").handicap == 4


def test_setup_in_root_and_later_nodes_applies_in_order() -> None:
    game = one(b"(;SZ[19]AB[dd][pp];C[handicap]AW[dp];W[pd];AE[pd]AB[dq:dr]B[cc];W[pd])")
    # The third setup is old-style, in the same node as a move: it comes first.
    dq, dr, cc = DP + 19, DP + 38, 2 * 19 + 2
    assert [(s.before_move, s.black, s.white, s.empty, s.node) for s in game.setup] == [
        (0, (DD, PP), (), (), 0),
        (0, (), (DP,), (), 1),
        (1, (dq, dr), (), (PD,), 3),
    ]
    assert [(m.color, m.point) for m in game.moves] == [(WHITE, PD), (BLACK, cc), (WHITE, PD)]
    final = replay(game)
    # AE took White's first stone off pd, so White could play there again.
    assert final.board[PD] == WHITE and final.board[DP] == WHITE
    assert [final.board[p] for p in (DD, PP, dq, dr, cc)] == [BLACK] * 5


def test_setup_rectangle_expands() -> None:
    game = one(b"(;SZ[5]AB[aa:bc]AW[ee])")
    assert game.setup[0].black == (0, 1, 5, 6, 10, 11)
    assert game.setup[0].white == (24,)


def test_setup_only_game_replays_to_its_position() -> None:
    game = one(b"(;SZ[9]AB[aa]AW[ba])")
    assert game.moves == ()
    final = replay(game)
    assert final.board[0] == BLACK and final.board[1] == WHITE


def test_collection_gives_every_game_with_its_index() -> None:
    games = read_games(b"junk before (;SZ[9];B[aa]) between\n(;SZ[13];W[bb]) after")
    assert [(g.size, g.game_index) for g in games] == [(9, 0), (13, 1)]
    assert games[0].sha1 == games[1].sha1 and len(games[0].sha1) == 40


def test_root_without_semicolon_is_read() -> None:
    # Nihon Kiin exports open with "(" and the root properties, no ";".
    game = one(b"(\r\nPB[x]\r\nPW[y]\r\n;B[pd];W[dp])")
    assert (game.black_name, game.white_name, len(game.moves)) == ("x", "y", 2)


def test_text_escapes_and_line_breaks() -> None:
    game = one(
        b"(;SZ[9]PB[a\\]b\\\\c]GN[two\r\nlines]C[soft\\\nbreak\ttab];B[aa]C[x\\]y\r\nz])"
    )
    assert game.black_name == "a]b\\c"
    assert game.root_props["GN"] == "two\nlines"
    assert game.root_props["C"] == "softbreak tab"
    assert game.moves[0].comment == "x]y\nz"


def test_simple_text_fields_turn_line_breaks_into_spaces() -> None:
    assert one(b"(;SZ[9]PB[first\nsecond])").black_name == "first second"


def test_repeated_values_first_counts() -> None:
    game = one(b"(;CA[UTF-8][UTF-8]GN[][]SZ[9]AP[a]AP[b])")
    assert game.root_props["CA"] == "UTF-8" and game.root_props["AP"] == "a"


def test_move_source_and_comment_are_kept_per_move() -> None:
    game = one(b"(;SZ[9];B[aa];W[bb]GOXIXSRC[fallback:timeout]C[timed out];B[cc])")
    assert game.moves == (
        SgfMove(BLACK, 0),
        SgfMove(WHITE, 10, "fallback:timeout", "timed out"),
        SgfMove(BLACK, 20),
    )


def test_time_left_properties_are_ignored() -> None:
    game = one(b"(;SZ[19];B[pd]BL[1797]WL[1795];W[dp]WL[12.5]OW[3];B[pp])")
    assert [m.point for m in game.moves] == [PD, DP, PP]


def test_encodings_by_bom_label_and_guess() -> None:
    name = "柯洁"
    utf16 = "(;SZ[9]PB[柯洁])".encode("utf-16-le")
    assert one(b"\xff\xfe" + utf16).black_name == name
    assert one(b"\xef\xbb\xbf" + "(;SZ[9]PB[柯洁])".encode()).black_name == name
    labelled = b"(;CA[GB2312]SZ[9]PB[" + name.encode("gb2312") + b"])"
    assert one(labelled).black_name == name
    # No label: GB bytes are not UTF-8, and read as GB18030 they are ordinary characters.
    assert one(b"(;SZ[9]PB[" + name.encode("gb2312") + b"])").black_name == name


def test_shift_jis_backslash_second_byte_is_not_an_escape() -> None:
    # ソ is 83 5C in Shift_JIS: a byte-level reader sees "\]" and runs PB into PW.
    data = b"(;CA[Shift_JIS]SZ[19]PB[" + "申眞ソ".encode("shift_jis") + b"]PW[x];B[pd])"
    game = one(data)
    assert (game.black_name, game.white_name) == ("申眞ソ", "x")


def test_damaged_utf8_keeps_the_valid_prefix() -> None:
    cut = "小心我".encode() + "你".encode()[:2]
    game = one(b"(;CA[UTF-8]SZ[9]PB[" + cut + "]PW[骊龙]GN[围棋]EV[对局]C[好棋];B[aa])".encode())
    assert game.black_name == "小心我\ufffd" and game.white_name == "骊龙"


@pytest.mark.parametrize(
    "label",
    ["rot13", "base64", "hex", "zlib", "idna", "utf-7", "cp037", "undefined", "UTF-16",
     "UTF-32", "Big5", "KOI8-R", "no-such-codec", "x" * 40],
)
def test_any_charset_label_reads(label: str) -> None:
    name = "Lee Sedol 이세돌".encode("cp949")
    data = b"(;CA[" + label.encode() + b"]SZ[19]PB[" + name + b"]C[\xff\x80];B[pd])"
    game = one(data)
    assert game.black_name.startswith("Lee Sedol") and len(game.moves) == 1


@pytest.mark.parametrize(
    ("data", "error", "words"),
    [
        (b"", EmptyFile, "empty"),
        (b" \n\t ", EmptyFile, "empty"),
        (b"\xef\xbb\xbf\r\n", EmptyFile, "empty"),
        (b"hello, not a game", Unparseable, "no SGF game"),
        (b"\x00\x01\x02\xff", Unparseable, "no SGF game"),
        (b"(;SZ[19];B[pd];W[dp]", Truncated, "missing ')'"),
        (b"(;SZ[19];B[pd];W[dp", Truncated, "missing ')'"),
        (b"(;SZ[19]C[unclosed \\] comment", Truncated, "missing ')'"),
        (b"(;GM[2]SZ[8])", NotSupported, "GM[2]"),
        (b"(;SZ[19:13])", NotSupported, "rectangular"),
        (b"(;SZ[53])", NotSupported, "size 53"),
        (b"(;SZ[1])", NotSupported, "size 1"),
        (b"(;SZ[big])", Unparseable, "SZ[big]"),
        (b"(;SZ[9];B[aa];W[zz])", CorruptCoordinate, "move 2 W[zz]"),
        (b"(;SZ[9];B[aa]C[x];W[j])", CorruptCoordinate, "move 2 W[j]"),
        (b"(;SZ[9]AB[aa][zz])", CorruptCoordinate, "[zz] in node 0"),
        (b"(;SZ[19]AB[tt])", CorruptCoordinate, "[tt] in node 0"),
    ],
)
def test_unusable_input_gets_one_typed_line(data: bytes, error: type, words: str) -> None:
    with pytest.raises(error) as info:
        read_games(data)
    text = str(info.value)
    assert words in text and "\n" not in text


def test_corrupt_coordinate_says_which_move() -> None:
    with pytest.raises(CorruptCoordinate) as info:
        read_games(b"(;SZ[9];B[aa];W[bb];B[cc];W[zz])")
    assert info.value.move == 4


def test_require_size() -> None:
    with pytest.raises(NotNineteen, match="9x9"):
        read_games(b"(;SZ[9];B[aa])", require_size=19)
    assert read_games(b"(;B[aa])", require_size=19)[0].size == 19


def test_errors_name_the_file(tmp_path) -> None:
    path = tmp_path / "broken.sgf"
    path.write_bytes(b"(;SZ[9]")
    with pytest.raises(Truncated) as info:
        read_sgf_file(path)
    assert info.value.path == str(path) and str(info.value).startswith(str(path) + ": ")
    with pytest.raises(Unreadable, match="absent.sgf: cannot read"):
        read_sgf_file(tmp_path / "absent.sgf")
    with pytest.raises(Unreadable):
        read_sgf_file(tmp_path)
    # The reader itself takes bytes: the caller opens the file and names it.
    with pytest.raises(TypeError, match="bytes"):
        read_games(str(path))  # type: ignore[arg-type]
    with pytest.raises(Truncated, match="^here.sgf: "):
        read_games(b"(;SZ[9]", path="here.sgf")


def test_replay_stops_at_the_illegal_move_with_its_number() -> None:
    # 5x5: Black surrounds a1 (aa is top-left); move 5 W[aa] is suicide.
    game = one(b"(;SZ[5];B[ba];W[ee];B[ab];W[ed];W[aa];B[cc])")
    seen = []
    with pytest.raises(IllegalMoveInRecord) as info:
        for live, move, number in replay_positions(game):
            seen.append(number)
            assert live.to_play == move.color
    assert seen == [1, 2, 3, 4, 5]
    error = info.value
    assert (error.move, error.rule, error.reason) == (5, "suicide", "illegal:suicide")
    assert "move 5 W[aa]" in str(info.value)


def test_replay_rejects_occupied_points() -> None:
    game = one(b"(;SZ[9];B[ee];W[ee])")
    with pytest.raises(IllegalMoveInRecord, match="move 2 W\\[ee\\].*occupied"):
        replay(game)


def test_replay_rejects_setup_without_liberties() -> None:
    game = one(b"(;SZ[9]AB[aa]AW[ba][ab])")
    with pytest.raises(IllegalSetup):
        replay(game)


def test_replay_plays_the_same_color_twice_when_recorded() -> None:
    game = one(b"(;SZ[9];B[aa];B[bb];W[cc])")
    final = replay(game)
    assert [m.color for m in final.moves] == [BLACK, BLACK, WHITE]


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_give_games_or_an_sgf_error(data: bytes) -> None:
    try:
        read_games(data)
    except SgfError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="()[];\\:BWAEabcdSZ19 \n", max_size=120))
def test_sgf_like_text_gives_games_or_an_sgf_error(text: str) -> None:
    try:
        for game in read_games(text.encode()):
            try:
                replay(game)
            except SgfError:
                pass
    except SgfError as exc:
        assert "\n" not in str(exc)


@pytest.mark.parametrize(
    ("result", "winner"),
    [("B+R", BLACK), ("W+3.5", WHITE), (" b + Time", BLACK), ("w+", WHITE), ("0", 0),
     ("Draw", 0), ("", 0), ("Void", 0), ("?", 0), ("B", 0)],
)
def test_the_winner_is_read_from_the_result(result: str, winner: int) -> None:
    assert one(b"(;RE[" + result.encode() + b"];B[pd])").winner == winner
