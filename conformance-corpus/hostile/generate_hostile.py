"""Write the hostile-input regression cases: valid AnnData stores of the corpus, each edited into one input that
once cost the user the report, read outside the store, hung or took unbounded memory (issue "Hostile and corrupt
input"; the fuzzer in tests/fuzz/ found the same kinds).

Run as `python conformance-corpus/hostile/generate_hostile.py [CASE ...]`. It (re)writes the cases under
conformance-corpus/hostile/{h5ad,zarr-v2,zarr-v3,zip,cxg}/ and nothing else; manifest.yaml beside them lists each case with
the rules it fails and the unreadable records (`problems`) its report must carry. Every case is one function named
like the case. Files named by a case (an external storage file, a virtual dataset's source, an external link's
target) do not exist: whatever the tool did with them, it must not try to read them.
"""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent
H5AD_BASE = CORPUS / "anndata" / "h5ad" / "valid-every-element.h5ad"
ZARR_BASE = CORPUS / "anndata" / "zarr-v2" / "valid-every-element.zarr"
ZARR3_BASE = CORPUS / "anndata" / "zarr-v3" / "valid-every-element.zarr"
CXG_BASES = CORPUS / "cxg" / "cxg-0.3.0"
CASES: dict[str, Callable[[Path], None]] = {}
SUFFIX = {"h5ad": ".h5ad", "zarr-v2": ".zarr", "zarr-v3": ".zarr", "zip": ".zarr.zip", "cxg": ".cxg"}
STAMP = (2024, 1, 1, 0, 0, 0)  # every zip entry's time: a rerun writes the same bytes


def case(container: str) -> Callable[[Callable[[Path], None]], Callable[[Path], None]]:
    """Register a case function; its name, with `_` as `-` and less a `_<container>` suffix, is the case name."""

    def register(fn: Callable[[Path], None]) -> Callable[[Path], None]:
        label = fn.__name__.removesuffix("_" + container.replace("-", "_")).replace("_", "-")
        CASES[f"{container}/{label}"] = fn
        return fn

    return register


def target(name: str) -> Path:
    container, label = name.split("/", 1)
    return HERE / container / f"{label}{SUFFIX[container]}"


def h5ad_copy(path: Path) -> h5py.File:
    shutil.copyfile(H5AD_BASE, path)
    return h5py.File(path, "r+")


def replace_indptr(f: h5py.File, make: Callable[[h5py.File, str], h5py.Dataset]) -> None:
    """/X/indptr rewritten by `make`, keeping its attributes: the array every CSR value rule reads."""
    attrs = dict(f["X/indptr"].attrs)
    del f["X/indptr"]
    ds = make(f, "X/indptr")
    for key, value in attrs.items():
        ds.attrs[key] = value


# ---------------------------------------------------------------------------------------------- HDF5


@case("h5ad")
def external_storage(path: Path) -> None:
    """/X/indptr's data lies in an external file (HDF5 external storage): reported, never read."""
    with h5ad_copy(path) as f:
        replace_indptr(f, lambda f, name: f.create_dataset(name, shape=(13,), dtype="<i4", external=[("outside.bin", 0, 52)]))


@case("h5ad")
def virtual_dataset(path: Path) -> None:
    """/X/indptr is a virtual dataset mapping another file: reported, never read (the process once died at exit)."""
    with h5ad_copy(path) as f:
        layout = h5py.VirtualLayout(shape=(13,), dtype="<i4")
        layout[:] = h5py.VirtualSource("outside.h5", "data", shape=(13,))
        replace_indptr(f, lambda f, name: f.create_virtual_dataset(name, layout, fillvalue=0))


@case("h5ad")
def external_link(path: Path) -> None:
    """/uns/outside is an external link to another file: reported, never followed."""
    with h5ad_copy(path) as f:
        f["uns/outside"] = h5py.ExternalLink("outside.h5", "/")


