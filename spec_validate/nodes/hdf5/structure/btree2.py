"""A version 2 B-tree checked to be a tree before the HDF5 library iterates it.

The latest HDF5 format (and h5py's `track_order=True`) indexes a group's links, or an object's attributes, past eight
with version 2 B-trees (by name, and by creation order where it is tracked), and the chunks of a dataset with two or
more unlimited dimensions with one too. The library iterates such a tree by recursion from its root, every child of
every internal node in turn, trusting the depth the header claims and never remembering which nodes it has been
through. A node named by its parent as several children, or by several parents, is walked once for each naming: a
few kilobytes of internal nodes, each naming the one below it as all its children, make the walk exponential in the
depth (five levels of 13 children each made listing one group of 600 links yield 14 million names, 2.7 GB; six took
11 GB in 30 seconds and went on). A node that names an ancestor is refused by the library's metadata cache (it is
still in use), so cycles are not the danger; sharing is. Nor does the library check a node's record count (given by
its parent) against the room in the node: it decodes that many records into a buffer sized for the most that fit.

So before the library iterates such a tree, its internal nodes are walked here a level at a time from the root, each
read with the record count its parent gives it and the layout its depth gives it (as the library reads it): every
node, leaves included, must be named once, hold no more records than fit in it, and the header may claim at most
MOST_DEPTH levels. A tree of nodes each named once is finite and its walk linear. Leaves are not read (they name no
node). Anything else unexpected (a signature, a version, a type, an address past the end of the file) is left to the
library, which refuses such nodes itself (its cache checks each node's signature, type and checksum).
"""

from __future__ import annotations

from typing import NamedTuple

from spec_validate.nodes.hdf5.structure.btree import Damaged, Reader, Unexpected

# Every internal node of a version 2 B-tree has two children at least, so a tree this deep indexes 2**64 records
# or more: no file can hold one, and a header that claims it is damaged.
MOST_DEPTH = 64
# A node's signature, version and tree type before its records; its checksum after them.
_PREFIX = 6
_CHECKSUM = 4
NODE_BYTES_PER_BATCH = 8 << 20  # the bytes of internal nodes asked for at once


class _Shape(NamedTuple):
    """What reading a tree's internal nodes takes, from its header (as the library works it out)."""

    kind: int  # the tree's type (links by name, chunks, ...): every node carries it
    record_size: int
    records_width: int  # bytes of a child pointer's record count
    most_records: list[int]  # per depth: the records a node of that depth holds at most
    totals_width: list[int]  # per depth: bytes of the total records below a node of that depth (0 for leaves)


