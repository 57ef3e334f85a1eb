"""Zarr reads (chunk keys here, bytes through nodes.codecs) give exactly what zarr-python reads, for every array.

zarr-python writes the stores and reads the expected values; the validator never uses it for data.
"""

from __future__ import annotations

import json
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr
from bombs import (
    JSON2_SHAPE_BOMB,
    bz2_zeros,
    gzip_wrap,
    gzip_zeros,
    nested,
    peak_rss_child,
    vlen_header_bomb,
    zlib_zeros,
    zstd_zeros,
)
from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, ShardingCodec, TransposeCodec, ZstdCodec

from spec_validate.engine.scan import SerialScanner, ThreadScanner
from spec_validate.engine.scan import plan as scan_plan
from spec_validate.errors import NodeError, NotDecoded
from spec_validate.kernels.block import ChunkRead
from spec_validate.kernels.facts import FactRequest
from spec_validate.nodes.open import open_store

LENGTH, CHUNK = 10_007, 1000  # the last chunk holds 7 elements and is stored full-size
VALUES = np.arange(LENGTH, dtype="<i8") * 3 - 5000
BLOCK_SIZES = [1, CHUNK, 2048, 2500, 10**6]  # one chunk a block, several, uneven, the whole array
MAX_PEAK_MB = 200

V2_LAYOUTS = {
    "blosc-lz4-shuffle": {"compressors": numcodecs.Blosc("lz4", shuffle=numcodecs.Blosc.SHUFFLE)},
    "blosc-lz4-noshuffle": {"compressors": numcodecs.Blosc("lz4", shuffle=numcodecs.Blosc.NOSHUFFLE)},
    "blosc-zstd-shuffle": {"compressors": numcodecs.Blosc("zstd", shuffle=numcodecs.Blosc.SHUFFLE)},
    "blosc-zstd-noshuffle": {"compressors": numcodecs.Blosc("zstd", shuffle=numcodecs.Blosc.NOSHUFFLE)},
    "blosc-zstd-bitshuffle": {"compressors": numcodecs.Blosc("zstd", shuffle=numcodecs.Blosc.BITSHUFFLE)},
    "zstd": {"compressors": numcodecs.Zstd(level=3)},
    "lz4": {"compressors": numcodecs.LZ4()},
    "zlib": {"compressors": numcodecs.Zlib(level=5)},
    "gzip": {"compressors": numcodecs.GZip(level=5)},
    "bz2": {"compressors": numcodecs.BZ2()},
    "lzma": {"compressors": numcodecs.LZMA()},
    "no-compressor": {"compressors": None},
    "shuffle-filter-zlib": {"compressors": numcodecs.Zlib(), "filters": "shuffle"},
    "zlib-filter-zlib": {"compressors": numcodecs.Zlib(), "filters": [numcodecs.Zlib()]},
    "checksums": {
        "compressors": numcodecs.Zstd(),
        "filters": [numcodecs.CRC32(), numcodecs.Adler32(location="end"), numcodecs.Fletcher32(), numcodecs.CRC32C()],
    },
}
DTYPES = ["<i8", ">i4", "<f4", ">f8", "|u1", "|b1"]

V3_LAYOUTS = {
    "default-zstd": {},
    "zstd-checksum": {"compressors": [ZstdCodec(level=3, checksum=True)]},
    "gzip": {"compressors": [GzipCodec(level=5)]},
    "blosc": {"compressors": [BloscCodec(cname="lz4", shuffle="shuffle")]},
    "zstd-crc32c": {"compressors": [ZstdCodec(), Crc32cCodec()]},
    "crc32c-zstd": {"compressors": [Crc32cCodec(), ZstdCodec()]},
    "crc32c-only": {"compressors": [Crc32cCodec()]},
    "no-compressor": {"compressors": None},
    "big-endian": {"serializer": BytesCodec(endian="big")},
    "v2-chunk-key-encoding": {"chunk_key_encoding": {"name": "v2", "separator": "."}},
    "default-dot-separator": {"chunk_key_encoding": {"name": "default", "separator": "."}},
}


def data_of(dtype):
    return (VALUES % 3 == 0) if dtype == "|b1" else VALUES.astype(dtype)


