"""`go19 adjudicate` on the session's real demo run reviewed by the CPU KataGo (`reviewed`):
the table recounted here from the label shards and games.jsonl, with a plain loop, not the
code under test. The games are 6 moves long, so the grid starts resigning at move 0 and
its thresholds are near even (KataGo's win rates after a few moves are)."""

from __future__ import annotations

import hashlib
import json

from orchestrator.label.store import LabelSet
from tests.conftest import go19_here
from tests.label.conftest import requires_katago
from tests.review.conftest import GAMES, MOVE_CAP

pytestmark = requires_katago

GRID = ((0.3, 0.45, 0.49), (1, 2))


def _by_hand(reviewed) -> dict[tuple[float, int], tuple[int, int, int]]:
    """(threshold, turns) -> correct, incorrect, moves saved."""
    labels = LabelSet(reviewed.labels)
    lines = [json.loads(line) for line in (reviewed.run / "games.jsonl").read_text()
             .splitlines()]
    out = {}
    for threshold in GRID[0]:
        for turns in GRID[1]:
            correct = incorrect = saved = 0
            for line in lines:
                sha1 = hashlib.sha1((reviewed.run / line["sgf"]).read_bytes()).hexdigest()
                arrays = labels.game(sha1, 0).arrays
                low = {1: 0, 2: 0}
                # The row of move number m is the position after m - 1 moves; the table
                # sees those after moves 1 .. moves - 1 (after the last, the game is over).
                for m in range(2, line["moves"] + 1):
                    row = m - 1
                    color = int(arrays["to_play"][row])
                    black = float(arrays["winrate"][row])
                    own = black if color == 1 else 1 - black
                    low[color] = low[color] + 1 if own < threshold else 0
                    if low[color] >= turns:
                        lost = line["winner"] == ("white" if color == 1 else "black")
                        correct += lost
                        incorrect += not lost
                        saved += line["moves"] - (m - 1)
                        break
            out[(threshold, turns)] = (correct, incorrect, saved)
    return out


def test_the_table_of_a_reviewed_run_is_the_recount(reviewed) -> None:
    done = go19_here("adjudicate", reviewed.run, "--min-move", 0, "--json", "--thresholds",
                     ",".join(map(str, GRID[0])), "--turns", ",".join(map(str, GRID[1])))
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout)
    assert (table["games"], table["moves"]) == (GAMES, GAMES * MOVE_CAP)
    assert table["moves_with_winrate"] == GAMES * (MOVE_CAP - 1)
    # The demo's games stop at its 6-move cap: each is counted and the note says so.
    capped = sum(json.loads(line)["reason"] == "move-cap"
                 for line in (reviewed.run / "games.jsonl").read_text().splitlines())
    assert capped == GAMES
    assert table["notes"] == [
        f"{capped} of the {GAMES} games counted ended at the move cap: the winner there is the "
        "area count of an unfinished board, so an incorrect resign may be the cap's, not the "
        "rule's (play games out to measure false resigns)"]
    expected = _by_hand(reviewed)
    got = {(c["threshold"], c["turns"]): (c["correct"], c["incorrect"], c["moves_saved"])
           for c in table["cells"]}
    assert got == expected
    # Near even, one side or the other is below 0.49 at once: the grid is not all empty.
    assert sum(c + i for c, i, _ in expected.values()) > 0


def test_its_text_table_and_the_default_min_move(reviewed) -> None:
    done = go19_here("adjudicate", reviewed.run)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"adjudicate: {GAMES} played-out games, "
                               f"{GAMES * MOVE_CAP} moves")
    assert len([line for line in lines if line[:8].strip()[:1].isdigit()]) == 5 * 3
    assert lines[-1] == ("note: no labelled position reaches move 73, where resigning may "
                         "start: nothing can resign; label whole games (go19 review without "
                         "--max-moves) or lower --min-move")