def check(reader: Reader, header: int) -> int:
    """The records the version 2 B-tree whose header is at `header` (an offset in the file) holds, counted from its
    internal nodes (their own records, and the records of each child they name); the root's records where the root
    is a leaf (nothing below it is read).

    Raises Damaged where it is not a tree the library can walk safely: a node named twice, a depth over MOST_DEPTH,
    or a node said to hold more records than a node of its depth has room for (the library decodes that many into
    a buffer sized for the most, unchecked); Unexpected where its bytes are not as this reader takes them (the
    library reads, or refuses, them itself, without looping).
    """
    size = 16 + reader.sizeof_addr + 2 + reader.sizeof_size
    (head,) = reader.fetch([(header, min(size, reader.file_size - header))])
    if len(head) < size or bytes(head[:4]) != b"BTHD" or head[4] != 0:
        raise Unexpected
    node_size = int.from_bytes(head[6:10], "little")
    record_size = int.from_bytes(head[10:12], "little")
    depth = int.from_bytes(head[12:14], "little")
    if depth > MOST_DEPTH:
        raise Damaged(f"the B-tree at byte {header} claims {depth} levels, more than any file can hold")
    root = reader.address(head, 16)
    if root is None:
        return 0
    if record_size == 0 or not _PREFIX + _CHECKSUM < node_size <= reader.file_size:
        raise Unexpected
    shape = _shape(head[5], node_size, record_size, depth, reader.sizeof_addr)
    level = [(root, int.from_bytes(head[16 + reader.sizeof_addr : 18 + reader.sizeof_addr], "little"))]
    _room(shape, level, depth)
    seen = {root}
    batch = max(1, NODE_BYTES_PER_BATCH // node_size)
    held = 0
    for at_depth in range(depth, 0, -1):
        children: list[tuple[int, int]] = []
        pointer = _pointer(shape, at_depth, reader)
        for start in range(0, len(level), batch):
            nodes = level[start : start + batch]
            ranges = [(address, _PREFIX + records * record_size + (records + 1) * pointer) for address, records in nodes]
            for (_, records), data in zip(nodes, reader.fetch(ranges), strict=True):
                if bytes(data[:4]) != b"BTIN" or data[4] != 0 or data[5] != shape.kind:
                    raise Unexpected
                held += records
                for child, child_records in _children(reader, shape, data, records, at_depth):
                    if child in seen:
                        raise Damaged(f"the node at byte {child} is named twice, a shared child or a cycle")
                    seen.add(child)
                    children.append((child, child_records))
        _room(shape, children, at_depth - 1)
        level = children
    return held + sum(records for _, records in level)


def _room(shape: _Shape, nodes: list[tuple[int, int]], depth: int) -> None:
    """Damaged where one of `nodes` (address, records), all of `depth`, is said to hold more records than fit."""
    most = shape.most_records[depth]
    for address, records in nodes:
        if records > most:
            raise Damaged(f"the node at byte {address} is said to hold {records} records, more than fit in it ({most})")


def damaged(what: str, exc: Damaged) -> str:
    """Why the index `what` (a version 2 B-tree that is not one, `exc`) is not handed to the library."""
    return f"{what} is damaged ({exc}); the HDF5 library does not guard against it"


def _shape(kind: int, node_size: int, record_size: int, depth: int, sizeof_addr: int) -> _Shape:
    """The node layout of every depth, worked out as the library works it out from the header: a leaf's records
    at most; the width of a record count (the bytes that hold a leaf's most); per internal depth, the records that
    fit beside one child pointer more than records, and the width of the records below it."""
    leaf_most = (node_size - _PREFIX - _CHECKSUM) // record_size
    records_width = _width(leaf_most)
    most, below, totals = [leaf_most], [leaf_most], [0]
    for d in range(1, depth + 1):
        pointer = sizeof_addr + records_width + totals[d - 1]
        fits = (node_size - (_PREFIX + _CHECKSUM + pointer)) // (record_size + pointer)
        most.append(max(fits, 0))
        below.append(((fits + 1) * below[d - 1] + fits) % 2**64)  # the library's count wraps as a 64-bit integer
        totals.append(_width(below[d]))
    return _Shape(kind, record_size, records_width, most, totals)


def _width(count: int) -> int:
    """The bytes the library stores a count of at most `count` in (one more than log2(count) // 8)."""
    return (max(count, 1).bit_length() - 1) // 8 + 1


def _pointer(shape: _Shape, depth: int, reader: Reader) -> int:
    """The bytes of a child pointer in a node of `depth`: the child's address, its records, and the records below
    the child (none for a leaf, whose width is 0)."""
    return reader.sizeof_addr + shape.records_width + shape.totals_width[depth - 1]


def _children(reader: Reader, shape: _Shape, data: memoryview, records: int, depth: int) -> list[tuple[int, int]]:
    """(address, records) of each child an internal node of `depth` holding `records` records names."""
    out = []
    at = _PREFIX + records * shape.record_size
    step = _pointer(shape, depth, reader)
    for _ in range(records + 1):
        child = reader.address(data, at)
        if child is None:
            raise Unexpected
        count_at = at + reader.sizeof_addr
        out.append((child, int.from_bytes(data[count_at : count_at + shape.records_width], "little")))
        at += step
    return out
