"""Direct Zarr reads (chunk keys + numcodecs here) give exactly what zarr-python reads, or step aside."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor

import numcodecs
import numpy as np
import pytest
import zarr
from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, ZstdCodec

from validator.engine.scan import SerialScanner, ThreadScanner, plan as scan_plan
from validator.kernels.facts import FactRequest
from validator.nodes.base import NodeError
from validator.nodes.detect import open_store

LENGTH, CHUNK = 10_007, 1000  # the last chunk holds 7 elements and is stored full-size
VALUES = np.arange(LENGTH, dtype="<i8") * 3 - 5000
BLOCK_SIZES = [1, CHUNK, 2048, 2500, 10**6]  # one chunk a block, several, uneven, the whole array

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
    array = zarr.create_array(store=str(path), shape=data.shape, chunks=chunks, dtype=data.dtype, zarr_format=zarr_format,
                              fill_value=fill_value, **kwargs)
    array[...] = data
    return str(path)


def through_zarr(path):
    return zarr.open_array(str(path), mode="r")[...]


def assert_direct_reads_like_zarr(path, node_path="/"):
    expected = through_zarr(path)
    with open_store(str(path)) as tree:
        node = tree.get(node_path)
        assert node._direct_plan is not None
        for size in BLOCK_SIZES:
            ranges = node.block_rows(size)
            blocks = [node.read_block(r) for r in ranges]
            assert [b.start for b in blocks] == [r[0] for r in ranges]
            np.testing.assert_array_equal(np.concatenate([b.values for b in blocks]), expected)
        assert "_array" not in node.__dict__, "zarr-python was opened"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", V2_LAYOUTS)
def test_direct_passes_v2_same_values_as_zarr_python(tmp_path, layout, dtype):
    path = write(tmp_path / "a.zarr", data_of(dtype), 2, **V2_LAYOUTS[layout])
    assert_direct_reads_like_zarr(path)


@pytest.mark.parametrize("dtype", ["<i8", ">i4", "<f8"])
def test_direct_passes_v2_delta_filter(tmp_path, dtype):
    path = write(tmp_path / "a.zarr", data_of(dtype), 2, compressors=numcodecs.Blosc(), filters=[numcodecs.Delta(dtype)])
    assert_direct_reads_like_zarr(path)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", V3_LAYOUTS)
def test_direct_passes_v3_same_values_as_zarr_python(tmp_path, layout, dtype):
    path = write(tmp_path / "a.zarr", data_of(dtype), 3, **V3_LAYOUTS[layout])
    assert_direct_reads_like_zarr(path)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("dtype,fill", [
    pytest.param("<i4", 7, id="int"),
    pytest.param("<f8", np.nan, id="float-nan"),
    pytest.param("<f4", np.inf, id="float-infinity"),
    pytest.param("<f4", -np.inf, id="float-minus-infinity"),
    pytest.param("<f8", -1.5, id="float"),
    pytest.param("|b1", True, id="bool"),
])
def test_direct_passes_missing_chunks_read_as_fill_value(tmp_path, zarr_format, dtype, fill):
    data = np.full(LENGTH, fill, dtype=dtype)
    data[1500:2500] = 0  # chunks 1 and 2 only are stored; every other chunk is the fill value, so never written
    path = write(tmp_path / "a.zarr", data, zarr_format, fill_value=fill, compressors=None)
    chunk_dir = os.path.join(path, "c") if zarr_format == 3 else path
    assert sorted(n for n in os.listdir(chunk_dir) if n[0].isdigit()) == ["1", "2"]
    assert_direct_reads_like_zarr(path)


def test_direct_passes_v3_hex_fill_value(tmp_path):
    path = write(tmp_path / "a.zarr", np.zeros(LENGTH, "<f4"), 3)  # all fill: no chunk is stored
    meta = json.loads(open(os.path.join(path, "zarr.json")).read())
    meta["fill_value"] = "0x7fc00000"  # NaN, as bits
    open(os.path.join(path, "zarr.json"), "w").write(json.dumps(meta))
    assert np.isnan(through_zarr(path)).all()
    assert_direct_reads_like_zarr(path)


def test_direct_passes_reads_concurrently_from_threads(tmp_path):
    data = (np.arange(200_000, dtype="<i4") * 7) % 1_000_003
    path = write(tmp_path / "a.zarr", data, 2, chunks=(1000,), compressors=numcodecs.Blosc("zstd"))
    with open_store(path) as tree:
        node = tree.get("/")
        ranges = node.block_rows(3000)
        with ThreadPoolExecutor(4) as pool:
            blocks = list(pool.map(node.read_block, ranges * 3))
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
        node = tree.get("/")
        assert node._direct_plan is not None
        np.testing.assert_array_equal(np.concatenate([b.values for b in node.blocks(2048)]), VALUES)


# --- arrays the direct path leaves to zarr-python ----------------------------------------------------------


def v2_with(tmp_path, **changes):
    path = write(tmp_path / "a.zarr", VALUES.astype("<i4"), 2, compressors=numcodecs.Zlib())
    meta = json.loads(open(os.path.join(path, ".zarray")).read())
    meta.update(changes)
    open(os.path.join(path, ".zarray"), "w").write(json.dumps(meta))
    return path


@pytest.mark.parametrize("build", [
    pytest.param(lambda p: write(p / "a.zarr", np.arange(100, dtype="<i4").reshape(10, 10), 2, chunks=(5, 5)), id="v2-two-dimensional"),
    pytest.param(lambda p: write(p / "a.zarr", np.arange(100, dtype="<i4").reshape(10, 10), 3, chunks=(5, 5)), id="v3-two-dimensional"),
    pytest.param(lambda p: write(p / "a.zarr", VALUES.astype("<i4"), 3, shards=(4000,)), id="v3-sharding"),
    pytest.param(lambda p: write(p / "a.zarr", np.array(["ab", "c"] * 50, dtype="<U2"), 2, chunks=(10,), fill_value=""), id="v2-fixed-strings"),
    pytest.param(lambda p: write(p / "a.zarr", np.arange(100, dtype="<c8"), 2, chunks=(10,)), id="v2-complex"),
    pytest.param(lambda p: write(p / "a.zarr", np.arange(100, dtype="<i4"), 2, chunks=(10,), fill_value=None), id="v2-null-fill"),
    pytest.param(lambda p: write(p / "a.zarr", np.arange(100, dtype="<f8"), 2, chunks=(10,),
                                 filters=[numcodecs.FixedScaleOffset(0, 10, "<f8", "<i4")]), id="v2-filter-off-the-list"),
    pytest.param(lambda p: write(p / "a.zarr", np.arange(100, dtype="<i8"), 2, chunks=(10,),
                                 filters=[numcodecs.Delta("<i8", astype="<i2")]), id="v2-delta-changing-size"),
    pytest.param(lambda p: v2_with(p, compressor={"id": "pickle", "protocol": 5}), id="v2-pickle"),
    pytest.param(lambda p: v2_with(p, order="K"), id="v2-bad-order"),
    pytest.param(lambda p: v2_with(p, fill_value="zero"), id="v2-string-fill-for-int"),
    pytest.param(lambda p: v2_with(p, fill_value=2**40), id="v2-fill-out-of-range"),
])
def test_direct_passes_steps_aside_for_arrays_it_does_not_decode(tmp_path, build):
    path = build(tmp_path)
    with open_store(path) as tree:
        assert tree.get("/")._direct_plan is None


def test_direct_passes_sharded_array_still_read_through_zarr_python(tmp_path):
    path = write(tmp_path / "a.zarr", VALUES, 3, shards=(4000,))
    with open_store(path) as tree:
        node = tree.get("/")
        assert node._direct_plan is None
        np.testing.assert_array_equal(np.concatenate([b.values for b in node.blocks(2048)]), VALUES)


def test_direct_passes_unknown_v3_key_steps_aside(tmp_path):
    path = write(tmp_path / "a.zarr", VALUES, 3)
    meta = json.loads(open(os.path.join(path, "zarr.json")).read())
    meta["chunk_layout"] = {"must_understand": True}
    open(os.path.join(path, "zarr.json"), "w").write(json.dumps(meta))
    with open_store(path) as tree:
        assert tree.get("/")._direct_plan is None


# --- corrupt chunks: an error naming the chunk, never garbage ----------------------------------------------


def replace_chunk(path, key, transform):
    full = os.path.join(path, *key.split("/"))
    raw = open(full, "rb").read()
    open(full, "wb").write(transform(raw))


def read_all(path):
    with open_store(str(path)) as tree:
        node = tree.get("/")
        assert node._direct_plan is not None
        return np.concatenate([b.values for b in node.blocks(2048)])


def corrupt(case_id, zarr_format, compressors, key, transform, match):
    """A store written with `compressors`, whose chunk `key` is then replaced by `transform(stored bytes)`."""
    kwargs = {} if compressors == "default" else {"compressors": compressors}
    return pytest.param(zarr_format, kwargs, key, transform, match, id=case_id)


def encoded(codec, n):
    """`n` zeros (int64) as `codec` encodes them: a well-formed chunk of the wrong length."""
    return lambda _: bytes(codec.encode(np.zeros(n, "<i8")))


@pytest.mark.parametrize("zarr_format,kwargs,key,transform,match", [
    corrupt("v2-blosc-truncated", 2, numcodecs.Blosc(), "3", lambda b: b[: len(b) // 2],
            r"chunk 3 holds \d+ bytes, but its Blosc header says"),
    corrupt("v2-blosc-header-cut", 2, numcodecs.Blosc(), "3", lambda b: b[:10], "shorter than a Blosc header"),
    corrupt("v2-blosc-wrong-size", 2, numcodecs.Blosc(), "3", encoded(numcodecs.Blosc(), 999),
            "chunk 3 decodes to 7992 bytes, expected 8000"),
    corrupt("v2-zstd-truncated", 2, numcodecs.Zstd(), "3", lambda b: b[:-5], "chunk 3 does not decode with zstd"),
    corrupt("v2-zstd-too-big", 2, numcodecs.Zstd(), "3", encoded(numcodecs.Zstd(), 1001),
            "chunk 3 decodes to 8008 bytes, expected 8000"),
    corrupt("v2-zstd-too-small", 2, numcodecs.Zstd(), "3", encoded(numcodecs.Zstd(), 999),
            "chunk 3 decodes to 7992 bytes, expected 8000"),
    corrupt("v2-lz4-truncated", 2, numcodecs.LZ4(), "3", lambda b: b[:-5], "chunk 3 does not decode with lz4"),
    corrupt("v2-lz4-wrong-size", 2, numcodecs.LZ4(), "3", encoded(numcodecs.LZ4(), 999),
            "chunk 3 decodes to 7992 bytes, expected 8000"),
    corrupt("v2-zlib-truncated", 2, numcodecs.Zlib(), "3", lambda b: b[:-9], "chunk 3 does not decode with zlib"),
    corrupt("v2-zlib-bomb-stopped", 2, numcodecs.Zlib(), "3", encoded(numcodecs.Zlib(), 10**6),
            "chunk 3 decodes to more than 8000 bytes, expected 8000"),
    corrupt("v2-gzip-trailing-junk", 2, numcodecs.GZip(), "3", lambda b: b + b"junk", "chunk 3 does not decode with gzip"),
    corrupt("v2-gzip-wrong-size", 2, numcodecs.GZip(), "3", encoded(numcodecs.GZip(), 10),
            "chunk 3 decodes to 80 bytes, expected 8000"),
    corrupt("v2-bz2-truncated", 2, numcodecs.BZ2(), "3", lambda b: b[:-9], "chunk 3 does not decode with bz2"),
    corrupt("v2-lzma-truncated", 2, numcodecs.LZMA(), "3", lambda b: b[:-9], "chunk 3 does not decode with lzma"),
    corrupt("v2-raw-short", 2, None, "3", lambda b: b[:-1], "chunk 3 decodes to 7999 bytes, expected 8000"),
    corrupt("v2-raw-last-long", 2, None, "10", lambda b: b + b"\0", "chunk 10 decodes to 8001 bytes, expected 8000"),
    corrupt("v3-zstd-truncated", 3, "default", "c/3", lambda b: b[:-5], "chunk c/3 does not decode with zstd"),
    corrupt("v3-gzip-truncated", 3, [GzipCodec()], "c/3", lambda b: b[:-9], "chunk c/3 does not decode with gzip"),
    corrupt("v3-crc32c-flipped-bit", 3, [ZstdCodec(), Crc32cCodec()], "c/3", lambda b: b[:-5] + bytes([b[-5] ^ 1]) + b[-4:],
            "chunk c/3 fails its crc32c check"),
    corrupt("v3-crc32c-cut", 3, [Crc32cCodec()], "c/3", lambda b: b[:2], "too short to hold its crc32c checksum"),
    corrupt("v3-crc32c-truncated-payload", 3, [Crc32cCodec()], "c/3", lambda b: b[:-12] + b[-4:], "fails its crc32c check"),
])
def test_direct_fails_corrupt_chunk_is_node_error(tmp_path, zarr_format, kwargs, key, transform, match):
    path = write(tmp_path / "a.zarr", VALUES, zarr_format, **kwargs)
    replace_chunk(path, key, transform)
    with pytest.raises(NodeError, match=match):
        read_all(path)


def test_direct_passes_gzip_members_read_as_numcodecs_reads_them(tmp_path):
    path = write(tmp_path / "a.zarr", VALUES, 2, compressors=numcodecs.GZip())
    half = VALUES[3000:3500].tobytes(), VALUES[3500:4000].tobytes()
    gz = numcodecs.GZip()
    replace_chunk(path, "3", lambda b: bytes(gz.encode(half[0])) + bytes(gz.encode(half[1])) + b"\0" * 8)
    assert gz.decode(open(os.path.join(path, "3"), "rb").read()) == b"".join(half)
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
    with pytest.raises(NodeError, match="chunk 3 exists but cannot be read"):
        read_all(path)