def _dict_group_heap(path: Path, name: str) -> tuple[bytearray, int]:
    """The base file copied to `path` with a dict group `name` of one member; its bytes, and where the group's local
    heap (which holds the member's name, a marker found in the bytes) starts."""
    marker = "m" * 40
    with h5ad_copy(path) as f:
        g = f.create_group(name)
        g.attrs["encoding-type"], g.attrs["encoding-version"] = "dict", "0.1.0"
        g.create_group(marker).attrs.update({"encoding-type": "dict", "encoding-version": "0.1.0"})
    data = bytearray(path.read_bytes())
    return data, data.rindex(b"HEAP", 0, data.index(marker.encode()))


@case("h5ad")
def corrupt_group(path: Path) -> None:
    """The local heap of /uns/broken (a dict group with one member) is damaged: its members cannot be listed. One
    unreadable record; every other clause keeps its verdict (once: `internal error`, the whole report lost)."""
    data, at = _dict_group_heap(path, "uns/broken")
    data[at : at + 4] = b"HEAX"
    path.write_bytes(bytes(data))


@case("h5ad")
def linked_groups(path: Path) -> None:
    """/uns/chain nests 40 dict groups, each linked from its parent three times (two hard links, one soft): every
    path through them is 3**40 paths; each group is entered once."""
    with h5ad_copy(path) as f:
        here = f["uns"]
        for name in ("chain",) + ("a",) * 40:
            below = here.create_group(name)
            below.attrs["encoding-type"], below.attrs["encoding-version"] = "dict", "0.1.0"
            if here.name != "/uns":
                here["b"] = below
                here["s"] = h5py.SoftLink(below.name)
            here = below


@case("h5ad")
def member_name_not_utf8(path: Path) -> None:
    """/uns/names, a dict group, has one member whose link name is the bytes `\\xff\\xfe`, not UTF-8: h5py lists
    it as bytes (once: `internal error` on the name, the whole report lost). It is read under an escaped name,
    like any other member."""
    with h5ad_copy(path) as f:
        for name in ("uns/names", b"uns/names/\xff\xfe"):
            g = f.create_group(name)
            g.attrs["encoding-type"], g.attrs["encoding-version"] = "dict", "0.1.0"


@case("h5ad")
def soft_link_through_external(path: Path) -> None:
    """/uns/through is a soft link to /uns/outside/X, and /uns/outside an external link to outside.h5: the library,
    resolving the soft link's path itself, opened outside.h5 (a file outside the one validated). Both links are
    reported and neither is followed."""
    with h5ad_copy(path) as f:
        f["uns/outside"] = h5py.ExternalLink("outside.h5", "/")
        f["uns/through"] = h5py.SoftLink("/uns/outside/X")


@case("h5ad")
def huge_unwritten_h5ad(path: Path) -> None:
    """/X/indptr declares 2**40 elements in chunks of 2**16 and none is written: read as its fill value (0) without
    materialising it (once: every block range listed up front, then gigabytes); it fails only its length."""
    with h5ad_copy(path) as f:
        replace_indptr(f, lambda f, name: f.create_dataset(name, shape=(2**40,), chunks=(2**16,), dtype="<i4", fillvalue=0))


def _make_self_named(data: bytearray, at: int, node_type: int, key_bytes: int) -> None:
    """The version 1 B-tree node at `at` (a single leaf: level 0) made a level 1 node whose first child is itself:
    a tree the HDF5 library walks by recursion, with no end (the process dies, exit 139)."""
    assert data[at : at + 4] == b"TREE" and data[at + 4] == node_type and data[at + 5] == 0, "not a leaf of that type"
    data[at + 5] = 1
    child = at + 24 + key_bytes  # signature, type, level, entries, two sibling addresses (8 bytes each), a key
    data[child : child + 8] = at.to_bytes(8, "little")


