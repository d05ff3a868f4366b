"""The dashboard fits any terminal: at 80x24, 120x40 and 200x60 the verdict line comes
first and the failing replica's row is on screen, in its colour; nothing runs past the
last line. Rendered with rich's recording console, as a terminal would show it."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from orchestrator.collect.dashboard import Dashboard
from orchestrator.collect.standings import PlainLog, RecentEvents, standings_block
from orchestrator.collect.state import RunState
from orchestrator.events import Fallback, GameRecorded, ReplicaChanged
from tests.collect.dashboard_scene import FAILING_REPLICA, SLOW_REPLICA, record, scene

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def render(collector, width: int, height: int) -> tuple[list[str], list[str]]:
    """The screen's lines, plain and with their ANSI styles."""
    console = Console(record=True, width=width, height=height, force_terminal=True,
                      color_system="truecolor", legacy_windows=False)
    dash = Dashboard(console, collector.recent)
    dash.attach(collector)
    console.print(dash.render())
    styled = console.export_text(styles=True).splitlines()
    return [ANSI.sub("", line) for line in styled], styled


@pytest.mark.parametrize(("width", "height"), [(80, 24), (120, 40), (200, 60)])
def test_verdict_and_failing_replica_fit(width: int, height: int) -> None:
    plain, styled = render(scene(), width, height)
    assert len(plain) <= height - 1, "\n".join(plain)
    assert all(len(line) <= width for line in plain)
    # the verdict first: score, Elo with its interval and which counts, LOS, LLR
    assert re.match(r"r5 vs r4: \d+–\d+–0 \(\d+\.\d %\)  Elo [+−]\d+\.\d \[", plain[0])
    head = " ".join(plain[:3])
    assert "pentanomial 106 pairs" in head and "LOS" in head and "LLR" in head
    # the failing replica's row: shown, and red
    (row,) = [i for i, line in enumerate(plain)
              if line.startswith("●") and FAILING_REPLICA in line]
    assert "down" in plain[row] and "41m" in styled[row]  # white on red
    healthy = [i for i, line in enumerate(plain) if "10.0.0.9:5019" in line]
    assert all("41m" not in styled[i] for i in healthy)
    # names people know, and the fallback burst collapsed into one counted line
    assert "lora_mix_qwen_r5 (Qwen3-VL-8B)" in "".join(plain)
    text = "\n".join(plain)
    if height >= 40:
        assert "×31 illegal:superko fallback (r4)" in text
        assert f"{SLOW_REPLICA}" in text and "slow" in text
        assert re.search(r"r4 \d+ = [\d.]+ % of \d+ moves: illegal:superko", text)


def test_games_in_flight_take_the_rows_left() -> None:
    small, _ = render(scene(), 80, 24)
    big, _ = render(scene(), 200, 60)
    rows = lambda lines: sum(bool(re.match(r"^\d{3} +r[45] +r[45] ", ln)) for ln in lines)  # noqa: E731
    assert 0 < rows(small) < 8 and rows(big) == 8
    assert any("… and" in line for line in small)


def test_live_board_on_tall_terminals_only() -> None:
    big, styled = render(scene(), 200, 60)
    assert any("A B C D E F G H J K L M N O P Q R S T" in line for line in big)
    board = [line for line in styled if "┼" in line]
    assert len(board) == 19
    # the last move: one stone on red
    assert sum(line.count("41m●") for line in board) == 1
    small, _ = render(scene(), 80, 24)
    assert not any("A B C D E F G H J" in line for line in small)


def test_trinomial_before_the_first_pair_is_complete() -> None:
    plain, _ = render(scene(games=1), 120, 40)
    assert "trinomial 1 game" in plain[0] or "trinomial 1 game" in " ".join(plain[:2])
    plain, _ = render(scene(games=9, paired=False), 120, 40)
    assert "trinomial 9 games" in " ".join(plain[:2])


def test_standings_block_every_n_games() -> None:
    collector = scene(games=0, in_flight=0)
    lines: list[str] = []
    log = PlainLog(every=2, out=lines.append)
    import trio
    trio.run(log.run, collector)
    for n in range(1, 6):
        black, white = ("r5", "r4") if n % 2 else ("r4", "r5")
        game = record(n, black, white, "black", (n - 1) // 2)
        collector.state.add_record(game)
        log.on_event(GameRecorded(game))
    blocks = [i for i, line in enumerate(lines) if line.startswith("Results of r5 vs r4")]
    assert [lines[i - 2] for i in blocks] == [
        "game 2: r4 (B) vs r5 (W) B+3.5 by two-passes, 240 moves",
        "game 4: r4 (B) vs r5 (W) B+3.5 by two-passes, 240 moves",
    ]
    block = standings_block(collector)
    assert "Results of r5 vs r4 (5/400 games, 0 void):" in block
    assert "Games: 5, Wins: 3, Losses: 2, Draws: 0, Points: 3.0 (60.0 %)" in block
    assert "Ptnml(0-2): [0, 0, 2, 0, 0]" in block  # two complete pairs, one each
    assert "LLR: " in block and "[0.00, 30.00]" in block


def test_events_collapse_repeats() -> None:
    state = RunState(run_id="x", target=1, players=["a"])
    recent = RecentEvents()
    state.subscribe(recent.on_event)
    for k in range(5):
        state.emit(Fallback(3, k, "a", "illegal:superko"))
    state.emit(GameRecorded(record(3, "a", "b", "black", None)))
    state.emit(Fallback(4, 9, "a", "illegal:superko"))
    state.emit(Fallback(4, 10, "a", "timeout"))
    # A replica's retries are one entry (the latest); its going down is another.
    for failures in (1, 2, 3):
        state.emit(ReplicaChanged("h:1", "backoff", 1.5 * failures, "refused", failures,
                                  player="a"))
    state.emit(ReplicaChanged("h:1", "down", 6.0, "refused", 6, player="a"))
    events = list(recent.entries)
    assert [(e.text, e.count) for e in events] == [
        ("game 3: a (B) vs b (W) B+3.5 by two-passes, 240 moves", 1),
        ("illegal:superko fallback (a)", 6),
        ("timeout fallback (a)", 1),
        ("a: h:1: connect failed (refused); retry in 4.5 s", 3),
        ("a: h:1: down after 6 failed connects (refused)", 1),
    ]


def test_many_replicas_keep_the_failing_one_in_view() -> None:
    plain, styled = render(scene(more_replicas=10), 80, 24)
    assert len(plain) <= 23
    (row,) = [i for i, line in enumerate(plain)
              if line.startswith("●") and FAILING_REPLICA in line]
    assert "41m" in styled[row]
    assert any(SLOW_REPLICA in line for line in plain)  # slow ones come next
    assert any(re.match(r"… \d+ healthy replicas not shown", line) for line in plain)
    assert plain[0].startswith("r5 vs r4: ")


@pytest.mark.parametrize("width", [80, 110, 160])
@pytest.mark.parametrize("height", [24, 31, 44, 50])
def test_nothing_runs_past_the_screen(width: int, height: int) -> None:
    for collector in (scene(more_replicas=6), scene(games=3, in_flight=30)):
        plain, _ = render(collector, width, height)
        assert len(plain) <= height - 1, "\n".join(plain)
        assert plain[0].startswith("r5 vs r4: ")
        assert any(line.startswith("●") and FAILING_REPLICA in line for line in plain)
