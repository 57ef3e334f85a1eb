"""HDF5 reads (offsets and chunk index here, filters through nodes.codecs) give exactly what h5py reads.

No filtered chunk reaches HDF5's own decoder before it was decoded here, bounded to the chunk's size.
"""

from __future__ import annotations

import io
import os
import re

import h5py
import numpy as np
import pytest
from bombs import nested, peak_rss_child, zlib_zeros

from spec_validate.errors import NodeError, NotDecoded
from spec_validate.nodes.hdf5 import direct as direct
from spec_validate.nodes.hdf5.tree import HDF5Tree
from spec_validate.nodes.open import open_store

VALUES = np.arange(10_007, dtype="<i8") * 3 - 5000
MAX_PEAK_MB = 200

LAYOUTS = {
    "contiguous": {},
    "chunked": {"chunks": (1000,)},
    "chunked-edge-chunk-partial": {"chunks": (999,)},
    "gzip": {"chunks": (1000,), "compression": "gzip"},
    "shuffle-gzip": {"chunks": (1000,), "compression": "gzip", "shuffle": True},
    "shuffle-only": {"chunks": (1000,), "shuffle": True},
    "fletcher32": {"chunks": (1000,), "fletcher32": True},
    "shuffle-gzip-fletcher32": {"chunks": (1000,), "compression": "gzip", "shuffle": True, "fletcher32": True},
    "lzf": {"chunks": (1000,), "compression": "lzf"},
    "shuffle-lzf-fletcher32": {"chunks": (1000,), "compression": "lzf", "shuffle": True, "fletcher32": True},
}


def write(path, name, data, **kwargs):
    with h5py.File(path, "a") as f:
        f.create_dataset(name, data=data, **kwargs)


def through_h5py(path, name="a"):
    with h5py.File(path, "r") as f:
        return f[name][()]


def same(got, expected):
    expected = np.asarray(expected).reshape(-1)
    if got.dtype.kind == "O" or expected.dtype.kind == "O" or got.dtype.hasobject:
        return [_plain(v) for v in got.tolist()] == [_plain(v) for v in expected.tolist()]
    if got.dtype.kind != expected.dtype.kind or got.dtype.itemsize != expected.dtype.itemsize:
        return False
    if got.dtype.kind in "fc":
        return np.array_equal(got, expected, equal_nan=True)
    return got.astype(expected.dtype).tobytes() == np.ascontiguousarray(expected).tobytes()


def _plain(v):
    return v.tolist() if isinstance(v, np.ndarray) else tuple(_plain(x) for x in v) if isinstance(v, tuple) else v


def assert_reads_like_h5py(path, name="a", block_sizes=(1, 1000, 2048, 10**6), direct=None):
    expected = through_h5py(path, name)
    with open_store(str(path)) as tree:
        node = tree.get(f"/{name}")
        if direct is not None:
            assert node.plan.direct is direct
        for size in block_sizes:
            ranges = node.block_rows(size)
            blocks = [node.read_block(r) for r in ranges]
            row = int(np.prod(expected.shape[1:], dtype=np.int64)) if expected.ndim > 1 else 1
            assert [b.start for b in blocks] == ([r[0] * row for r in ranges] if expected.ndim else [0])
            assert all(c.problem is None for b in blocks for c in b.chunks)
            assert all(b.values.dtype == node.dtype for b in blocks)
            got = np.concatenate([b.values for b in blocks]) if blocks else np.empty(0, node.dtype)
            assert same(got, expected), (size, got[:10], expected.reshape(-1)[:10])
    return expected


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["<i8", ">i4", "<f4", "|u1", "|b1"])
def test_direct_passes_same_values_as_h5py(tmp_path, layout, dtype):
    path = tmp_path / "d.h5"
    data = (VALUES % 2 == 0) if dtype == "|b1" else VALUES.astype(dtype)
    write(path, "a", data, **LAYOUTS[layout])
    assert_reads_like_h5py(path, direct=True)