@case("h5ad")
def cyclic_group_btree(path: Path) -> None:
    """/uns/cycle, a dict group, keeps its members in a symbol table whose B-tree names itself as its own child:
    listing the group, or asking its metadata's size, recursed in the HDF5 library until the process died (exit
    139, no report). Its members are reported unreadable, every other clause keeps its verdict."""
    data, heap = _dict_group_heap(path, "uns/cycle")
    _make_self_named(data, data.rindex(b"TREE", 0, heap), node_type=0, key_bytes=8)  # a key: a name's heap offset
    path.write_bytes(bytes(data))


@case("h5ad")
def cyclic_chunk_index(path: Path) -> None:
    """/X/indices is chunked and its chunk index, a B-tree, names itself as its own child: reading the array (or
    sizing its metadata) recursed in the HDF5 library until the process died (exit 139, no report). It is reported
    unreadable and its clauses not checked."""
    with h5ad_copy(path) as f:
        attrs = dict(f["X/indices"].attrs)
        values = f["X/indices"][...]
        del f["X/indices"]
        ds = f.create_dataset("X/indices", data=values, chunks=(4,))
        ds.attrs.update(attrs)
        header = h5py.h5g.get_objinfo(ds.id).objno[0]
    data = bytearray(path.read_bytes())
    # The index's only node follows the dataset's header (a key: chunk size, filter mask, two offsets).
    _make_self_named(data, data.index(b"TREE", header), node_type=1, key_bytes=24)
    path.write_bytes(bytes(data))


def lookup3(data: bytes, initval: int = 0) -> int:
    """Bob Jenkins' lookup3 `hashlittle`: the checksum the latest HDF5 format stores after each metadata block."""
    mask = 0xFFFFFFFF

    def rot(x: int, k: int) -> int:
        return ((x << k) | (x >> (32 - k))) & mask

    a = b = c = (0xDEADBEEF + len(data) + initval) & mask
    rest = len(data)
    at = 0
    while rest > 12:
        a = (a + int.from_bytes(data[at : at + 4], "little")) & mask
        b = (b + int.from_bytes(data[at + 4 : at + 8], "little")) & mask
        c = (c + int.from_bytes(data[at + 8 : at + 12], "little")) & mask
        for x, y, z, k in ((0, 2, 1, 4), (1, 0, 2, 6), (2, 1, 0, 8), (0, 2, 1, 16), (1, 0, 2, 19), (2, 1, 0, 4)):
            v = [a, b, c]  # lookup3's mix: x -= y; x ^= rot(y, k); y += z, in turn over (a, b, c)
            v[x] = ((v[x] - v[y]) & mask) ^ rot(v[y], k)
            v[y] = (v[y] + v[z]) & mask
            a, b, c = v
        rest -= 12
        at += 12
    if rest == 0:
        return c
    tail = bytes(data[at:]) + bytes(12 - rest)
    a = (a + int.from_bytes(tail[0:4], "little")) & mask
    b = (b + int.from_bytes(tail[4:8], "little")) & mask
    c = (c + int.from_bytes(tail[8:12], "little")) & mask
    for x, y, k in ((2, 1, 14), (0, 2, 11), (1, 0, 25), (2, 1, 16), (0, 2, 4), (1, 0, 14), (2, 1, 24)):
        v = [a, b, c]  # lookup3's final: x ^= y; x -= rot(y, k)
        v[x] = ((v[x] ^ v[y]) - rot(v[y], k)) & mask
        a, b, c = v
    return c


def _checksum(data: bytearray, start: int, end: int) -> None:
    data[end : end + 4] = lookup3(bytes(data[start:end])).to_bytes(4, "little")


