"""`go19 label --ray`: two CPU KataGo actors on a local Ray label real games as one engine
does, an actor killed with games in flight loses nothing, and input without a game to label
is refused before Ray starts."""

from __future__ import annotations

import heapq
import io
import json
import os
import shutil
import signal
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from orchestrator.cli import main
from orchestrator.cluster.label import ClusterOptions, RayLabelRun, _Slot, next_piece
from orchestrator.cluster.label_actor import EngineSpec
from orchestrator.dataset.shards import load
from orchestrator.label.games import select_games
from orchestrator.label.progress import PlainReporter
from orchestrator.label.run import LabelRunError, RunOptions
from orchestrator.label.store import LabelSet, LabelWriter
from tests.cluster.conftest import NO_RAY, REAL, requires_real
from tests.label.conftest import requires_katago
from tests.label.standin import standin

pytestmark = [requires_real]

MOVES = 3  # positions per game: CPU KataGo answers about one a second


def _files(n: int) -> list[str]:
    return [str(p) for p in sorted((REAL / "pro19").glob("*.sgf"))[:n]]


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("single") / "labels"
    assert main(["label", *_files(3), "--out", str(out), "--max-moves", str(MOVES)]) == 0
    return out


def _games(folder: Path) -> dict[str, dict[str, Any]]:
    return {g["ident"]: g for g in json.loads((folder / "labels.json").read_text())["games"]}


