"""A fractal heap's indirect blocks checked to be a tree before the HDF5 library reads an object from the heap.

Groups and objects of the latest HDF5 format keep many links, or many attributes, in "dense storage": a version 2
B-tree of names whose records point into a fractal heap. The heap's objects lie in direct blocks, reached from its
root through indirect blocks, each a table of the blocks below it. To read an object the library descends that
table from the root, block after block, until the object's offset falls in a direct block, without remembering
where it has been: an indirect block that names itself, or an ancestor, as a child sends the descent round forever
(a hang inside the library's link or attribute iteration, found while probing the latest format by hand).

So before the library lists a group's links or an object's attributes in dense storage, the heap's indirect blocks
are walked here, a level at a time from the root, each child read with the rows the library would read it with
(from its row in its parent's table): every indirect block must be named once (a block named twice, so a cycle or
a shared child, is `Damaged`). A tree of blocks each named once is finite, so every descent the library makes in it
ends. Anything else unexpected (a signature, a version, an address past the end of the file) is left to the library,
which refuses such blocks itself (its cache checks each block's type and checksum).

The heap's indexes, version 2 B-trees the library iterates by recursion, are checked first to be trees
(`btree2`): a node named twice makes that iteration exponential, a depth no file can hold is refused.
"""

from __future__ import annotations

from typing import NamedTuple

from spec_validate.nodes.hdf5.structure import btree2
from spec_validate.nodes.hdf5.structure.btree import Damaged, Reader, Unexpected

LINK_INFO_MESSAGE = 0x0002  # a group's links in dense storage: the heap of their messages, their name index
ATTRIBUTE_INFO_MESSAGE = 0x0015  # an object's attributes in dense storage, the same way
MESSAGE_KINDS = frozenset({LINK_INFO_MESSAGE, ATTRIBUTE_INFO_MESSAGE})
# A heap header's fields after its signature, version, heap ID length, filters' length, flags and largest managed
# object (14 bytes): ten lengths and two addresses, then the doubling table.
_HEADER_FIXED = 14
_INDIRECT_PREFIX = 5  # an indirect block's signature and version, before its heap header address and block offset
MOST_BLOCKS_PER_BATCH = 4096


def dense_problem(reader: Reader, messages: list[tuple[int, int, bytes]], kind: int) -> str | None:
    """Why the library must not read the dense storage the header's message of `kind` names (`LINK_INFO_MESSAGE`: a
    group's links; `ATTRIBUTE_INFO_MESSAGE`: an object's attributes): an index of it is not a tree (a node named
    twice, a depth no file can hold), or its fractal heap's indirect blocks are not one. None where neither, there is
    no such message, or the bytes are not as this reader takes them (the library reads or refuses them itself,
    without looping). `messages`: the header's (type, flags, data)."""
    what = "its links'" if kind == LINK_INFO_MESSAGE else "its attributes'"
    try:
        for found, flags, body in messages:
            if found == kind and not flags & 0x02:  # shared: not how HDF5 keeps either message
                heap, indexes = _addresses(reader, body, kind)
                problem = _index_problem(reader, indexes, what)
                if problem is not None:
                    return problem
                if heap is not None:
                    _walk(reader, heap)
        return None
    except Damaged as exc:
        return f"{what} fractal heap is damaged ({exc}): the HDF5 library's descent through it never ends"
    except (Unexpected, IndexError, ValueError):
        return None


def _addresses(reader: Reader, body: bytes, kind: int) -> tuple[int | None, list[int]]:
    """(the fractal heap's address, None where there is no heap yet; the addresses of its indexes, version 2 B-trees:
    by name, and by creation order where one is kept) in a link info or attribute info message."""
    if len(body) < 2 or body[0] != 0:
        raise Unexpected
    at = 2
    if body[1] & 0x01:  # creation order tracked: the largest creation index so far (8 bytes for links, 2 for attributes)
        at += 8 if kind == LINK_INFO_MESSAGE else 2
    size = reader.sizeof_addr
    heap = reader.address(body, at)
    named = [reader.address(body, at + size)]
    if body[1] & 0x02:  # creation order indexed
        named.append(reader.address(body, at + 2 * size))
    return heap, [a for a in named if a is not None]


def _index_problem(reader: Reader, indexes: list[int], what: str) -> str | None:
    """Why the library must not iterate one of the version 2 B-trees at `indexes` (`btree2`: a node named twice,
    a depth no file can hold); None where each is a tree, or is left to the library."""
    for index in indexes:
        try:
            btree2.check(reader, index)
        except Damaged as exc:
            return btree2.damaged(f"{what} index", exc)
        except (Unexpected, IndexError, ValueError):
            continue
    return None