def heap_cycle(data: bytearray, name_index: int, heap_id_at: int) -> None:
    """The file's one fractal heap (8-byte addresses and lengths) given a root indirect block, written after the
    file's end, that keeps the heap's direct block first and names itself as its first indirect child; the heap ID
    of the first record of its name index (the version 2 B-tree of type `name_index`, whose records hold a heap ID
    `heap_id_at` bytes in) made to point inside that child, in every index that holds it. The library's descent to
    read that object never ends: its walk reaches the same block, at the same depth, each time."""
    assert data[8] == 0 and data[13] == data[14] == 8, "a version 0 superblock, 8-byte addresses and lengths"
    heap = data.index(b"FRHP")
    width = int.from_bytes(data[heap + 110 : heap + 112], "little")
    start_block = int.from_bytes(data[heap + 112 : heap + 120], "little")
    largest_direct = int.from_bytes(data[heap + 120 : heap + 128], "little")
    offset_bytes = (int.from_bytes(data[heap + 128 : heap + 130], "little") + 7) // 8
    direct = int.from_bytes(data[heap + 132 : heap + 140], "little")
    assert data[heap + 140 : heap + 142] == b"\0\0" and data[direct : direct + 4] == b"FHDB", "a single direct block"
    direct_rows = largest_direct.bit_length() - start_block.bit_length() + 2
    root = len(data)
    entries = [2**64 - 1] * ((direct_rows + 1) * width)  # every entry undefined but two
    entries[0], entries[direct_rows * width] = direct, root
    block = b"FHIB\0" + heap.to_bytes(8, "little") + bytes(offset_bytes) + b"".join(e.to_bytes(8, "little") for e in entries)
    data += block + lookup3(block).to_bytes(4, "little")
    data[40:48] = len(data).to_bytes(8, "little")  # the superblock's end of file address
    data[heap + 132 : heap + 142] = root.to_bytes(8, "little") + (direct_rows + 1).to_bytes(2, "little")
    data[heap + 46 : heap + 62] = (2**20).to_bytes(8, "little") * 2  # managed space, allocated: the object's offset fits
    _checksum(data, heap, heap + 142)
    leaves = {}  # each version 2 B-tree: its root leaf (a single one here), its records and their size
    at = data.find(b"BTHD")
    while at >= 0:
        record_size, depth = int.from_bytes(data[at + 10 : at + 12], "little"), data[at + 12]
        leaf, records = int.from_bytes(data[at + 16 : at + 24], "little"), int.from_bytes(data[at + 24 : at + 26], "little")
        assert depth == 0, "a single leaf"
        leaves[data[at + 5]] = (leaf, records, record_size)
        at = data.find(b"BTHD", at + 4)
    leaf, _, _ = leaves[name_index]
    heap_id = bytes(data[leaf + 6 + heap_id_at : leaf + 6 + heap_id_at + 1 + offset_bytes])
    inside = width * start_block * 2 ** (direct_rows - 1)  # where the first indirect row's blocks begin
    moved = heap_id[:1] + inside.to_bytes(offset_bytes, "little")
    for leaf, records, record_size in leaves.values():
        end = leaf + 6 + records * record_size
        found = data.find(heap_id, leaf + 6, end)
        if found >= 0:
            data[found : found + len(moved)] = moved
            _checksum(data, leaf, end)


def _dense_group(path: Path, members: int, attributes: int) -> bytearray:
    """The base file copied to `path` with /uns/dense, a dict group tracking creation order (so kept the latest
    format's way: its links and attributes in its header, or past 8 in dense storage) with `members` dict groups and
    `attributes` attributes besides its encoding; and, with members, /uns/to_member, a soft link to the member whose
    link `heap_cycle` moves (the first record of the name index, which is ordered by each name's lookup3 hash); its
    bytes."""
    names = [f"member_{i:02d}" for i in range(members)]
    with h5ad_copy(path) as f:
        g = f.create_group("uns/dense", track_order=True)
        g.attrs["encoding-type"], g.attrs["encoding-version"] = "dict", "0.1.0"
        for i in range(attributes):
            g.attrs[f"note_{i:02d}"] = i
        for name in names:
            g.create_group(name).attrs.update({"encoding-type": "dict", "encoding-version": "0.1.0"})
        if names:
            f["uns/to_member"] = h5py.SoftLink("/uns/dense/" + min(names, key=lambda n: lookup3(n.encode())))
    return bytearray(path.read_bytes())


