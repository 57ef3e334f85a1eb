"""Read HDF5 datasets' stored bytes: contiguous data by offset, chunks by the chunk index; bytes decode in `codecs`.

HDF5's own filters inflate without bound (its deflate filter grows its buffer until the stream ends), so no
filtered chunk is ever decoded by HDF5 before it has been decoded here, bounded to the chunk's size. Chunks of
fixed-size datasets whose stored bytes are their values (numeric, fixed `S`, compounds of those: the file type
equals the type h5py reads into) are decoded here only, into the block: read with `os.pread` from a local file
(GIL released, so scan threads overlap), a block's chunks together from a remote file (remote.RangeReader), or
with `read_direct_chunk` through h5py otherwise. For the rest
(variable-length strings and objects, enums, types HDF5 converts), each stored chunk is first decoded here and
checked to be exactly chunk elements x the on-disk element size, then h5py reads that chunk's elements.

Filters other than deflate, shuffle, fletcher32 and h5py's lzf (decoded by `lzf`, bounded as the others are) are
never run (szip, scaleoffset, plugins): `NotDecoded`. External storage and virtual datasets lie outside the file
and are never read. Only offsets HDF5 reports for this dataset are read, each checked to lie inside the file,
read-only.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import struct
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import h5py
import numpy as np

from spec_validate.codecs import decode
from spec_validate.codecs.decode import ChunkCodec, ChunkError
from spec_validate.errors import NodeError, NotDecoded
from spec_validate.kernels.block import Block, ChunkRead
from spec_validate.nodes.base import (
    MAX_BLOCK_BYTES,
    MAX_CHUNKS_PER_BLOCK,
    Unreadable,
    check_block_size,
    check_chunk_count,
    element_bytes,
    linear_index,
    stored_in,
    uniform_block,
)
from spec_validate.nodes.hdf5.structure import btree, btree2, chunk_index

DEFLATE, SHUFFLE, FLETCHER32, LZF = 1, 2, 3, 32000
DECODABLE_FILTERS = {DEFLATE: "deflate", SHUFFLE: "shuffle", FLETCHER32: "fletcher32", LZF: "lzf"}
OTHER_FILTERS = {
    4: "szip",
    5: "nbit",
    6: "scaleoffset",
    307: "bzip2",
    32001: "blosc",
    32004: "lz4",
    32008: "bitshuffle",
    32013: "zfp",
    32015: "zstd",
    32017: "sz",
    32026: "blosc2",
}


class RangeSource(Protocol):
    """A remote file's bytes, many ranges at once (remote.RangeReader)."""

    size: int

    def read(self, ranges: list[tuple[int, int]]) -> list[memoryview]: ...

    def read_soon(self, ranges: list[tuple[int, int]]) -> Callable[[], list[memoryview]]: ...


class IndexSource(Protocol):
    """A file's bytes, many ranges at once: a remote file's (remote.RangeReader) or a local one's (`LocalRanges`)."""

    size: int

    def read(self, ranges: list[tuple[int, int]]) -> list[memoryview]: ...


class LocalRanges:
    """A local file's bytes, by `pread` on its descriptor (which the caller keeps open)."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.size = fd, size

    def read(self, ranges: list[tuple[int, int]]) -> list[memoryview]:
        return [memoryview(os.pread(self.fd, length, offset)) for offset, length in ranges]


class ReadRanges:
    """A file's bytes, by a function that reads many ranges (a small remote file's, through its file object)."""

    def __init__(self, read: Callable[[list[tuple[int, int]]], list[memoryview]], size: int) -> None:
        self.read, self.size = read, size

    def read_soon(self, ranges: list[tuple[int, int]]) -> Callable[[], list[memoryview]]:
        return lambda: self.read(ranges)  # the file is read whole already: nothing to start early


class ChunkTable(NamedTuple):
    """Where each stored chunk lies, found by its linear (C-order) index in the chunk grid."""

    linear: np.ndarray  # sorted linear grid index of every stored chunk (only stored ones: never the whole grid)
    offsets: np.ndarray  # byte offset in the file
    sizes: np.ndarray  # stored (filtered) size in bytes
    masks: np.ndarray  # HDF5 filter mask: bit j set = filter j of the pipeline skipped for this chunk

    def find(self, linear: int) -> int | None:
        """The position of the chunk with linear grid index `linear` in the table, or None when it is not stored."""
        at = int(np.searchsorted(self.linear, linear))
        return at if at < len(self.linear) and int(self.linear[at]) == linear else None


class DirectPlan(NamedTuple):
    """How to read a dataset's blocks."""

    path: str
    shape: tuple[int, ...]
    dtype: np.dtype  # as h5py reads it
    layout: str  # "contiguous", "chunked", or "h5py" (compact and 0-d datasets: small, never filtered)
    direct: bool  # the stored bytes are the values (else h5py reads them, after the chunk check)
    element_size: int  # bytes per element on disk
    fill: Any  # the value of unallocated elements; stands in for a chunk that does not decode (None for objects)
    contiguous_offset: int | None  # contiguous: where the data starts; None: never allocated (all fill)
    chunk_shape: tuple[int, ...] | None
    filters: tuple[int, ...]  # the pipeline's filter ids, in the order they were applied when writing
    table: ChunkTable | None
    # The sorted axis-0 grid indices of the stored chunks; [] when nothing is allocated; None when all rows hold data.
    rows_stored: list[int] | None = None
    # For a variable-length string or sequence: (bytes of a heap address, bytes per item in memory). Each element is
    # stored as its length and a heap ID, and HDF5 allocates what the length says before it reads the heap object:
    # the lengths are checked first (`vlen_problem`).
    vlen: tuple[int, int] | None = None


