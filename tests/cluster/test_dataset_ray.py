"""`go19 dataset build --ray` gives the single-process build's dataset, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.cli import main
from orchestrator.cluster.dataset import ray_reader
from orchestrator.dataset import build
from tests.cluster.conftest import REAL, requires_real

TIMING = ("created", "build")  # the only manifest fields allowed to differ


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _manifest(data: bytes) -> dict:
    return {k: v for k, v in json.loads(data).items() if k not in TIMING}


@requires_real
def test_ray_build_equals_single_process_build(local_ray: Any, tmp_path: Path,
                                               capsys: Any) -> None:
    one, ray = tmp_path / "single", tmp_path / "ray"
    assert main(["dataset", "build", str(REAL), "--out", str(one)]) == 0
    assert main(["dataset", "build", str(REAL), "--out", str(ray), "--ray"]) == 0
    a, b = _files(one), _files(ray)
    assert a.keys() == b.keys() and any(name.endswith(".npz") for name in a)
    for name in a:
        if name == "manifest.json":
            assert _manifest(a[name]) == _manifest(b[name])
        else:
            assert a[name] == b[name], name
    assert capsys.readouterr().out.count(" samples in ") == 2


@requires_real
def test_few_tasks_in_flight_keep_order(local_ray: Any, tmp_path: Path) -> None:
    # One task at a time and the build's small batches: order must still be the input's.
    one = build([REAL / "pro19"], tmp_path / "single")
    two = build([REAL / "pro19"], tmp_path / "ray", reader=ray_reader(local_ray, 1))
    assert {k: v for k, v in one.items() if k not in TIMING} == {
        k: v for k, v in two.items() if k not in TIMING}
    assert (tmp_path / "single" / "games.jsonl").read_bytes() == (
        tmp_path / "ray" / "games.jsonl").read_bytes()



class _CountingRay:
    """Ray's calls the reader makes, run in this process, counting tasks out at once."""

    def __init__(self) -> None:
        self.out = self.most = self.cancelled = 0

    def remote(self, fn: Any) -> Any:
        ray = self

        class Task:
            @staticmethod
            def remote(*args: Any) -> tuple:
                ray.out += 1
                ray.most = max(ray.most, ray.out)
                return fn, args

        return Task

    def get(self, ref: tuple) -> Any:
        self.out -= 1
        fn, args = ref
        return fn(*args)

    def cancel(self, ref: tuple) -> None:
        self.cancelled += 1


@requires_real
def test_tasks_in_flight_stay_bounded_and_early_stop_cancels() -> None:
    files = [str(p) for p in sorted((REAL / "pro19").glob("*.sgf"))] * 40  # ~100 batches
    fake = _CountingRay()
    games = list(ray_reader(fake, 3)(files))
    assert fake.most == 3 and fake.out == 0
    assert [g.path for g in games if g.game_index == 0] == files  # input order
    stopped = _CountingRay()
    reader = ray_reader(stopped, 3)(files)
    next(reader)
    reader.close()  # the build stopped (an error): the tasks still out are dropped
    assert stopped.cancelled == stopped.out > 0


@requires_real
def test_the_ray_reader_refuses_files_over_the_cap_as_the_workers_do() -> None:
    """``--max-file-mib`` reaches the Ray tasks: a file over it is rejected unread."""
    files = [str(p) for p in sorted((REAL / "pro19").glob("*.sgf"))[:3]]
    capped = list(ray_reader(_CountingRay(), 3, max_bytes=100)(files))
    assert [(g.path, g.status, g.reason) for g in capped] == \
        [(f, "rejected", "too-large") for f in files]
    assert all(g.status == "ok" for g in ray_reader(_CountingRay(), 3)(files))


@requires_real
def test_ray_export_equals_pool_export(local_ray: Any, tmp_path: Path) -> None:
    data = tmp_path / "ds"
    assert main(["dataset", "build", str(REAL / "pro19"), "--out", str(data),
                 "--max-per-game", "2"]) == 0
    outs = {}
    for name, extra in (("one", []), ("ray", ["--ray"])):
        outs[name] = tmp_path / name / "export"  # same folder name: same dataset_info
        assert main(["dataset", "export", str(data), "--out", str(outs[name]), "--format",
                     "jsonl", "--shard-size", "64", *extra]) == 0
    files = {name: sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
             for name, out in outs.items()}
    assert files["one"] == files["ray"] and len(files["one"]) > 10
    for rel in files["one"]:
        a, b = (outs["one"] / rel).read_bytes(), (outs["ray"] / rel).read_bytes()
        if rel.name == "manifest.json":
            drop = ("created", "seconds")
            a, b = ({k: v for k, v in json.loads(x).items() if k not in drop} for x in (a, b))
        assert a == b, rel
