"""The zip container ``write_shard`` writes itself: a plain ``.npz`` that ``np.load`` and
``zipfile`` read, right CRCs, numpy's own ``.npy`` bytes in every member, zip64 end
records, deflated by isal or zlib (both checked, whichever is installed) or stored."""

from __future__ import annotations

import hashlib
import io
import shutil
import struct
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from orchestrator import npz_shards
from orchestrator.dataset.shards import FIELDS as DATASET_FIELDS
from orchestrator.label.store import fields as label_fields
from orchestrator.npz_shards import ISAL, ZLIB, write_shard

DEFLATES = [None, ZLIB] + ([ISAL] if ISAL else [])  # stored, and each backend installed
BACKENDS = [
    pytest.param(None, id="stored"),
    pytest.param(ZLIB, id="zlib"),
    pytest.param(ISAL, id="isal", marks=pytest.mark.skipif(
        ISAL is None, reason="isal not installed (pip install 'go19[fast]')")),
]


def check(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """``path`` holds exactly ``arrays``: members back to back, each one's data descriptor
    true, CRCs right, each member the bytes ``np.save`` writes, and ``np.load`` gives the
    same values, dtypes and shapes."""
    data = path.read_bytes()
    with zipfile.ZipFile(path) as npz:
        offset = 0
        for info in npz.infolist():  # zipfile reads neither the descriptors nor the gaps
            assert info.header_offset == offset
            offset += 30 + len(info.filename) + 20 + info.compress_size
            assert struct.unpack_from("<IIQQ", data, offset) == (
                0x08074B50, info.CRC, info.compress_size, info.file_size)
            offset += 24
        assert offset == npz.start_dir
        assert npz.testzip() is None  # every member decompresses and its CRC-32 matches
        assert npz.namelist() == [f"{name}.npy" for name in arrays]
        for name, array in arrays.items():
            expected = io.BytesIO()
            np.save(expected, array, allow_pickle=False)
            assert npz.read(f"{name}.npy") == expected.getvalue(), name
    with np.load(path, allow_pickle=False) as npz:
        for name, array in arrays.items():
            back = npz[name]
            assert back.dtype == array.dtype and back.shape == array.shape, name
            assert np.array_equal(back, array, equal_nan=array.dtype.kind == "f"), name


def rows(fields: dict[str, tuple[np.dtype, tuple[int, ...]]], n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(n)
    return {name: rng.integers(0, 250, (n, *shape)).astype(dtype)
            for name, (dtype, shape) in fields.items()}


@pytest.mark.parametrize("deflate", BACKENDS)
def test_every_field_of_dataset_and_label_shards_round_trips(tmp_path: Path, deflate) -> None:
    # 2,000 boards are 722 kB: several compression chunks in one member.
    assert 2000 * 19 * 19 > 2 * npz_shards._CHUNK
    # A join's label fields (label/join.py) have the label store's dtypes and shapes.
    for i, fields in enumerate([DATASET_FIELDS, label_fields(ownership=True)]):
        arrays = rows(fields, 2000)
        path = tmp_path / f"shard-{i}.npz"
        written = write_shard(path, arrays, deflate)
        data = path.read_bytes()
        assert (written.bytes, written.sha256) == (len(data), hashlib.sha256(data).hexdigest())
        check(path, arrays)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shard-0.npz", "shard-1.npz"]


@pytest.mark.parametrize("deflate", BACKENDS)
def test_empty_arrays_and_no_arrays(tmp_path: Path, deflate) -> None:
    empty = {name: np.empty((0, *shape), dtype) for name, (dtype, shape) in DATASET_FIELDS.items()}
    write_shard(tmp_path / "empty.npz", empty, deflate)
    check(tmp_path / "empty.npz", empty)
    with pytest.raises(ValueError, match="none.npz: a shard needs at least one array"):
        write_shard(tmp_path / "none.npz", {}, deflate)
    assert [p.name for p in tmp_path.iterdir()] == ["empty.npz"]


def test_deflated_shards_are_small_and_the_same_arrays_give_the_same_bytes(tmp_path: Path
                                                                             ) -> None:
    # Boards of one game differ by a stone a move: deflate must find that.
    board = np.zeros((300, 19, 19), np.uint8)
    for move in range(1, 300):
        board[move] = board[move - 1]
        board[move].flat[(move * 7) % 361] = 1 + move % 2
    arrays = {"board": board, "move": np.arange(300, dtype=np.int16)}
    sizes = []
    for deflate in DEFLATES:
        first = write_shard(tmp_path / "a.npz", arrays, deflate)
        again = write_shard(tmp_path / "b.npz", arrays, deflate)
        assert first == again  # no timestamp or other state in the bytes
        sizes.append(first.bytes)
    stored, *deflated = sizes
    assert all(size < stored / 10 for size in deflated)


def test_the_container_is_zip64_whatever_its_size(tmp_path: Path) -> None:
    path = tmp_path / "s.npz"
    write_shard(path, {"move": np.arange(5, dtype=np.int16)}, npz_shards.DEFLATE)
    data = path.read_bytes()
    # The end: zip64 end record (56 bytes), its locator (20), the classic record (22).
    assert data[-98:-94] == b"PK\x06\x06" and data[-42:-38] == b"PK\x06\x07"
    assert data[-22:-18] == b"PK\x05\x06"
    with zipfile.ZipFile(path) as npz:
        (info,) = npz.infolist()
        assert info.flag_bits & 0x08 and info.header_offset == 0
        assert info.date_time == (1980, 1, 1, 0, 0, 0)


@pytest.mark.skipif(shutil.which("unzip") is None, reason="Info-ZIP unzip not installed")
@pytest.mark.parametrize("deflate", BACKENDS)
def test_info_zip_reads_it_too(tmp_path: Path, deflate) -> None:
    # A second reader, not Python's: the offsets, zip64 records and every CRC agree.
    write_shard(tmp_path / "s.npz", rows(DATASET_FIELDS, 1000), deflate)
    result = subprocess.run(["unzip", "-t", str(tmp_path / "s.npz")], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No errors detected" in result.stdout
    assert result.stdout.count("OK") == len(DATASET_FIELDS)


def test_the_fast_backend_is_isal_where_installed() -> None:
    try:
        import isal  # noqa: F401
    except ImportError:
        assert npz_shards.DEFLATE is ZLIB
    else:
        assert npz_shards.DEFLATE is ISAL and ISAL.name == "isal"


def test_views_are_written_as_their_values(tmp_path: Path) -> None:
    base = np.arange(60, dtype=np.int32).reshape(6, 10)
    arrays = {"strided": base[::2, 1::3], "fortran": np.asfortranarray(base),
              "scalar": np.array(7.5)}
    write_shard(tmp_path / "v.npz", arrays, ZLIB)
    with np.load(tmp_path / "v.npz") as npz:
        for name, array in arrays.items():
            assert np.array_equal(npz[name], array) and npz[name].shape == array.shape


def test_object_arrays_are_refused_and_nothing_is_left(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="object arrays"):
        write_shard(tmp_path / "o.npz", {"ok": np.zeros(3), "bad": np.array([{}, 1])}, ZLIB)
    assert list(tmp_path.iterdir()) == []


_DTYPES = st.sampled_from([np.bool_, np.uint8, np.int16, np.int32, np.uint64, np.float32,
                           np.float64, "S40"])


@given(arrays=st.dictionaries(
    st.text("abcdefgh_", min_size=1, max_size=8),
    _DTYPES.flatmap(lambda dtype: hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=3,
                                                                     min_side=0, max_side=9))),
    min_size=1, max_size=4,
), deflate=st.sampled_from(DEFLATES))
def test_any_arrays_round_trip(tmp_path_factory, arrays, deflate) -> None:
    path = tmp_path_factory.mktemp("prop") / "p.npz"
    written = write_shard(path, arrays, deflate)
    assert written.bytes == path.stat().st_size
    check(path, arrays)
