"""The chunk index a dataset of the latest HDF5 format names, read from its layout message, and what the library's
iteration over it would cost.

A version 4 (or, from HDF5 2.0 for filtered chunks, 5) layout message names one of five indexes: a single chunk, an
implicit index, a fixed array, an extensible array (one unlimited dimension) or a version 2 B-tree (two or more). The
B-tree is checked to be a tree by `btree2`. The extensible array is iterated by the library element by element,
up to the largest index its header says was ever set, whatever was stored: a header claiming 4e12 made listing a
dataset of 50 chunks loop for hours (found by hand, after the B-tree; about 30 ns an element). A fixed array's
count sizes its data block, so a false one is refused when that block is read; the other two hold a chunk or none.
"""

from __future__ import annotations

from typing import NamedTuple

from spec_validate.nodes.hdf5.structure.btree import Reader, Unexpected

LAYOUT_VERSIONS = (4, 5)  # HDF5 2.0 writes 5 for filtered chunks; up to the index's address its fields are 4's
CHUNKED = 2
EXTENSIBLE_ARRAY, BTREE2 = 4, 5
# Bytes of the index's own fields (its parameters), between its type and its address.
_INDEX_FIELDS = {EXTENSIBLE_ARRAY: 5, BTREE2: 6}


class Index(NamedTuple):
    """A latest-format chunk index: its type and its address (None: nothing stored yet)."""

    kind: int
    address: int | None


def latest_index(reader: Reader, layout: bytes) -> Index | None:
    """The chunk index a layout message (its data, `layout`) names, where it is a version 4 or 5 message of a chunked
    layout naming an extensible array or a version 2 B-tree; None for any other layout or index."""
    if len(layout) < 5 or layout[0] not in LAYOUT_VERSIONS or layout[1] != CHUNKED:
        return None
    rank, width = layout[3], layout[4]
    at = 5 + rank * width
    if len(layout) <= at or layout[at] not in _INDEX_FIELDS:
        return None
    kind = layout[at]
    at += 1 + _INDEX_FIELDS[kind]
    if len(layout) < at + reader.sizeof_addr:
        raise Unexpected
    return Index(kind, reader.address(layout, at))


def extensible_array_elements(reader: Reader, header: int) -> int:
    """The elements the library iterates over in the extensible array whose header is at `header`: one more than the
    largest index its header says was ever set (the header's "max index set")."""
    at = 12 + 4 * reader.sizeof_size  # after its fixed fields and four of its six statistics
    (head,) = reader.fetch([(header, min(at + reader.sizeof_size, reader.file_size - header))])
    if len(head) < at + reader.sizeof_size or bytes(head[:4]) != b"EAHD" or head[4] != 0:
        raise Unexpected
    return reader.length(head, at)
