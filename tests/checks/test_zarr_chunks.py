"""Chunk decoding (--deep), on in-memory Zarr v2 stores whose chunks are encoded with numcodecs."""

from __future__ import annotations

import json
import pickle
import zlib
from typing import Any

import numcodecs
import numpy as np
import pytest
from dict_store import DictStore
from memory_tree import pack

import spec_validate
from spec_validate.checks import registry
from spec_validate.engine.run import compute_facts
from spec_validate.engine.scope import PackScope
from spec_validate.errors import NotDecoded
from spec_validate.model import Finding, NotApplicable, NotChecked, Omitted, Status
from spec_validate.nodes.zarr.tree import ZarrTree


def zarray(dtype: str = "<i4", shape=(5,), chunks=(2,), compressor=None, filters=None, **extra) -> dict:
    return {
        "zarr_format": 2,
        "shape": list(shape),
        "chunks": list(chunks),
        "dtype": dtype,
        "compressor": compressor,
        "fill_value": 0,
        "order": "C",
        "filters": filters,
        **extra,
    }


def encode(values: np.ndarray, compressor=None, filters=None) -> bytes:
    """One chunk as zarr-python 2 writes it: filters in order, then the compressor."""
    data: Any = np.ascontiguousarray(values)
    for f in filters or []:
        data = numcodecs.get_codec(dict(f)).encode(data)
    if compressor is not None:
        data = numcodecs.get_codec(dict(compressor)).encode(data)
    return bytes(np.asarray(data).tobytes() if isinstance(data, np.ndarray) else data)


def array_store(meta: dict, chunks: dict[str, bytes]) -> Any:
    items = {".zgroup": {"zarr_format": 2}, "a/.zarray": meta, **{f"a/{k}": v for k, v in chunks.items()}}
    return ZarrTree(DictStore(items), 2).get("/a")


def full_chunks(meta: dict, dtype: str = "<i4") -> dict[str, bytes]:
    """Every chunk of a 1-d array of 5 elements in chunks of 2, the edge chunk padded to full size as zarr does."""
    out = {}
    for i in range(3):
        values = np.arange(i * 2, i * 2 + 2).astype(dtype)
        out[str(i)] = encode(values, meta["compressor"], meta["filters"])
    return out


def run(node: Any, deep: bool = True) -> list:
    """The primitive on one array as the engine runs it: its facts from the array's scan, then the check."""
    primitive = registry.get("chunks_decode_to_chunk_size")
    scope = PackScope(pack(), node.tree.root, deep=deep)
    wanted = dict(primitive.facts(node, {}, scope))
    try:
        facts = compute_facts(node, set(wanted.values()), 7)
    except NotDecoded as exc:  # the engine records such an array as not checked
        raise NotChecked(str(exc)) from None
    return list(primitive.function(node, {}, scope, {k: facts[r] for k, r in wanted.items()}))


COMPRESSORS = [
    pytest.param(None, id="none"),
    pytest.param({"id": "zlib", "level": 1}, id="zlib"),
    pytest.param({"id": "gzip", "level": 1}, id="gzip"),
    pytest.param({"id": "bz2", "level": 1}, id="bz2"),
    pytest.param({"id": "lzma", "format": 1, "check": -1, "preset": None, "filters": None}, id="lzma"),
    pytest.param({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}, id="blosc"),
    pytest.param({"id": "zstd", "level": 1}, id="zstd"),
    pytest.param({"id": "lz4", "acceleration": 1}, id="lz4"),
]


@pytest.mark.parametrize("compressor", COMPRESSORS)
def test_chunks_decode_to_chunk_size_passes_each_allowed_compressor(compressor):
    meta = zarray(compressor=compressor)
    assert run(array_store(meta, full_chunks(meta))) == []


@pytest.mark.parametrize(
    "filters",
    [
        pytest.param([{"id": "delta", "dtype": "<i4"}], id="delta"),
        pytest.param([{"id": "shuffle", "elementsize": 4}], id="shuffle"),
        pytest.param([{"id": "delta", "dtype": "<i4", "astype": "<i2"}], id="delta-narrowing"),
        pytest.param([{"id": "adler32"}], id="checksum"),
    ],
)
def test_chunks_decode_to_chunk_size_passes_allowed_filters(filters):
    meta = zarray(compressor={"id": "zlib", "level": 1}, filters=filters)
    assert run(array_store(meta, full_chunks(meta))) == []


