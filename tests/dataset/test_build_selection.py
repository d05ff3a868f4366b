"""The build's selection of samples against a plain restatement of its rules (targets,
stages, a join, dedup with a Python set, picks, one row per sample), on the whole real
corpus and on real games given opening and fallback marks, for combinations of options;
and the compiled dedup index gives the same dataset, byte for byte, as the reference.

The builder selects each game's rows with one index array copied straight into the
shards (and skips work that changes nothing); this restatement takes ``Positions``
copies step by step, as the build did before, so any shortcut that changes a sample, a
count or a game-table row shows here.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.dataset import FIELDS, BuildOptions, build, fastdedup, load, load_games
from orchestrator.dataset.selection import pick, spread
from orchestrator.dataset.shards import read_manifest
from orchestrator.dataset.sources import find_sgf_files
from orchestrator.files import read_sgf_file
from orchestrator.positions.rows import Positions
from orchestrator.positions.samples import GameRead, read_file
from orchestrator.rules.tactics import Tactics
from orchestrator.sgf import SgfError, SgfMove, write_sgf
from tests.conftest import REAL_SGF, requires_real_sgf

pytestmark = requires_real_sgf


@pytest.fixture(scope="module")
def reads(tmp_path_factory) -> list[GameRead]:
    """Every game of the real corpus, then every 8th 19x19 game again with sources on
    its moves (opening, fallback, own) and a few of those twice more (cross-file repeats)."""
    files, _ = find_sgf_files([REAL_SGF])
    out = [game for path in files for game in read_file(path)]
    folder = tmp_path_factory.mktemp("marked")
    rng = random.Random(5)
    marked = []
    for path in files[::8]:
        try:
            games = read_sgf_file(path, require_size=19)
        except SgfError:
            continue
        for game in games:
            sources = [rng.choice([None] * 6 + ["opening", "fallback:timeout"])
                       if i < 30 or rng.random() < 0.1 else None for i in range(len(game.moves))]
            moves = tuple(SgfMove(m.color, m.point, s) for m, s in zip(game.moves, sources,
                                                                       strict=True))
            copy = folder / f"m{len(marked):04d}.sgf"
            copy.write_bytes(write_sgf(dataclasses.replace(game, moves=moves)))
            marked.append(copy)
    for path in [*marked, *marked[:10]]:
        out += read_file(path)
    assert sum(g.status == "ok" for g in out) > 650
    assert sum(int(np.count_nonzero(g.positions.origin)) for g in out if g.positions) > 500
    return out


def every_third_and_moves_reversed(game: GameRead, positions: Positions) -> Positions:
    """A stage: drops move numbers 1, 4, 7, ... and replaces ``move`` (reversed)."""
    rows = positions.take(positions.move_number % 3 != 1)
    return dataclasses.replace(rows, move=rows.move[::-1].copy())


class KeyJoin:
    """A join: drops positions whose key is a multiple of 5; two fields per sample."""

    fields = {"kv": (np.dtype(np.int64), ()), "vec": (np.dtype(np.float32), (3,))}

    def stage(self, game: GameRead, positions: Positions) -> Positions:
        return positions.take(positions.key % np.uint64(5) != 0)

    def values(self, game: GameRead, positions: Positions) -> dict[str, np.ndarray]:
        return {"kv": (positions.key % np.uint64(1000)).astype(np.int64) + positions.move_number,
                "vec": np.outer(positions.move_number, [1, 2, 3]).astype(np.float32)}

    def summary(self) -> dict:
        return {}


def restated(reads: list[GameRead], options: BuildOptions, stages=(), join=None
             ) -> tuple[dict[str, list[np.ndarray]], list[int], dict]:
    """The samples, samples per game-table row and counts the build's rules give."""
    seen: set[int] = set()
    parts: dict[str, list[np.ndarray]] = {name: [] for name in FIELDS}
    per_row = []
    counts: dict = {"excluded": Counter(), "duplicates": 0, "not_picked": 0}
    for row, game in enumerate(reads):
        if game.status != "ok" or game.moves < options.min_moves:
            per_row.append(0)
            continue
        positions = game.positions
        keep = np.ones(len(positions), bool)
        drops = [] if options.include_fallback else [
            (positions.origin == 1, "opening"), (positions.origin == 2, "fallback")]
        if options.winner_only:
            drops.append((positions.to_play != game.winner, "loser") if game.winner
                         else (np.ones(len(positions), bool), "no winner"))
        if options.tactics_only:
            drops.append((positions.tactical == 0, "not tactical"))
        for mask, why in drops:
            counts["excluded"][why] += int(np.count_nonzero(keep & mask))
            keep &= ~mask
        positions = positions.take(keep)
        for stage in [*stages, *([join.stage] if join else [])]:
            before = len(positions)
            positions = stage(game, positions)
            counts["excluded"]["stages"] += before - len(positions)
        if options.dedup:
            fresh, batch = [], set()
            for i, key in enumerate(positions.key.tolist()):
                if key not in seen and key not in batch:
                    fresh.append(i)
                batch.add(key)
            counts["duplicates"] += len(positions) - len(fresh)
            positions = positions.take(np.array(fresh, np.intp))
        limit = options.max_per_game
        if limit is not None and len(positions) > limit:
            rng = random.Random(f"{options.seed}:{game.sha1}:{game.game_index}")
            counts["not_picked"] += len(positions) - limit
            positions = positions.take(pick(positions.tactical, limit, options.tactical_bias,
                                            rng))
        if options.dedup:
            seen.update(positions.key.tolist())
        n = len(positions)
        per_row.append(n)
        for name in ("board", "to_play", "move", "move_number", "ko", "tactical"):
            parts[name].append(getattr(positions, name).astype(FIELDS[name][0]))
        parts["winner"].append(np.full(n, game.winner, np.uint8))
        parts["game"].append(np.full(n, row, np.int32))
        for name, values in (join.values(game, positions) if join else {}).items():
            parts.setdefault(name, []).append(values)
    tactical = np.concatenate(parts["tactical"])
    counts["tactical"] = {flag.name.lower(): int(np.count_nonzero(tactical & flag))
                          for flag in Tactics if flag}
    counts["tactical"]["any"] = int(np.count_nonzero(tactical))
    return parts, per_row, counts