ND = np.arange(23 * 7 * 5, dtype="<f8").reshape(23, 7, 5)


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({}, id="contiguous"),
        pytest.param({"chunks": (4, 3, 2)}, id="edges-everywhere"),
        pytest.param({"chunks": (4, 3, 2), "compression": "gzip", "shuffle": True, "fletcher32": True}, id="all-filters"),
        pytest.param({"chunks": (4, 3, 2), "compression": "lzf", "shuffle": True}, id="lzf-shuffle"),
        pytest.param({"chunks": (5, 7, 5), "compression": "gzip"}, id="whole-rows"),
        pytest.param({"chunks": (23, 1, 5), "compression": 9}, id="one-column"),
    ],
)
def test_direct_passes_n_dimensional(tmp_path, kwargs):
    path = tmp_path / "d.h5"
    write(path, "a", ND, **kwargs)
    assert_reads_like_h5py(path, block_sizes=(1, 35, 100, 10**6), direct=True)


FAMILIES = {
    "fixed-bytes": (np.array([b"ab", b"c", b""] * 20, dtype="S2"), None),
    "fixed-utf8": (np.array(["é".encode(), b"ab"] * 20, dtype=h5py.string_dtype("utf-8", 2)), None),
    "compound": (
        np.array([(i, f"s{i}".encode(), i / 2) for i in range(60)], dtype=[("a", "<i4"), ("b", "S3"), ("c", ">f8")]),
        None,
    ),
    "complex": ((np.arange(60) * (1 - 1j)).astype("<c16"), None),
    "float16": (np.linspace(0, 1, 60).astype("<f2"), None),
    "enum": (np.arange(60, dtype="i2") % 3, h5py.enum_dtype({"a": 0, "b": 1, "c": 2}, basetype="i2")),
    "vlen-str": (np.array(["a", "bé", "", "ccc"] * 15, dtype=object), h5py.string_dtype()),
    "vlen-bytes": (np.array([b"a", b"bc", b""] * 20, dtype=object), h5py.string_dtype("ascii")),
    "vlen-int": (np.array([np.arange(i % 4, dtype="i4") for i in range(60)] + [None], dtype=object)[:-1], h5py.vlen_dtype("i4")),
    "compound-with-vlen": (np.array([(i, str(i)) for i in range(60)], dtype=[("a", "<i4"), ("s", h5py.string_dtype())]), None),
}


@pytest.mark.parametrize("layout", ["contiguous", "chunked-gzip", "chunked-lzf"])
@pytest.mark.parametrize("family", FAMILIES)
def test_direct_passes_every_dtype_family(tmp_path, family, layout):
    data, dtype = FAMILIES[family]
    path = tmp_path / "d.h5"
    kwargs = {} if layout == "contiguous" else {"chunks": (7,), "compression": layout.removeprefix("chunked-")}
    write(path, "a", data, **({"dtype": dtype} if dtype is not None else {}), **kwargs)
    direct = None if family in ("enum",) else not np.dtype(through_h5py(path).dtype).hasobject
    assert_reads_like_h5py(path, block_sizes=(1, 7, 20, 10**6), direct=direct)


@pytest.mark.parametrize(
    "dtype,fill",
    [("<i4", 7), ("<f8", np.nan), ("S3", b"ab"), ([("a", "<i2"), ("b", "S2")], (3, b"q"))],
    ids=["int", "nan", "fixed-bytes", "compound"],
)
def test_direct_passes_unallocated_chunks_read_as_fill_value(tmp_path, dtype, fill):
    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        ds = f.create_dataset(
            "a", shape=(50, 4), dtype=dtype, chunks=(10, 2), fillvalue=np.array(fill, dtype=dtype)[()], compression="gzip"
        )
        ds[10:20, 2:] = np.zeros((10, 2), dtype=dtype)
    expected = assert_reads_like_h5py(path, block_sizes=(10, 200))
    with open_store(str(path)) as tree:
        block = tree.get("/a").read_block((0, 50))
    assert [c.key for c in block.chunks] == ["1.1"]  # the one stored chunk; the others are the fill value
    assert expected.shape == (50, 4)


def test_direct_passes_unallocated_contiguous_dataset(tmp_path):
    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", shape=(30,), dtype="<i2", fillvalue=-3)  # never written: no storage allocated
    with open_store(str(path)) as tree:
        assert tree.get("/a").plan.contiguous_offset is None
    assert_reads_like_h5py(path, block_sizes=(7, 100))


def test_direct_passes_vlen_unallocated_chunks_through_h5py(tmp_path):
    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("a", shape=(30,), dtype=h5py.string_dtype(), chunks=(10,), compression="gzip")
        ds[10:20] = ["x"] * 10
    assert_reads_like_h5py(path, block_sizes=(10, 100), direct=False)