def write(path, data, zarr_format, chunks=(CHUNK,), fill_value=0, **kwargs):
    if kwargs.get("filters") == "shuffle":
        kwargs["filters"] = [numcodecs.Shuffle(elementsize=data.dtype.itemsize)]
    kwargs.setdefault("dtype", data.dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python's warnings about v2 codecs and unstable v3 data types
        array = zarr.create_array(
            store=str(path), shape=data.shape, chunks=chunks, zarr_format=zarr_format, fill_value=fill_value, **kwargs
        )
        array[...] = data
    return str(path)


def through_zarr(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(zarr.open_array(str(path), mode="r")[...])


def same(got, expected):
    """Equal values and dtype kind: object and string arrays element by element, NaN equal to NaN."""
    expected = np.asarray(expected).reshape(-1)
    if got.dtype.kind == "O" or expected.dtype.kind in "OT":
        return got.tolist() == expected.tolist()
    if got.dtype.kind != expected.dtype.kind or got.dtype.itemsize != expected.dtype.itemsize:
        return False
    if got.dtype.kind in "fc":
        return np.array_equal(got, expected, equal_nan=True)
    return got.astype(expected.dtype).tobytes() == np.ascontiguousarray(expected).tobytes()  # byte order aside


def assert_reads_like_zarr(path, node_path="/", block_sizes=BLOCK_SIZES):
    expected = through_zarr(path)
    with open_store(str(path)) as tree:
        node = tree.get(node_path)
        assert node.plan is not None
        for size in block_sizes:
            ranges = node.block_rows(size)
            blocks = [node.read_block(r) for r in ranges]
            row = int(np.prod(expected.shape[1:], dtype=np.int64)) if expected.ndim > 1 else 1
            assert [b.start for b in blocks] == [r[0] * row for r in ranges] if expected.ndim else [0]
            assert all(c.problem is None for b in blocks for c in b.chunks)
            assert all(b.values.dtype == node.dtype for b in blocks)
            got = np.concatenate([b.values for b in blocks]) if blocks else np.empty(0, node.dtype)
            assert same(got, expected), (size, got[:10], expected.reshape(-1)[:10])
    return expected


def test_direct_passes_no_zarr_python_for_data(tmp_path):
    import subprocess
    import sys

    path = write(tmp_path / "a.zarr", np.arange(100, dtype="<i4").reshape(10, 10), 3, chunks=(3, 4))
    code = (
        "import sys; from spec_validate.nodes.open import open_store\n"
        "with open_store(sys.argv[1]) as t: list(t.get('/').blocks(7))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'zarr'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, path],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", V2_LAYOUTS)
def test_direct_passes_v2_same_values_as_zarr_python(tmp_path, layout, dtype):
    path = write(tmp_path / "a.zarr", data_of(dtype), 2, **V2_LAYOUTS[layout])
    assert_reads_like_zarr(path)


@pytest.mark.parametrize(
    "filters",
    [
        pytest.param([numcodecs.Delta("<i8")], id="delta"),
        pytest.param([numcodecs.Delta("<i8", astype="<i4")], id="delta-narrowing"),
        pytest.param([numcodecs.AsType(encode_dtype="<i4", decode_dtype="<i8")], id="astype-narrowing"),
        pytest.param([numcodecs.FixedScaleOffset(offset=0, scale=1, dtype="<i8", astype="<i4")], id="fixedscaleoffset"),
    ],
)
def test_direct_passes_v2_numeric_filters(tmp_path, filters):
    data = np.arange(LENGTH, dtype="<i8") % 1000 - 300
    path = write(tmp_path / "a.zarr", data, 2, compressors=numcodecs.Zlib(), filters=filters)
    assert_reads_like_zarr(path)


@pytest.mark.parametrize(
    "filters",
    [
        pytest.param([numcodecs.Quantize(digits=3, dtype="<f8")], id="quantize"),
        pytest.param([numcodecs.BitRound(keepbits=10)], id="bitround"),
        pytest.param([numcodecs.FixedScaleOffset(offset=1, scale=100, dtype="<f8", astype="<i4")], id="fixedscaleoffset-float"),
    ],
)
def test_direct_passes_v2_float_filters(tmp_path, filters):
    data = np.linspace(-3, 3, LENGTH)
    path = write(tmp_path / "a.zarr", data, 2, compressors=numcodecs.Blosc(), filters=filters)
    assert_reads_like_zarr(path)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", V3_LAYOUTS)
def test_direct_passes_v3_same_values_as_zarr_python(tmp_path, layout, dtype):
    path = write(tmp_path / "a.zarr", data_of(dtype), 3, **V3_LAYOUTS[layout])
    assert_reads_like_zarr(path)


# --- every dtype family, N-D arrays and their edge chunks ----------------------------------------------------

ND = np.arange(23 * 7 * 5, dtype="<i4").reshape(23, 7, 5)
FAMILIES = {
    "complex": (np.arange(50) * (1 + 2j)).astype("<c8"),
    "datetime": np.arange(50).astype("<M8[s]"),
    "timedelta": np.arange(50).astype(">m8[ms]"),
    "fixed-bytes": np.array([b"ab", b"c", b""] * 16 + [b"zz", b"y"], dtype="S2"),
    "fixed-unicode": np.array(["ab", "é", ""] * 16 + ["zz", "y"], dtype="<U2"),
    "void": np.frombuffer(bytes(range(200)), dtype="V4"),
    "record": np.array([(i, f"s{i}".encode(), i / 2) for i in range(50)], dtype=[("a", "<i4"), ("b", "S3"), ("c", "<f8")]),
    "float16": np.linspace(0, 1, 50).astype("<f2"),
}


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("family", FAMILIES)
def test_direct_passes_every_fixed_size_dtype(tmp_path, zarr_format, family):
    data = FAMILIES[family]
    path = write(tmp_path / "a.zarr", data, zarr_format, chunks=(7,), fill_value=None if zarr_format == 2 else data[0])
    assert_reads_like_zarr(path, block_sizes=[1, 7, 20, 1000])


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(
    "chunks",
    [(4, 3, 2), (5, 7, 5), (23, 1, 5), (1, 1, 1), (30, 10, 10)],
    ids=["edges-everywhere", "whole-rows", "one-column", "one-element", "one-chunk-past-every-edge"],
)
def test_direct_passes_n_dimensional_with_edge_chunks(tmp_path, zarr_format, chunks):
    path = write(tmp_path / "a.zarr", ND, zarr_format, chunks=chunks, compressors=None if chunks == (1, 1, 1) else "auto")
    assert_reads_like_zarr(path, block_sizes=[1, 35, 100, 10**6])


@pytest.mark.parametrize("compressor", [None, numcodecs.Blosc(), numcodecs.Zlib()], ids=["raw", "blosc", "zlib"])
def test_direct_passes_v2_order_f(tmp_path, compressor):
    path = write(tmp_path / "a.zarr", ND.astype(">f8"), 2, chunks=(4, 3, 2), order="F", compressors=compressor)
    assert json.loads(Path(path, ".zarray").read_text())["order"] == "F"
    assert_reads_like_zarr(path, block_sizes=[1, 100, 10**6])


@pytest.mark.parametrize("order", [(2, 0, 1), (1, 2, 0), (0, 2, 1)])
def test_direct_passes_v3_transpose(tmp_path, order):
    path = write(tmp_path / "a.zarr", ND, 3, chunks=(4, 3, 2), filters=[TransposeCodec(order=order)])
    assert_reads_like_zarr(path, block_sizes=[1, 100, 10**6])


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_direct_passes_zero_dimensional(tmp_path, zarr_format):
    path = write(tmp_path / "a.zarr", np.array(2.5), zarr_format, chunks=())
    assert_reads_like_zarr(path, block_sizes=[1])


# --- object arrays through the safe object codecs ------------------------------------------------------------

STRINGS = np.array(["a", "bé", "", "ccc"] * 12 + ["z"], dtype=object)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("kind", ["utf8", "bytes"])
def test_direct_passes_vlen_strings_and_bytes(tmp_path, zarr_format, kind):
    from zarr.core.dtype import VariableLengthBytes, VariableLengthUTF8

    data = STRINGS if kind == "utf8" else np.array([s.encode() for s in STRINGS], dtype=object)
    dtype = VariableLengthUTF8() if kind == "utf8" else VariableLengthBytes()
    path = write(tmp_path / "a.zarr", data, zarr_format, chunks=(7,), dtype=dtype, fill_value=None)
    expected = assert_reads_like_zarr(path, block_sizes=[1, 7, 1000])
    assert expected.size == 49


def test_direct_passes_v2_vlen_strings_n_dimensional_order_f(tmp_path):
    from zarr.core.dtype import VariableLengthUTF8

    data = STRINGS[:48].reshape(6, 8)
    path = write(tmp_path / "a.zarr", data, 2, chunks=(4, 3), dtype=VariableLengthUTF8(), fill_value=None, order="F")
    assert_reads_like_zarr(path, block_sizes=[1, 8, 100])


def write_json2(path, items, chunks, fill_value=None, compressor=None):
    """A v2 object array coded with numcodecs' json2 (zarr-python 3 no longer writes it), chunk by chunk."""
    items = np.asarray(items, dtype=object)
    os.makedirs(path)
    meta = {
        "zarr_format": 2,
        "shape": list(items.shape),
        "chunks": list(chunks),
        "dtype": "|O",
        "order": "C",
        "fill_value": fill_value,
        "filters": [{"id": "json2", "encoding": "utf-8"}],
        "compressor": compressor,
    }
    (path / ".zarray").write_text(json.dumps(meta))
    codec = numcodecs.get_codec(compressor) if compressor else None
    grid = [range(-(-n // c)) for n, c in zip(items.shape, chunks, strict=True)]
    import itertools

    for index in itertools.product(*grid):
        part = np.empty(chunks, dtype=object)
        region = tuple(slice(i * c, min((i + 1) * c, n)) for i, c, n in zip(index, chunks, items.shape, strict=True))
        part[tuple(slice(0, r.stop - r.start) for r in region)] = items[region]
        raw = numcodecs.JSON().encode(part)
        (path / ".".join(map(str, index))).write_bytes(bytes(codec.encode(raw)) if codec else bytes(raw))
    return str(path)


def test_direct_passes_json2_objects(tmp_path):
    items = [{"source": ".", "path": f"/x/{i}"} for i in range(10)] + ["text", 3, None]
    path = write_json2(tmp_path / "j.zarr", items, (4,), compressor={"id": "zlib", "level": 1})
    with open_store(path) as tree:
        values = np.concatenate([b.values for b in tree.get("/").blocks(4)])
    assert values.tolist() == items


def test_direct_passes_json2_two_dimensional(tmp_path):
    items = np.array([[f"{i}-{j}" for j in range(5)] for i in range(3)], dtype=object)
    path = write_json2(tmp_path / "j.zarr", items, (2, 2))
    with open_store(path) as tree:
        values = np.concatenate([b.values for b in tree.get("/").blocks(5)])
    assert values.tolist() == items.reshape(-1).tolist()


# --- sharding ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("location", ["end", "start"])
@pytest.mark.parametrize(
    "inner_codecs",
    [
        pytest.param([BytesCodec(), ZstdCodec()], id="zstd"),
        pytest.param([BytesCodec(endian="big"), GzipCodec(), Crc32cCodec()], id="big-endian-gzip-crc32c"),
        pytest.param([TransposeCodec(order=(1, 0)), BytesCodec()], id="transposed-raw"),
    ],
)
def test_direct_passes_sharded(tmp_path, location, inner_codecs):
    data = np.arange(30 * 20, dtype="<f8").reshape(30, 20)
    data[8:16] = 0  # the fill value: those inner chunks are not stored (2**64-1 in the index)
    serializer = ShardingCodec(chunk_shape=(4, 5), codecs=inner_codecs, index_location=location)
    path = write(tmp_path / "a.zarr", data, 3, chunks=(8, 10), serializer=serializer, compressors=None)
    meta = json.loads(Path(path, "zarr.json").read_text())
    assert meta["codecs"][0]["configuration"]["index_location"] == location
    assert_reads_like_zarr(path, block_sizes=[1, 160, 10**6])


def test_direct_passes_sharded_with_codecs_after_the_shard(tmp_path):
    data = np.arange(1000, dtype="<i4")
    serializer = ShardingCodec(chunk_shape=(10,), codecs=[BytesCodec(), ZstdCodec()])
    path = write(tmp_path / "a.zarr", data, 3, chunks=(100,), serializer=serializer)  # zarr-python adds zstd after
    names = [c["name"] for c in json.loads(Path(path, "zarr.json").read_text())["codecs"]]
    assert names == ["sharding_indexed", "zstd"]
    assert_reads_like_zarr(path, block_sizes=[1, 300])


def test_direct_passes_sharded_edge_shard_and_missing_shard(tmp_path):
    data = np.zeros((25, 9), dtype="<i2")
    data[:8] = 3  # only the first shard row is stored
    path = write(tmp_path / "a.zarr", data, 3, chunks=(2, 3), shards=(8, 6))
    assert_reads_like_zarr(path, block_sizes=[1, 50, 10**6])


def test_direct_passes_each_shard_read_once_per_block(tmp_path):
    data = np.arange(64 * 8, dtype="<i4").reshape(64, 8)
    path = write(tmp_path / "a.zarr", data, 3, chunks=(2, 4), shards=(16, 8))
    with open_store(path) as tree:
        node = tree.get("/")
        fetched = count_gets(tree)
        block = node.read_block((0, 64))
        assert sorted(fetched) == ["c/0/0", "c/1/0", "c/2/0", "c/3/0"] and len(fetched) == 4
        assert [c.key for c in block.chunks] == ["c/0/0", "c/1/0", "c/2/0", "c/3/0"]


def test_direct_passes_a_shard_of_many_empty_inner_chunks_filled_at_once(tmp_path, monkeypatch):
    # A shard of 4 million one-element inner chunks, 100 stored, took 30 s while each empty one was filled in its turn.
    from spec_validate.nodes.zarr import direct

    data = np.zeros(4096, dtype="<i4")
    data[[5, 1000, 4095]] = [7, 8, 9]  # three inner chunks stored, 4,093 not (zarr-python writes no empty chunk)
    path = write(tmp_path / "a.zarr", data, 3, chunks=(1,), shards=(4096,))
    filled = []
    real = direct._fill_unstored
    monkeypatch.setattr(
        direct, "_fill_unstored", lambda plan, key, target, missing: (filled.append(key), real(plan, key, target, missing))
    )
    assert_reads_like_zarr(path, block_sizes=[10**6, 1000])
    # Once per shard a block reads (one block at either size: blocks hold whole shards), not once per empty inner
    # chunk (4,093): the whole part first, then the stored inner chunks over it.
    assert filled == ["c/0, inner chunk 0"] * 2, filled
    meta = json.loads(Path(path, "zarr.json").read_text())
    meta["fill_value"] = "zero"
    Path(path, "zarr.json").write_text(json.dumps(meta))
    # A fill value that is no value of the dtype: the shard is read and its inner chunks decoded all the same (their
    # records are exact), and the block says why its values are not the array's.
    with open_store(path) as tree:
        block = tree.get("/").read_block((0, 4096))
    assert block.values_problem is not None
    assert "chunk c/0, inner chunk 0 is not stored, and its fill" in block.values_problem
    assert [c.problem for c in block.chunks] == [None] and block.problem() == block.values_problem


def count_gets(tree):
    """Record every key the tree's store is asked for (chunk keys only)."""
    fetched = []
    real = tree.kv.get_bounded

    def get_bounded(key, limit):
        if not key.endswith((".zarray", ".zattrs", ".zgroup", "zarr.json")):
            fetched.append(key)
        return real(key, limit)

    tree.kv.get_bounded = get_bounded
    return fetched


# --- missing chunks and fill values ----------------------------------------------------------------------------


WIDE = 1100  # chunks per chunk row: more than LISTED_ROW_CHUNKS, so a block reads what the listing names


@pytest.mark.parametrize(
    ("zarr_format", "encoding"),
    [
        pytest.param(2, {}, id="v2-dots"),
        pytest.param(2, {"chunk_key_encoding": {"name": "v2", "separator": "/"}}, id="v2-nested"),
        pytest.param(3, {}, id="v3-default"),
        pytest.param(3, {"chunk_key_encoding": {"name": "default", "separator": "."}}, id="v3-dots"),
    ],
)
def test_direct_passes_wide_rows_read_only_the_listed_chunks(tmp_path, zarr_format, encoding):
    # A row of 2**20 declared chunks, one stored, was 2**20 lookups of a key (30 s) before the listing was used.
    from spec_validate.nodes.zarr import direct

    assert WIDE > direct.LISTED_ROW_CHUNKS
    data = np.full((7, WIDE, 2), -1, dtype="<i4")
    data[0, 3, 1], data[4, 1099, 0], data[5, 0, :], data[6, 500, 1] = 5, 6, 7, 8  # four chunks stored; rows 1-3 none
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        array = zarr.create_array(
            store=str(tmp_path / "a.zarr"),
            shape=data.shape,
            chunks=(2, 1, 2),
            dtype="<i4",
            fill_value=-1,
            zarr_format=zarr_format,
            **encoding,
        )
        for index in zip(*np.nonzero(data != -1), strict=True):
            array[index] = data[index]
    path = str(tmp_path / "a.zarr")
    assert_reads_like_zarr(path, block_sizes=[1, 4 * WIDE, 10**6])
    with open_store(path) as tree:
        node = tree.get("/")
        fetched = count_gets(tree)
        blocks = [node.read_block(r) for r in node.block_rows(4 * WIDE)]  # two chunk rows a block
        assert np.concatenate([b.values for b in blocks]).tolist() == data.reshape(-1).tolist()
        assert sorted(fetched) == sorted(node.plan.key(i) for i in [(0, 3, 0), (2, 1099, 0), (2, 0, 0), (3, 500, 0)])


def test_direct_fails_wide_rows_unusable_fill_value_or_a_chunk_leading_outside(tmp_path):
    data = np.zeros((2, WIDE), dtype="<i4")
    data[0, 7] = 1
    path = write(tmp_path / "a.zarr", data, 2, chunks=(1, 1))
    outside = tmp_path / "outside"
    outside.write_bytes(np.ones(1, "<i4").tobytes())
    os.symlink(outside, tmp_path / "a.zarr" / "1.9")  # left out of the listing: still asked for, and refused
    with open_store(path) as tree:
        node = tree.get("/")
        ranges = node.block_rows(WIDE)
        assert node.read_block(ranges[0]).values.tolist() == data[0].tolist()
        with pytest.raises(NodeError, match=r"chunk 1\.9 leads outside the store"):
            node.read_block(ranges[1])
    meta = json.loads(Path(path, ".zarray").read_text())
    meta["fill_value"] = "zero"
    Path(path, ".zarray").write_text(json.dumps(meta))
    with open_store(path) as tree:
        node = tree.get("/")
        block = node.read_block(node.block_rows(WIDE)[0])
        assert block.values_problem is not None and "rows 0..1 hold chunks not stored, and its fill" in block.values_problem
        assert [c.key for c in block.chunks] == ["0.7"] and block.chunks[0].problem is None
        with pytest.raises(NodeError, match=r"rows 0\.\.1 hold chunks not stored, and its fill"):
            list(node.blocks(WIDE))


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(
    "dtype,fill",
    [
        pytest.param("<i4", 7, id="int"),
        pytest.param("<f8", np.nan, id="float-nan"),
        pytest.param("<f4", np.inf, id="float-infinity"),
        pytest.param("<f4", -np.inf, id="float-minus-infinity"),
        pytest.param("<f8", -1.5, id="float"),
        pytest.param("|b1", True, id="bool"),
        pytest.param("<c16", 1 - 2j, id="complex"),
        pytest.param("<M8[s]", np.datetime64(5, "s"), id="datetime"),
        pytest.param("<m8[s]", np.timedelta64("NaT"), id="timedelta-nat"),
        pytest.param("|S3", b"ab", id="fixed-bytes"),
        pytest.param("<U3", "xé", id="fixed-unicode"),
        pytest.param([("a", "<i2"), ("b", "S2")], (3, b"q"), id="record"),
    ],
)
def test_direct_passes_missing_chunks_read_as_fill_value(tmp_path, zarr_format, dtype, fill):
    fill = np.array(fill, dtype=dtype)[()]
    data = np.empty(LENGTH, dtype=dtype)
    data[...] = fill
    data[1500:2500] = np.zeros(1, dtype=dtype)[0]  # chunks 1 and 2 only are stored; every other chunk is the fill value
    path = write(tmp_path / "a.zarr", data, zarr_format, fill_value=fill, compressors=None)
    chunk_dir = os.path.join(path, "c") if zarr_format == 3 else path
    assert sorted(n for n in os.listdir(chunk_dir) if n[0].isdigit()) == ["1", "2"]
    assert_reads_like_zarr(path)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_direct_passes_declared_rows_far_beyond_the_stored_chunks_are_read_from_the_listing(tmp_path, zarr_format):
    """2**40 rows in chunks of one row, two stored: each block reads the stored chunks only, never a lookup per
    declared chunk (2**22 of them per block), and every row not stored is the fill value."""
    data = np.full(8, 7, dtype="<i4")
    data[3], data[5] = 1, 2
    path = write(tmp_path / "a.zarr", data, zarr_format, chunks=(1,), fill_value=7, compressors=None)
    meta_key = "zarr.json" if zarr_format == 3 else ".zarray"
    meta = json.loads(Path(path, meta_key).read_text())
    meta["shape"] = [2**40]
    Path(path, meta_key).write_text(json.dumps(meta))
    for name in os.listdir(os.path.join(path, "c") if zarr_format == 3 else path):
        if name not in ("3", "5") and name[0].isdigit():
            os.unlink(os.path.join(path, "c", name) if zarr_format == 3 else os.path.join(path, name))
    with open_store(path) as tree:
        node = tree.get("/")
        fetched = count_gets(tree)
        rows = node.block_rows(1 << 22)
        first = node.read_block(rows[0])
        assert first.values[:8].tolist() == [7, 7, 7, 1, 7, 2, 7, 7] and (first.values[8:] == 7).all()
        assert sorted(fetched) == (["c/3", "c/5"] if zarr_format == 3 else ["3", "5"])
        assert len(rows) < 300 and all(node.read_block(r).uniform for r in list(rows)[1:3])


def test_direct_passes_missing_chunks_listed_nowhere(tmp_path):
    data = np.zeros((6, 6), dtype="<i4")
    data[0, 0] = 1
    path = write(tmp_path / "a.zarr", data, 2, chunks=(2, 2), compressors=None)
    with open_store(path) as tree:
        block = tree.get("/").read_block((0, 6))
    assert block.chunks == (ChunkRead("0.0", None),)


def test_direct_passes_missing_chunk_allocates_only_the_block(tmp_path):
    # Shape and chunks of 2**40 elements, nothing stored: one block of a few rows must not touch the rest.
    path = tmp_path / "a.zarr"
    os.makedirs(path)
    meta = {
        "zarr_format": 2,
        "shape": [2**40],
        "chunks": [1000],
        "dtype": "<f8",
        "order": "C",
        "fill_value": 1.5,
        "filters": None,
        "compressor": None,
    }
    (path / ".zarray").write_text(json.dumps(meta))
    with open_store(str(path)) as tree:
        block = tree.get("/").read_block((2**39, 2**39 + 2000))
    assert block.values.size == 2000 and set(block.values.tolist()) == {1.5} and block.chunks == ()


def test_direct_passes_v3_hex_fill_value(tmp_path):
    path = write(tmp_path / "a.zarr", np.zeros(LENGTH, "<f4"), 3)  # all fill: no chunk is stored
    meta = json.loads(Path(path, "zarr.json").read_text())
    meta["fill_value"] = "0x7fc00000"  # NaN, as bits
    Path(path, "zarr.json").write_text(json.dumps(meta))
    assert np.isnan(through_zarr(path)).all()
    assert_reads_like_zarr(path)


def v2_with(tmp_path, **changes):
    path = write(tmp_path / "a.zarr", VALUES.astype("<i4"), 2, compressors=numcodecs.Zlib())
    meta = json.loads(Path(path, ".zarray").read_text())
    meta.update(changes)
    Path(path, ".zarray").write_text(json.dumps(meta))
    return path


@pytest.mark.parametrize("fill", ["zero", 2**40, 1.5, [1, 2]], ids=["string", "out-of-range", "fraction", "list"])
def test_direct_fails_unusable_fill_value_only_where_a_chunk_is_missing(tmp_path, fill):
    path = v2_with(tmp_path, fill_value=fill)
    with open_store(path) as tree:
        np.testing.assert_array_equal(np.concatenate([b.values for b in tree.get("/").blocks(2048)]), VALUES.astype("<i4"))
    os.remove(os.path.join(path, "3"))
    with (
        open_store(path) as tree,
        pytest.raises(NodeError, match=r"/: chunk 3 is not stored, and its fill_value .* is not a value of int32"),
    ):
        list(tree.get("/").blocks(2048))


def test_direct_decodes_chunks_whatever_the_fill_value_where_none_is_missing_or_not(tmp_path):
    # The chunks' decoding does not depend on the fill value: with one not of the dtype, every stored chunk is still
    # decoded and recorded, and only a block holding a chunk not stored says its values are not the array's.
    path = v2_with(tmp_path, fill_value="zero")
    os.remove(os.path.join(path, "3"))
    with open_store(path) as tree:
        node = tree.get("/")
        blocks = [node.read_block(rows) for rows in node.block_rows(2048)]
    assert all(c.problem is None for b in blocks for c in b.chunks)
    assert "3" not in [c.key for b in blocks for c in b.chunks]
    assert [b.values_problem is not None for b in blocks].count(True) >= 1
    assert any("chunk 3 is not stored, and its fill_value 'zero'" in (b.values_problem or "") for b in blocks)


def test_direct_decodes_order_k_as_c_values_exact_in_one_dimension(tmp_path):
    # order "K" (zarr.array.order reports it) does not change what a chunk decodes to: decoded as "C". In one dimension
    # every order lays the bytes out alike, so the values are the array's; in more, they are not read as the array's.
    path = v2_with(tmp_path, order="K")
    with open_store(path) as tree:
        node = tree.get("/")
        blocks = [node.read_block(rows) for rows in node.block_rows(2048)]
        assert all(b.values_problem is None for b in blocks)
        np.testing.assert_array_equal(np.concatenate([b.values for b in node.blocks(2048)]), VALUES.astype("<i4"))
    data = np.arange(24, dtype="<i4").reshape(4, 6)
    path = write(tmp_path / "b.zarr", data, 2, chunks=(2, 3))
    meta = json.loads(Path(path, ".zarray").read_text())
    meta["order"] = "K"
    Path(path, ".zarray").write_text(json.dumps(meta))
    with open_store(path) as tree:
        node = tree.get("/")
        block = node.read_block(node.block_rows()[0])
        assert len(block.chunks) == 4 and all(c.problem is None for c in block.chunks)
        assert block.values_problem is not None and "order 'K' is neither" in block.values_problem
        with pytest.raises(NodeError, match="order 'K' is neither"):
            list(node.blocks())


def test_direct_reads_an_empty_storage_transformers_object_as_none(tmp_path):
    path = v3_with(tmp_path, storage_transformers={})
    with open_store(path) as tree:
        np.testing.assert_array_equal(np.concatenate([b.values for b in tree.get("/").blocks()]), VALUES)


# --- arrays that are not decoded -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build,reason",
    [
        pytest.param(
            lambda p: v2_with(p, compressor={"id": "pickle", "protocol": 5}),
            "object codec pickle where the array's bytes",
            id="v2-pickle",
        ),
        pytest.param(
            lambda p: v2_with(p, filters=[{"id": "msgpack2"}], dtype="|O"),
            "codec 'msgpack2' is not on the allow-list",
            id="v2-msgpack",
        ),
        pytest.param(
            lambda p: v2_with(p, filters=[{"id": "categorize", "labels": ["a"], "dtype": "|O"}]),
            "codec 'categorize' is not on the allow-list",
            id="v2-categorize",
        ),
        pytest.param(
            lambda p: v2_with(p, filters=[{"id": "vlen-array", "dtype": "<i4"}], dtype="|O"),
            "codec 'vlen-array' is not on the allow-list",
            id="v2-vlen-array",
        ),
        pytest.param(
            lambda p: v2_with(p, compressor={"id": "some.plugin"}),
            "codec 'some.plugin' is not on the allow-list",
            id="v2-unknown",
        ),
        pytest.param(
            lambda p: v2_with(p, dtype="|O", filters=None), "an object array needs vlen-utf8", id="v2-object-without-object-codec"
        ),
        pytest.param(
            lambda p: v2_with(p, filters=[{"id": "delta", "dtype": "|O"}]), "not a numeric dtype", id="v2-delta-object-dtype"
        ),
        pytest.param(lambda p: v2_with(p, dimension_separator="-"), "dimension_separator", id="v2-separator"),
        pytest.param(
            lambda p: v3_with(p, codecs=[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "numcodecs.pickle"}]),
            "codec 'numcodecs.pickle' is not on the allow-list",
            id="v3-unknown-codec",
        ),
        pytest.param(lambda p: v3_with(p, codecs=[{"name": "zstd"}]), "one array-to-bytes codec", id="v3-no-array-to-bytes"),
        pytest.param(lambda p: v3_with(p, chunk_layout={"must_understand": True}), "'chunk_layout'", id="v3-unknown-key"),
        pytest.param(
            lambda p: v3_with(p, chunk_grid={"name": "rectilinear", "configuration": {}}), "not a regular grid", id="v3-grid"
        ),
        pytest.param(lambda p: v3_with(p, storage_transformers=[{"name": "x"}]), "storage_transformers", id="v3-transformers"),
    ],
)
def test_direct_fails_not_decoded_with_the_reason(tmp_path, build, reason):
    path = build(tmp_path)
    with open_store(path) as tree:
        node = tree.get("/")
        with pytest.raises(NotDecoded, match=reason):
            node.read_block(node.block_rows()[0])
        with pytest.raises(NotDecoded, match=reason):
            list(node.blocks())


def v3_with(tmp_path, **changes):
    path = write(tmp_path / "a.zarr", VALUES, 3)
    meta = json.loads(Path(path, "zarr.json").read_text())
    meta.update(changes)
    Path(path, "zarr.json").write_text(json.dumps(meta))
    return path


def test_direct_passes_unknown_v3_key_that_need_not_be_understood(tmp_path):
    path = v3_with(tmp_path, extra={"must_understand": False, "note": "ignored"})
    assert_reads_like_zarr(path)


def test_direct_passes_plan_is_not_built_before_a_read(tmp_path):
    path = v2_with(tmp_path, compressor={"id": "pickle"})
    with open_store(path) as tree:
        node = tree.get("/")
        _ = (node.shape, node.dtype, node.storage, node.attrs)  # metadata never asks for the plan
        assert "_plan" not in node.__dict__


# --- reading from threads, scanners, zip ----------------------------------------------------------------------


def test_direct_passes_reads_concurrently_from_threads(tmp_path):
    data = (np.arange(200_000, dtype="<i4") * 7) % 1_000_003
    path = write(tmp_path / "a.zarr", data, 2, chunks=(1000,), compressors=numcodecs.Blosc("zstd"))
    with open_store(path) as tree:
        node = tree.get("/")
        ranges = node.block_rows(3000)
        with ThreadPoolExecutor(4) as pool:
            blocks = list(pool.map(node.read_block, list(ranges) * 3))
        np.testing.assert_array_equal(np.concatenate([b.values for b in blocks]), np.concatenate([data] * 3))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_direct_passes_thread_scanner_same_facts_as_serial(tmp_path, zarr_format):
    data = np.arange(50_000, dtype="<i4") - 100
    path = write(tmp_path / "a.zarr", data, zarr_format, chunks=(1000,))
    request = FactRequest("count_outside", (("high", 40_000), ("limit", 5), ("low", 0)))
    with open_store(path) as tree:
        node = tree.get("/")
        serial = SerialScanner(4096).run([scan_plan(node, [request], 4096)])
        threaded = ThreadScanner(2, 4096).run([scan_plan(node, [request], 4096)])
        assert serial == threaded and not isinstance(serial["/"], NodeError)


def test_direct_passes_zip_store(tmp_path):
    import zipfile

    path = write(tmp_path / "a.zarr", VALUES, 2, compressors=numcodecs.Zstd())
    target = tmp_path / "a.zip"
    with zipfile.ZipFile(target, "w") as zf:
        for name in os.listdir(path):
            zf.write(os.path.join(path, name), name)
    with open_store(str(target)) as tree:
        np.testing.assert_array_equal(np.concatenate([b.values for b in tree.get("/").blocks(2048)]), VALUES)


# --- corrupt chunks: a problem naming the chunk, never garbage ---------------------------------------------


def replace_chunk(path, key, transform):
    full = os.path.join(path, *key.split("/"))
    Path(full).write_bytes(transform(Path(full).read_bytes()))


def read_all(path):
    with open_store(str(path)) as tree:
        return np.concatenate([b.values for b in tree.get("/").blocks(2048)])


def corrupt(case_id, zarr_format, compressors, key, transform, match):
    """A store written with `compressors`, whose chunk `key` is then replaced by `transform(stored bytes)`."""
    kwargs = {} if compressors == "default" else {"compressors": compressors}
    return pytest.param(zarr_format, kwargs, key, transform, match, id=case_id)


def encoded(codec, n):
    """`n` zeros (int64) as `codec` encodes them: a well-formed chunk of the wrong length."""
    return lambda _: bytes(codec.encode(np.zeros(n, "<i8")))


CORRUPT = [
    corrupt(
        "v2-blosc-truncated",
        2,
        numcodecs.Blosc(),
        "3",
        lambda b: b[: len(b) // 2],
        r"chunk 3 holds \d+ bytes, but its Blosc header says",
    ),
    corrupt("v2-blosc-header-cut", 2, numcodecs.Blosc(), "3", lambda b: b[:10], "shorter than a Blosc header"),
    corrupt(
        "v2-blosc-wrong-size",
        2,
        numcodecs.Blosc(),
        "3",
        encoded(numcodecs.Blosc(), 999),
        "chunk 3 decodes to 7992 bytes, expected 8000",
    ),
    corrupt("v2-zstd-truncated", 2, numcodecs.Zstd(), "3", lambda b: b[:-5], "chunk 3 does not decode with zstd"),
    corrupt(
        "v2-zstd-too-big",
        2,
        numcodecs.Zstd(),
        "3",
        encoded(numcodecs.Zstd(), 1001),
        "chunk 3 decodes to 8008 bytes, expected 8000",
    ),
    corrupt(
        "v2-zstd-too-small",
        2,
        numcodecs.Zstd(),
        "3",
        encoded(numcodecs.Zstd(), 999),
        "chunk 3 decodes to 7992 bytes, expected 8000",
    ),
    corrupt("v2-lz4-truncated", 2, numcodecs.LZ4(), "3", lambda b: b[:-5], "chunk 3 does not decode with lz4"),
    corrupt(
        "v2-lz4-wrong-size",
        2,
        numcodecs.LZ4(),
        "3",
        encoded(numcodecs.LZ4(), 999),
        "chunk 3 decodes to 7992 bytes, expected 8000",
    ),
    corrupt("v2-zlib-truncated", 2, numcodecs.Zlib(), "3", lambda b: b[:-9], "chunk 3 does not decode with zlib"),
    corrupt(
        "v2-zlib-bomb-stopped",
        2,
        numcodecs.Zlib(),
        "3",
        encoded(numcodecs.Zlib(), 10**6),
        "chunk 3 decodes to more than 8000 bytes, expected 8000",
    ),
    corrupt("v2-gzip-trailing-junk", 2, numcodecs.GZip(), "3", lambda b: b + b"junk", "chunk 3 does not decode with gzip"),
    corrupt(
        "v2-gzip-wrong-size",
        2,
        numcodecs.GZip(),
        "3",
        encoded(numcodecs.GZip(), 10),
        "chunk 3 decodes to 80 bytes, expected 8000",
    ),
    corrupt("v2-bz2-truncated", 2, numcodecs.BZ2(), "3", lambda b: b[:-9], "chunk 3 does not decode with bz2"),
    corrupt("v2-lzma-truncated", 2, numcodecs.LZMA(), "3", lambda b: b[:-9], "chunk 3 does not decode with lzma"),
    corrupt("v2-raw-short", 2, None, "3", lambda b: b[:-1], "chunk 3 decodes to 7999 bytes, expected 8000"),
    corrupt("v2-raw-last-long", 2, None, "10", lambda b: b + b"\0", "chunk 10 decodes to 8001 bytes, expected 8000"),
    corrupt("v3-zstd-truncated", 3, "default", "c/3", lambda b: b[:-5], "chunk c/3 does not decode with zstd"),
    corrupt("v3-gzip-truncated", 3, [GzipCodec()], "c/3", lambda b: b[:-9], "chunk c/3 does not decode with gzip"),
    corrupt(
        "v3-crc32c-flipped-bit",
        3,
        [ZstdCodec(), Crc32cCodec()],
        "c/3",
        lambda b: b[:-5] + bytes([b[-5] ^ 1]) + b[-4:],
        "chunk c/3 fails its crc32c check",
    ),
    corrupt("v3-crc32c-cut", 3, [Crc32cCodec()], "c/3", lambda b: b[:2], "too short to hold its crc32c checksum"),
    corrupt("v3-crc32c-truncated-payload", 3, [Crc32cCodec()], "c/3", lambda b: b[:-12] + b[-4:], "fails its crc32c check"),
]


@pytest.mark.parametrize("zarr_format,kwargs,key,transform,match", CORRUPT)
def test_direct_fails_corrupt_chunk_is_a_chunk_problem(tmp_path, zarr_format, kwargs, key, transform, match):
    path = write(tmp_path / "a.zarr", VALUES, zarr_format, fill_value=-1, **kwargs)
    replace_chunk(path, key, transform)
    index = int(key.rsplit("/", 1)[-1])
    with open_store(path) as tree:
        node = tree.get("/")
        block = node.read_block((0, LENGTH))  # does not raise: the chunk's problem is on the block
        problems = [c for c in block.chunks if c.problem is not None]
        assert [c.key for c in problems] == [key]
        assert problems[0].problem.startswith("/: ") and f"chunk {key}" in block.problem()
        assert len(block.chunks) == 11
        bad = slice(index * CHUNK, min(LENGTH, (index + 1) * CHUNK))
        assert (block.values[bad] == -1).all(), "a chunk that does not decode reads as the fill value"
        rest = np.ones(LENGTH, dtype=bool)
        rest[bad] = False
        np.testing.assert_array_equal(block.values[rest], VALUES[rest])
    with pytest.raises(NodeError, match=match):
        read_all(path)  # blocks() wants values it can trust


def test_direct_passes_gzip_members_read_as_numcodecs_reads_them(tmp_path):
    path = write(tmp_path / "a.zarr", VALUES, 2, compressors=numcodecs.GZip())
    half = VALUES[3000:3500].tobytes(), VALUES[3500:4000].tobytes()
    gz = numcodecs.GZip()
    replace_chunk(path, "3", lambda b: bytes(gz.encode(half[0])) + bytes(gz.encode(half[1])) + b"\0" * 8)
    assert gz.decode(Path(path, "3").read_bytes()) == b"".join(half)
    np.testing.assert_array_equal(read_all(path), VALUES)


def test_direct_fails_v3_crc32c_right_sum_wrong_size(tmp_path):
    import google_crc32c

    path = write(tmp_path / "a.zarr", VALUES, 3, compressors=[Crc32cCodec()])
    payload = np.zeros(999, "<i8").tobytes()
    replace_chunk(path, "c/3", lambda b: payload + google_crc32c.value(payload).to_bytes(4, "little"))
    with pytest.raises(NodeError, match="chunk c/3 decodes to 7992 bytes, expected 8000"):
        read_all(path)


def test_direct_fails_chunk_that_is_a_directory(tmp_path):
    path = write(tmp_path / "a.zarr", VALUES, 2, compressors=None)
    os.remove(os.path.join(path, "3"))
    os.makedirs(os.path.join(path, "3"))
    with open_store(path) as tree, pytest.raises(NodeError, match="chunk 3 exists but cannot be read"):
        tree.get("/").read_block((0, LENGTH))


def test_direct_fails_corrupt_n_dimensional_chunk_fills_only_its_region(tmp_path):
    path = write(tmp_path / "a.zarr", ND, 2, chunks=(4, 3, 2), compressors=numcodecs.Zlib(), fill_value=-9)
    replace_chunk(path, "1.2.0", lambda b: b[:-4])
    with open_store(path) as tree:
        block = tree.get("/").read_block((4, 8))
    values = block.values.reshape(4, 7, 5)
    assert [c.key for c in block.chunks if c.problem] == ["1.2.0"]
    assert (values[:, 6:7, 0:2] == -9).all()
    mask = np.ones(values.shape, dtype=bool)
    mask[:, 6:7, 0:2] = False
    np.testing.assert_array_equal(values[mask], ND[4:8][mask])


def test_direct_fails_corrupt_inner_chunk_of_a_shard(tmp_path):
    data = np.arange(64, dtype="<i4")
    path = write(tmp_path / "a.zarr", data, 3, chunks=(4,), shards=(16,), compressors=[GzipCodec()], fill_value=-1)
    with open_store(path) as tree:
        sharding = tree.get("/").plan.codec.sharding
    raw = bytearray(Path(path, "c", "1").read_bytes())
    index = np.frombuffer(bytes(raw[-(16 * 4 + 4) : -4]), dtype="<u8").reshape(-1, 2)
    offset, nbytes = (int(x) for x in index[2])
    raw[offset + nbytes - 9 : offset + nbytes] = bytes(9)  # the gzip trailer of inner chunk 2 of shard 1
    Path(path, "c", "1").write_bytes(bytes(raw))
    with open_store(path) as tree:
        block = tree.get("/").read_block((0, 64))
    assert sharding.per_shard == (4,)
    assert [(c.key, bool(c.problem)) for c in block.chunks] == [("c/0", False), ("c/1", True), ("c/2", False), ("c/3", False)]
    assert "chunk c/1, inner chunk 2 does not decode with gzip" in block.problem()
    assert (block.values[24:28] == -1).all()
    np.testing.assert_array_equal(block.values[:24], data[:24])
    np.testing.assert_array_equal(block.values[28:], data[28:])


@pytest.mark.parametrize("zarr_format,key", [(2, "3"), (3, "c/3")])
def test_direct_passes_each_chunk_fetched_once_per_block(tmp_path, zarr_format, key):
    path = write(tmp_path / "a.zarr", VALUES, zarr_format)
    with open_store(path) as tree:
        fetched = count_gets(tree)
        block = tree.get("/").read_block((0, LENGTH))
    assert len(fetched) == len(set(fetched)) == 11 == len(block.chunks)
    assert [c.key for c in block.chunks] == [key.replace("3", str(i)) for i in range(11)]


# --- decompression bombs: a few kilobytes that inflate past 4 GB, stopped at one chunk ------------------------


def bomb_store(path, meta, key, payload):
    os.makedirs(os.path.dirname(os.path.join(path, key)), exist_ok=True)
    (path / ("zarr.json" if meta.get("zarr_format") == 3 else ".zarray")).write_text(json.dumps(meta))
    (path / key).write_bytes(payload)
    return str(path)


def v2_meta(shape, chunks, dtype="<i8", compressor=None, filters=None, fill_value=0):
    return {
        "zarr_format": 2,
        "shape": shape,
        "chunks": chunks,
        "dtype": dtype,
        "order": "C",
        "fill_value": fill_value,
        "filters": filters,
        "compressor": compressor,
    }


def v3_meta(shape, chunks, codecs, data_type="int64", fill_value=0):
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": data_type,
        "fill_value": fill_value,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "codecs": codecs,
    }


BYTES_LE = {"name": "bytes", "configuration": {"endian": "little"}}

BOMBS = {
    # name: (metadata, chunk key, payload builder, the problem expected)
    "v2-1d-zlib-of-zlib-of-zlib": (
        v2_meta([2000], [1000], compressor={"id": "zlib"}, filters=[{"id": "zlib"}, {"id": "zlib"}]),
        "0",
        lambda: nested(zlib_zeros(), 2),
        "chunk 0 decodes to more than",
    ),
    "v2-nd-zlib-of-zlib": (
        v2_meta([40, 50], [20, 50], compressor={"id": "zlib"}, filters=[{"id": "zlib"}]),
        "0.0",
        lambda: nested(zlib_zeros(), 1),
        "chunk 0.0 decodes to more than",
    ),
    "v2-bz2-streams": (
        v2_meta([2000], [1000], compressor={"id": "bz2"}),
        "0",
        bz2_zeros,
        "chunk 0 decodes to more than 8000 bytes, expected 8000",
    ),
    "v2-zstd-no-declared-size": (
        v2_meta([2000], [1000], compressor={"id": "zstd"}),
        "0",
        zstd_zeros,
        "chunk 0 decodes to more than 8000 bytes, expected 8000",
    ),
    "v2-gzip-of-gzip": (
        v2_meta([2000], [1000], compressor={"id": "gzip"}, filters=[{"id": "gzip"}]),
        "0",
        lambda: gzip_wrap(gzip_zeros()),
        "chunk 0 decodes to more than",
    ),
    "v2-vlen-header-2**31-items": (
        v2_meta([2000], [1000], dtype="|O", filters=[{"id": "vlen-utf8"}], fill_value=""),
        "0",
        vlen_header_bomb,
        "its vlen-utf8 header declares 2147483648 items, expected 1000",
    ),
    "v2-vlen-under-zlib": (
        v2_meta(
            [2000], [1000], dtype="|O", filters=[{"id": "vlen-bytes"}, {"id": "zlib"}], compressor={"id": "zlib"}, fill_value=""
        ),
        "0",
        lambda: nested(zlib_zeros(), 1),
        "chunk 0 decodes to more than 67108864 bytes",
    ),
    "v2-json2-shape": (
        v2_meta([2000], [1000], dtype="|O", filters=[{"id": "json2"}], fill_value=None),
        "0",
        lambda: JSON2_SHAPE_BOMB,
        "json2 shape [1099511627776] holds 1099511627776 items, expected 1000",
    ),
    "v2-json2-under-zlib": (
        v2_meta(
            [2000], [1000], dtype="|O", filters=[{"id": "json2"}, {"id": "zlib"}], compressor={"id": "zlib"}, fill_value=None
        ),
        "0",
        lambda: nested(zlib_zeros(), 1),
        "chunk 0 decodes to more than 67108864 bytes",
    ),
    "v3-gzip-of-gzip": (
        v3_meta([2000], [1000], [BYTES_LE, {"name": "gzip"}, {"name": "gzip"}]),
        "c/0",
        lambda: gzip_wrap(gzip_wrap(gzip_zeros())),
        "chunk c/0 decodes to more than",
    ),
    "v3-zstd-no-declared-size": (
        v3_meta([2000], [1000], [BYTES_LE, {"name": "zstd"}]),
        "c/0",
        zstd_zeros,
        "chunk c/0 decodes to more than 8000 bytes, expected 8000",
    ),
    "v3-blosc-header-declares-2-GB": (
        v3_meta([2000], [1000], [BYTES_LE, {"name": "blosc"}]),
        "c/0",
        lambda: (
            bytes([2, 1, 1, 8])
            + (2**31 - 32).to_bytes(4, "little")
            + (2**16).to_bytes(4, "little")
            + (4096).to_bytes(4, "little")
            + bytes(4080)
        ),
        "chunk c/0 decodes to 2147483616 bytes, expected 8000",
    ),
    "v3-nd-crc32c-over-zstd": (
        v3_meta([40, 50], [20, 50], [BYTES_LE, {"name": "zstd"}, {"name": "crc32c"}]),
        "c/0/0",
        lambda: crc32c_wrap(zstd_zeros()),
        "bytes, at most 10024 expected",
    ),
    "v3-vlen-utf8-header": (
        v3_meta([2000], [1000], [{"name": "vlen-utf8"}], data_type="string", fill_value=""),
        "c/0",
        vlen_header_bomb,
        "its vlen-utf8 header declares 2147483648 items, expected 1000",
    ),
    "v3-sharded-inner-chunk": (
        v3_meta(
            [4000],
            [2000],
            [
                {
                    "name": "sharding_indexed",
                    "configuration": {
                        "chunk_shape": [1000],
                        "codecs": [BYTES_LE, {"name": "gzip"}, {"name": "gzip"}],
                        "index_codecs": [BYTES_LE, {"name": "crc32c"}],
                        "index_location": "end",
                    },
                }
            ],
        ),
        "c/0",
        lambda: shard_of([gzip_wrap(gzip_wrap(gzip_zeros())), None]),
        "chunk c/0, inner chunk 0 decodes to more than",
    ),
}


def crc32c_wrap(data):
    import google_crc32c

    return data + google_crc32c.value(data).to_bytes(4, "little")


def shard_of(inner):
    """A shard of the encoded inner chunks `inner` (None: not stored), index at the end with its crc32c."""
    body, pairs, at = b"", [], 0
    for chunk in inner:
        if chunk is None:
            pairs += [2**64 - 1, 2**64 - 1]
            continue
        pairs += [at, len(chunk)]
        body += chunk
        at += len(chunk)
    return body + crc32c_wrap(np.array(pairs, dtype="<u8").tobytes())


@pytest.mark.parametrize("name", BOMBS)
def test_direct_fails_decompression_bomb_is_one_chunk_problem_in_bounded_memory(tmp_path, name):
    meta, key, payload, problem = BOMBS[name]
    raw = payload()
    assert len(raw) < 200_000, "a bomb of at most a few kilobytes (128 KiB for a frame of zstd RLE blocks)"
    path = bomb_store(tmp_path / "b.zarr", meta, key, raw)
    result = peak_rss_child(path)
    assert "error" not in result, result
    assert problem in result["problem"] and result["problem"].startswith("/: "), result
    assert [c[0] for c in result["chunks"]] == [key]
    assert result["peak_mb"] < MAX_PEAK_MB, result
    result = peak_rss_child(path, how="blocks")
    assert problem in result["error"] and result["peak_mb"] < MAX_PEAK_MB, result


def test_direct_passes_bomb_payloads_really_inflate_past_4_gb():
    import bz2
    import zlib

    assert zlib.decompressobj().decompress(nested(zlib_zeros(), 1), 10**6)[:2] == b"\x78\x01"  # inner stream
    inner = zlib.decompressobj()
    assert len(inner.decompress(zlib_zeros(), 10**6)) == 10**6 and not inner.eof  # keeps going
    from bombs import raw_deflate_zeros

    assert raw_deflate_zeros()[1] > 4 * 2**30
    assert len(bz2_zeros()) < 10_000 and len(bz2.BZ2Decompressor().decompress(bz2_zeros(), 10**6)) == 10**6
    assert len(zstd_zeros()) == 4 * -(-4_300_000_000 // 2**17) + 6


def test_direct_fails_block_spanning_more_chunks_than_one_block_reads(tmp_path, monkeypatch):
    from spec_validate.nodes import base

    monkeypatch.setattr(base, "MAX_CHUNKS_PER_BLOCK", 100)
    path = write(tmp_path / "a.zarr", np.arange(400).reshape(2, 200), 2, chunks=(1, 1), compressors=None)
    with open_store(path) as tree, pytest.raises(NotDecoded, match=r"spans 200 chunks, more than the 100"):
        tree.get("/").read_block((0, 1))


def test_direct_passes_a_stored_name_with_too_few_indices_is_no_chunk(tmp_path):
    """`0` beside a two-dimensional array's `0.0` keys names no chunk: the listing does not count it as row 0."""
    from spec_validate.nodes.zarr import direct

    path = write(tmp_path / "a.zarr", np.zeros((4, 4), dtype="<i4"), 2, chunks=(2, 2), fill_value=0, compressors=None)
    data = np.ones((2, 2), dtype="<i4")
    Path(path, "1.1").write_bytes(data.tobytes())
    Path(path, "0").write_bytes(b"not a chunk of this array")
    with open_store(path) as tree:
        node = tree.get("/")
        assert direct.stored_rows(tree.kv, node.plan) == [1]


def test_direct_fails_chunk_absent_from_a_folder_that_could_not_be_listed_is_unknown_not_fill(tmp_path):
    # A file the process may not see (a folder without the permission to list it) is not an unstored chunk.
    from spec_validate.nodes.zarr import direct
    from spec_validate.storage.keyvalue import DirectoryStore

    (tmp_path / "a" / "x").mkdir(parents=True)
    kv = DirectoryStore(str(tmp_path))
    assert direct.get_chunk(kv, "a/x/0", "/a/x") is None  # listed (or never asked): not stored, the fill value
    kv._unlisted["a/x"] = "cannot be listed (Permission denied)"
    with pytest.raises(NodeError, match=r"/a/x: chunk a/x/0 cannot be read: its folder cannot be listed"):
        direct.get_chunk(kv, "a/x/0", "/a/x")
    with pytest.raises(NodeError, match="its folder cannot be listed"):
        direct.get_chunk(kv, "a/x/c/0/0", "/a/x")  # nested below it
