"""A version 2 B-tree checked to be a tree before the HDF5 library iterates it: every kind h5py writes (links and
attributes in dense storage, by name and by creation order; chunk indexes, filtered or not; 4-byte addresses) is
walked as the library reads it, counted record by record against its header; a tree whose nodes are shared (the
library's iteration then takes exponentially many paths) or whose header claims more levels than a file can hold is
Damaged and never handed over; bytes this reader does not take are left to the library, which refuses them."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from test_hdf5_fractal_heap import Bytes, hostile  # the file's bytes as a reader reads them; the hostile generator

from spec_validate.errors import NodeError
from spec_validate.nodes.hdf5 import direct
from spec_validate.nodes.hdf5.structure import btree, btree2
from spec_validate.nodes.open import open_store

LINKS_BY_NAME, LINKS_BY_ORDER, CHUNKS, FILTERED_CHUNKS, ATTRIBUTES_BY_NAME, ATTRIBUTES_BY_ORDER = 5, 6, 10, 11, 8, 9


def header_of(data: bytes, tree_type: int) -> int:
    """The address of the file's (first) version 2 B-tree header of `tree_type`."""
    at = data.index(b"BTHD")
    while data[at + 5] != tree_type:
        at = data.index(b"BTHD", at + 4)
    return at


def total_records(data: bytes, header: int, sizeof: int = 8) -> int:
    """The records the header says the tree holds (after its root's address and record count)."""
    at = header + 16 + sizeof + 2
    return int.from_bytes(data[at : at + sizeof], "little")


