"""Small SGF games for the label tests, each written out by hand with the points it
involves spelt as row * 19 + col (row 0 = SGF 'a' = the top line), not computed by go19."""

from __future__ import annotations

from pathlib import Path

HEADER = "GM[1]FF[4]CA[UTF-8]SZ[19]RU[Chinese]"


def _row(letter_row: str, cols: str) -> str:
    return "".join(f"[{c}{letter_row}]" for c in cols)


# Ten white stones on the first line (A1-K1, SGF row 's') and eleven black ones on the
# second (A2-L2, row 'r') inside a white wall (A3-L3, row 'q', and M2 'lr') share their
# last liberty L1 ('ks'): Black to move captures ten stones there.
CAPTURE = (f"(;{HEADER}KM[7.5]AB{_row('r', 'abcdefghijk')}"
           f"AW{_row('s', 'abcdefghij')}{_row('q', 'abcdefghijk')}[lr]PL[B];B[ks])")
CAPTURE_POINT = 18 * 19 + 10  # L1

# Setup stones after move 3 (J10 black 'jj', J9 white 'jk'), then two more moves.
MIDGAME_SETUP = f"(;{HEADER}KM[6.5];B[dd];W[pp];B[dp];AB[jj]AW[jk];W[pd];B[qf])"
MIDGAME_STONES = {  # the stones before each move, by row (0 = before move 1)
    0: set(), 1: {60}, 2: {60, 300}, 3: {60, 300, 288, 180, 199},
    4: {60, 300, 288, 180, 199, 72},
}

NOT_FOR_THE_DATASET = {
    "illegal.sgf": (f"(;{HEADER}KM[7.5];B[dd];W[dd])", "illegal:occupied"),
    "bad-setup.sgf": (f"(;{HEADER}AB[aa]AW[ba][ab];B[dd])", "illegal-setup"),
    "nine.sgf": ("(;GM[1]FF[4]SZ[9]KM[7];B[cc];W[gg])", "not-19x19"),
    "garbage.sgf": ("this is not an SGF file", "unparseable"),
}
VOID = f"(;{HEADER}KM[7.5]GOXIXVOID[1];B[dd];W[pp])"
# KataGo takes only integer or half-integer komi; go19 rejects the game (bad-komi).
ODD_KOMI = f"(;{HEADER}KM[0.3];B[dd];W[pp])"


def write_games(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a-capture.sgf").write_text(CAPTURE)
    (folder / "b-midgame-setup.sgf").write_text(MIDGAME_SETUP)
    (folder / "c-odd-komi.sgf").write_text(ODD_KOMI)
    (folder / "d-void.sgf").write_text(VOID)
    for name, (text, _) in NOT_FOR_THE_DATASET.items():
        (folder / name).write_text(text)