@case("h5ad")
def cyclic_link_heap(path: Path) -> None:
    """/uns/dense keeps its 12 members in dense storage, whose fractal heap's root block names itself as a child, and
    a member's link points into that child: listing the group, or opening /uns/to_member (a soft link to that
    member), hung in the HDF5 library (at full CPU, no report). Its members are reported unreadable, and the soft
    link not followed."""
    data = _dense_group(path, members=12, attributes=0)
    heap_cycle(data, name_index=5, heap_id_at=4)  # a link name index record: the name's hash, then the heap ID
    path.write_bytes(bytes(data))


@case("h5ad")
def cyclic_attribute_heap(path: Path) -> None:
    """/uns/dense keeps its 12 attributes in dense storage, whose fractal heap's root block names itself as a child,
    and an attribute points into that child: listing its attributes hung in the HDF5 library (at full CPU, no
    report). Its attributes are reported unreadable, and the clauses that read them name it as not checked."""
    data = _dense_group(path, members=0, attributes=10)
    heap_cycle(data, name_index=8, heap_id_at=0)  # an attribute name index record: the heap ID first
    path.write_bytes(bytes(data))


def btree2_shared(data: bytearray, tree_type: int, depth: int, fanout: int) -> None:
    """The file's version 2 B-tree of `tree_type` (a tree of depth 1 or more, 8-byte addresses and lengths) made
    `depth` levels deep, each internal node naming the one below it as every one of its `fanout` children, down to
    one of its leaves: a tree of `depth` + 1 distinct nodes through which the library's recursive iteration takes
    `fanout ** depth` paths. The internal nodes are written over other leaves of the tree (each node takes the tree's
    node size), so the file keeps its size; each carries `fanout - 1` records copied from the bottom leaf."""
    head = data.index(b"BTHD")
    while data[head + 5] != tree_type:
        head = data.index(b"BTHD", head + 4)
    node_size, record_size = (
        int.from_bytes(data[head + 6 : head + 10], "little"),
        int.from_bytes(data[head + 10 : head + 12], "little"),
    )
    leaves = []
    at = data.find(b"BTLF")
    while at >= 0:
        if data[at + 5] == tree_type:
            leaves.append(at)
        at = data.find(b"BTLF", at + 4)
    assert len(leaves) > depth, f"{len(leaves)} leaves of type {tree_type}: too few to write {depth} levels over"
    bottom, slots = leaves[0], leaves[1 : depth + 1]
    most = (node_size - 10) // record_size
    count = next(
        n
        for n in range(most, 0, -1)
        if lookup3(bytes(data[bottom : bottom + 6 + n * record_size]))
        == int.from_bytes(data[bottom + 6 + n * record_size : bottom + 10 + n * record_size], "little")
    )

    def width(n: int) -> int:  # the bytes the library stores a count of at most n in
        return (max(n, 1).bit_length() - 1) // 8 + 1

    below, totals = [most], [0]  # per depth: the most records a node and its subtree hold, the bytes of that count
    records_width = width(most)
    for d in range(1, depth + 1):
        pointer = 8 + records_width + totals[d - 1]
        fits = (node_size - 10 - pointer) // (record_size + pointer)
        assert fanout - 1 <= fits, f"{fanout} children do not fit a node of depth {d}"
        below.append(((fits + 1) * below[d - 1] + fits) % 2**64)
        totals.append(width(below[d]))
    records = bytes(data[bottom + 6 : bottom + 6 + (fanout - 1) * record_size])
    child, child_records, child_total = bottom, count, count
    for d, slot in enumerate(slots, start=1):
        pointer = child.to_bytes(8, "little") + child_records.to_bytes(records_width, "little")
        pointer += child_total.to_bytes(totals[d - 1], "little") if d > 1 else b""
        node = b"BTIN\0" + bytes([tree_type]) + records + pointer * fanout
        node += lookup3(node).to_bytes(4, "little")
        data[slot : slot + node_size] = node.ljust(node_size, b"\0")
        child, child_records, child_total = slot, fanout - 1, (fanout - 1 + fanout * child_total) % 2**64
    data[head + 12 : head + 14] = depth.to_bytes(2, "little")
    data[head + 16 : head + 34] = (
        child.to_bytes(8, "little") + child_records.to_bytes(2, "little") + child_total.to_bytes(8, "little")
    )
    _checksum(data, head, head + 34)


