"""Direct HDF5 reads (offsets + zlib/shuffle done here) give exactly what h5py reads, or step aside."""

from __future__ import annotations

import os

import h5py
import numpy as np
import pytest

from validator.nodes import hdf5_direct
from validator.nodes.base import NodeError
from validator.nodes.detect import open_store

VALUES = np.arange(10_007, dtype="<i8") * 3 - 5000

LAYOUTS = {
    "contiguous": {},
    "chunked": {"chunks": (1000,)},
    "chunked-edge-chunk-partial": {"chunks": (999,)},
    "gzip": {"chunks": (1000,), "compression": "gzip"},
    "shuffle-gzip": {"chunks": (1000,), "compression": "gzip", "shuffle": True},
    "shuffle-only": {"chunks": (1000,), "shuffle": True},
}


def write(path, name, data, **kwargs):
    with h5py.File(path, "a") as f:
        f.create_dataset(name, data=data, **kwargs)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ["<i8", ">i4", "<f4", "|u1", "|b1"])
def test_direct_passes_same_values_as_h5py(tmp_path, layout, dtype):
    path = tmp_path / "d.h5"
    data = (VALUES % 2 == 0) if dtype == "|b1" else VALUES.astype(dtype)
    write(path, "a", data, **LAYOUTS[layout])
    with open_store(str(path)) as tree:
        node = tree.get("/a")
        assert node._direct_plan is not None
        ranges = node.block_rows(2048)
        blocks = [node.read_block(r) for r in ranges]
        np.testing.assert_array_equal(np.concatenate([b.values for b in blocks]), data)
        assert [b.start for b in blocks] == [r[0] for r in ranges]
        assert blocks[0].values.dtype == np.dtype(dtype)


@pytest.mark.parametrize("kwargs", [
    pytest.param({"chunks": (1000,), "compression": "lzf"}, id="lzf-filter"),
    pytest.param({"chunks": (1000,), "fletcher32": True}, id="fletcher32"),
    pytest.param({"chunks": (10, 10)}, id="two-dimensional"),
])
def test_direct_passes_steps_aside_for_layouts_it_does_not_decode(tmp_path, kwargs):
    path = tmp_path / "d.h5"
    data = np.arange(1000, dtype="<i4").reshape((100, 10)) if kwargs.get("chunks") == (10, 10) else np.arange(10_000, dtype="<i4")
    write(path, "a", data, **kwargs)
    with open_store(str(path)) as tree:
        node = tree.get("/a")
        assert node._direct_plan is None
        np.testing.assert_array_equal(np.concatenate([b.values for b in node.blocks(1000)]), data.reshape(-1))


def test_direct_passes_steps_aside_when_a_chunk_is_unallocated(tmp_path):
    path = tmp_path / "d.h5"
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("a", shape=(5000,), dtype="<i4", chunks=(1000,), fillvalue=7)
        ds[:1000] = np.arange(1000)
    with open_store(str(path)) as tree:
        node = tree.get("/a")
        assert node._direct_plan is None
        got = np.concatenate([b.values for b in node.blocks(1000)])
        assert got[:1000].tolist() == list(range(1000)) and set(got[1000:].tolist()) == {7}


def test_direct_passes_strings_and_compounds_go_through_h5py(tmp_path):
    path = tmp_path / "d.h5"
    write(path, "s", np.array(["a", "b"], dtype=object), dtype=h5py.string_dtype())
    write(path, "c", np.zeros(3, dtype=[("x", "<i4"), ("y", "<f8")]))
    with open_store(str(path)) as tree:
        assert tree.get("/s")._direct_plan is None and tree.get("/c")._direct_plan is None


def test_direct_fails_truncated_file_is_a_node_error(tmp_path):
    path = tmp_path / "d.h5"
    write(path, "a", np.arange(100_000, dtype="<i8"))
    with open_store(str(path)) as tree:
        node = tree.get("/a")
        direct = node._direct_plan
        fd = tree.raw_fd()
        size = os.fstat(fd).st_size
    # Pretend the file ends inside the data: the read must say so, never return short or garbage blocks.
    with open(path, "rb") as fh:
        head = fh.read(size - 4000)
    cut = tmp_path / "cut.h5"
    cut.write_bytes(head)
    fd2 = os.open(cut, os.O_RDONLY)
    try:
        with pytest.raises(NodeError, match="truncated"):
            hdf5_direct.read_rows(fd2, direct, 99_000, 100_000, "/a")
    finally:
        os.close(fd2)


def test_direct_fails_corrupt_deflate_chunk_is_a_node_error(tmp_path):
    path = tmp_path / "d.h5"
    write(path, "a", np.arange(10_000, dtype="<i4"), chunks=(1000,), compression="gzip")
    with h5py.File(path, "r") as f:
        info = f["a"].id.get_chunk_info(3)
    with open(path, "r+b") as fh:
        fh.seek(info.byte_offset + 2)
        fh.write(b"\xff" * 8)
    with open_store(str(path)) as tree:
        node = tree.get("/a")
        with pytest.raises(NodeError, match="chunk 3"):
            list(node.blocks(1000))


def test_direct_passes_file_never_modified(tmp_path):
    path = tmp_path / "d.h5"
    write(path, "a", VALUES, chunks=(1000,), compression="gzip", shuffle=True)
    before = (path.read_bytes(), os.stat(path).st_mtime_ns)
    with open_store(str(path)) as tree:
        list(tree.get("/a").blocks(1000))
    assert (path.read_bytes(), os.stat(path).st_mtime_ns) == before
