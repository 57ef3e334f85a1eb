"""Read 1-D numeric HDF5 datasets straight from the file: stored chunks by offset, decoded here.

h5py serialises every call on one lock and runs HDF5's filters under it, so threads cannot overlap reads
through it. For the layouts that dominate real files (contiguous, or chunked with no filter, deflate and/or
shuffle), the byte offsets HDF5 records are enough: `os.preadv` reads into the block's own buffer and
zlib inflates with the GIL released, so blocks are read and decoded in parallel and with no copy through
HDF5's type conversion. Anything else (other filters, external or virtual storage, unallocated chunks,
N-D datasets) returns no plan and the caller reads through h5py.

Only offsets HDF5 reports for this dataset are read, each checked to lie inside the file, read-only.
"""

from __future__ import annotations

import os
import zlib
from typing import NamedTuple

import h5py
import numpy as np

from validator.nodes.base import NodeError

DEFLATE, SHUFFLE = 1, 2
DECODABLE_FILTERS = {DEFLATE, SHUFFLE}


class ChunkTable(NamedTuple):
    """Where each stored chunk of a 1-D chunked dataset lies, in chunk order."""

    chunk_len: int
    offsets: np.ndarray  # byte offset of chunk i in the file
    sizes: np.ndarray  # stored (filtered) size in bytes
    masks: np.ndarray  # HDF5 filter mask: bit j set = filter j of the pipeline skipped for this chunk
    filters: tuple[int, ...]  # filter ids of the pipeline, in the order they were applied when writing


class DirectPlan(NamedTuple):
    """How to read a dataset's bytes without HDF5: a contiguous offset, or a chunk table."""

    dtype: np.dtype
    length: int
    contiguous_offset: int | None
    chunks: ChunkTable | None


def plan(ds: h5py.Dataset, file_size: int) -> DirectPlan | None:
    """A plan for reading `ds` directly, or None when it must be read through h5py."""
    try:
        if ds.ndim != 1 or ds.dtype.kind not in "biuf" or ds.dtype.fields is not None or ds.dtype.subdtype is not None:
            return None
        dcpl = ds.id.get_create_plist()
        if dcpl.get_external_count() or getattr(ds, "is_virtual", False):
            return None
        layout = dcpl.get_layout()
        length = int(ds.shape[0])
        if layout == h5py.h5d.CONTIGUOUS:
            if dcpl.get_nfilters():
                return None
            offset = ds.id.get_offset()
            if offset is None or offset + length * ds.dtype.itemsize > file_size:
                return None
            return DirectPlan(ds.dtype, length, int(offset), None)
        if layout == h5py.h5d.CHUNKED:
            filters = tuple(dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters()))
            if not set(filters) <= DECODABLE_FILTERS:
                return None
            table = _chunk_table(ds, filters, file_size)
            return None if table is None else DirectPlan(ds.dtype, length, None, table)
    except Exception:  # an unusual dataset h5py cannot describe: the h5py path reports what is wrong with it
        return None
    return None


def _chunk_table(ds: h5py.Dataset, filters: tuple[int, ...], file_size: int) -> ChunkTable | None:
    chunk_len = int(ds.chunks[0])
    count = -(-int(ds.shape[0]) // chunk_len)
    offsets = np.full(count, -1, dtype=np.int64)
    sizes = np.zeros(count, dtype=np.int64)
    masks = np.zeros(count, dtype=np.int64)

    def record(info: h5py.h5d.StoreInfo) -> None:
        i = info.chunk_offset[0] // chunk_len
        if 0 <= i < count:
            offsets[i], sizes[i], masks[i] = info.byte_offset, info.size, info.filter_mask

    if hasattr(ds.id, "chunk_iter"):
        ds.id.chunk_iter(record)
    else:
        for j in range(ds.id.get_num_chunks()):
            record(ds.id.get_chunk_info(j))
    # An unallocated chunk reads as the fill value; h5py knows it, so such datasets take the h5py path.
    if count and (offsets.min() < 0 or int((offsets + sizes).max()) > file_size):
        return None
    return ChunkTable(chunk_len, offsets, sizes, masks, filters)


def read_rows(fd: int, plan: DirectPlan, start: int, stop: int, path: str) -> np.ndarray:
    """Elements [start, stop) of the dataset, read and decoded outside HDF5."""
    itemsize = plan.dtype.itemsize
    out = np.empty(stop - start, dtype=plan.dtype)
    view = memoryview(out).cast("B")
    if plan.contiguous_offset is not None:
        _pread_into(fd, view, plan.contiguous_offset + start * itemsize, path)
        return out
    table = plan.chunks
    assert table is not None
    first, last = start // table.chunk_len, (stop - 1) // table.chunk_len
    for i in range(first, last + 1):
        lo = max(start, i * table.chunk_len)
        hi = min(stop, (i + 1) * table.chunk_len)
        target = view[(lo - start) * itemsize:(hi - start) * itemsize]
        skip = (lo - i * table.chunk_len) * itemsize
        active = tuple(f for j, f in enumerate(table.filters) if not table.masks[i] >> j & 1)
        if not active:
            if table.sizes[i] != table.chunk_len * itemsize:
                raise NodeError(f"{path}: chunk {i} stores {table.sizes[i]} bytes, expected {table.chunk_len * itemsize}")
            _pread_into(fd, target, int(table.offsets[i]) + skip, path)
            continue
        raw = os.pread(fd, int(table.sizes[i]), int(table.offsets[i]))
        decoded = _decode(raw, active, itemsize, table.chunk_len, path, i)
        target[:] = decoded[skip:skip + len(target)]
    return out


def _pread_into(fd: int, target: memoryview, offset: int, path: str) -> None:
    done = 0
    while done < len(target):
        n = os.preadv(fd, [target[done:]], offset + done)
        if n <= 0:
            raise NodeError(f"{path}: the file ends inside this dataset's data (truncated file)")
        done += n


def _decode(raw: bytes, filters: tuple[int, ...], itemsize: int, chunk_len: int, path: str, index: int) -> bytes:
    """Undo the pipeline: filters were applied in order when writing, so they are undone in reverse."""
    data = raw
    for f in reversed(filters):
        if f == DEFLATE:
            try:
                data = zlib.decompress(data)
            except zlib.error as exc:
                raise NodeError(f"{path}: chunk {index} does not inflate ({exc})") from None
        elif f == SHUFFLE and itemsize > 1:
            data = _unshuffle(data, itemsize)
    if len(data) != chunk_len * itemsize:
        raise NodeError(f"{path}: chunk {index} decodes to {len(data)} bytes, expected {chunk_len * itemsize}")
    return data


def _unshuffle(data: bytes, itemsize: int) -> bytes:
    """HDF5's shuffle stores byte 0 of every element, then byte 1, ...; a trailing remainder is left as is."""
    n = len(data) // itemsize
    body = np.frombuffer(data, dtype=np.uint8, count=n * itemsize).reshape(itemsize, n).T.tobytes()
    return body + data[n * itemsize:]
