"""The gate's benchmark (not a test): `.venv/bin/python bench/gate.py [--seeds N] [--games N]`.

Real collect runs of the built-in heuristic AI, each stopped by `[stop] gate` at its
defaults (SPRT(0, 35), alpha = beta = 0.05, min_games = 100, pentanomial pairs counted in
schedule order), on 9x9 with komi 7.5, games capped at 150 moves, 4 random opening plies
(each opening played twice, colours swapped), four games in flight:

- decisive pairs: level 2 against level 1, and level 2 against the random mover: games to
  the decision, and where the LLR first crossed a bound (the decision without min_games);
- the even pair: level 1 against level 1 (two differently seeded copies), --seeds runs
  of at most --games games: how often the gate accepts, rejects or stays undecided.

For each run it also counts the same games as they finished (pairs when their second
game is in, the bias schedule order removes: Leela Zero #1730) and says how often that
would have decided differently. Times are CPU seconds of this process (the games are
played in it).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orchestrator.collect.matchup import Gate  # noqa: E402
from orchestrator.collect.run import CollectOptions, collect  # noqa: E402
from orchestrator.collect.stopping import RuleTally, ScheduleOrder, gate_tally  # noqa: E402
from orchestrator.recordings import JournalRecord, read_journal  # noqa: E402

MOVE_CAP = 150
MATCHUP = """
[run]
name = "bench-gate"
seed = {seed}
[players.cand]
kind = "{cand_kind}"
{cand_level}
seed = {cand_seed}
[players.base]
kind = "{base_kind}"
{base_level}
seed = {base_seed}
[pairing]
black = "cand"
white = "base"
[game]
size = 9
komi = 7.5
move_cap = {move_cap}
concurrency = 4
[openings]
random_plies = 4
[stop]
gate = {{ candidate = "cand", elo0 = 0, elo1 = 35, alpha = 0.05, beta = 0.05, min_games = 100 }}
"""
GATE = Gate(candidate="cand")


@dataclass(frozen=True)
class Outcome:
    decision: str  # accept | reject | undecided
    games: int  # the games the gate counted
    recorded: int  # finished games in the journal
    crossed: int | None  # games at the LLR's first crossing, min_games aside
    arrival: tuple[str, int]  # the decision counting pairs as they finished
    cpu_s: float


def _player(kind: str) -> tuple[str, str]:
    if kind == "random":
        return "random", ""
    return "heuristic", f"level = {kind[-1]}"


def _walk(units: list[tuple[JournalRecord, ...]], min_games: int) -> RuleTally:
    tally = gate_tally(GATE.model_copy(update={"min_games": min_games}), ("cand", "base"))
    for unit in units:
        tally.count(unit)
    return tally


def _schedule_units(records: list[JournalRecord]) -> list[tuple[JournalRecord, ...]]:
    order = ScheduleOrder(2)
    return [unit for record in records for unit in order.add(record)]


def _arrival_units(records: list[JournalRecord]) -> list[tuple[JournalRecord, ...]]:
    groups: dict[int, list[JournalRecord]] = {}
    units = []
    for record in records:
        if record.void or record.slot is None:
            continue
        group = groups.setdefault(record.slot // 2, [])
        group.append(record)
        if len(group) == 2:
            units.append(tuple(sorted(group, key=lambda r: r.slot or 0)))
    return units


WORDS = {"H1": "accept", "H0": "reject", None: "undecided"}


def run_once(root: Path, cand: str, base: str, seed: int, games: int) -> Outcome:
    cand_kind, cand_level = _player(cand)
    base_kind, base_level = _player(base)
    path = root / f"{cand}-{base}-{seed}.toml"
    path.write_text(MATCHUP.format(seed=seed, cand_kind=cand_kind, cand_level=cand_level,
                                   cand_seed=2 * seed + 1, base_kind=base_kind,
                                   base_level=base_level, base_seed=2 * seed + 2,
                                   move_cap=MOVE_CAP))
    start = time.process_time()
    summary = trio.run(collect, CollectOptions(matchup_path=path, games=games,
                                               recordings=root / "rec", dashboard=False))
    cpu = time.process_time() - start
    gate = summary.state.gate
    assert gate is not None
    records = read_journal(summary.run_dir / "games.jsonl").records
    crossing = _walk(_schedule_units(records), 0).status()
    arrival = _walk(_arrival_units(records), GATE.min_games).status()
    return Outcome(WORDS[gate.decision], gate.games, len(records),
                   crossing.games if crossing.decision else None,
                   (WORDS[arrival.decision], arrival.games), cpu)


def report(name: str, outcomes: list[Outcome]) -> None:
    decisions = Counter(o.decision for o in outcomes)
    decided = [o.games for o in outcomes if o.decision != "undecided"]
    crossed = [o.crossed for o in outcomes if o.crossed is not None]
    differ = sum((o.decision, o.games) != o.arrival for o in outcomes)
    games = sum(o.recorded for o in outcomes)
    cpu = sum(o.cpu_s for o in outcomes)
    print(f"{name}: {len(outcomes)} runs — accept {decisions['accept']}, reject "
          f"{decisions['reject']}, undecided {decisions['undecided']}")
    if decided:
        print(f"  games to a decision: median {statistics.median(decided):g}, "
              f"min {min(decided)}, max {max(decided)}")
    if crossed:
        print(f"  LLR first past a bound (min_games aside): median "
              f"{statistics.median(crossed):g} games, min {min(crossed)}, max {max(crossed)}")
    print(f"  counted as they finished instead: {differ} of {len(outcomes)} runs decide "
          f"otherwise ({', '.join(f'{o.arrival[0]}@{o.arrival[1]}' for o in outcomes)})")
    print(f"  {games} games recorded, {cpu:.1f} CPU s ({1000 * cpu / max(games, 1):.1f} ms "
          "a game)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="even-pair runs")
    parser.add_argument("--games", type=int, default=200, help="games per even-pair run")
    parser.add_argument("--decisive-seeds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for cand, base, seeds, games in (
            ("level2", "level1", args.decisive_seeds, 400),
            ("level2", "random", max(args.decisive_seeds // 2, 1), 400),
            ("level1", "level1", args.seeds, args.games),
        ):
            outcomes = [run_once(root, cand, base, seed, games) for seed in range(seeds)]
            report(f"{cand} vs {base} (at most {games} games)", outcomes)


if __name__ == "__main__":
    main()
