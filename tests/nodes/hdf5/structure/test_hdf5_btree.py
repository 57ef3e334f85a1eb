"""A chunk index read a B-tree level at a time from the file's bytes: the same chunks the HDF5 library lists, in as
many batched reads as the tree has levels (and one for the object header); None for any index it does not read (the
latest format's) or bytes that are not as expected (the library then reads them); Damaged, never handed to the
library, for a B-tree that is no tree (a node named twice, a level out of order), which the library recurses through
without end. A group's symbol table B-tree is checked the same way (`group_problem`)."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import h5py
import numpy as np
import pytest

from spec_validate.nodes.hdf5.structure import btree

CORPUS = Path(__file__).resolve().parents[4] / "conformance-corpus"


class FileRanges:
    """A local file's ranges, as remote.RangeReader gives them; counts the batches asked for."""

    def __init__(self, path: Path, data: bytes | None = None) -> None:
        self.data = data if data is not None else path.read_bytes()
        self.size = len(self.data)
        self.batches: list[int] = []

    def read(self, ranges: list[tuple[int, int]]) -> list[memoryview]:
        self.batches.append(len(ranges))
        return [memoryview(self.data[o : o + s]) for o, s in ranges]


def chunked(path: Path) -> dict[str, tuple[h5py.Dataset, int]]:
    """Each chunked dataset of the file (kept open with the file), with its object header's address."""
    f = h5py.File(path, "r", locking=False)  # as the validator opens it, in the same process
    found: dict[str, tuple[h5py.Dataset, int]] = {}

    def visit(name: str, obj: object) -> None:
        if isinstance(obj, h5py.Dataset) and obj.chunks:
            found[name] = (obj, h5py.h5o.get_info(obj.id).addr)

    f.visititems(visit)
    return found


def library_records(ds: h5py.Dataset) -> list[tuple]:
    out: list[tuple] = []
    ds.id.chunk_iter(lambda i: out.append((tuple(i.chunk_offset), i.byte_offset, i.size, i.filter_mask)))
    return sorted(out)