@pytest.fixture(scope="module")
def two_actors(local_ray: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One Ray run shared by the tests that compare it with the single engine's: each CPU
    # KataGo position costs about a second, so the run is made once.
    out = tmp_path_factory.mktemp("ray") / "labels"
    assert main(["label", *_files(3), "--out", str(out), "--max-moves", str(MOVES),
                 "--ray", "--engines", "2"]) == 0
    return out


@requires_katago
def test_two_actors_label_as_one_engine(single: Path, two_actors: Path,
                                        tmp_path: Path) -> None:
    out = tmp_path / "labels"
    shutil.copytree(two_actors, out)  # the resume below appends a run to its manifest
    one, two = LabelSet(single), LabelSet(out)
    assert _games(out).keys() == _games(single).keys()
    assert two.manifest["counts"] == one.manifest["counts"]
    assert two.manifest["settings"] == one.manifest["settings"]
    assert two.manifest["engine"]["model_names"] == one.manifest["engine"]["model_names"]
    assert two.manifest["runs"][-1]["ray"]["engines"] == 2
    # The folder is the single-engine format: the plain command resumes it, asking nothing.
    assert main(["label", *_files(3), "--out", str(out), "--max-moves", str(MOVES),
                 "--resume"]) == 0
    resumed = LabelSet(out).manifest
    assert resumed["runs"][-1]["labelled"] == 0 and resumed["counts"] == one.manifest["counts"]
    for ident, entry in _games(single).items():
        sha1, index = ident.split(":")
        a, b = one.game(sha1, int(index)), two.game(sha1, int(index))
        assert a is not None and b is not None and entry["positions"] == MOVES
        for name in ("sha1", "game_index", "move_number", "to_play", "key", "best_move"):
            assert np.array_equal(a.arrays[name], b.arrays[name]), (ident, name)
        # nnRandomize = false: one visit is the raw net, equal up to float rounding.
        np.testing.assert_allclose(a.arrays["policy"], b.arrays["policy"], atol=1e-4)
        np.testing.assert_allclose(a.arrays["winrate"], b.arrays["winrate"], atol=1e-3)


@requires_katago
def test_ray_labels_build_the_same_dataset(single: Path, two_actors: Path,
                                           tmp_path: Path) -> None:
    built = {}
    for name, labels in (("single", single), ("ray", two_actors)):
        built[name] = tmp_path / f"ds-{name}"
        assert main(["dataset", "build", *_files(3), "--out", str(built[name]), "--labels",
                     str(labels), "--target", "katago"]) == 0
    a = json.loads((built["single"] / "manifest.json").read_text())
    b = json.loads((built["ray"] / "manifest.json").read_text())
    assert a["counts"] == b["counts"] and a["labels"]["labelled"] == 3 * MOVES
    x, y = load(built["single"]), load(built["ray"])
    assert x.keys() == y.keys() and len(x["move"]) == a["counts"]["samples"] > 0
    for name in x:
        if x[name].dtype.kind == "f":
            np.testing.assert_allclose(x[name], y[name], atol=1e-3, err_msg=name)
        else:
            assert np.array_equal(x[name], y[name]), name


@requires_katago
def test_killed_actor_loses_and_repeats_nothing(local_ray: Any, tmp_path: Path) -> None:
    ray = local_ray
    moves = MOVES  # games long enough to be caught half answered (a poll a second)
    games, _ = select_games(_files(4), max_moves=moves)
    options = RunOptions(visits=1, max_in_flight=1)
    writer = LabelWriter.open(tmp_path / "labels", options.settings(moves), [], resume=False)
    killed: list[int] = []

    def kill_mid_game(run: RayLabelRun) -> None:
        # The state, not a time: engine 0 holds a game it has answered in part.
        if not killed and run.in_flight(0) and run.answered(0) > run.finished(0):
            killed.append(run.answered(0))
            ray.kill(run.slots[0].actor, no_restart=True)

    lines = io.StringIO()
    run = RayLabelRun(writer, EngineSpec(), options, ClusterOptions(engines=2, interval=3600),
                      PlainReporter(lines), watch=kill_mid_game)
    result = run.run(ray, games)
    writer.flush()
    assert killed, "engine 0 never held a game in flight with answers"
    assert result.restarts == 1 and "engine 0" in lines.getvalue()
    assert result.labelled == len(games) == 4 and result.errors == 0
    labels = LabelSet(tmp_path / "labels")
    assert labels.manifest["counts"]["status"] == {"ok": 4}
    assert len(labels) == 4 * moves  # each position once: none lost, none twice
    rows = set(zip(labels.arrays["sha1"].tolist(), labels.arrays["game_index"].tolist(),
                   labels.arrays["move_number"].tolist(), strict=True))
    assert len(rows) == 4 * moves
    assert {g.ident for g in games} == {g["ident"] for g in labels.manifest["games"]}


@requires_katago
def test_interrupt_keeps_finished_games(local_ray: Any, tmp_path: Path) -> None:
    games, _ = select_games(_files(3), max_moves=MOVES)
    options = RunOptions(visits=1, max_in_flight=1)
    folder = tmp_path / "labels"
    writer = LabelWriter.open(folder, options.settings(MOVES), [], resume=False)

    def interrupt(run: RayLabelRun) -> None:
        if run.result.labelled:  # the state: one game written to the writer
            raise KeyboardInterrupt

    run = RayLabelRun(writer, EngineSpec(), options, ClusterOptions(engines=2),
                      PlainReporter(io.StringIO()), watch=interrupt)
    with pytest.raises(KeyboardInterrupt):
        try:
            run.run(local_ray, games)
        finally:
            writer.flush()  # what the command's finally does
    done = LabelSet(folder)
    assert 1 <= done.manifest["counts"]["status"].get("ok", 0) < len(games)
    assert len(done) == MOVES * done.manifest["counts"]["status"]["ok"]
    # Resuming asks only the others, and ends with every game once.
    writer = LabelWriter.open(folder, options.settings(MOVES), [], resume=True)
    rest = RayLabelRun(writer, EngineSpec(), options, ClusterOptions(engines=1),
                       PlainReporter(io.StringIO())).run(local_ray, games)
    writer.flush()
    assert rest.already == done.manifest["counts"]["status"]["ok"]
    assert rest.labelled == len(games) - rest.already
    assert len(LabelSet(folder)) == MOVES * len(games)


@requires_katago
def test_engine_that_cannot_start_is_one_line(local_ray: Any, tmp_path: Path) -> None:
    games, _ = select_games(_files(1), max_moves=1)
    options = RunOptions()
    writer = LabelWriter.open(tmp_path / "labels", options.settings(1), [], resume=False)
    missing = str(tmp_path / "no-katago")
    run = RayLabelRun(writer, EngineSpec(binary=missing), options, ClusterOptions(engines=1),
                      PlainReporter(io.StringIO()))
    with pytest.raises(LabelRunError) as error:
        run.run(local_ray, games)
    assert str(error.value) == (f"KataGo engines did not start: KataGo binary {missing}: "
                                "no such file on node " + socket.gethostname())


@requires_katago
def test_more_engines_than_the_cluster_holds_is_one_line(local_ray: Any, tmp_path: Path,
                                                         capsys: Any) -> None:
    # num_cpus=2: three one-CPU engines would wait for ever; a GPU engine has no GPU.
    for extra in (["--engines", "3"], ["--engines", "1", "--gpus-per-engine", "1"]):
        out = tmp_path / "-".join(extra)
        status = main(["label", *_files(3), "--out", str(out), "--max-moves", "1",
                       "--ray", *extra])
        err = capsys.readouterr().err
        assert status == 1 and "the Ray cluster has" in err, err
        assert LabelSet(out).manifest["counts"]["games"] == 0  # nothing asked, folder usable


@requires_katago
def test_katago_killed_inside_an_actor_restarts_there(local_ray: Any, tmp_path: Path) -> None:
    ray = local_ray
    moves = MOVES
    games, _ = select_games(_files(3), max_moves=moves)
    options = RunOptions(visits=1, max_in_flight=1)
    writer = LabelWriter.open(tmp_path / "labels", options.settings(moves), [], resume=False)
    killed: list[int] = []
    later: set[int] = set()

    def kill_katago(run: RayLabelRun) -> None:
        # The state: engine 0 holds a game it has answered in part; its KataGo dies.
        pid = ray.get(run.slots[0].actor.katago_pid.remote())
        if killed and pid is not None:
            later.add(pid)
        elif not killed and pid is not None and run.in_flight(0) and (
                run.answered(0) > run.finished(0)):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    run = RayLabelRun(writer, EngineSpec(), options, ClusterOptions(engines=2, interval=3600),
                      PlainReporter(io.StringIO()), watch=kill_katago)
    result = run.run(ray, games)
    writer.flush()
    assert killed, "engine 0 never held a game in flight with answers"
    assert result.restarts == 0  # the actor lived on: its KataGo restarted inside it
    assert later and killed[0] not in later
    assert result.labelled == len(games) and result.errors == 0
    labels = LabelSet(tmp_path / "labels")
    assert len(labels) == moves * len(games)
    rows = set(zip(labels.arrays["sha1"].tolist(), labels.arrays["game_index"].tolist(),
                   labels.arrays["move_number"].tolist(), strict=True))
    assert len(rows) == moves * len(games)


def test_input_without_a_game_is_refused_before_ray(tmp_path: Path, capsys: Any) -> None:
    # The plain command's refusal (tests/cli/test_empty_inputs.py): exit 2, one line,
    # nothing written, and no engine or Ray asked (none of the KataGo paths exists).
    pytest.importorskip("ray", reason=NO_RAY)
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("2x2.sgf", "owl42.sgf"):  # not 19x19, truncated
        (folder / name).write_bytes((REAL / "odd" / name).read_bytes())
    out = tmp_path / "labels"
    missing = str(tmp_path / "no-katago")
    status = main(["label", str(folder), "--out", str(out), "--katago", missing,
                   "--ray", "--engines", "2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert err[0] == (f"label: nothing to label, nothing written to {out}: 2 SGF files, "
                      "2 games: rejected 2 (not-19x19 1, truncated 1), skipped 0")
    assert not out.exists()


def _hand_out(lengths: list[int], pieces: int) -> list[tuple[int, range]]:
    queue = [(order, 0, n) for order, n in enumerate(lengths)]
    queued, out = sum(lengths), []
    while queue:
        order, rows = next_piece(queue, queued, pieces)
        queued -= len(rows)
        out.append((order, rows))
    return out


def test_pieces_cover_every_row_once_in_order_and_shrink_at_the_end() -> None:
    lengths = [15] * 8  # bench/label.py's old scaling run: 2 engines x 4 in flight
    out = _hand_out(lengths, pieces=2 * 2 * 4)
    assert [(o, r) for o, rows in out for r in rows] == [
        (o, r) for o, n in enumerate(lengths) for r in range(n)]  # build order, each once
    assert len(out[0][1]) == 8 and all(len(rows) == 1 for _, rows in out[-16:])
    # A long queue hands out whole games: pieces only once it holds fewer positions than
    # the pieces in flight x a game (here about the last 256 of 1000 games).
    long = _hand_out([200] * 1000, pieces=2 * 8 * 16)
    assert [len(rows) for _, rows in long[:746]] == [200] * 746 and len(long[746][1]) < 200


def test_a_lost_piece_goes_back_in_its_place() -> None:
    queue = [(order, 0, 10) for order in range(3)]
    first = next_piece(queue, 30, 1)  # one piece in flight: the whole first game
    assert first == (0, range(0, 10))
    second = next_piece(queue, 20, 4)
    assert second == (1, range(0, 5))
    heapq.heappush(queue, (0, 0, 10))  # the engine holding game 0 died
    assert next_piece(queue, 25, 100) == (0, range(0, 1))


def test_rate_line_counts_the_answers_between_two_polls() -> None:
    # Polls come back every half interval: a rate is the answers between the polls
    # before two lines over the time between those polls, not the time between lines.
    run = RayLabelRun(None, EngineSpec(), RunOptions(), ClusterOptions(engines=2),  # type: ignore[arg-type]
                      PlainReporter(io.StringIO()))
    run.slots = [_Slot(0, seen=25, seen_at=10.0, line_seen=5, line_time=0.0),
                 _Slot(1, seen=10, seen_at=4.0, line_seen=0, line_time=0.0)]
    assert run.rates_line() == "engines (positions/s): #0 2.00, #1 2.50; total 4.50"
    assert run.rates_line() == "engines (positions/s): #0 0.00, #1 0.00; total 0.00"


# -- the stand-in KataGo (tests/label/standin_katago.py) inside the actors: the fixes of
# go19 label's engine client (every game in flight asked again, the deadline, the line
# naming the games left) are the Ray path's too, since the actors run that client.


def test_a_crashing_katago_in_the_actors_loses_nothing(local_ray: Any, tmp_path: Path,
                                                       capsys: Any) -> None:
    katago = standin(tmp_path / "katago", "crash", after=2)
    out = tmp_path / "labels"
    assert main(["label", *_files(6), "--out", str(out), "--max-moves", str(MOVES),
                 "--ray", "--engines", "2", *katago.options()]) == 0
    said = capsys.readouterr().out
    assert f"6/6 games labelled ({6 * MOVES} positions)" in said
    labels = LabelSet(out)
    rows = set(zip(labels.arrays["sha1"].tolist(), labels.arrays["game_index"].tolist(),
                   labels.arrays["move_number"].tolist(), strict=True))
    assert len(labels) == len(rows) == 6 * MOVES  # each position once
    assert len({q["pid"] for q in katago.queries()}) > 2  # KataGos died and were restarted


def test_a_silent_katago_in_the_actors_stops_the_run_naming_the_games_left(
    local_ray: Any, tmp_path: Path, capsys: Any
) -> None:
    """On the real clock (the actors' trio runs in Ray's processes): a KataGo that never
    answers is taken for hung after --katago-timeout (2 s at one visit) and, with no
    restart allowed, the run stops in one line."""
    katago = standin(tmp_path / "katago", "hang")
    out = tmp_path / "labels"
    status = main(["label", *_files(2), "--out", str(out), "--max-moves", str(MOVES),
                   "--ray", "--engines", "1", "--max-restarts", "0", "--katago-timeout", "2",
                   *katago.options()])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 1
    (line,) = [line for line in err if "not labelled" in line]
    first, second = (Path(p).name for p in _files(2))
    assert line.startswith("label: KataGo died 1 time in a row on node ")
    assert "; last: KataGo answered nothing for 2 s with " in line
    assert line.endswith(f"; 2 games not labelled ({first} and {second}): the same command "
                         "with --resume labels them")
    assert katago.queries()  # it was asked, and said nothing