class StoredType(NamedTuple):
    """What a plan needs of a dataset's HDF5 type: the same for every dataset of that type in a file."""

    element_size: int  # bytes per element on disk
    direct: bool  # the stored bytes are the values
    vlen: tuple[int, int] | None  # see DirectPlan.vlen


def stored_type(ftype: Any, dtype: np.dtype, sizeof_addr: int) -> StoredType:
    """The plan's facts of the HDF5 type `ftype`, which h5py reads as `dtype`."""
    return StoredType(disk_size(ftype, sizeof_addr), _values_are_bytes(dtype, ftype), _vlen(ftype, dtype, sizeof_addr))


def plan(
    oid: Any,
    file_size: int | None,
    path: str,
    sizeof_addr: int | None = None,
    known: tuple[tuple[int, ...], np.dtype, StoredType | None] | None = None,
    index_source: IndexSource | None = None,
    header: int | None = None,
) -> DirectPlan:
    """How to read the dataset `oid` (its low-level id, `h5py.h5d.DatasetID`: a plan needs no high-level
    `Dataset`); `file_size` is None when the file is not local (no `pread`). `sizeof_addr`: the file's address
    size in bytes, when known (else read from the file's creation properties); `known`: its shape and dtype (as
    h5py reads them) and its type's facts (None: read here), when already read. `index_source`: the file's
    ranges, from which a chunk index is read a B-tree level at a time (`btree`: over a URL not a node per
    round trip, and never an index HDF5 would walk without end); `header`: the address of the dataset's object
    header (without it HDF5 reads the index).

    Raises Unreadable for data stored outside the file, NotDecoded for a filter off the allow-list, NodeError for a
    chunk index that is not a tree.
    """
    dcpl = oid.get_create_plist()
    if dcpl.get_layout() == h5py.h5d.VIRTUAL or dcpl.get_external_count() > 0:
        raise Unreadable(f"{path}: its data is stored outside the file (external storage / virtual dataset); not read")
    shape, dtype, type_facts = known if known is not None else (tuple(int(n) for n in oid.shape), oid.dtype, None)
    if h5py.check_ref_dtype(dtype) is not None:
        # h5py reads references as objects of its own: neither values a kernel compares nor anything a report (or a
        # process boundary: --timeout, Dask) can carry.
        raise NotDecoded(f"{path}: not decoded: its elements are HDF5 references, not values")
    if type_facts is None:
        if sizeof_addr is None:
            sizeof_addr = address_size(h5py.h5i.get_file_id(oid))
        type_facts = stored_type(oid.get_type(), dtype, sizeof_addr)
    element_size, direct, vlen = type_facts
    fill = None if dtype.hasobject else _fill(dcpl, dtype)
    layout = dcpl.get_layout()
    if layout == h5py.h5d.CHUNKED:
        filters = tuple(int(dcpl.get_filter(i)[0]) for i in range(dcpl.get_nfilters()))
        for f in filters:
            if f not in DECODABLE_FILTERS:
                name = OTHER_FILTERS.get(f, "a plugin filter")
                raise NotDecoded(
                    f"{path}: not decoded: HDF5 filter {name} (id {f}) is not on the allow-list "
                    f"({', '.join(DECODABLE_FILTERS.values())})"
                )
        chunk_shape = tuple(int(c) for c in dcpl.get_chunk())
        table = _chunk_table(oid, shape, chunk_shape, file_size, path, index_source, header)
        per_row = math.prod(-(-int(n) // c) for n, c in zip(shape[1:], chunk_shape[1:], strict=False))
        stored = sorted({int(i) for i in np.unique(table.linear // max(1, per_row))}) if shape else None
        return DirectPlan(
            path, shape, dtype, "chunked", direct, element_size, fill, None, chunk_shape, filters, table, stored, vlen
        )
    if layout == h5py.h5d.CONTIGUOUS and shape:
        return contiguous_plan(path, shape, dtype, type_facts, fill, oid.get_offset(), file_size)
    if shape and math.prod(shape) * element_size > file_size_or(file_size):
        raise NodeError(
            f"{path}: declares {math.prod(shape)} elements in a {layout_name(layout)} layout, more than the file holds"
        )
    return DirectPlan(path, shape, dtype, "h5py", direct, element_size, fill, None, None, (), None)


def contiguous_plan(
    path: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    stored: StoredType,
    fill: Any,
    offset: int | None,
    file_size: int | None,
) -> DirectPlan:
    """The plan of a contiguous dataset of at least one dimension, from its facts: `offset` is where its data starts
    (None: never allocated, all fill)."""
    nbytes = math.prod(shape) * stored.element_size
    if offset is not None and file_size is not None and offset + nbytes > file_size:
        raise NodeError(f"{path}: the file ends inside this dataset's data (truncated file)")
    return DirectPlan(
        path,
        shape,
        dtype,
        "contiguous",
        stored.direct,
        stored.element_size,
        fill,
        None if offset is None else int(offset),
        None,
        (),
        None,
        [] if offset is None else None,
        stored.vlen,
    )


def address_size(file_id: Any) -> int:
    """The size in bytes of a file address in this HDF5 file (a variable-length element stores one)."""
    return int(file_id.get_create_plist().get_sizes()[0])


def _vlen(ftype: Any, dtype: np.dtype, sizeof_addr: int) -> tuple[int, int] | None:
    """(heap address bytes, bytes per item) for a variable-length string or sequence type, else None."""
    if isinstance(ftype, h5py.h5t.TypeStringID) and ftype.is_variable_str():
        return sizeof_addr, 1
    if isinstance(ftype, h5py.h5t.TypeVlenID):
        base = h5py.check_vlen_dtype(dtype)
        return sizeof_addr, max(1, base.itemsize if base is not None else int(ftype.get_super().get_size()))
    return None


# Why the library must not read the global heap collection at an address (`global_heap.GlobalHeaps.collection_problem`).
HeapCheck = Callable[[int], "str | None"]


def vlen_problem(stored: bytes | np.ndarray, vlen: tuple[int, int], where: str, heaps: HeapCheck | None = None) -> str | None:
    """Why HDF5 must not read these stored variable-length elements (each a 4-byte length and a heap ID), or None:
    one declares more than MAX_VARIABLE_BYTES, or together more than MAX_BLOCK_BYTES (corrupt lengths: HDF5 would
    allocate them before finding the heap object short); or, where `heaps` is given, one lies in a damaged global
    heap collection (the library would loop forever walking it: `global_heap`)."""
    sizeof_addr, item = vlen
    record = np.dtype([("length", "<u4"), ("heap", f"V{sizeof_addr + 4}")])
    data = np.frombuffer(stored, dtype=np.uint8)
    records = data[: data.size // record.itemsize * record.itemsize].view(record)
    lengths = records["length"].astype(np.int64) * item
    if not lengths.size:
        return None
    largest, total = int(lengths.max()), int(lengths.sum())
    if largest > decode.MAX_VARIABLE_BYTES:
        return f"{where}: an element declares {largest} bytes, more than the {decode.MAX_VARIABLE_BYTES} read for one"
    if total > MAX_BLOCK_BYTES:
        return f"{where}: its elements declare {total} bytes, more than the {MAX_BLOCK_BYTES} read at once"
    if heaps is not None and sizeof_addr in (2, 4, 8):
        heap_ids = records["heap"][lengths > 0].view(np.uint8).reshape(-1, sizeof_addr + 4)
        addresses = np.unique(heap_ids[:, :sizeof_addr].copy().view(f"<u{sizeof_addr}").reshape(-1))
        for address in addresses.tolist():
            problem = heaps(address)
            if problem is not None:
                return f"{where}: an element lies in {problem.removeprefix('its ')}"
    return None


def stored_rows(plan: DirectPlan) -> list[int] | None:
    """The axis-0 chunk indices holding stored data ([] when nothing is allocated), or None when every row does."""
    return plan.rows_stored


def file_size_or(file_size: int | None) -> int:
    return file_size if file_size is not None else 1 << 62


def layout_name(layout: int) -> str:
    return {h5py.h5d.COMPACT: "compact", h5py.h5d.CONTIGUOUS: "contiguous"}.get(layout, f"layout {layout}")


def disk_size(tid: Any, sizeof_addr: int) -> int:
    """Bytes one element of type `tid` takes in the file (a dataset's type reports its size in memory).

    A variable-length string or sequence is stored as its length (4 bytes) and a global heap ID (an address and
    a 4-byte index); compound and array types grow by what their variable-length members grow.
    """
    size = int(tid.get_size())
    if isinstance(tid, h5py.h5t.TypeVlenID) or (isinstance(tid, h5py.h5t.TypeStringID) and tid.is_variable_str()):
        return 4 + sizeof_addr + 4
    if isinstance(tid, h5py.h5t.TypeCompoundID):
        return size + sum(
            disk_size(t, sizeof_addr) - int(t.get_size()) for t in (tid.get_member_type(i) for i in range(tid.get_nmembers()))
        )
    if isinstance(tid, h5py.h5t.TypeArrayID):
        inner = tid.get_super()
        return size + math.prod(tid.get_array_dims()) * (disk_size(inner, sizeof_addr) - int(inner.get_size()))
    return size


def _values_are_bytes(dtype: np.dtype, ftype: Any) -> bool:
    """True when h5py reads the stored bytes unchanged: no conversion between the file type and numpy's."""
    if dtype.hasobject or ftype.get_size() != dtype.itemsize:
        return False
    try:
        memory = memory_type(dtype)
        if ftype.equal(memory):
            return True
        # An enum is stored as its base integer, which is what h5py reads it as.
        return isinstance(ftype, h5py.h5t.TypeEnumID) and ftype.get_super().equal(memory)
    except Exception:  # a type h5py cannot map back: let h5py convert it
        return False


# h5py's memory type for a plain numeric or boolean dtype, built once: h5py builds an HDF5 enum for a bool each
# time, most of the cost of reading an AnnData categorical's `ordered`.
_MEMORY_TYPES: dict[np.dtype, Any] = {}


def memory_type(dtype: np.dtype) -> Any:
    """The HDF5 memory type h5py reads `dtype` with (`h5py.h5t.py_create`)."""
    if dtype.kind not in "biufc" or dtype.metadata is not None or dtype.fields is not None:
        return h5py.h5t.py_create(dtype)  # dtypes that compare equal while h5py maps them apart
    htype = _MEMORY_TYPES.get(dtype)
    if htype is None:
        htype = _MEMORY_TYPES[dtype] = h5py.h5t.py_create(dtype)
    return htype


def _fill(dcpl: Any, dtype: np.dtype) -> Any:
    """The dataset's fill value, as h5py's `Dataset.fillvalue` reads it from the creation properties `dcpl`."""
    try:
        value = np.zeros((1,), dtype=dtype)
        dcpl.get_fill_value(value)
        return value[0]
    except Exception:  # no usable fill value: HDF5 reads zeros
        return np.zeros((), dtype=dtype)[()]


def _chunk_table(
    oid: Any,
    shape: tuple[int, ...],
    chunk_shape: tuple[int, ...],
    file_size: int | None,
    path: str,
    index_source: IndexSource | None = None,
    header: int | None = None,
) -> ChunkTable:
    grid = tuple(-(-int(n) // c) for n, c in zip(shape, chunk_shape, strict=False))
    if math.prod(grid) >= 2**62:
        raise NotDecoded(f"{path}: not decoded: a chunk grid of {grid} chunks is too large to index")
    found: list[tuple[int, int, int, int]] = []

    def record(offset: tuple[int, ...], address: int, size: int, mask: int) -> None:
        index = tuple(o // c for o, c in zip(offset, chunk_shape, strict=False))
        if all(0 <= i < g for i, g in zip(index, grid, strict=False)):
            found.append((linear_index(index, grid), int(address), int(size), int(mask)))

    records: list[btree.ChunkRecord] | ByCoordinate | None = None
    if index_source is not None and header is not None:
        records = _index_records(oid, index_source, header, len(shape), math.prod(grid), path)
    if isinstance(records, ByCoordinate):
        _look_up(oid, grid, chunk_shape, records.claimed, path, record)
    elif records is not None:
        for offset, address, size, mask in records:
            record(offset, address, size, mask)
    elif hasattr(oid, "chunk_iter"):
        oid.chunk_iter(lambda info: record(info.chunk_offset, info.byte_offset, info.size, info.filter_mask))
    else:
        for j in range(oid.get_num_chunks()):
            info = oid.get_chunk_info(j)
            record(info.chunk_offset, info.byte_offset, info.size, info.filter_mask)
    found.sort()
    table = np.array(found, dtype=np.int64).reshape(-1, 4)
    if file_size is not None and len(table) and int((table[:, 1] + table[:, 2]).max()) > file_size:
        raise NodeError(f"{path}: a chunk lies past the end of the file (truncated file)")
    return ChunkTable(table[:, 0].copy(), table[:, 1].copy(), table[:, 2].copy(), table[:, 3].copy())


# The library iterates an extensible array element by element up to the largest index ever set (about 30 ns each):
# an array claiming more than the dataset's chunk grid, and more than this, has its chunks looked up one by one in
# the grid instead (about 2 us each), up to MOST_LOOKUPS of them.
MOST_ITERATED = 2**24
MOST_LOOKUPS = 2**20


class ByCoordinate(NamedTuple):
    """A chunk index the library must not iterate (an extensible array claiming `claimed` elements, past the grid):
    each chunk of the grid is looked up by its coordinates instead."""

    claimed: int


def _index_records(
    oid: Any, source: IndexSource, header: int, rank: int, most_chunks: int, path: str
) -> list[btree.ChunkRecord] | ByCoordinate | None:
    """A remote file's chunk index read from its bytes a B-tree level at a time; None where HDF5 lists the chunks
    instead: a local file's (the library's `chunk_iter` is faster than this reader, once the index is checked to be
    a tree), or an index not read here. NodeError for an index that is not a tree, which the library must not walk;
    ByCoordinate for an extensible array the library would iterate past the grid (`chunk_index`).

    (Not `h5o.get_info(oid).addr` for the header's address: h5py's get_info also sizes the object's metadata,
    which for a chunked dataset is a walk of its whole chunk index, the reads this is here to save.)"""
    creation = h5py.h5i.get_file_id(oid).get_create_plist()
    sizeof_addr, sizeof_size = (int(n) for n in creation.get_sizes())
    base = int(creation.get_userblock())  # a file's addresses count from its superblock, after any user block
    local = isinstance(source, LocalRanges)
    try:
        records = btree.chunk_records(
            source.read, header, source.size, sizeof_addr, sizeof_size, rank, most_chunks, base, entries=not local
        )
    except btree.Damaged as exc:
        raise NodeError(f"{path}: {btree.never_ends('its chunk index', exc)}; not read") from None
    if records is not None:
        return None if local else records
    # Not a version 1 B-tree: the latest format's indexes that the library would walk without end are checked first.
    try:
        reader = btree.Reader(source.read, source.size, sizeof_addr, sizeof_size, base)
        index = chunk_index.latest_index(reader, reader.layout_message(header + base) or b"")
        if index is None or index.address is None:
            return None
        if index.kind == chunk_index.BTREE2:
            btree2.check(reader, index.address)
            return None
        claimed = chunk_index.extensible_array_elements(reader, index.address)
    except btree.Damaged as exc:
        raise NodeError(f"{path}: {btree2.damaged('its chunk index', exc)}; not read") from None
    except (btree.Unexpected, struct.error, IndexError, ValueError):
        return None  # bytes not as this reader takes them: the library's to read or refuse
    return ByCoordinate(claimed) if claimed > max(most_chunks, MOST_ITERATED) else None


def _look_up(
    oid: Any, grid: tuple[int, ...], chunk_shape: tuple[int, ...], claimed: int, path: str, record: Callable[..., None]
) -> None:
    """`record` each stored chunk of the grid, looked up by its coordinates (the library finds each in a few steps)."""
    if math.prod(grid) > MOST_LOOKUPS:
        raise NodeError(
            f"{path}: its chunk index (an extensible array) claims {claimed} chunks, more than its grid of "
            f"{math.prod(grid)} holds, and that grid is too large to look each chunk up in; not read"
        )
    for index in itertools.product(*(range(g) for g in grid)):
        info = oid.get_chunk_info_by_coord(tuple(i * c for i, c in zip(index, chunk_shape, strict=False)))
        if info.byte_offset is not None:
            record(info.chunk_offset, info.byte_offset, info.size, info.filter_mask)


# --- reading ------------------------------------------------------------------------------------------------


def read_block(
    dataset: Callable[[], h5py.Dataset],
    fd: int | None,
    plan: DirectPlan,
    rows: tuple[int, int],
    remote: RangeSource | None = None,
    fetched: Fetched | None = None,
    heaps: HeapCheck | None = None,
) -> Block:
    """Rows [start, stop) of the dataset, flattened in C order, with every stored chunk read for them.

    `dataset` opens the h5py dataset (each call may open it again: pass a cached opener), called only where h5py
    reads (types it converts, layouts read through it, a file that is neither local nor remote): bytes read
    directly need no open dataset. `fd` is a read-only descriptor of the local file; else `remote` fetches the
    block's chunks together (or `fetched` holds them, as `fetch_ahead` started them); else chunks are read through
    h5py. A chunk that does not decode is listed with its problem, its elements the fill value (None for object
    datasets). `heaps`: the check of a global heap collection, made before variable-length elements are read.
    """
    shape = plan.shape
    if plan.layout == "h5py" or not shape:
        if shape:
            check_block_size(plan.path, shape, rows, element_bytes(plan.dtype, plan.element_size))
        values = _h5py(dataset(), () if not shape else (slice(rows[0], rows[1]),), plan.path)
        return Block(rows[0] * _row_elements(shape) if shape else 0, values.reshape(-1))
    start, stop = max(0, rows[0]), min(rows[1], shape[0])
    flat_start = start * _row_elements(shape)
    if (
        stop > start
        and plan.rows_stored is not None
        and not stored_in(plan.rows_stored, (plan.chunk_shape or (1,))[0], (start, stop))
    ):
        # Nothing stored in these rows: the fill value, as a view, whatever their number.
        fill = (
            plan.fill
            if plan.direct
            else _h5py(dataset(), (slice(start, start + 1),) + (slice(0, 1),) * (len(shape) - 1), plan.path).reshape(-1)[0]
        )
        return uniform_block(flat_start, fill, plan.dtype, (stop - start) * _row_elements(shape))
    check_block_size(plan.path, shape, (start, stop), element_bytes(plan.dtype, plan.element_size))
    if plan.layout == "contiguous":
        return Block(flat_start, _contiguous(dataset, fd, plan, start, stop, heaps, remote).reshape(-1))
    out = np.empty((max(0, stop - start),) + shape[1:], dtype=plan.dtype)
    if not out.size:
        return Block(flat_start, out.reshape(-1))
    chunks = plan.chunk_shape
    assert chunks is not None and plan.table is not None
    grid, axes = _block_grid(shape, chunks, start, stop)
    check_chunk_count(plan.path, (start, stop), math.prod(len(a) for a in axes))
    if fetched is not None:
        chunks_read = fetched()
    elif fd is None and remote is not None:
        chunks_read = _fetch_chunks(plan, remote, axes, grid)
    else:
        chunks_read = {}
    reads: list[ChunkRead] = []
    for index in itertools.product(*axes):
        lo = [i * c for i, c in zip(index, chunks, strict=False)]
        hi = [min(low + c, n) for low, c, n in zip(lo, chunks, shape, strict=False)]
        lo[0], hi[0] = max(lo[0], start), min(hi[0], stop)
        region = tuple(slice(low, high) for low, high in zip(lo, hi, strict=False))
        target = out[(slice(lo[0] - start, hi[0] - start),) + region[1:]]
        inside = tuple(slice(low - i * c, high - i * c) for low, high, i, c in zip(lo, hi, index, chunks, strict=False))
        at = plan.table.find(linear_index(index, grid))
        if at is None:  # never written: the fill value, which h5py knows for the types it converts
            target[...] = plan.fill if plan.direct else _h5py(dataset(), region, plan.path)
            continue
        key = ".".join(str(i) for i in index)
        problem = _read_chunk(dataset, fd, plan, at, index, key, target, inside, region, chunks_read.get(at), heaps)
        reads.append(ChunkRead(key, problem))
    return Block(flat_start, out.reshape(-1), tuple(reads))


def _block_grid(shape: tuple[int, ...], chunks: tuple[int, ...], start: int, stop: int) -> tuple[tuple[int, ...], list[range]]:
    """(the dataset's chunk grid, the chunk indices along each axis that rows [start, stop) span)."""
    grid = tuple(-(-n // c) for n, c in zip(shape, chunks, strict=False))
    return grid, [range(start // chunks[0], (stop - 1) // chunks[0] + 1)] + [range(g) for g in grid[1:]]


def _fetch_chunks(plan: DirectPlan, remote: RangeSource, axes: list[range], grid: tuple[int, ...]) -> dict[int, memoryview]:
    """The stored bytes of the block's chunks, by their place in the chunk table, fetched in one batch; a chunk
    storing more than its filters can make of it is left out (refused unread, as locally)."""
    return _fetch_chunks_soon(plan, remote, axes, grid)()


# The stored bytes of a block's chunks, by their place in the chunk table, fetched while the caller went on: a call
# waits for them (`fetch_ahead`).
Fetched = Callable[[], dict[int, memoryview]]


def _fetch_chunks_soon(plan: DirectPlan, remote: RangeSource, axes: list[range], grid: tuple[int, ...]) -> Fetched:
    table = plan.table
    assert table is not None and plan.chunk_shape is not None
    wanted: list[int] = []
    for index in itertools.product(*axes):
        at = table.find(linear_index(index, grid))
        if at is not None and int(table.sizes[at]) <= _chunk_codec(plan, at)[1].stored_limit:
            wanted.append(at)
    pending = remote.read_soon([(int(table.offsets[at]), int(table.sizes[at])) for at in wanted])
    return lambda: dict(zip(wanted, pending(), strict=True))


def fetch_ahead(plan: DirectPlan, remote: RangeSource | None, rows: tuple[int, int]) -> Fetched | None:
    """Start fetching the chunks `read_block(rows)` reads from a remote file, without waiting (a scan fetches the
    next blocks while it decodes this one); None where nothing is started (a local file, a layout not read
    directly, rows that store nothing, a block too large to read: `read_block` meets each as it would)."""
    shape, chunks = plan.shape, plan.chunk_shape
    if remote is None or plan.layout != "chunked" or not shape or chunks is None or plan.table is None:
        return None
    start, stop = max(0, rows[0]), min(rows[1], shape[0])
    if stop <= start or (plan.rows_stored is not None and not stored_in(plan.rows_stored, chunks[0], (start, stop))):
        return None
    grid, axes = _block_grid(shape, chunks, start, stop)
    if math.prod(len(a) for a in axes) > MAX_CHUNKS_PER_BLOCK:
        return None
    return _fetch_chunks_soon(plan, remote, axes, grid)


def _row_elements(shape: tuple[int, ...]) -> int:
    return math.prod(shape[1:]) if len(shape) > 1 else 1


def _read_chunk(
    dataset: Callable[[], h5py.Dataset],
    fd: int | None,
    plan: DirectPlan,
    at: int,
    index: tuple[int, ...],
    key: str,
    target: np.ndarray,
    inside: tuple[slice, ...],
    region: tuple[slice, ...],
    fetched: memoryview | None = None,
    heaps: HeapCheck | None = None,
) -> str | None:
    """Fill `target` from one stored chunk (its bytes `fetched` already, when given); its problem, or None when it
    decoded to exactly one chunk."""
    table = plan.table
    assert table is not None
    where = f"{plan.path}: chunk {key}"
    active, codec = _chunk_codec(plan, at)
    size, offset = int(table.sizes[at]), int(table.offsets[at])
    try:
        if size > codec.stored_limit:
            raise ChunkError(
                f"{where} stores {size} bytes, more than its filters make of {codec.nbytes} ({codec.stored_limit} at most)"
            )
        if not active and size != codec.nbytes:
            raise ChunkError(f"{where} stores {size} bytes, expected {codec.nbytes}")
        whole = plan.direct and target.shape == codec.shape and target.flags.c_contiguous
        if whole and not active and fd is not None:
            _pread_into(fd, memoryview(target.reshape(-1).view(np.uint8)), offset, plan.path)
            return None
        raw = fetched if fetched is not None else _raw_chunk(dataset, fd, offset, size, index, plan)
        if whole:
            decode.decode_chunk(codec, raw, where, target.reshape(-1).view(np.uint8))
        elif plan.direct:
            target[...] = decode.decode_chunk(codec, raw, where)[inside]
        else:
            decoded = decode.decode_chunk(codec, raw, where)  # the check: exactly one chunk, bounded
            problem = vlen_problem(decoded, plan.vlen, where, heaps) if plan.vlen is not None else None
            if problem is not None:
                raise ChunkError(problem)
            target[...] = _h5py(dataset(), region, plan.path)  # h5py decodes it again
    except ChunkError as exc:
        target[...] = plan.fill
        return str(exc)
    return None


def _chunk_codec(plan: DirectPlan, at: int) -> tuple[tuple[int, ...], ChunkCodec]:
    """The filters active on the chunk at `at` of the plan's table (its mask may skip some), and its decoding."""
    assert plan.table is not None and plan.chunk_shape is not None
    active = tuple(f for j, f in enumerate(plan.filters) if not int(plan.table.masks[at]) >> j & 1)
    return active, _codec(active, plan.dtype, plan.chunk_shape, plan.element_size)


@functools.lru_cache(maxsize=256)
def _codec(filters: tuple[int, ...], dtype: np.dtype, chunk_shape: tuple[int, ...], element_size: int) -> ChunkCodec:
    """The decoding of one chunk with the filters `filters` active (the same for most chunks of a dataset)."""
    return decode.hdf5_codec(filters, dtype, chunk_shape, element_size, "an HDF5 chunk")


def _raw_chunk(
    dataset: Callable[[], h5py.Dataset], fd: int | None, offset: int, size: int, index: tuple[int, ...], plan: DirectPlan
) -> bytes:
    """A chunk's stored bytes, as HDF5's chunk index places them."""
    if fd is not None:
        raw = os.pread(fd, size, offset)
        if len(raw) != size:
            raise NodeError(f"{plan.path}: the file ends inside this dataset's data (truncated file)")
        return raw
    assert plan.chunk_shape is not None
    try:
        _, raw = dataset().id.read_direct_chunk(tuple(i * c for i, c in zip(index, plan.chunk_shape, strict=False)))
    except Exception as exc:
        raise NodeError(f"{plan.path}: cannot read chunk {'.'.join(map(str, index))} ({type(exc).__name__}: {exc})") from None
    return raw


def _contiguous(
    dataset: Callable[[], h5py.Dataset],
    fd: int | None,
    plan: DirectPlan,
    start: int,
    stop: int,
    heaps: HeapCheck | None = None,
    remote: RangeSource | None = None,
) -> np.ndarray:
    """Rows [start, stop) of a contiguous dataset: by offset when the bytes are the values, else through h5py (the
    stored lengths and heap addresses of variable-length elements checked first, from the local or remote file)."""
    out = np.empty((max(0, stop - start),) + plan.shape[1:], dtype=plan.dtype)
    if not out.size:
        return out
    if plan.contiguous_offset is None:  # never written
        if plan.direct:
            out[...] = plan.fill
            return out
        return _h5py(dataset(), (slice(start, stop),), plan.path)
    row = _row_elements(plan.shape) * plan.element_size
    if plan.vlen is not None and (fd is not None or remote is not None):  # the stored lengths first: HDF5 allocates
        # what they say, and walks the global heap collections they point into
        at, length = plan.contiguous_offset + start * row, (stop - start) * row
        stored = os.pread(fd, length, at) if fd is not None else bytes(remote.read([(at, length)])[0])  # type: ignore[union-attr]
        problem = vlen_problem(stored, plan.vlen, plan.path, heaps)
        if problem is not None:
            raise NodeError(f"{problem}; not read")
    if not plan.direct or fd is None:  # no filters on contiguous data: h5py reads what is stored, bounded
        return _h5py(dataset(), (slice(start, stop),), plan.path)
    _pread_into(fd, memoryview(out.reshape(-1).view(np.uint8)), plan.contiguous_offset + start * row, plan.path)
    return out


def _pread_into(fd: int, target: memoryview, offset: int, path: str) -> None:
    done = 0
    while done < len(target):
        n = os.preadv(fd, [target[done:]], offset + done)
        if n <= 0:
            raise NodeError(f"{path}: the file ends inside this dataset's data (truncated file)")
        done += n


def _h5py(ds: h5py.Dataset, region: tuple[slice, ...], path: str) -> np.ndarray:
    try:
        return np.asarray(ds[region] if region else ds[()])
    except Exception as exc:
        raise NodeError(f"{path}: cannot read data ({type(exc).__name__}: {exc})") from None