CASES = {
    "default": (BuildOptions(), (), False),
    "no-dedup": (BuildOptions(dedup=False), (), False),
    "winner-only-8": (BuildOptions(winner_only=True, max_per_game=8), (), False),
    "tactics-only": (BuildOptions(tactics_only=True, shard_size=3001), (), False),
    "bias-16": (BuildOptions(max_per_game=16, tactical_bias=True, seed=3), (), False),
    "fallback-min-moves": (BuildOptions(include_fallback=True, min_moves=50, max_per_game=5),
                           (), False),
    "one-per-game": (BuildOptions(max_per_game=1, shard_size=97), (), False),
    "stage": (BuildOptions(max_per_game=30, shard_size=997), (every_third_and_moves_reversed,),
              False),
    "join": (BuildOptions(shard_size=5000), (), True),
    "join-bias-winner": (BuildOptions(max_per_game=9, tactical_bias=True, winner_only=True,
                                      tactics_only=False), (every_third_and_moves_reversed,),
                         True),
    "tactics-winner-no-dedup": (BuildOptions(tactics_only=True, winner_only=True, dedup=False),
                                (), False),
}


@pytest.mark.parametrize("case", CASES)
def test_samples_are_those_the_rules_give(case, reads, tmp_path) -> None:
    options, stages, joined = CASES[case]
    out = tmp_path / "ds"
    manifest = build([REAL_SGF], out, dataclasses.replace(options, compress=False),
                     stages=stages, join=KeyJoin() if joined else None,
                     reader=lambda paths: iter(reads))
    parts, per_row, counts = restated(reads, options, stages, KeyJoin() if joined else None)
    data = load(out)
    assert set(data) == set(parts)
    for name, arrays in parts.items():
        expected = np.concatenate(arrays)
        assert data[name].dtype == expected.dtype and data[name].shape == expected.shape, name
        assert np.array_equal(data[name], expected), name
    assert [row.samples for row in load_games(out)] == per_row
    got = manifest["counts"]
    assert got["samples"] == sum(per_row) > 0
    assert got["excluded"] == {why: n for why, n in sorted(counts["excluded"].items()) if n}
    assert (got["duplicates"], got["not_picked"]) == (counts["duplicates"], counts["not_picked"])
    assert got["tactical"] == {name: n for name, n in sorted(counts["tactical"].items()) if n}


@pytest.mark.skipif(not fastdedup.ENABLED, reason="numba is not installed (pip install "
                    "'go19[fast]') or GO19_PURE_DEDUP is set: the reference index is all "
                    "there is")
@pytest.mark.parametrize("options", [BuildOptions(shard_size=20_000),
                                     BuildOptions(max_per_game=12, tactical_bias=True)])
def test_compiled_dedup_gives_the_same_dataset(options, reads, tmp_path, monkeypatch) -> None:
    found = []
    for enabled in (True, False):
        monkeypatch.setattr(fastdedup, "ENABLED", enabled)
        out = tmp_path / f"compiled-{enabled}"
        build([REAL_SGF], out, options, reader=lambda paths: iter(reads))
        manifest = read_manifest(out)
        found.append(([s["sha256"] for s in manifest["shards"]], manifest["games"]["sha256"],
                      manifest["counts"], manifest["dedup"]))
    assert found[0] == found[1]
    assert found[0][2]["duplicates"] > 1000


@settings(max_examples=200, deadline=None, derandomize=True)
@given(bits=st.lists(st.sampled_from([0, 0, 0, 1, 2, 4, 3]), max_size=60),
       n=st.integers(1, 40), bias=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_pick_is_the_plain_rule(bits: list[int], n: int, bias: bool, seed: int) -> None:
    # Half (rounded up) at random among the tactical rows, the rest spread over the
    # others (np.setdiff1d): the rule as first written, on the same random stream.
    tactical = np.array(bits, np.uint8)
    rows = np.arange(len(bits))
    if len(rows) <= n:
        expected = rows
    elif not bias:
        expected = spread(rows, n)
    else:
        pool = [i for i, b in enumerate(bits) if b]
        chosen = sorted(random.Random(seed).sample(pool, min(len(pool), (n + 1) // 2)))
        others = np.setdiff1d(rows, chosen, assume_unique=True)
        expected = np.sort(np.concatenate([np.array(chosen, np.intp),
                                           spread(others, n - len(chosen))]))
    got = pick(tactical, n, bias, random.Random(seed))
    assert got.tolist() == expected.tolist()
    assert len(got) == min(n, len(bits))