@case("h5ad")
def shared_link_index(path: Path) -> None:
    """/uns/dense keeps its 600 links (soft links) in dense storage, and their index by name (a version 2 B-tree, the
    one the library lists them by) is 6 internal nodes deep, each naming the one below it as all its 13 children:
    listing the group made the HDF5 library's iteration take 13**6 paths to the same leaf, 58 million links (past
    11 GB of memory in 30 seconds, no report). Its members are reported unreadable."""
    with h5ad_copy(path) as f:
        g = f.create_group("uns/dense", track_order=True)
        g.attrs["encoding-type"], g.attrs["encoding-version"] = "dict", "0.1.0"
        for i in range(600):
            g[f"member_{i:03d}"] = h5py.SoftLink("/X")
    data = bytearray(path.read_bytes())
    btree2_shared(data, tree_type=5, depth=6, fanout=13)
    path.write_bytes(bytes(data))


@case("h5ad")
def huge_extensible_array(path: Path) -> None:
    """/X/indptr (13 values in chunks of 4, one unlimited dimension, the latest format) indexes its chunks with an
    extensible array whose header claims 4e12 elements were set: listing its chunks made the HDF5 library iterate
    them all (hours at full CPU, no report). Its 4 chunks are looked up by coordinate instead, and read."""
    shutil.copyfile(H5AD_BASE, path)
    with h5py.File(path, "r+", libver="latest") as f:
        values = f["X/indptr"][...]
        assert len(values) == 13
        replace_indptr(f, lambda f, name: f.create_dataset(name, data=values, chunks=(4,), maxshape=(None,)))
    data = bytearray(path.read_bytes())
    header = data.index(b"EAHD")
    at = header + 12 + 4 * 8  # after the fixed fields and four of the statistics: the largest index ever set
    data[at : at + 8] = (4 * 10**12).to_bytes(8, "little")
    _checksum(data, header, header + 12 + 6 * 8 + 8)
    path.write_bytes(bytes(data))


@case("h5ad")
def malformed_vlen_type(path: Path) -> None:
    """The datatype of /var/_index's `encoding-version` attribute, a variable-length string, says kind 3 (the format
    knows 0, a sequence, and 1, a string): the HDF5 library read it as a sequence of bytes and h5py crashed the
    process reading it (exit 139, no report; found by the fuzzer flipping one byte). Reported unread instead."""
    shutil.copyfile(H5AD_BASE, path)
    with h5py.File(path, "r") as f:
        header = h5py.h5g.get_objinfo(f["var/_index"].id).objno[0]
    data = bytearray(path.read_bytes())
    name = data.index(b"encoding-version\0", header)
    datatype = data.index(b"\x19\x01", name)  # a version 1 variable-length type, kind 1 (a string), after the name
    data[datatype + 1] = (data[datatype + 1] & 0xF0) | 3
    path.write_bytes(bytes(data))


# ---------------------------------------------------------------------------------------------- Zarr v2


def zarr_copy(path: Path) -> None:
    shutil.copytree(ZARR_BASE, path)