def test_chunks_decode_to_chunk_size_passes_scalar_and_absent_chunks():
    scalar = zarray(dtype="<f8", shape=(), chunks=())
    assert run(array_store(scalar, {"0": np.float64(1.5).tobytes()})) == []
    meta = zarray()
    assert run(array_store(meta, {"1": encode(np.arange(2, dtype="<i4"))})) == []  # chunks 0 and 2 absent: fill value


def test_chunks_decode_to_chunk_size_fails_truncated_chunk_naming_key_and_codec_error():
    meta = zarray(compressor={"id": "zlib", "level": 1})
    chunks = full_chunks(meta)
    chunks["1"] = chunks["1"][:5]
    (f,) = run(array_store(meta, chunks))
    assert f.details["key"] == "1" and "zlib" in f.message and "does not decode" in f.message


def test_chunks_decode_to_chunk_size_fails_edge_chunk_stored_short():
    meta = zarray()
    chunks = full_chunks(meta)
    chunks["2"] = np.arange(1, dtype="<i4").tobytes()  # only the element inside the array: 4 bytes, not 8
    (f,) = run(array_store(meta, chunks))
    assert f.message == "chunk 2 decodes to 4 bytes, expected 8"


def test_chunks_decode_to_chunk_size_fails_filter_error():
    meta = zarray(filters=[{"id": "adler32"}])
    chunks = full_chunks(meta)
    chunks["0"] = chunks["0"][:-1] + bytes([chunks["0"][-1] ^ 0xFF])  # the checksum no longer matches
    (f,) = run(array_store(meta, chunks))
    assert f.details["key"] == "0" and "adler32" in f.message