class _Table(NamedTuple):
    """A fractal heap's doubling table, as its header gives it: what reading its indirect blocks takes."""

    heap: int  # the header's address
    width: int  # blocks in a row
    start_bits: int  # log2 of the first rows' block size
    width_bits: int  # log2 of (that size x width): a child's rows count from it
    direct_rows: int  # the rows of direct blocks in a full table: two of the first size, then doubling
    direct_entry: int  # a direct block's entry: its address, and a filtered block's size and filter mask
    address_bytes: int  # an indirect block's entry: its address
    prefix: int  # an indirect block's bytes before its entries
    root: int | None  # the root block's address (None: an empty heap)
    root_rows: int  # the root indirect block's rows (0: the root is a single direct block)


def _table(reader: Reader, heap: int) -> _Table:
    """The doubling table of the fractal heap whose header is at `heap` (its header read); Unexpected where the
    header is not one this reader takes."""
    lengths, addresses = reader.sizeof_size, reader.sizeof_addr
    size = _HEADER_FIXED + 10 * lengths + 2 * addresses + 2 + 2 * lengths + 2 + 2 + addresses + 2
    (head,) = reader.fetch([(heap, min(size, reader.file_size - heap))])
    if len(head) < size or bytes(head[:4]) != b"FRHP" or head[4] != 0:
        raise Unexpected
    at = _HEADER_FIXED + 10 * lengths + 2 * addresses
    width = int.from_bytes(head[at : at + 2], "little")
    start_block = reader.length(head, at + 2)
    largest_direct = reader.length(head, at + 2 + lengths)
    heap_bits = int.from_bytes(head[at + 2 + 2 * lengths : at + 4 + 2 * lengths], "little")
    at += 6 + 2 * lengths
    if not (_power_of_two(width) and _power_of_two(start_block) and _power_of_two(largest_direct)):
        # The format requires all three (the library takes their logarithms as exact): a table that is no doubling
        # table cannot be descended as the library would, so it is not handed over.
        raise Damaged(f"its table width {width}, block sizes {start_block} and {largest_direct} are not powers of two")
    if largest_direct < start_block:
        raise Unexpected
    start_bits = start_block.bit_length() - 1
    filtered = int.from_bytes(head[7:9], "little") > 0
    return _Table(
        heap=heap,
        width=width,
        start_bits=start_bits,
        width_bits=start_bits + width.bit_length() - 1,
        direct_rows=largest_direct.bit_length() - start_bits + 1,
        direct_entry=addresses + (lengths + 4 if filtered else 0),
        address_bytes=addresses,
        prefix=_INDIRECT_PREFIX + addresses + (heap_bits + 7) // 8,
        root=reader.address(head, at),
        root_rows=int.from_bytes(head[at + addresses : at + addresses + 2], "little"),
    )


def _walk(reader: Reader, heap: int) -> None:
    """Every indirect block of the fractal heap whose header is at `heap`, a level at a time; Damaged where one is
    named twice."""
    table = _table(reader, heap)
    if table.root is None or table.root_rows == 0:  # an empty heap, or a single direct block
        return
    seen = {table.root}
    level = [(table.root, table.root_rows)]
    while level:
        children: list[tuple[int, int]] = []
        for start in range(0, len(level), MOST_BLOCKS_PER_BATCH):
            batch = level[start : start + MOST_BLOCKS_PER_BATCH]
            blocks = reader.fetch([(address, _indirect_size(table, rows)) for address, rows in batch])
            for (_, rows), data in zip(batch, blocks, strict=True):
                if bytes(data[:4]) != b"FHIB" or data[4] != 0:
                    raise Unexpected
                for child in _children(reader, table, data, rows):
                    if child[0] in seen:
                        raise Damaged(f"the indirect block at byte {child[0]} is named twice, a cycle or a shared child")
                    seen.add(child[0])
                    children.append(child)
        level = children


def _indirect_size(table: _Table, rows: int) -> int:
    """An indirect block's bytes up to its checksum: its prefix, its direct entries, its indirect entries."""
    direct = min(rows, table.direct_rows)
    return table.prefix + table.width * (direct * table.direct_entry + (rows - direct) * table.address_bytes)


def _children(reader: Reader, table: _Table, data: memoryview, rows: int) -> list[tuple[int, int]]:
    """(address, rows) of each child indirect block an indirect block of `rows` rows names."""
    out: list[tuple[int, int]] = []
    first = table.prefix + min(rows, table.direct_rows) * table.width * table.direct_entry
    size = table.address_bytes
    for row in range(table.direct_rows, rows):
        # A child in this row spans a block of 2**(start_bits + row - 1) bytes: the library reads it with the rows
        # that span takes.
        child_rows = table.start_bits + row - table.width_bits
        for col in range(table.width):
            child = reader.address(data, first + ((row - table.direct_rows) * table.width + col) * size)
            if child is not None:
                if child_rows < 1:
                    raise Unexpected
                out.append((child, child_rows))
    return out


def _power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0