def records(source: FileRanges, ds: h5py.Dataset, header: int) -> list[tuple] | None:
    sizeof_addr, sizeof_size = ds.file.id.get_create_plist().get_sizes()
    grid = math.prod(-(-n // c) for n, c in zip(ds.shape, ds.chunks, strict=True))
    got = btree.chunk_records(source.read, header, source.size, sizeof_addr, sizeof_size, len(ds.shape), grid)
    return None if got is None else sorted(got)


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    """Chunk indexes of the shapes HDF5 writes by default: one leaf, three levels, two dimensions with gzip and
    unwritten chunks, a dataset shrunk after writing, none written, a version 2 object header (creation order
    tracked), and a header continued elsewhere (many attributes)."""
    path = tmp_path_factory.mktemp("btree") / "shapes.h5"
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as f:
        f.create_dataset("one-leaf", data=np.arange(100), chunks=(10,))
        f.create_dataset("three-levels", data=np.arange(100_000), chunks=(10,))
        m = f.create_dataset("matrix", shape=(300, 300), chunks=(4, 4), dtype="i4", compression="gzip")
        m[:200, :150] = rng.integers(0, 100, (200, 150))
        shrunk = f.create_dataset("shrunk", shape=(100,), maxshape=(None,), chunks=(7,), dtype="f8")
        shrunk[:] = 1
        shrunk.resize((30,))
        f.create_dataset("unwritten", shape=(100,), chunks=(10,), dtype="f4")
        tracked = f.create_dataset("tracked", data=np.arange(1000), chunks=(10,), track_order=True)
        tracked.attrs["x"] = 1
        continued = f.create_dataset("continued", shape=(10,), maxshape=(None,), chunks=(10,), dtype="i8")
        for i in range(30):
            continued.attrs[f"attr{i}"] = "y" * 100
        continued.resize((5000,))
        continued[:] = np.arange(5000)
    return path


def test_every_chunk_the_library_lists_level_by_level(written):
    source = FileRanges(written)
    datasets = chunked(written)
    headers = {name: source.data[addr : addr + 4] for name, (_, addr) in datasets.items()}
    assert headers["tracked"] == b"OHDR" and headers["one-leaf"] != b"OHDR"  # both header versions are read
    for name, (ds, header) in datasets.items():
        source.batches.clear()
        assert records(source, ds, header) == library_records(ds), name
        if name == "three-levels":  # 10,000 chunks, at most 64 to a node: the header, then each level in one batch
            assert len(source.batches) == 4 and source.batches[:3] == [1, 1, 3] and source.batches[3] >= 10_000 / 64


def test_corpus_files_read_as_the_library_reads_them():
    files = sorted(CORPUS.glob("**/*.h5ad")) + sorted(CORPUS.glob("**/*.h5seurat"))
    files = [f for f in files if "hostile" not in f.parts]  # some crash the library, which this test calls
    compared = 0
    for path in files:
        try:
            datasets = chunked(path)
        except (OSError, RuntimeError, KeyError):
            continue  # a hostile case the library itself refuses
        source = FileRanges(path)
        for name, (ds, header) in datasets.items():
            try:
                want = library_records(ds)
            except (OSError, RuntimeError):
                continue
            got = records(source, ds, header)
            assert got is None or got == want, (path, name)
            compared += got is not None
    assert compared > 100


def test_addresses_count_from_after_a_user_block(tmp_path):
    # Object headers and B-tree nodes name addresses relative to the superblock; the chunks' offsets are the file's.
    path = tmp_path / "user-block.h5"
    with h5py.File(path, "w", userblock_size=512) as f:
        f.create_dataset("v", data=np.arange(5000), chunks=(10,))
    ((ds, header),) = chunked(path).values()
    source = FileRanges(path)
    sizeof_addr, sizeof_size = ds.file.id.get_create_plist().get_sizes()
    got = btree.chunk_records(source.read, header, source.size, sizeof_addr, sizeof_size, 1, 500, base=512)
    assert got is not None and sorted(got) == library_records(ds)
    assert records(source, ds, header) is None  # read as if there were no user block: not believed


def test_latest_format_index_is_left_to_the_library(tmp_path):
    path = tmp_path / "latest.h5"
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("v", data=np.arange(1000), chunks=(10,))
    ((ds, header),) = chunked(path).values()
    assert records(FileRanges(path), ds, header) is None


def _damaged(written: Path, change) -> tuple[FileRanges, h5py.Dataset, int]:
    datasets = chunked(written)
    ds, header = datasets["three-levels"]
    data = bytearray(written.read_bytes())
    change(data, ds, header)
    return FileRanges(written, bytes(data)), ds, header


def _root(data: bytearray, header: int) -> int:
    """The B-tree root's address, from the layout message of the (version 1) header at `header`."""
    at = header + 16
    while True:
        kind, size = struct.unpack_from("<HH", data, at)
        if kind == btree.LAYOUT_MESSAGE:
            return struct.unpack_from("<Q", data, at + 8 + 3)[0]
        at += 8 + size


def _set_child(data: bytearray, node: int, entry: int, value: int) -> None:
    dims = 2
    struct.pack_into("<Q", data, node + 8 + 16 + entry * (8 + 8 * dims + 8) + 8 + 8 * dims, value)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda d, ds, h: d.__setitem__(slice(_root(d, h), _root(d, h) + 4), b"EERT"), id="signature"),
        pytest.param(lambda d, ds, h: d.__setitem__(_root(d, h) + 4, 0), id="group-node-type"),
        pytest.param(lambda d, ds, h: _set_child(d, _root(d, h), 1, len(d) + 10), id="past-the-end"),
        pytest.param(lambda d, ds, h: struct.pack_into("<H", d, _root(d, h) + 6, 60_000), id="entries"),
        pytest.param(lambda d, ds, h: d.__setitem__(h, 9), id="header-version"),
        pytest.param(lambda d, ds, h: d.__setitem__(_root(d, h) + 8 + 16 + 8, 3), id="key-not-whole-chunks"),
        pytest.param(lambda d, ds, h: d.__delitem__(slice(_root(d, h) + 100, None)), id="truncated"),
    ],
)
def test_damaged_index_is_left_to_the_library(written, change):
    source, ds, header = _damaged(written, change)
    assert records(source, ds, header) is None


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        pytest.param(lambda d, ds, h: _set_child(d, _root(d, h), 0, _root(d, h)), "is named twice", id="names-itself"),
        pytest.param(lambda d, ds, h: _set_child(d, _root(d, h), 1, _first_child(d, h)), "is named twice", id="shared-child"),
        pytest.param(lambda d, ds, h: d.__setitem__(_root(d, h) + 5, 7), "has level", id="level"),
        pytest.param(lambda d, ds, h: d.__setitem__(_first_child(d, h) + 5, 2), "has level", id="child-level-not-below"),
    ],
)
def test_index_that_is_no_tree_is_damaged_never_left_to_the_library(written, change, reason):
    # The library recurses through such a tree without end (the process dies, exit 139) or goes exponential.
    source, ds, header = _damaged(written, change)
    with pytest.raises(btree.Damaged, match=reason):
        records(source, ds, header)


