"""A fractal heap's indirect blocks walked before the HDF5 library reads dense storage: a heap whose blocks form a
tree passes (read a level at a time), one in which an indirect block is named twice (a cycle, a shared child) is
Damaged, and the library is never handed it: its descent through such a heap never ends. Bytes this reader does not
take are left to the library, which refuses them itself."""

from __future__ import annotations

import importlib.util
import struct
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from spec_validate.nodes.hdf5.structure import btree, fractal_heap

ROOT = Path(__file__).resolve().parents[4]
_spec = importlib.util.spec_from_file_location("generate_hostile", ROOT / "conformance-corpus/hostile/generate_hostile.py")
hostile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hostile)  # type: ignore[union-attr]

UNDEFINED = 2**64 - 1


class Bytes:
    """A file's bytes as `btree.ReadRanges` gives them; records the ranges of each batch asked for."""

    def __init__(self, data: bytes, sizeof: int = 8) -> None:
        self.data, self.sizeof, self.batches = bytes(data), sizeof, []

    def read(self, ranges: list[tuple[int, int]]) -> list[memoryview]:
        self.batches.append(len(ranges))
        return [memoryview(self.data[o : o + s]) for o, s in ranges]

    def reader(self) -> btree.Reader:
        """A reader of the bytes, their addresses and lengths of `sizeof` bytes."""
        return btree.Reader(self.read, len(self.data), self.sizeof, self.sizeof, 0)


def link_messages(path: Path, group: str) -> list[tuple[int, int, bytes]]:
    with h5py.File(path, "r") as f:
        header = h5py.h5g.get_objinfo(f[group].id).objno[0]
    data = path.read_bytes()
    found = btree.header_messages(Bytes(data).reader(), header, fractal_heap.MESSAGE_KINDS)
    assert found, "the group keeps its links in dense storage"
    return found


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A group of 15,000 links in dense storage (the latest format): its heap's root is an indirect block with 11
    indirect blocks below it, each child of the rows its place gives it."""
    path = tmp_path_factory.mktemp("fractal") / "wide.h5"
    with h5py.File(path, "w", libver="latest") as f:
        f["x"] = np.arange(3)
        g = f.create_group("obs")
        for i in range(15_000):
            g[f"link_{i:06d}"] = h5py.SoftLink("/x" + "#" * 200)
    return path


class Layout:
    """Where the heap's root indirect block keeps its entries (8-byte addresses, no filters)."""

    def __init__(self, data: bytes) -> None:
        heap = data.index(b"FRHP")
        self.width = struct.unpack_from("<H", data, heap + 110)[0]
        start, largest = struct.unpack_from("<QQ", data, heap + 112)
        offset_bytes = (struct.unpack_from("<H", data, heap + 128)[0] + 7) // 8
        self.root, rows = struct.unpack_from("<QH", data, heap + 132)
        direct_rows = largest.bit_length() - start.bit_length() + 2
        self.direct_at = self.root + 5 + 8 + offset_bytes
        self.indirect_at = self.direct_at + 8 * min(rows, direct_rows) * self.width
        self.end = self.indirect_at + 8 * (rows - direct_rows) * self.width
        self.children = [
            struct.unpack_from("<Q", data, self.indirect_at + 8 * i)[0] for i in range(self.width * (rows - direct_rows))
        ]

    def edited(self, data: bytes, at: int, address: int) -> bytes:
        """`data` with the address at `at` in the root block set, its checksum recomputed (the library checks it)."""
        out = bytearray(data)
        struct.pack_into("<Q", out, at, address)
        struct.pack_into("<I", out, self.end, hostile.lookup3(bytes(out[self.root : self.end])))
        return bytes(out)


def problem(data: bytes, messages: list[tuple[int, int, bytes]]) -> str | None:
    return fractal_heap.dense_problem(Bytes(data).reader(), messages, fractal_heap.LINK_INFO_MESSAGE)


