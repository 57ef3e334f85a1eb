"""A chunked HDF5 dataset's chunk index read from the file's bytes, a level of its B-tree at a time.

Over a URL the HDF5 library reads a chunk index one B-tree node after another, each a round trip (and, through the
file object's cache, a 4 MiB block of the file): a dataset of 2,048 chunks, whose 33 nodes lie among its chunks,
took a second of a remote run at 20 ms a request. Read here, every node of a level is asked for together, so the
index takes as many round trips as the tree has levels (two or three).

Only the index HDF5 writes by default is read here: a version 1 B-tree, named by a version 3 layout message (h5py,
anndata, SeuratDisk and hdmf write it unless asked for the latest format). Anything else, and anything unexpected
in the bytes (a signature, an address past the end of the file), gives None: the caller then asks the HDF5 library,
whose reading of the file, or refusal, stands.

The one exception is a version 1 B-tree that is not a tree: a node named twice (a cycle, or two parents sharing a
child) or a child whose level is not one below its parent's. The HDF5 library walks such a tree by recursion, with
no guard: a node that names itself recurses until the stack overflows and the process dies (exit 139), one named
by many parents makes the walk exponential. That is `Damaged`, with its reason, and the caller must not hand the
tree to the library: so `chunk_records` raises it (and checks a local file's index that way, reading no leaf's
entries, before the library lists its chunks), and `group_problem` says it for a group's symbol table (the B-tree of
its links, which old-style groups, h5py's default, keep), before any library call lists the group.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

# (offset, size) ranges of the file -> their bytes, fetched together (remote.RangeReader.read).
ReadRanges = Callable[[list[tuple[int, int]]], list[memoryview]]
# (offset of the chunk in the dataset, in elements, per dimension; its byte address; its stored size; filter mask)
ChunkRecord = tuple[tuple[int, ...], int, int, int]

LAYOUT_MESSAGE = 0x0008
CONTINUATION_MESSAGE = 0x0010
SYMBOL_TABLE_MESSAGE = 0x0011
CHUNKED = 2
_LAYOUT = frozenset({LAYOUT_MESSAGE})
_SYMBOL_TABLE = frozenset({SYMBOL_TABLE_MESSAGE})
# The node types of version 1 B-trees: a group's links (keys: offsets of names in its local heap), a chunk index.
GROUP_NODES, CHUNK_NODES = 0, 1
# A header message's type, size and flags: version 1 headers (then 3 reserved bytes), version 2 headers.
_V1_MESSAGE = struct.Struct("<HHB")
_V2_MESSAGE = struct.Struct("<BHB")
HEADER_READ = 4096  # one request holds a dataset's object header (a few hundred bytes) whole, nearly always
MOST_CONTINUATIONS = 64
# The most bytes of one object header read here, its blocks together. HDF5 makes a block as large as the messages
# it must hold: an object given thousands of attributes in the earliest format has one continuation block of
# megabytes, all of it attribute messages (which the library reads whole when it opens the object).
MOST_HEADER_BYTES = 64 * 2**20
# HDF5 allows at most 2K entries in a node, K below 2**15; a node read as 2 * 32 entries (the library's default K)
# is read again, whole, when it holds more.
DEFAULT_ENTRIES = 64
NODES_PER_BATCH = 4096  # about 8 MiB of nodes asked for at once
MOST_ENTRIES = 2**16


class Unexpected(Exception):
    """The bytes are not what this reader takes: the HDF5 library reads them instead."""


class Damaged(Exception):
    """A structure whose walk by the HDF5 library never ends: a version 1 B-tree that is not a tree (see the module's
    docstring), or a fractal heap whose indirect blocks are not one (`fractal_heap`). Never to be handed to the
    library."""


def chunk_records(
    read: ReadRanges,
    header: int,
    file_size: int,
    sizeof_addr: int,
    sizeof_size: int,
    rank: int,
    most_chunks: int,
    base: int = 0,
    entries: bool = True,
) -> list[ChunkRecord] | None:
    """Every chunk the index of the dataset whose object header is at `header` holds, in the B-tree's order, each
    at its offset in the file (as the library's `chunk_iter` gives it); None where it is not a version 1 B-tree
    read from a version 3 layout message, or its bytes are not as expected.

    `most_chunks`: the chunks the dataset's grid has room for; an index holding more is not believed. `base`: the
    file's base address (its user block's size), to which every address in the file, `header`'s too, is relative.
    Without `entries` the index is only checked to be a tree (of each leaf only its first bytes are read) and []
    stands for its chunks. Raises Damaged for an index that is not a tree, which the library must not walk.
    """
    try:
        reader = Reader(read, file_size, sizeof_addr, sizeof_size, base)
        index = reader.chunk_index(header + base, rank)
        if index is None:
            return None
        root, chunk = index
        return [] if root is None else reader.leaves(root, chunk, most_chunks, entries)
    except (Unexpected, struct.error, IndexError, ValueError):
        return None


def group_problem(reader: Reader, header: int, messages: list[tuple[int, int, bytes]] | None = None) -> str | None:
    """Why the HDF5 library must not list the group whose object header is at `header` (relative to the reader's
    base, as the file's addresses are): the
    B-tree of its symbol table is not a tree (`Damaged`). None where it is one, the group keeps no symbol table (its
    links in its header, or in dense storage), or the bytes are not as this reader takes them (the library reads, or
    refuses, them itself, without looping). `messages`: the header's messages, where they were read already (its
    symbol table message among them, if any)."""
    try:
        found = messages if messages is not None else reader.messages(header + reader.base, _SYMBOL_TABLE)
        for kind, _, body in found:
            if kind == SYMBOL_TABLE_MESSAGE:
                root = reader.address(body, 0)  # then the local heap's address, which holds the names
                if root is not None and not reader.is_leaf(root, GROUP_NODES):  # most groups: one leaf, no node named
                    for _ in reader.walk(root, GROUP_NODES, reader.sizeof_size, MOST_ENTRIES, reader.file_size, False):
                        pass
                return None
        return None
    except Damaged as exc:
        return never_ends("its symbol table", exc)
    except (Unexpected, struct.error, IndexError, ValueError):
        return None


def never_ends(what: str, exc: Damaged) -> str:
    """Why a tree that is no tree (`exc`) is not handed to the library, for the thing it indexes (`what`)."""
    return f"{what}'s B-tree is damaged ({exc}): the HDF5 library's walk of it never ends"


def header_messages(reader: Reader, header: int, kinds: frozenset[int] | None = None) -> list[tuple[int, int, bytes]] | None:
    """(type, flags, data) of every message of the object header at `header` (relative to the reader's base, as the
    file's addresses are), or of those whose type is in `kinds`, continuation blocks followed; None where its bytes
    are not as expected."""
    try:
        return list(reader.messages(header + reader.base, kinds))
    except (Unexpected, struct.error, IndexError, ValueError):
        return None


class Reader:
    """The file's structures read from its bytes (`read`: ranges -> bytes), its addresses relative to `base` and of
    `sizeof_addr` bytes, its lengths of `sizeof_size` (the superblock's). Unexpected for sizes HDF5 never writes."""

    def __init__(self, read: ReadRanges, file_size: int, sizeof_addr: int, sizeof_size: int, base: int) -> None:
        if sizeof_addr not in (2, 4, 8) or sizeof_size not in (2, 4, 8) or not 0 <= base < file_size:
            raise Unexpected
        self.read, self.file_size, self.base = read, file_size, base
        self.sizeof_addr, self.sizeof_size = sizeof_addr, sizeof_size
        self.undefined = (1 << (8 * sizeof_addr)) - 1
        self.node_prefix = 8 + 2 * sizeof_addr  # a B-tree node's signature, type, level, entries and two siblings
        self.creation_order = False  # version 2 headers: whether each message records its creation order

    def fetch(self, ranges: list[tuple[int, int]]) -> list[memoryview]:
        for offset, size in ranges:
            if offset < 0 or size < 0 or offset + size > self.file_size:
                raise Unexpected
        got = self.read(ranges)
        if any(len(g) != size for g, (_, size) in zip(got, ranges, strict=True)):
            raise Unexpected
        return got

    def address(self, data: bytes | memoryview, at: int) -> int | None:
        """The address at `at`, as an offset in the file; None for the undefined address; Unexpected for one past
        the end of the file."""
        value = int.from_bytes(data[at : at + self.sizeof_addr], "little")
        if value == self.undefined:
            return None
        if value + self.base >= self.file_size:
            raise Unexpected
        return value + self.base

    def length(self, data: bytes | memoryview, at: int) -> int:
        return int.from_bytes(data[at : at + self.sizeof_size], "little")

    # --- the object header --------------------------------------------------------------------------------------

    def chunk_index(self, header: int, rank: int) -> tuple[int | None, tuple[int, ...]] | None:
        """(the root of its B-tree, None where no chunk is written yet; the chunk's shape, its last dimension the
        element size) of the dataset whose header is at `header`, where a version 3 layout message names a version 1
        B-tree; else None."""
        layout = self.layout_message(header)
        if layout is None or len(layout) < 3 or layout[0] != 3 or layout[1] != CHUNKED:
            return None
        dims = layout[2]
        if dims != rank + 1 or len(layout) < 3 + self.sizeof_addr + 4 * dims:
            return None
        chunk = struct.unpack_from(f"<{dims}I", layout, 3 + self.sizeof_addr)
        if 0 in chunk:
            return None
        return self.address(layout, 3), chunk

    def layout_message(self, header: int) -> bytes | None:
        """The data of the header's layout message (None when it has none before MOST_CONTINUATIONS blocks)."""
        for kind, flags, body in self.messages(header, _LAYOUT):
            if kind == LAYOUT_MESSAGE:
                if flags & 0x02:  # shared: not a layout message's way
                    raise Unexpected
                return body
        return None

    def messages(self, header: int, kinds: frozenset[int] | None = None) -> Iterator[tuple[int, int, bytes]]:
        """(type, flags, data) of each message of the object header at `header` (only those of `kinds`, where given),
        in order, continuation blocks followed (Unexpected past MOST_CONTINUATIONS blocks)."""
        (first,) = self.fetch([(header, min(HEADER_READ, self.file_size - header))])
        if bytes(first[:4]) == b"OHDR":
            blocks = self._v2_first(first, header)
        elif first[0] == 1:
            size = int.from_bytes(first[8:12], "little")
            start = header + 16  # the prefix, padded to 8 bytes
            blocks = [(1, self._slice(first, header, start, size))]
        else:
            raise Unexpected
        total = 0
        for _ in range(MOST_CONTINUATIONS):
            if not blocks:
                return
            version, data = blocks.pop(0)
            total += len(data)
            if total > MOST_HEADER_BYTES:
                raise Unexpected
            more: list[tuple[int, int]] = []  # read once this block is done: a caller that stops in it reads none
            for kind, flags, body in self._messages(version, data, kinds):
                if kind == CONTINUATION_MESSAGE:
                    offset = self.address(body, 0)
                    if offset is None:
                        raise Unexpected
                    more.append((offset, self.length(body, self.sizeof_addr)))
                else:
                    yield kind, flags, body
            blocks.extend(self._continuation(version, offset, length, first, header) for offset, length in more)
        if blocks:  # more blocks than the bound: what they hold is not known here, so the library reads the header
            raise Unexpected

    def _slice(self, first: memoryview, header: int, start: int, size: int) -> bytes:
        """`size` bytes at `start`, from the first read when it holds them, else read again."""
        if size > MOST_HEADER_BYTES:
            raise Unexpected
        if start - header + size <= len(first):
            return bytes(first[start - header : start - header + size])
        (data,) = self.fetch([(start, size)])
        return bytes(data)

    def _v2_first(self, first: memoryview, header: int) -> list[tuple[int, bytes]]:
        if first[4] != 2:
            raise Unexpected
        flags = first[5]
        at = 6 + (16 if flags & 0x20 else 0) + (4 if flags & 0x10 else 0)
        width = 1 << (flags & 0x03)
        size = int.from_bytes(first[at : at + width], "little")
        start = header + at + width
        self.creation_order = bool(flags & 0x04)
        return [(2, self._slice(first, header, start, size))]

    def _continuation(self, version: int, offset: int, length: int, first: memoryview, header: int) -> tuple[int, bytes]:
        """The messages of a continuation block (version 2: inside its signature and checksum); from the header's
        first read where it lies inside it (a small header's blocks lie together), else read."""
        if length > MOST_HEADER_BYTES:
            raise Unexpected
        if header <= offset and offset + length <= header + len(first):
            data = first[offset - header : offset - header + length]
        else:
            (data,) = self.fetch([(offset, length)])
        if version == 2:
            if bytes(data[:4]) != b"OCHK" or length < 8:
                raise Unexpected
            return 2, bytes(data[4 : length - 4])
        return 1, bytes(data)

    def _messages(self, version: int, data: bytes, kinds: frozenset[int] | None = None) -> Iterator[tuple[int, int, bytes]]:
        """(type, flags, data) of each message of one block of a header (of `kinds` and continuations, where given:
        the others are not copied out)."""
        at = 0
        head = 8 if version == 1 else 4 + (2 if self.creation_order else 0)
        message = _V1_MESSAGE if version == 1 else _V2_MESSAGE
        while at + head <= len(data):
            kind, size, flags = message.unpack_from(data, at)
            if at + head + size > len(data):
                raise Unexpected
            if kinds is None or kind in kinds or kind == CONTINUATION_MESSAGE:
                yield kind, flags, data[at + head : at + head + size]
            at += head + size

    # --- the B-tree ------------------------------------------------------------------------------------------------

    def leaves(self, root: int, chunk: tuple[int, ...], most_chunks: int, read_leaves: bool = True) -> list[ChunkRecord]:
        """The leaves' records of the tree at `root`, whose keys count in elements of chunks of shape `chunk` (its last
        dimension the element size); none without `read_leaves` (the tree walked all the same, see `walk`)."""
        records: list[ChunkRecord] = []
        key_bytes = 8 + 8 * len(chunk)
        most = (min(MOST_ENTRIES, most_chunks), most_chunks + 1)
        for data, entries, level in self.walk(root, CHUNK_NODES, key_bytes, *most, read_leaves):
            node_records = self._entries(data, entries, chunk)  # each node's keys checked, as HDF5 checks them
            if level == 0:
                records.extend(node_records)
                if len(records) > most_chunks:
                    raise Unexpected
        return records

    def walk(
        self, root: int, node_type: int, key_bytes: int, most_entries: int, most_nodes: int, leaves: bool = True
    ) -> Iterator[tuple[memoryview, int, int]]:
        """Every node of the version 1 B-tree at `root` as (its bytes, entries, level), a level at a time from the
        root. Damaged where it is not a tree: a node named twice, or a child whose level is not one below its
        parent's (a walk in the library's way would never end, or go exponential); Unexpected for bytes not as
        expected (a signature, a node type, an address past the end, more than `most_nodes` nodes). Without
        `leaves`, the leaves below the root are not yielded, and of each only its first bytes are read: that it
        is a leaf of the tree's type."""
        seen = {root}
        level: list[int] = [root]
        expected: int | None = None  # the level every node of this one must have (the root's: any)
        entry_bytes = key_bytes + self.sizeof_addr
        while level:
            if expected == 0 and not leaves:
                self._leaves_are_leaves(level, node_type)
                return
            children: list[int] = []
            for address, data, entries in self._nodes(level, key_bytes, most_entries):
                if bytes(data[:4]) != b"TREE" or data[4] != node_type:
                    raise Unexpected
                node_level = data[5]
                if expected is not None and node_level != expected:
                    raise Damaged(f"the node at byte {address} has level {node_level}, where {expected} is expected")
                expected = node_level
                yield data, entries, node_level
                if node_level == 0:
                    continue
                for i in range(entries):
                    child = self.address(data, self.node_prefix + i * entry_bytes + key_bytes)
                    if child is None:
                        raise Unexpected
                    if child in seen:
                        raise Damaged(f"the node at byte {child} is named twice, a cycle or a shared child")
                    seen.add(child)
                    children.append(child)
                if len(seen) > most_nodes:
                    raise Unexpected
            if expected is not None:
                expected -= 1
            level = children

    def is_leaf(self, address: int, node_type: int) -> bool:
        """Whether the node at `address` is a leaf of a tree of `node_type` (its first bytes read)."""
        (data,) = self.fetch([(address, 8)])
        return bytes(data[:4]) == b"TREE" and data[4] == node_type and data[5] == 0

    def _leaves_are_leaves(self, addresses: list[int], node_type: int) -> None:
        for start in range(0, len(addresses), NODES_PER_BATCH):
            batch = addresses[start : start + NODES_PER_BATCH]
            for address, data in zip(batch, self.fetch([(a, 8) for a in batch]), strict=True):
                if bytes(data[:4]) != b"TREE" or data[4] != node_type:
                    raise Unexpected
                if data[5] != 0:
                    raise Damaged(f"the node at byte {address} has level {data[5]}, where 0 is expected")

    def _entries(self, data: memoryview, entries: int, chunk: tuple[int, ...]) -> list[ChunkRecord]:
        """The node's entries: (the key's chunk offset, the child's address, size, filter mask).

        Checked as HDF5 checks a node it decodes (its signature and type are `walk`'s): every key's offsets whole
        chunks into the dataset (the key after the last entry's too).
        """
        dims = len(chunk)
        out: list[ChunkRecord] = []
        for i in range(entries + 1):
            key = self.node_prefix + i * self._entry_bytes(dims)
            size, mask, *offsets = struct.unpack_from(f"<II{dims}Q", data, key)
            if any(o % c for o, c in zip(offsets, chunk, strict=True)):
                raise Unexpected
            if i < entries:
                child = self.address(data, key + 8 + 8 * dims)
                if child is None:
                    raise Unexpected
                out.append((tuple(offsets[:-1]), child, size, mask))
        return out

    def _entry_bytes(self, dims: int) -> int:
        """A key (chunk size, filter mask, an offset per dimension) and the child's address after it."""
        return 8 + 8 * dims + self.sizeof_addr

    def _nodes(self, addresses: list[int], key_bytes: int, most_entries: int) -> Iterator[tuple[int, memoryview, int]]:
        """Each node's address, bytes and entries, NODES_PER_BATCH nodes at a time (the bytes held stay bounded whatever
        a level claims): read for DEFAULT_ENTRIES first, and again, whole, where it holds more."""
        prefix = self.node_prefix

        def size(entries: int) -> int:  # the entries and the key after the last
            return prefix + entries * (key_bytes + self.sizeof_addr) + key_bytes

        for start in range(0, len(addresses), NODES_PER_BATCH):
            batch = addresses[start : start + NODES_PER_BATCH]
            first = self.fetch([(a, min(size(DEFAULT_ENTRIES), self.file_size - a)) for a in batch])
            out: list[tuple[int, memoryview, int]] = []
            again: list[tuple[int, int]] = []
            for address, data in zip(batch, first, strict=True):
                if len(data) < prefix:
                    raise Unexpected
                entries = int.from_bytes(data[6:8], "little")
                if entries > most_entries:
                    raise Unexpected
                out.append((address, data, entries))
                if size(entries) > len(data):
                    again.append((len(out) - 1, address))
            if again:
                whole = self.fetch([(a, size(out[i][2])) for i, a in again])
                for (i, address), data in zip(again, whole, strict=True):
                    out[i] = (address, data, out[i][2])
            yield from out