def test_direct_passes_chunk_stored_with_a_filter_skipped(tmp_path):
    path = tmp_path / "d.h5"
    write(path, "a", VALUES, chunks=(1000,), compression="gzip", shuffle=True)
    with h5py.File(path, "a") as f:
        # Filter mask bit 1 set: deflate (the pipeline's second filter) was skipped for this chunk; only shuffled.
        raw = np.ascontiguousarray(VALUES[3000:4000]).view(np.uint8).reshape(1000, 8).T.tobytes()
        f["a"].id.write_direct_chunk((3000,), raw, filter_mask=0b10)
        assert f["a"].id.get_chunk_info(3).filter_mask == 0b10
    assert_reads_like_h5py(path)


def test_direct_passes_remote_file_object_reads_chunks_through_h5py(tmp_path):
    path = tmp_path / "d.h5"
    write(path, "a", ND, chunks=(4, 3, 2), compression="gzip", shuffle=True)
    tree = HDF5Tree(io.BytesIO(path.read_bytes()), source="mem://d.h5")
    try:
        node = tree.get("/a")
        assert tree.raw_fd() is None
        got = np.concatenate([b.values for b in node.blocks(100)])
        np.testing.assert_array_equal(got, ND.reshape(-1))
    finally:
        tree.close()


# --- datasets that are not read ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,reason",
    [
        pytest.param({"chunks": (1000,), "scaleoffset": 0}, "HDF5 filter scaleoffset (id 6)", id="scaleoffset"),
    ],
)
def test_direct_fails_filter_off_the_allow_list_is_not_decoded(tmp_path, kwargs, reason):
    path = tmp_path / "d.h5"
    write(path, "a", np.arange(10_000, dtype="<i4"), **kwargs)
    with open_store(str(path)) as tree:
        node = tree.get("/a")
        with pytest.raises(NotDecoded, match=re.escape(f"/a: not decoded: {reason}")):
            node.read_block((0, 1000))
        with pytest.raises(NotDecoded, match=re.escape(reason)):
            list(node.blocks(1000))


@pytest.mark.parametrize("chunked", [False, True], ids=["contiguous", "chunked"])
def test_direct_fails_references_are_not_decoded(tmp_path, chunked):
    """h5py reads references as objects of its own: no value a kernel compares, nothing a report (or a process
    boundary: --timeout, Dask) can carry (a fuzzed file's duplicate reference once cost its report under --timeout)."""
    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=[f.ref, f.ref], dtype=h5py.ref_dtype, chunks=(1,) if chunked else None)
    with open_store(str(path)) as tree, pytest.raises(NotDecoded, match="/a: not decoded: its elements are HDF5 references"):
        tree.get("/a").read_block((0, 2))


def test_direct_fails_external_storage_never_read(tmp_path):
    outside = tmp_path / "outside.bin"
    outside.write_bytes(np.arange(100, dtype="<i4").tobytes())
    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", shape=(100,), dtype="<i4", external=[(str(outside), 0, 400)])
    with (
        open_store(str(path)) as tree,
        pytest.raises(
            NodeError, match=r"/a: its data is stored outside the file \(external storage / virtual dataset\); not read"
        ),
    ):
        tree.get("/a").read_block((0, 100))


def test_direct_fails_virtual_dataset_never_read(tmp_path):
    source = tmp_path / "source.h5"
    write(source, "x", np.arange(10, dtype="<i4"))
    layout = h5py.VirtualLayout(shape=(10,), dtype="<i4")
    layout[:] = h5py.VirtualSource(str(source), "x", shape=(10,))
    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        f.create_virtual_dataset("v", layout)
    with open_store(str(path)) as tree, pytest.raises(NodeError, match="stored outside the file"):
        list(tree.get("/v").blocks())


# --- corrupt and truncated data ------------------------------------------------------------------------------


def test_direct_fails_truncated_file_is_a_node_error(tmp_path):
    path = tmp_path / "d.h5"
    write(path, "a", np.arange(100_000, dtype="<i8"))
    with open_store(str(path)) as tree:
        node = tree.get("/a")
        plan = node.plan
        size = os.fstat(tree.raw_fd()).st_size
    # Pretend the file ends inside the data: the read must say so, never return short or garbage blocks.
    cut = tmp_path / "cut.h5"
    cut.write_bytes(path.read_bytes()[: size - 4000])
    fd = os.open(cut, os.O_RDONLY)
    try:
        with pytest.raises(NodeError, match="truncated"):
            direct.read_block(None, fd, plan, (99_000, 100_000))
    finally:
        os.close(fd)