def test_a_sound_heap_passes_read_a_level_at_a_time(wide):
    data = wide.read_bytes()
    layout = Layout(data)
    assert len([c for c in layout.children if c != UNDEFINED]) == 11
    source = Bytes(data)
    assert fractal_heap.dense_problem(source.reader(), link_messages(wide, "obs"), fractal_heap.LINK_INFO_MESSAGE) is None
    # Six batches: the name index's header, its root and the root's 17 children together (`btree2`: its leaves
    # are not read); the heap's header, its root, the root's 11 children together.
    assert source.batches == [1, 1, 17, 1, 1, 11]


def test_a_root_that_names_itself_is_damaged_and_would_hang_the_library(wide, tmp_path):
    data = wide.read_bytes()
    layout = Layout(data)
    looped = layout.edited(data, layout.indirect_at, layout.root)
    found = problem(looped, link_messages(wide, "obs"))
    assert found is not None and f"the indirect block at byte {layout.root} is named twice" in found
    assert "never ends" in found
    # Why it is never handed over: the library's own listing of the group does not return.
    path = tmp_path / "looped.h5"
    path.write_bytes(looped)
    script = "import h5py, sys; print(len(list(h5py.File(sys.argv[1], 'r')['obs'])))"
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", script, str(path)], timeout=5, capture_output=True)


def test_a_child_named_twice_is_damaged(wide):
    data = wide.read_bytes()
    layout = Layout(data)
    shared = layout.edited(data, layout.indirect_at + 8, layout.children[0])
    assert "named twice" in (problem(shared, link_messages(wide, "obs")) or "")


def test_a_heap_whose_root_is_a_direct_block_costs_two_reads(tmp_path):
    path = tmp_path / "small.h5"
    with h5py.File(path, "w", libver="latest") as f:
        g = f.create_group("obs")
        for i in range(20):
            g[f"link_{i}"] = h5py.SoftLink("/nowhere")
    data = path.read_bytes()
    source = Bytes(data)
    assert fractal_heap.dense_problem(source.reader(), link_messages(path, "obs"), fractal_heap.LINK_INFO_MESSAGE) is None
    assert source.batches == [1, 1]  # the name index's header, the heap's


def test_bytes_it_does_not_take_are_left_to_the_library(wide):
    data = bytearray(wide.read_bytes())
    layout = Layout(bytes(data))
    messages = link_messages(wide, "obs")
    data[layout.root : layout.root + 4] = b"FHIX"  # the library refuses the block (its signature, its checksum)
    assert problem(bytes(data), messages) is None
    header = bytearray(wide.read_bytes())
    heap = header.index(b"FRHP")
    header[heap + 4] = 9  # a heap header version this reader does not know
    assert problem(bytes(header), messages) is None
    assert problem(bytes(header), [(fractal_heap.LINK_INFO_MESSAGE, 0, b"\x05")]) is None  # a message it does not know


def test_only_the_asked_kind_of_dense_storage_is_walked(wide):
    data = wide.read_bytes()
    layout = Layout(data)
    looped = layout.edited(data, layout.indirect_at, layout.root)
    messages = link_messages(wide, "obs")
    assert fractal_heap.dense_problem(Bytes(looped).reader(), messages, fractal_heap.ATTRIBUTE_INFO_MESSAGE) is None


def test_a_table_that_is_no_doubling_table_is_not_handed_over(wide):
    data = bytearray(wide.read_bytes())
    heap = data.index(b"FRHP")
    struct.pack_into("<H", data, heap + 110, 3)  # a width the format forbids: not a power of two
    assert "not powers of two" in (problem(bytes(data), link_messages(wide, "obs")) or "")


def test_an_index_deeper_than_any_file_can_hold_is_not_handed_over(wide):
    data = bytearray(wide.read_bytes())
    index = data.index(b"BTHD")
    struct.pack_into("<H", data, index + 12, 65)  # 2**65 records at least
    found = problem(bytes(data), link_messages(wide, "obs"))
    assert found is not None and f"the B-tree at byte {index} claims 65 levels" in found
    struct.pack_into("<H", data, index + 12, 64)
    assert problem(bytes(data), link_messages(wide, "obs")) is None  # (the library refuses what it cannot read)