def _first_child(data: bytearray, header: int) -> int:
    root = _root(data, header)
    return struct.unpack_from("<Q", data, root + 8 + 16 + 8 + 8 * 2)[0]


def test_a_wide_level_is_read_in_bounded_batches(written, monkeypatch):
    monkeypatch.setattr(btree, "NODES_PER_BATCH", 16)
    ds, header = chunked(written)["three-levels"]
    source = FileRanges(written)
    assert records(source, ds, header) == library_records(ds)
    assert max(source.batches) == 16 and len(source.batches) > 10


def test_damaged_bytes_read_as_the_library_reads_them_or_not_at_all(tmp_path):
    """Bytes of B-tree nodes and object headers changed at random: where this reader reads an index, the library
    lists the same chunks; where the library refuses it, this reader gives None (and the library's refusal stands)."""
    import random

    path = tmp_path / "base.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("three-levels", data=np.arange(20_000), chunks=(10,))
        m = f.create_dataset("matrix", shape=(100, 100), chunks=(4, 4), dtype="i4", compression="gzip")
        m[:60, :50] = 1
        f.create_dataset("tracked", data=np.arange(1000), chunks=(10,), track_order=True)
    base = path.read_bytes()
    # The headers' addresses from the intact file (h5o.get_info walks a chunk index: damaged, it raises).
    headers = {name: addr for name, (_, addr) in chunked(path).items()}
    nodes = [i for i in range(len(base)) if base[i : i + 4] == b"TREE"]
    rng = random.Random(7)
    read_alike = refused_alike = no_tree = 0
    for trial in range(150):
        data = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            if rng.random() < 0.8:
                at = rng.choice(nodes) + rng.randint(0, 600)
            else:
                at = rng.choice(list(headers.values())) + rng.randint(0, 300)
            data[min(at, len(data) - 1)] = rng.randint(0, 255)
        damaged = tmp_path / f"damaged{trial}.h5"
        damaged.write_bytes(data)
        for name, header in headers.items():
            try:
                ds = h5py.File(damaged, "r", locking=False)[name]
                assert isinstance(ds, h5py.Dataset)
            except Exception:  # noqa: BLE001 (the library does not open it as a dataset: no index is read of it)
                continue
            try:
                got = records(FileRanges(damaged, bytes(data)), ds, header)
            except btree.Damaged:
                no_tree += 1
                continue  # never handed to the library: its walk of such a tree would not end
            try:
                want = library_records(ds)
            except Exception:  # noqa: BLE001 (the library refuses this index)
                want = None
            if want is None:
                assert got is None
                refused_alike += 1
            elif got is not None:
                assert got == want
                read_alike += 1
    assert read_alike > 100 and refused_alike > 20, (read_alike, refused_alike)


def test_short_reads_are_not_believed(written):
    ds, header = chunked(written)["three-levels"]
    source = FileRanges(written)
    real = source.read
    source.read = lambda ranges: [view[: max(0, len(view) - 1)] for view in real(ranges)]
    assert records(source, ds, header) is None


