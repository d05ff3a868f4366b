"""Strength, game length and speed of the heuristic AI on 19x19, komi 7.5,
Tromp-Taylor scoring, refereed by ``orchestrator.rules.Game`` with the 722-move cap.

- level 2 against the uniformly random legal mover (target: >= 95 % wins);
- level 2 against itself: games must end by two passes well before the cap;
- level 1 against level 2 (the demo's two strengths must differ clearly);
- time per move of level 2 (target: <= 5 ms), against the random mover's
  time per move measured in the same games as the reference.

Colours alternate from game to game; every game has its own seeds, so a run is
reproducible. Run: ``.venv/bin/python bench/heuristic.py [--vs-random N] ...``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from orchestrator.players.heuristic import HeuristicChooser  # noqa: E402
from orchestrator.players.random_player import RandomChooser  # noqa: E402
from orchestrator.rules import BLACK, WHITE, Game  # noqa: E402

SIZE = 19
KOMI = 7.5
MOVE_CAP = 722


@dataclass
class Tally:
    """Results of one pairing, from the first-named player's side."""

    wins: int = 0
    games: int = 0
    lengths: list[int] = field(default_factory=list)
    by_passes: int = 0
    # Seconds per move, per player label: wall clock, and this thread's CPU time
    # (the honest cost on a machine other jobs are sharing).
    times: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[float]] = field(default_factory=dict)


def play(black, white, labels: tuple[str, str], tally: Tally) -> int:
    """One game to two passes or the cap; returns the winner's colour (0 on jigo)."""
    game = Game(SIZE, KOMI)
    players = {BLACK: (black, labels[0]), WHITE: (white, labels[1])}
    last = None
    while not game.over_by_passes and game.move_number < MOVE_CAP:
        ai, label = players[game.to_play]
        start, start_cpu = time.perf_counter(), time.thread_time()
        point = ai.choose(game.board, game.to_play, last)
        tally.times.setdefault(label, []).append(time.perf_counter() - start)
        tally.cpu.setdefault(label, []).append(time.thread_time() - start_cpu)
        game.play(point)
        last = point
    tally.lengths.append(game.move_number)
    tally.by_passes += game.over_by_passes
    return game.score().winner


def pairing(make_a, make_b, labels: tuple[str, str], games: int) -> Tally:
    """``games`` games between A and B, A taking Black in the even-numbered ones."""
    tally = Tally()
    for i in range(games):
        a, b = make_a(2 * i), make_b(2 * i + 1)
        if i % 2 == 0:
            a_won = play(a, b, labels, tally) == BLACK
        else:
            a_won = play(b, a, labels[::-1], tally) == WHITE
        tally.wins += a_won
        tally.games += 1
    return tally


def lengths(tally: Tally) -> str:
    return (
        f"length mean {statistics.mean(tally.lengths):.0f}, max {max(tally.lengths)}, "
        f"ended by two passes {tally.by_passes}/{tally.games}"
    )


def per_move(samples: list[float]) -> tuple[float, float]:
    """Mean and 95th percentile, in milliseconds."""
    ordered = sorted(samples)
    return statistics.mean(ordered) * 1e3, ordered[int(0.95 * (len(ordered) - 1))] * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vs-random", type=int, default=200, metavar="N")
    parser.add_argument("--self-play", type=int, default=30, metavar="N")
    parser.add_argument("--levels", type=int, default=100, metavar="N")
    args = parser.parse_args()
    speed: list[float] = []
    speed_cpu: list[float] = []
    print(f"{SIZE}x{SIZE}, komi {KOMI}, Tromp-Taylor, cap {MOVE_CAP} moves")

    if args.vs_random:
        t = pairing(lambda s: HeuristicChooser(s, 2), RandomChooser, ("L2", "random"),
                    args.vs_random)
        print(f"level 2 vs random: {t.wins}/{t.games} wins = {100 * t.wins / t.games:.1f} % "
              f"(target >= 95 %); {lengths(t)}")
        speed += t.times["L2"]
        speed_cpu += t.cpu["L2"]
        mean_h, _ = per_move(t.cpu["L2"])
        mean_r, _ = per_move(t.cpu["random"])
        print(f"  CPU per move: level 2 {mean_h:.3f} ms, random mover {mean_r:.3f} ms "
              f"(ratio {mean_h / mean_r:.1f}x)")

    if args.self_play:
        t = pairing(lambda s: HeuristicChooser(s, 2), lambda s: HeuristicChooser(s, 2),
                    ("L2", "L2"),
                    args.self_play)
        print(f"level 2 vs level 2: {lengths(t)}")
        speed += t.times["L2"]
        speed_cpu += t.cpu["L2"]

    if args.levels:
        t = pairing(lambda s: HeuristicChooser(s, 2), lambda s: HeuristicChooser(s, 1),
                    ("L2", "L1"),
                    args.levels)
        print(f"level 2 vs level 1: level 2 wins {t.wins}/{t.games} = "
              f"{100 * t.wins / t.games:.1f} %; {lengths(t)}")
        speed += t.times["L2"]
        speed_cpu += t.cpu["L2"]
        t0 = pairing(lambda s: HeuristicChooser(s, 1), lambda s: HeuristicChooser(s, 0),
                     ("L1", "L0"),
                     max(1, args.levels // 2))
        print(f"level 1 vs level 0: level 1 wins {t0.wins}/{t0.games} = "
              f"{100 * t0.wins / t0.games:.1f} %; {lengths(t0)}")

    if speed:
        mean, p95 = per_move(speed)
        mean_cpu, p95_cpu = per_move(speed_cpu)
        print(f"level 2 time per move over {len(speed)} moves (target <= 5 ms): "
              f"CPU mean {mean_cpu:.2f} ms, p95 {p95_cpu:.2f} ms; "
              f"wall mean {mean:.2f} ms, p95 {p95:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