@case("zarr-v2")
def deep_nested_attrs(path: Path) -> None:
    """uns/.zattrs holds a value nested 100,000 levels deep: refused as an unreadable document (once: RecursionError,
    `internal error`); the clauses that need uns's attributes name it as not checked."""
    zarr_copy(path)
    depth = 100_000
    text = '{"encoding-type": "dict", "encoding-version": "0.1.0", "x": ' + "[" * depth + "]" * depth + "}"
    (path / "uns" / ".zattrs").write_text(text)


@case("zarr-v2")
def huge_unwritten_zarr_v2(path: Path) -> None:
    """X/indptr declares 2**62 elements in chunks of 2**20, none written: one block of the fill value (0)."""
    zarr_copy(path)
    meta_path = path / "X" / "indptr" / ".zarray"
    meta = json.loads(meta_path.read_text())
    meta.update(shape=[2**62], chunks=[2**20])
    meta_path.write_text(json.dumps(meta, indent=2))
    for chunk in (path / "X" / "indptr").iterdir():
        if not chunk.name.startswith("."):
            chunk.unlink()


@case("zarr-v2")
def huge_sparse_chunks(path: Path) -> None:
    """X/indptr declares 2**40 elements in chunks of one element, and its 13 values are stored as chunks 0 to 12
    (found by the fuzzer: the first block, 2**22 rows, was read by asking for each of its 2**22 chunk keys and ran
    past --timeout; now the chunks the store lists are read, and the rest is the fill value)."""
    zarr_copy(path)
    folder = path / "X" / "indptr"
    meta = json.loads((folder / ".zarray").read_text())
    values = zarr_values(folder, meta)
    for chunk in folder.iterdir():
        if not chunk.name.startswith("."):
            chunk.unlink()
    meta.update(shape=[2**40], chunks=[1], compressor=None, filters=None)
    (folder / ".zarray").write_text(json.dumps(meta, indent=2))
    for i, value in enumerate(values):
        (folder / str(i)).write_bytes(value.tobytes())


def declare_unwritten(store: Path, array: str, shape: list[int], chunks: list[int]) -> None:
    """The array at `array` declares `shape` in `chunks` (its Zarr v2 or v3 document edited), and no chunk is stored;
    the consolidated metadata keeps the original document."""
    folder = store / array
    v2 = (folder / ".zarray").exists()
    meta_path = folder / (".zarray" if v2 else "zarr.json")
    meta = json.loads(meta_path.read_text())
    if v2:
        meta.update(shape=shape, chunks=chunks)
    else:
        meta["shape"] = shape
        meta["chunk_grid"]["configuration"]["chunk_shape"] = chunks
    meta_path.write_text(json.dumps(meta, indent=2))
    for chunk in folder.iterdir():
        if v2 and not chunk.name.startswith("."):
            chunk.unlink()
        elif not v2 and chunk.is_dir():
            shutil.rmtree(chunk)


@case("zarr-v2")
def huge_unwritten_2_80_zarr_v2(path: Path) -> None:
    """X/indptr declares 2**80 elements in chunks of one element, none written: one block of its fill value (once,
    a Python range per 2**56 elements was listed up front: 2.8 GB and a MemoryError)."""
    zarr_copy(path)
    declare_unwritten(path, "X/indptr", [2**80], [1])


@case("zarr-v2")
def huge_unwritten_2d_zarr_v2(path: Path) -> None:
    """obsm/X_pca declares 2**62 x 2**62 elements, none written, read whole under --deep: one block of its fill value
    (once, one range per declared row, growing to any memory cap)."""
    zarr_copy(path)
    declare_unwritten(path, "obsm/X_pca", [2**62, 2**62], [12, 3])


def zarr_values(folder: Path, meta: dict) -> np.ndarray:
    """The values of a one-chunk Zarr v2 array, decoded with its compressor (numcodecs)."""
    import numcodecs

    raw = (folder / "0").read_bytes()
    codec = numcodecs.get_codec(meta["compressor"]) if meta.get("compressor") else None
    data = codec.decode(raw) if codec is not None else raw
    return np.frombuffer(data, dtype=meta["dtype"])[: meta["shape"][0]]