def test_direct_fails_chunk_past_the_end_of_the_file(tmp_path):
    path = tmp_path / "d.h5"
    write(path, "a", np.arange(10_000, dtype="<i4"), chunks=(1000,), compression="gzip")
    with h5py.File(path, "r") as f:
        last = f["a"].id.get_chunk_info(9)
    with open_store(str(path)) as tree:  # opened whole; cut while open (the chunk index is read on the first read)
        os.truncate(path, last.byte_offset + 10)
        with pytest.raises(NodeError, match="past the end of the file"):
            tree.get("/a").read_block((0, 1000))


def test_direct_fails_corrupt_deflate_chunk_is_a_chunk_problem(tmp_path):
    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("a", data=np.arange(10_000, dtype="<i4"), chunks=(1000,), compression="gzip", fillvalue=-1)
        info = f["a"].id.get_chunk_info(3)
    with open(path, "r+b") as fh:
        fh.seek(info.byte_offset + 2)
        fh.write(b"\xff" * 8)
    with open_store(str(path)) as tree:
        node = tree.get("/a")
        block = node.read_block((0, 10_000))
        assert [c.key for c in block.chunks if c.problem] == ["3"]
        assert block.problem().startswith("/a: chunk 3 does not decode with zlib")
        assert (block.values[3000:4000] == -1).all()
        np.testing.assert_array_equal(block.values[:3000], np.arange(3000))
        with pytest.raises(NodeError, match="chunk 3"):
            list(node.blocks(1000))


def test_direct_fails_fletcher32_mismatch_is_a_chunk_problem(tmp_path):
    path = tmp_path / "d.h5"
    write(path, "a", ND, chunks=(4, 7, 5), fletcher32=True)
    with h5py.File(path, "r") as f:
        info = f["a"].id.get_chunk_info(2)
    with open(path, "r+b") as fh:
        fh.seek(info.byte_offset + 17)
        fh.write(b"\x01")
    with open_store(str(path)) as tree:
        block = tree.get("/a").read_block((0, 23))
    assert [c.key for c in block.chunks if c.problem] == ["2.0.0"]
    assert "fails its fletcher32 check" in block.problem()


def test_direct_fails_corrupt_vlen_chunk_never_reaches_h5py(tmp_path):
    path = tmp_path / "d.h5"
    write(path, "a", np.array(["x"] * 40, dtype=object), dtype=h5py.string_dtype(), chunks=(10,), compression="gzip")
    with h5py.File(path, "a") as f:
        f["a"].id.write_direct_chunk((10,), nested(b"\0" * 1000, 1))  # 1000 bytes, not 10 x 16
    with open_store(str(path)) as tree:
        block = tree.get("/a").read_block((0, 40))
    assert [c.key for c in block.chunks if c.problem] == ["1"]
    assert block.problem() == "/a: chunk 1 decodes to more than 160 bytes, expected 160"
    assert block.values[10:20].tolist() == [None] * 10
    assert [v.decode() for v in block.values[:10]] == ["x"] * 10


def test_direct_passes_file_never_modified(tmp_path):
    path = tmp_path / "d.h5"
    write(path, "a", VALUES, chunks=(1000,), compression="gzip", shuffle=True)
    before = (path.read_bytes(), os.stat(path).st_mtime_ns)
    with open_store(str(path)) as tree:
        list(tree.get("/a").blocks(1000))
    assert (path.read_bytes(), os.stat(path).st_mtime_ns) == before


# --- decompression bombs: two deflate filters over a chunk of a few hundred bytes --------------------------


def double_deflate(path, name, shape, chunks, dtype, key):
    """A dataset with two deflate filters whose chunk at `key` (a chunk offset) inflates, twice, past 4 GB."""
    with h5py.File(path, "a") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk(chunks)
        dcpl.set_filter(h5py.h5z.FILTER_DEFLATE, h5py.h5z.FLAG_OPTIONAL, (4,))
        dcpl.set_filter(h5py.h5z.FILTER_DEFLATE, h5py.h5z.FLAG_OPTIONAL, (4,))
        h5py.h5d.create(f.id, name.encode(), dtype, h5py.h5s.create_simple(shape), dcpl=dcpl)
        f[name].id.write_direct_chunk(key, nested(zlib_zeros(), 2))
    return str(path)