def depth_of(data: bytes, header: int) -> int:
    return struct.unpack_from("<H", data, header + 12)[0]


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Files holding each kind of version 2 B-tree h5py writes, every one deeper than a single leaf."""
    folder = tmp_path_factory.mktemp("btree2")
    links = folder / "links.h5"
    with h5py.File(links, "w", libver="latest") as f:
        g = f.create_group("dense", track_order=True)
        for i in range(3000):
            g[f"member_{i:05d}"] = h5py.SoftLink("/nowhere")
    attributes = folder / "attributes.h5"
    with h5py.File(attributes, "w", libver="latest") as f:
        g = f.create_group("dense", track_order=True)
        for i in range(1500):
            g.attrs[f"note_{i:05d}"] = i
    chunks = folder / "chunks.h5"
    with h5py.File(chunks, "w", libver="latest") as f:
        f.create_dataset("x", shape=(100, 100), maxshape=(None, None), chunks=(1, 1), dtype="i4")[...] = 1
    filtered = folder / "filtered.h5"
    with h5py.File(filtered, "w", libver="latest") as f:
        ds = f.create_dataset("x", shape=(60, 60), maxshape=(None, None), chunks=(1, 1), dtype="i4", compression="gzip")
        ds[...] = np.arange(3600).reshape(60, 60)
    small = folder / "small-addresses.h5"
    creation = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    creation.set_sizes(4, 4)
    access = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    access.set_libver_bounds(h5py.h5f.LIBVER_LATEST, h5py.h5f.LIBVER_LATEST)
    with h5py.File(h5py.h5f.create(str(small).encode(), h5py.h5f.ACC_TRUNC, fcpl=creation, fapl=access)) as f:
        g = f.create_group("dense")
        for i in range(2000):
            g[f"member_{i:05d}"] = h5py.SoftLink("/nowhere")
    return {"links": links, "attributes": attributes, "chunks": chunks, "filtered": filtered, "small": small}


@pytest.mark.parametrize(
    ("name", "tree_type", "sizeof"),
    [
        ("links", LINKS_BY_NAME, 8),
        ("links", LINKS_BY_ORDER, 8),
        ("attributes", ATTRIBUTES_BY_NAME, 8),
        ("attributes", ATTRIBUTES_BY_ORDER, 8),
        ("chunks", CHUNKS, 8),
        ("filtered", FILTERED_CHUNKS, 8),
        ("small", LINKS_BY_NAME, 4),
    ],
)
def test_every_kind_h5py_writes_is_walked_as_the_library_reads_it(trees, name, tree_type, sizeof):
    data = trees[name].read_bytes()
    header = header_of(data, tree_type)
    assert depth_of(data, header) >= 1, "deeper than one leaf: its internal nodes are read"
    source = Bytes(data, sizeof)
    # Every internal node parsed with the layout of its depth: its records and its children's add up to the header's.
    assert btree2.check(source.reader(), header) == total_records(data, header, sizeof) > 0
    assert len(source.batches) == 1 + depth_of(data, header)  # the header, then each level of internal nodes at once


def test_a_tree_that_is_one_leaf_costs_one_read(tmp_path):
    path = tmp_path / "few.h5"
    with h5py.File(path, "w", libver="latest") as f:
        f.create_group("dense").attrs.update({f"note_{i}": i for i in range(20)})  # past 8: in dense storage
    data = path.read_bytes()
    source = Bytes(data)
    assert btree2.check(source.reader(), header_of(data, ATTRIBUTES_BY_NAME)) == 20
    assert source.batches == [1]


def shared(data: bytes, tree_type: int, depth: int, fanout: int) -> bytes:
    out = bytearray(data)
    hostile.btree2_shared(out, tree_type, depth, fanout)
    return bytes(out)


@pytest.mark.parametrize(
    ("name", "tree_type"), [("links", LINKS_BY_NAME), ("attributes", ATTRIBUTES_BY_ORDER), ("chunks", CHUNKS)]
)
def test_shared_nodes_are_damaged(trees, name, tree_type):
    data = shared(trees[name].read_bytes(), tree_type, depth=3, fanout=4)
    with pytest.raises(btree.Damaged, match="named twice"):
        btree2.check(Bytes(data).reader(), header_of(data, tree_type))


def test_shared_nodes_multiply_what_the_library_lists(trees, tmp_path):
    """Why a shared node is never handed over: the library lists 3,000 links as one leaf's, 13**3 times over, and
    each level more multiplies them again (six levels of 13 took it past 11 GB in 30 seconds)."""
    path = tmp_path / "shared.h5"
    path.write_bytes(shared(trees["links"].read_bytes(), LINKS_BY_NAME, depth=3, fanout=13))
    script = "import h5py, sys; print(len(list(h5py.File(sys.argv[1], 'r')['dense'])))"
    run = subprocess.run([sys.executable, "-c", script, str(path)], timeout=60, capture_output=True, text=True, check=True)
    assert int(run.stdout) > 10 * 3000
    with pytest.raises(btree.Damaged):
        btree2.check(Bytes(path.read_bytes()).reader(), header_of(path.read_bytes(), LINKS_BY_NAME))


def test_a_header_deeper_than_any_file_can_hold_is_damaged(trees):
    data = bytearray(trees["links"].read_bytes())
    header = header_of(bytes(data), LINKS_BY_NAME)
    struct.pack_into("<H", data, header + 12, 65)
    with pytest.raises(btree.Damaged, match=f"the B-tree at byte {header} claims 65 levels"):
        btree2.check(Bytes(bytes(data)).reader(), header)


@pytest.mark.parametrize("where", ["root", "child"])
def test_a_node_said_to_hold_more_records_than_fit_is_damaged(trees, where):
    """The library decodes as many records as a node's parent says it holds into a buffer sized for the most that fit,
    without checking: a count past that is never handed over."""
    data = bytearray(trees["chunks"].read_bytes())
    header = header_of(bytes(data), CHUNKS)
    root = struct.unpack_from("<Q", data, header + 16)[0]
    if where == "root":
        struct.pack_into("<H", data, header + 24, 60_000)
        named = root
    else:  # the root's first child pointer (after its records): an address, then a one-byte record count
        records = struct.unpack_from("<H", data, header + 24)[0]
        first = root + 6 + records * struct.unpack_from("<H", data, header + 10)[0]
        data[first + 8] = 200  # a node of depth 1 holds at most 61 records here
        named = struct.unpack_from("<Q", data, first)[0]
    with pytest.raises(btree.Damaged, match=f"the node at byte {named} is said to hold"):
        btree2.check(Bytes(bytes(data)).reader(), header)


@pytest.mark.parametrize("change", ["signature", "type", "depth", "root"])
def test_bytes_it_does_not_take_are_left_to_the_library(trees, change):
    data = bytearray(trees["links"].read_bytes())
    header = header_of(bytes(data), LINKS_BY_NAME)
    root = struct.unpack_from("<Q", data, header + 16)[0]
    if change == "signature":
        data[root : root + 4] = b"BTIX"
    elif change == "type":
        data[root + 5] = CHUNKS
    elif change == "depth":
        struct.pack_into("<H", data, header + 12, 64)  # internal nodes read with another depth's layout
    else:
        struct.pack_into("<Q", data, header + 16, len(data) + 10)  # past the end of the file
    with pytest.raises(btree.Unexpected):
        btree2.check(Bytes(bytes(data)).reader(), header)


def test_a_chunk_index_that_is_no_tree_makes_the_dataset_unreadable(trees, tmp_path):
    path = tmp_path / "shared-chunks.h5"
    path.write_bytes(shared(trees["chunks"].read_bytes(), CHUNKS, depth=4, fanout=8))
    with open_store(str(path), True) as tree, pytest.raises(NodeError, match=r"its chunk index is damaged .*named twice"):
        _ = tree.get("/x").plan
    with open_store(str(trees["chunks"]), True) as tree:  # the tree as written: the library lists its chunks
        assert len(tree.get("/x").plan.table.linear) == 10_000


def test_the_direct_plan_checks_the_index_through_its_source(trees, tmp_path):
    data = shared(trees["filtered"].read_bytes(), FILTERED_CHUNKS, depth=2, fanout=3)
    path = tmp_path / "shared-filtered.h5"
    path.write_bytes(data)
    with h5py.File(path, "r") as f:
        oid = f["x"].id
        header = h5py.h5g.get_objinfo(oid).objno[0]
        source = direct.LocalRanges(f.id.get_vfd_handle(), len(data))
        with pytest.raises(NodeError, match="named twice"):
            direct.plan(oid, len(data), "/x", index_source=source, header=header)
