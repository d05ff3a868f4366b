"""The shard file layer under datasets and label folders: whole files, the manifest's
size and sha256 true, and every way a shard can be wrong caught with one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from orchestrator.files import atomic_writer
from orchestrator.npz_shards import DEFLATE, entry_ok, read_shard, write_shard

FIELDS = {"move": (np.dtype(np.int16), ()), "board": (np.dtype(np.uint8), (3, 3))}


class Bad(ValueError):
    pass


def arrays(n: int) -> dict[str, np.ndarray]:
    return {"move": np.arange(n, dtype=np.int16),
            "board": np.arange(9 * n, dtype=np.uint8).reshape(n, 3, 3)}


@pytest.mark.parametrize("deflate", [None, DEFLATE])
def test_a_shard_reads_back_as_written(tmp_path: Path, deflate) -> None:
    path = tmp_path / "shard-00000.npz"
    written = write_shard(path, arrays(5), deflate)
    assert written.bytes == path.stat().st_size
    entry = {"file": path.name, "bytes": written.bytes, "sha256": written.sha256}
    back = read_shard(path, entry, 5, FIELDS, Bad, "the manifest")
    assert all(np.array_equal(back[k], v) for k, v in arrays(5).items())
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp file left
    with np.load(path) as npz:  # a plain .npz for anyone else
        assert sorted(npz.files) == ["board", "move"]


def test_every_problem_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s.npz"
    written = write_shard(path, arrays(4))
    entry = {"file": path.name, "bytes": written.bytes, "sha256": written.sha256}
    with pytest.raises(Bad, match="field 'move' missing or not int16 \\(5,\\)"):
        read_shard(path, entry, 5, FIELDS, Bad, "the manifest")
    path.write_bytes(path.read_bytes()[:-1] + b"x")
    with pytest.raises(Bad, match="s.npz: sha256 does not match labels.json"):
        read_shard(path, entry, 4, FIELDS, Bad, "labels.json")
    path.unlink()
    with pytest.raises(Bad, match="cannot read"):
        read_shard(path, entry, 4, FIELDS, Bad, "the manifest")


def test_a_failed_write_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "out.bin"
    with pytest.raises(RuntimeError), atomic_writer(path) as fh:
        fh.write(b"half")
        raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


def test_manifest_entries_name_plain_files_in_the_folder() -> None:
    keys = {"file": str, "sha256": str}
    assert entry_ok({"file": "shard-00000.npz", "sha256": "ab"}, keys)
    for bad in ({"file": "../x.npz", "sha256": "ab"}, {"file": ".hidden", "sha256": "ab"},
                {"file": "a.npz"}, ["a.npz"], {"file": 3, "sha256": "ab"}):
        assert not entry_ok(bad, keys)