@pytest.mark.parametrize(
    "name,shape,chunks,dtype,key,problem",
    [
        pytest.param("one", (2000,), (1000,), h5py.h5t.STD_I64LE, (1000,), "/one: chunk 1 decodes to more than", id="1-d"),
        pytest.param("nd", (40, 50), (20, 50), h5py.h5t.IEEE_F64LE, (20, 0), "/nd: chunk 1.0 decodes to more than", id="n-d"),
        pytest.param(
            "vlen",
            (2000,),
            (1000,),
            h5py.h5t.py_create(h5py.string_dtype(), logical=True),
            (0,),
            "/vlen: chunk 0 decodes to more than",
            id="vlen-string",
        ),
    ],
)
def test_direct_fails_decompression_bomb_is_one_chunk_problem_in_bounded_memory(
    tmp_path, name, shape, chunks, dtype, key, problem
):
    path = double_deflate(tmp_path / "b.h5", name, shape, chunks, dtype, key)
    assert len(nested(zlib_zeros(), 2)) < 1000
    result = peak_rss_child(path, f"/{name}")
    assert "error" not in result and result["problem"].startswith(problem), result
    assert result["peak_mb"] < MAX_PEAK_MB, result
    result = peak_rss_child(path, f"/{name}", how="blocks")
    assert result["error"].startswith(problem) and result["peak_mb"] < MAX_PEAK_MB, result


@pytest.mark.parametrize("layout", ["contiguous", "chunked", "chunked-gzip"])
def test_direct_fails_vlen_length_past_the_bound_is_never_handed_to_hdf5(tmp_path, layout):
    """A variable-length element stores its length and a heap ID; HDF5 allocates what the length says before it
    reads the heap (the fuzzer: 1.7 GB for a corrupt length). The lengths are checked first."""
    path = tmp_path / "vlen.h5"
    kwargs = {} if layout == "contiguous" else {"chunks": (2,), **({"compression": "gzip"} if "gzip" in layout else {})}
    with h5py.File(path, "w") as f:
        f.create_dataset("s", data=np.array(["ab", "cd", "ef", "gh"], dtype=object), dtype=h5py.string_dtype(), **kwargs)
    with h5py.File(path, "r") as f:
        ds = f["s"]
        offset = ds.id.get_offset() if layout == "contiguous" else ds.id.get_chunk_info(0).byte_offset
    data = bytearray(path.read_bytes())
    if layout == "chunked-gzip":  # the length lies inside the compressed chunk: rewrite the chunk, same size
        import zlib

        with h5py.File(path, "r") as f:
            info = f["s"].id.get_chunk_info(0)
        raw = bytearray(zlib.decompress(bytes(data[info.byte_offset : info.byte_offset + info.size])))
        raw[0:4] = (2**31 - 1).to_bytes(4, "little")
        packed = zlib.compress(bytes(raw), 9)
        assert len(packed) <= info.size
        data[info.byte_offset : info.byte_offset + len(packed)] = packed
    else:
        data[offset : offset + 4] = (2**31 - 1).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with open_store(str(path)) as tree:
        node = tree.get("/s")
        if layout == "contiguous":
            with pytest.raises(NodeError, match=r"an element declares 2147483647 bytes, more than the 67108864 read for one"):
                node.read_block((0, 4))
        else:
            block = node.read_block((0, 4))
            assert "an element declares 2147483647 bytes" in block.problem()
            assert block.values[2:].tolist() == [b"ef", b"gh"] or block.values[2:].tolist() == ["ef", "gh"]


def test_direct_fails_block_spanning_more_chunks_than_one_block_reads(tmp_path, monkeypatch):
    from spec_validate.nodes import base

    monkeypatch.setattr(base, "MAX_CHUNKS_PER_BLOCK", 100)
    path = tmp_path / "tiny-chunks.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(400).reshape(2, 200), chunks=(1, 1))
    with open_store(str(path)) as tree, pytest.raises(NotDecoded, match=r"spans 200 chunks, more than the 100"):
        tree.get("/x").read_block((0, 1))
