"""The latest format's chunk index named by a layout message, and an extensible array that claims more elements than
its dataset's grid: the library iterates every element it claims (hours for 4e12), so past the grid (and 2**24) each
chunk of the grid is looked up by its coordinates instead, giving the same chunks; a grid too large to look up is
reported unreadable. Claims within bounds are listed by the library as before."""

from __future__ import annotations

import struct
from pathlib import Path

import h5py
import numpy as np
import pytest
from test_hdf5_fractal_heap import Bytes, hostile

from spec_validate.errors import NodeError
from spec_validate.nodes.hdf5 import direct
from spec_validate.nodes.hdf5.structure import btree, chunk_index
from spec_validate.nodes.hdf5.structure.chunk_index import BTREE2, EXTENSIBLE_ARRAY, Index
from spec_validate.nodes.open import open_store


def with_claim(path: Path, claimed: int) -> bytes:
    """The file's bytes with its extensible array claiming `claimed` elements (its checksum recomputed)."""
    data = bytearray(path.read_bytes())
    header = data.index(b"EAHD")
    struct.pack_into("<Q", data, header + 12 + 4 * 8, claimed)
    hostile._checksum(data, header, header + 12 + 6 * 8 + 8)
    return bytes(data)


@pytest.fixture(scope="module")
def extensible(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset of 50 one-element chunks and one unlimited dimension, the latest format: an extensible array index."""
    path = tmp_path_factory.mktemp("earray") / "extensible.h5"
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("x", data=np.arange(50, dtype="i4"), chunks=(1,), maxshape=(None,))
    return path


def plan_of(path: Path) -> direct.DirectPlan:
    with open_store(str(path), True) as tree:
        return tree.get("/x").plan


def test_layouts_name_the_index_the_library_would_walk():
    reader = Bytes(bytes(4096)).reader()
    head = b"\x02\x00\x02\x08" + bytes(16)  # chunked, no flags, rank 1 and the element size, 8-byte dimensions
    assert chunk_index.latest_index(reader, b"") is None
    assert chunk_index.latest_index(reader, b"\x03" + head) is None  # version 3: a version 1 B-tree
    assert chunk_index.latest_index(reader, b"\x04\x01" + bytes(20)) is None  # contiguous
    assert chunk_index.latest_index(reader, b"\x04" + head + b"\x03\x0a" + bytes(8)) is None  # a fixed array
    for version in (b"\x04", b"\x05"):
        ea = version + head + b"\x04" + bytes(5) + (1234).to_bytes(8, "little")
        assert chunk_index.latest_index(reader, ea) == Index(EXTENSIBLE_ARRAY, 1234)
        bt = version + head + b"\x05" + bytes(6) + (2345).to_bytes(8, "little")
        assert chunk_index.latest_index(reader, bt) == Index(BTREE2, 2345)
    assert chunk_index.latest_index(reader, b"\x04" + head + b"\x05" + bytes(6) + b"\xff" * 8) == Index(BTREE2, None)


def test_an_extensible_array_as_written_claims_its_chunks(extensible):
    data = extensible.read_bytes()
    assert chunk_index.extensible_array_elements(Bytes(data).reader(), data.index(b"EAHD")) == 50


def test_a_claim_past_the_grid_is_looked_up_by_coordinate(extensible, tmp_path):
    path = tmp_path / "claims.h5"
    path.write_bytes(with_claim(extensible, 4 * 10**12))  # the library's own listing: about 30 ns an element
    got, want = plan_of(path).table, plan_of(extensible).table
    assert len(got.linear) == 50
    for field in ("linear", "offsets", "sizes", "masks"):
        assert np.array_equal(getattr(got, field), getattr(want, field))
    with open_store(str(path), True) as tree:
        assert np.array_equal(np.concatenate([b.values for b in tree.get("/x").blocks()]), np.arange(50))


def test_a_grid_too_large_to_look_up_is_unreadable(extensible, tmp_path, monkeypatch):
    path = tmp_path / "claims.h5"
    path.write_bytes(with_claim(extensible, 4 * 10**12))
    monkeypatch.setattr(direct, "MOST_LOOKUPS", 49)
    with pytest.raises(NodeError, match="claims 4000000000000 chunks, more than its grid of 50 holds"):
        _ = plan_of(path)


def test_a_claim_within_bounds_is_the_librarys_to_list(extensible, tmp_path, monkeypatch):
    path = tmp_path / "claims.h5"
    path.write_bytes(with_claim(extensible, 1000))  # past the grid, within what the library iterates in a moment
    looked_up = []
    monkeypatch.setattr(direct, "_look_up", lambda *args: looked_up.append(args))
    assert len(plan_of(path).table.linear) == 50 and not looked_up


def test_bytes_it_does_not_take_are_left_to_the_library(extensible):
    data = bytearray(extensible.read_bytes())
    header = data.index(b"EAHD")
    data[header + 4] = 7  # a version this reader does not know
    with pytest.raises(btree.Unexpected):
        chunk_index.extensible_array_elements(Bytes(bytes(data)).reader(), header)