def test_a_local_file_checks_its_chunk_index_and_the_library_lists_it(written, monkeypatch):
    # Locally the library's chunk_iter lists the chunks faster than this reader reads them, once the index is found
    # to be a tree (`chunk_records` without entries: no leaf's entries are read).
    from spec_validate.nodes.open import open_store

    asked: list[tuple[bool, list | None]] = []
    real = btree.chunk_records

    def spied(*args, entries=True):
        asked.append((entries, real(*args, entries=entries)))
        return asked[-1][1]

    monkeypatch.setattr(btree, "chunk_records", spied)
    with open_store(str(written)) as tree:
        assert len(tree.get("/three-levels").plan.table.linear) == 10_000
    assert asked == [(False, [])]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        pytest.param(lambda d, ds, h: _set_child(d, _root(d, h), 0, _root(d, h)), "is named twice", id="names-itself"),
        pytest.param(lambda d, ds, h: _set_child(d, _root(d, h), 1, _first_child(d, h)), "is named twice", id="shared-child"),
        pytest.param(lambda d, ds, h: d.__setitem__(_first_child(d, h) + 5, 2), "has level", id="child-level-not-below"),
        pytest.param(lambda d, ds, h: None, None, id="intact"),
    ],
)
def test_index_checked_without_its_entries_finds_what_reading_them_finds(written, change, reason):
    source, ds, header = _damaged(written, change)
    sizeof_addr, sizeof_size = ds.file.id.get_create_plist().get_sizes()
    grid = math.prod(-(-n // c) for n, c in zip(ds.shape, ds.chunks, strict=True))
    args = (source.read, header, source.size, sizeof_addr, sizeof_size, 1, grid, 0)
    if reason is None:
        assert btree.chunk_records(*args, False) == [] and records(source, ds, header) == library_records(ds)
        return
    for entries in (False, True):
        with pytest.raises(btree.Damaged, match=reason):
            btree.chunk_records(*args, entries)


# ---------------------------------------------------------------------------------------------- group symbol tables


def _group_tree(data: bytes, header: int) -> int:
    """The address of the symbol table B-tree of the (version 1) group header at `header`."""
    at = header + 16
    while True:
        kind, size = struct.unpack_from("<HH", data, at)
        if kind == btree.SYMBOL_TABLE_MESSAGE:
            return struct.unpack_from("<Q", data, at + 8)[0]
        at += 8 + size


@pytest.fixture(scope="module")
def groups(tmp_path_factory) -> tuple[Path, dict[str, int]]:
    """Groups as HDF5 writes them by default (a symbol table): one of 2,000 members (a B-tree of two levels), one
    of three, and a group of the latest format (its links in its header: no symbol table); their headers' addresses."""
    path = tmp_path_factory.mktemp("groups") / "groups.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("value", data=1)
        for name, count in (("many", 2000), ("few", 3)):
            g = f.create_group(name)
            for i in range(count):
                g[f"m{i:05d}"] = f["value"]  # hard links to one dataset: the group's links alone
        headers = {name: h5py.h5g.get_objinfo(f[name].id).objno[0] for name in ("many", "few")}
    with h5py.File(path, "a", libver="latest") as f:
        f.create_group("latest").create_group("x")
        headers["latest"] = h5py.h5g.get_objinfo(f["latest"].id).objno[0]
    return path, headers


def group_problem(data: bytes, header: int) -> str | None:
    return btree.group_problem(btree.Reader(FileRanges(Path(), data).read, len(data), 8, 8, 0), header)


def test_group_symbol_tables_as_written_are_trees(groups):
    path, headers = groups
    data = path.read_bytes()
    assert data[_group_tree(data, headers["many"]) + 5] == 1  # two levels: the walk goes below the root
    for name, header in headers.items():
        assert group_problem(data, header) is None, name


@pytest.mark.parametrize(
    ("at", "value", "reason"),
    [
        pytest.param(lambda root: root + 24 + 8, "root", "is named twice", id="names-itself"),
        pytest.param(lambda root: root + 24 + 8 + 16, "first", "is named twice", id="shared-child"),
        pytest.param(lambda root: root + 5, 4, "has level", id="level"),
    ],
)
def test_group_symbol_table_that_is_no_tree_is_a_problem(groups, at, value, reason):
    path, headers = groups
    data = bytearray(path.read_bytes())
    root = _group_tree(data, headers["many"])
    first = struct.unpack_from("<Q", data, root + 24 + 8)[0]
    where = at(root)
    if value in ("root", "first"):
        data[where : where + 8] = (root if value == "root" else first).to_bytes(8, "little")
    else:
        data[where] = value
    problem = group_problem(bytes(data), headers["many"])
    assert problem is not None and reason in problem and "never ends" in problem


def test_group_bytes_not_as_expected_are_left_to_the_library(groups):
    path, headers = groups
    data = bytearray(path.read_bytes())
    root = _group_tree(data, headers["many"])
    data[root : root + 4] = b"EERT"  # the library refuses such a node itself, without looping
    assert group_problem(bytes(data), headers["many"]) is None
    assert group_problem(bytes(data[: headers["many"] + 8]), headers["many"]) is None  # truncated


@pytest.mark.parametrize("libver", ["earliest", "latest"], ids=["v1-headers", "v2-headers"])
def test_messages_past_the_continuation_bound_are_unexpected_not_dropped(tmp_path, monkeypatch, libver):
    path = tmp_path / "continued.h5"
    with h5py.File(path, "w", libver=libver) as f:
        f.create_dataset("d", data=np.arange(4))
    for i in range(4):  # each reopening adds attributes the header has no room for: a continuation block each
        with h5py.File(path, "a", libver=libver) as f:
            f["d"].attrs[f"a{i}"] = "x" * 400
    with h5py.File(path, "r") as f:
        header = h5py.h5g.get_objinfo(f["d"].id).objno[0]
    data = path.read_bytes()
    reader = btree.Reader(FileRanges(Path(), data).read, len(data), 8, 8, 0)
    kinds = [kind for kind, _, _ in reader.messages(header)]
    assert kinds.count(0x0C) == 4, "every attribute message read, across the continuation blocks"
    monkeypatch.setattr(btree, "MOST_CONTINUATIONS", 1)
    with pytest.raises(btree.Unexpected):
        list(reader.messages(header))