# ---------------------------------------------------------------------------------------------- Zarr v3


@case("zarr-v3")
def huge_unwritten_2_80_zarr_v3(path: Path) -> None:
    """X/indptr declares 2**80 elements in chunks of 2**20, none written: one block of its fill value."""
    shutil.copytree(ZARR3_BASE, path)
    declare_unwritten(path, "X/indptr", [2**80], [2**20])


@case("zarr-v3")
def huge_unwritten_2d_zarr_v3(path: Path) -> None:
    """obsm/X_pca declares 2**62 x 2**62 elements, none written, read whole under --deep: one block of its fill value."""
    shutil.copytree(ZARR3_BASE, path)
    declare_unwritten(path, "obsm/X_pca", [2**62, 2**62], [12, 3])


# ---------------------------------------------------------------------------------------------- zipped Zarr


@case("zip")
def entry_names(path: Path) -> None:
    """A zipped store whose entry names are no keys: `a//.zgroup` (once read as its own child, a loop at full CPU),
    `../up/.zgroup`, `/abs/.zgroup`, and a group nested 10,000 levels deep. Each is reported; the walk ends."""
    with zipfile.ZipFile(path, "w") as z:
        for file in sorted(p for p in ZARR_BASE.rglob("*") if p.is_file()):
            z.writestr(zipfile.ZipInfo(file.relative_to(ZARR_BASE).as_posix(), STAMP), file.read_bytes())
        for name in ("a//.zgroup", "a//b/.zgroup", "../up/.zgroup", "/abs/.zgroup", "/".join(["g"] * 10_000) + "/.zgroup"):
            z.writestr(zipfile.ZipInfo(name, STAMP), '{"zarr_format": 2}')


# ---------------------------------------------------------------------------------------------- CXG (TileDB)


def set_footer_byte(array: Path, field: str, byte: int, value: int) -> None:
    """Set byte `byte` of `field` of the footer of the array's one fragment to `value`; where the field lies is what
    spec_validate/nodes/tiledb/fragments.py parses, with the layout the array's schema gives."""
    import tiledb

    from spec_validate.nodes.tiledb import fragments, library

    (folder,) = fragments.fragment_folders(str(array))
    layout = library.layout(str(array), tiledb.ArraySchema.load(str(array)))
    offset = fragments.metadata_fields(folder, layout)[1][field][0] + byte
    meta = Path(folder) / fragments.METADATA_FILE
    data = bytearray(meta.read_bytes())
    data[offset] = value
    meta.write_bytes(bytes(data))


@case("cxg")
def fragment_schema_name_huge(path: Path) -> None:
    """The footer of /cxg_group_metadata's fragment says its array schema name takes 0x7A00003E bytes (one byte, the
    fourth of that length, set to 0x7A): TileDB allocated 2 GB for it before it found the footer too short."""
    shutil.copytree(CXG_BASES / "valid-properties-null.cxg", path)
    set_footer_byte(path / "cxg_group_metadata", "array schema name's length", 3, 0x7A)


@case("cxg")
def fragment_file_size_huge(path: Path) -> None:
    """The footer of /Xc's fragment says its a1.tdb holds 0xDC00000000 bytes more than it does (one byte, the fifth of
    that size, set to 0xDC): TileDB read the file's last tile up to that size, and under --deep about one run in
    ten the process died (exit 139, no report)."""
    shutil.copytree(CXG_BASES / "valid-sparse-X.cxg", path)
    set_footer_byte(path / "Xc", "file sizes", 8 + 4, 0xDC)  # the second size (a1.tdb's), its fifth byte


def main(argv: list[str]) -> None:
    wanted = set(argv)
    for name, fn in CASES.items():
        if wanted and name not in wanted:
            continue
        path = target(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        fn(path)
        print(f"wrote {path.relative_to(CORPUS)}")


if __name__ == "__main__":
    main(sys.argv[1:])
