"""A go19 run folder written for the purpose, with review labels made by hand: one game
whose moves come from every origin (opening book, the player's own policy, a fallback)
and each of which loses 3 points by the labels, KataGo's move always A1 (played by no
one), so that every move is a DPO candidate and the expected pairs follow from the SGF
alone."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from orchestrator.coords import from_gtp
from orchestrator.label.games import select_games
from orchestrator.label.run import RunOptions
from orchestrator.label.store import LabelWriter, empty_labels

RUN = "demo-20261201-120000"
SGF_NAME = "baduk-20261201-120001-00001.sgf"
BEST = from_gtp("A1", 19)
# (SGF point, GOXIXSRC mark or None: the player's own move), move 1 first.
MOVES = (("pd", "opening"), ("dp", "opening"), ("pp", None), ("dd", "fallback:timeout"),
         ("qf", None), ("fc", "fallback:illegal:occupied"), ("jj", None))
OWN = [n for n, (_, mark) in enumerate(MOVES, 1) if mark is None]  # move numbers 3, 5, 7
LOSS = 3.0


def _sgf() -> str:
    nodes = "".join(
        f";{'BW'[i % 2]}[{point}]" + (f"GOXIXSRC[{mark}]" if mark else "")
        for i, (point, mark) in enumerate(MOVES))
    return (f"(;GM[1]FF[4]CA[UTF-8]SZ[19]KM[6.5]RU[Chinese]PB[strong]PW[weak]RE[B+R]"
            f"GOXIXRUN[{RUN}]GOXIXGAME[1]{nodes})")


def write_run(recordings: Path, engine: Path | None = None) -> Path:
    """``recordings/RUN`` with the game, a ``run.json`` and hand labels in ``RUN/labels``
    (review settings: the position after the last move too). ``engine``: a folder where
    stand-in KataGo files are made, named in labels.json by absolute paths as a real run
    names them (KataGo's own model list included)."""
    run = recordings / RUN
    run.mkdir(parents=True)
    (run / SGF_NAME).write_text(_sgf())
    (run / "run.json").write_text(json.dumps({"run_id": RUN, "matchup": {"players": {}}}))
    options = RunOptions(review=True)
    games, _ = select_games([run], review=True)
    writer = LabelWriter.open(run / "labels", options.settings(None), [run], resume=False)
    if engine is not None:
        engine.mkdir(parents=True)
        files = {name: engine / name for name in ("katago", "net.bin.gz", "analysis.cfg")}
        for path in files.values():
            path.write_text("stand-in")
        writer.set_engine({
            "version": "1.18.1", "model_names": ["net"],
            "models": [{"name": str(files["net.bin.gz"].resolve()), "internalName": "net"}],
            "binary": str(files["katago"].resolve()), "model": str(files["net.bin.gz"].resolve()),
            "config": str(files["analysis.cfg"].resolve())})
    for game in games:
        arrays = empty_labels(game, ownership=False, review=True)
        n = game.positions
        arrays["policy"][:] = 0
        arrays["policy"][:, BEST] = 1
        arrays["best_move"][:] = BEST
        arrays["winrate"][:] = 0.5
        # Black's lead falls by LOSS after each Black move and rises after each White one:
        # every move costs its player LOSS points.
        arrays["score_lead"][:] = np.where(np.arange(n) % 2 == 0, 0.0, -LOSS)
        arrays["visits"][:] = 1
        writer.add(game, arrays)
    writer.flush()
    return run
