"""A dataset manifest that lists one shard twice, or whose shards do not add up to its
sample count (issue 21, item 8): export and check refused neither (6,187 samples
exported against counts.samples 5,187). Real `go19 dataset export` and `check`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.dataset import build
from orchestrator.dataset.build import BuildOptions
from tests.conftest import go19_here

GAME = b"(;GM[1]SZ[19]KM[6.5];B[pd];W[dp];B[pp];W[dd];B[qf];W[fq])"


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "g.sgf").write_bytes(GAME)
    build([tmp_path / "in"], tmp_path / "ds", BuildOptions(shard_size=4))
    return tmp_path / "ds"


def tamper(dataset: Path, change) -> None:
    path = dataset / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


def refused(dataset: Path, tmp_path: Path) -> tuple[str, str]:
    out = tmp_path / "ex"
    export = go19_here("dataset", "export", dataset, "--out", out, "--format", "jsonl")
    check = go19_here("dataset", "check", dataset)
    for result in (export, check):
        assert result.returncode == 2, result.stdout + result.stderr
        assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    assert not out.exists()
    return export.stderr.strip(), check.stderr.strip()


def test_a_shard_listed_twice_is_refused(dataset: Path, tmp_path: Path) -> None:
    tamper(dataset, lambda m: m["shards"].append(m["shards"][0]))
    for line in refused(dataset, tmp_path):
        assert line.endswith(f"{dataset / 'manifest.json'}: shard-00000.npz is listed twice")


def test_shards_that_do_not_add_up_to_the_count_are_refused(dataset: Path,
                                                            tmp_path: Path) -> None:
    tamper(dataset, lambda m: m["counts"].update(samples=5))
    for line in refused(dataset, tmp_path):
        assert line.endswith(f"{dataset / 'manifest.json'}: its shards hold 6 samples, "
                             "counts.samples says 5")