def test_chunks_decode_to_chunk_size_fails_blosc_garbage():
    meta = zarray(compressor={"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0})
    chunks = full_chunks(meta)
    chunks["0"] = b"\x02\x01\x21\x04" + b"\x00" * 12 + b"garbage"
    assert [f.details["key"] for f in run(array_store(meta, chunks))] == ["0"]


def test_chunks_decode_to_chunk_size_stops_a_decompression_bomb():
    meta = zarray(compressor={"id": "zlib", "level": 9})
    chunks = full_chunks(meta)
    chunks["0"] = zlib.compress(b"\0" * 10_000_000)  # 10 MB from a chunk of 8 bytes
    (f,) = run(array_store(meta, chunks))
    assert "more than" in f.message


def test_chunks_decode_to_chunk_size_checks_a_blosc_header_before_decoding():
    meta = zarray(compressor={"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0})
    chunks = full_chunks(meta)
    header = bytearray(chunks["0"])
    header[4:8] = (2**31).to_bytes(4, "little")  # claims 2 GiB decompressed
    chunks["0"] = bytes(header)
    (f,) = run(array_store(meta, chunks))
    assert "2147483648" in f.message  # refused from the header, before any allocation


def test_chunks_decode_to_chunk_size_skips_keys_outside_the_grid():
    meta = zarray()
    assert run(array_store(meta, {**full_chunks(meta), "7": b"x", "notes.txt": b"x"})) == []


def test_chunks_decode_to_chunk_size_lists_the_first_bad_chunks_and_counts_the_rest():
    # The scan keeps the first 20 bad chunks; the rest are counted (Omitted), so the report's count is exact.
    meta = zarray(shape=(60,), chunks=(2,))
    got = run(array_store(meta, {str(i): b"short" for i in range(30)}))
    listed = [f for f in got if isinstance(f, Finding)]
    assert len(listed) == 20 and {f.details["key"] for f in listed} <= {str(i) for i in range(30)}
    assert [o.count for o in got if isinstance(o, Omitted)] == [10]


def test_chunks_decode_to_chunk_size_fails_each_chunk_whatever_extra_configuration_the_codec_has():
    # The decoder needs no option beyond the codec id for zstd: an unknown one changes nothing it reads, and
    # every stored chunk is judged on its own bytes.
    meta = zarray(compressor={"id": "zstd", "no_such_setting": 1})
    got = run(array_store(meta, {"0": b"x", "1": b"y"}))
    assert [f.details["key"] for f in got] == ["0", "1"] and all("zstd" in f.message for f in got)


def test_chunks_decode_to_chunk_size_passes_and_fails_variable_length_strings():
    # vlen-utf8 runs no stored code: --deep decodes object arrays of strings too, with the header's item count
    # checked against the chunk before anything is allocated.
    meta = zarray(dtype="|O", filters=[{"id": "vlen-utf8"}], fill_value=None)
    good = {str(i): encode(np.array(["ab", "c"], dtype=object), None, meta["filters"]) for i in range(3)}
    assert run(array_store(meta, good)) == []
    bad = {**good, "1": (2**31).to_bytes(4, "little") + b"\0" * 8}
    (f,) = run(array_store(meta, bad))
    assert f.details["key"] == "1"


def test_chunks_decode_to_chunk_size_is_not_checked_without_deep():
    # The clause concerns the array all the same: not checked in this run, never not applicable.
    meta = zarray()
    with pytest.raises(NotChecked, match="needs --deep"):
        run(array_store(meta, full_chunks(meta)), deep=False)


class Boom:
    """Unpickling this creates the file named by `marker`: proof that pickle ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.parametrize(
    ("dtype", "filters", "why"),
    [
        pytest.param("<i4", [{"id": "pickle", "protocol": 5}], "object codec pickle where the array's bytes", id="pickle-filter"),
        # Read as data, never unpickled: a pickle calling a global leaves the array not checked, nothing run.
        pytest.param("|O", [{"id": "pickle", "protocol": 5}], r"its pickle calls io\.open \(REDUCE\)", id="object-array-pickle"),
        pytest.param("<i4", [{"id": "zfpy", "mode": 4}], "'zfpy' is not on the allow-list", id="third-party-codec"),
        pytest.param(
            "<i4",
            [{"id": "astype", "encode_dtype": "|O", "decode_dtype": "<i4"}],
            "not a numeric dtype",
            id="filter-with-object-dtype",
        ),
    ],
)
def test_chunks_decode_to_chunk_size_is_not_applicable_and_runs_nothing_for_unsafe_codecs(tmp_path, dtype, filters, why):
    marker = tmp_path / "unpickled"
    payload = pickle.dumps(np.array([Boom(str(marker))], dtype=object), protocol=5)
    with pytest.raises(NotApplicable, match=why):
        run(array_store(zarray(dtype=dtype, filters=filters), {"0": payload, "1": payload}))
    assert not marker.exists()


def test_validate_deep_threads_through_to_the_chunk_rule(tmp_path):
    """validate(deep=...) reaches the primitive through the Scope: not checked without it, failed with it."""
    store = tmp_path / "s.zarr"
    (store / "a").mkdir(parents=True)
    (store / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
    (store / "a" / ".zarray").write_text(json.dumps(zarray()))
    (store / "a" / "0").write_bytes(b"\0" * 8)
    (store / "a" / "1").write_bytes(b"\0" * 3)
    shallow = {r.rule.id: r for r in spec_validate.validate(store, select=["zarr.chunks"]).results}
    assert shallow["zarr.chunks.decoded-size"].status is Status.NOT_CHECKED
    assert shallow["zarr.chunks.decoded-size"].reason == "needs --deep"
    assert shallow["zarr.chunks.decoded-size"].unchecked == (("/a", "needs --deep"),)
    deep = {r.rule.id: r for r in spec_validate.validate(store, select=["zarr.chunks"], deep=True).results}
    assert deep["zarr.chunks.decoded-size"].status is Status.FAILED
    assert [f.path for f in deep["zarr.chunks.decoded-size"].findings] == ["/a"]


def test_chunks_decode_to_chunk_size_bounds_a_compressor_used_as_a_filter():
    meta = zarray(filters=[{"id": "zlib", "level": 1}])
    chunks = full_chunks(meta)
    assert run(array_store(meta, chunks)) == []
    chunks["1"] = zlib.compress(b"\0" * 10_000_000)
    (f,) = run(array_store(meta, chunks))
    assert f.details["key"] == "1" and "more than" in f.message
