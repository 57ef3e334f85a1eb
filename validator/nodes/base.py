"""The read-only node tree every backend presents: groups, arrays, attributes, storage facts, blocks."""

from __future__ import annotations

import json
import posixpath
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterator, Mapping
from typing import Any, Literal, NamedTuple

import numpy as np

from validator.kernels.block import Block

NodeKind = Literal["group", "array", "link"]

# A block holds at most about this many elements unless a single storage chunk is larger:
# big enough to amortise per-call overhead, small enough to keep memory flat.
DEFAULT_BLOCK_ELEMENTS = 1 << 22


class StringStorage(NamedTuple):
    """How strings are stored, as the spec talks about them."""

    length: Literal["variable", "fixed"]
    charset: str | None  # "utf-8", "ascii", or None when the container does not say
    container_dtype: str  # the stored dtype as written ("|O", "<U16", "vlen str", "|S10")


class Storage(NamedTuple):
    """Container-level facts about an array, whatever the backend."""

    format: str  # "hdf5", "zarr-v2", "zarr-v3", "tiledb"
    string: StringStorage | None = None
    codecs: tuple[str, ...] = ()  # codec / filter ids in order (zarr: filters then compressor)
    compressor: str | None = None
    fill_value: Any = None
    layout: str | None = None  # hdf5: "contiguous", "chunked", "compact"
    metadata_key: str | None = None  # zarr: the key of the stored metadata document
    extra: Mapping[str, Any] | None = None  # backend-specific facts (TileDB: sparse, dims, attrs)


class NodeError(Exception):
    """A node could not be read; the message names the path and the reason."""


class NotDecoded(NodeError):
    """An array whose data is deliberately not decoded (a codec off the allow-list, pickle above all): the
    clauses about its values are not checked, which the report says, rather than in error."""


class Node(ABC):
    """One group or array in a store. Read-only; data is read only through `blocks()`."""

    path: str
    kind: NodeKind
    tree: Tree

    @property
    def name(self) -> str:
        return posixpath.basename(self.path) or "/"

    @property
    @abstractmethod
    def attrs(self) -> Mapping[str, Any]:
        """Attributes as plain JSON-like values (str, int, float, bool, None, list, dict)."""

    def attr_storage(self, name: str) -> StringStorage | None:
        """How the attribute `name` stores its strings, as `storage.string` says for an array's values.

        None when the attribute is absent, holds no strings, or the backend does not record how it stores them.
        """
        return None

    def attr_type_class(self, name: str) -> str | None:
        """The type class the container stores attribute `name` with ("integer", "float", "string", "enum",
        "compound", ...), which the plain value no longer says (h5py reads an enum as its integers, or a
        two-member FALSE/TRUE enum as booleans). None when absent, or the backend does not record it."""
        return None

    @property
    def shape(self) -> tuple[int, ...] | None:
        return None

    @property
    def dtype(self) -> np.dtype | None:
        return None

    @property
    def chunks(self) -> tuple[int, ...] | None:
        """The storage chunk shape, or None for contiguous storage and groups."""
        return None

    @property
    def storage(self) -> Storage | None:
        return None

    @property
    def ndim(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    @property
    def size(self) -> int | None:
        return None if self.shape is None else int(np.prod(self.shape, dtype=np.int64))

    def children(self) -> dict[str, Node]:
        """Direct children by name, in sorted order. Empty for arrays."""
        return {}

    # --- Raw storage: the documents and keys a key/value backend (Zarr) stores, as stored. Clauses about
    # the stored documents themselves (`.zarray` fields, chunk keys, consolidated metadata) read these;
    # backends without such documents (HDF5, TileDB) keep the defaults: no document, no keys.

    link_kind: str | None = None  # for a link the tree reports but does not enter: "external", "soft", "cycle", ...

    @property
    def signature(self) -> Hashable | None:
        """What the node holds itself, as one hashable value; None where the backend cannot tell it cheaply.

        Two nodes of one tree with equal signatures have the same kind, link kind, attributes, stored metadata
        document, dtype, shape, chunks and storage, wherever they are: the engine checks the rules that depend
        on nothing else (`own_metadata_only` primitives) once per signature. Thousands of dataframe columns
        share a handful.
        """
        return None

    @property
    def metadata(self) -> Mapping[str, Any] | None:
        """The node's own stored metadata document as written (Zarr `.zarray`, `.zgroup`, `zarr.json`), parsed.

        None when the backend stores no such document, or it is missing, not JSON or not a JSON object (the
        tree reports the last two as problems).
        """
        return None

    @property
    def implicit(self) -> bool:
        """True for a group that exists only because nodes lie below it: no group document is stored for it."""
        return False

    @property
    def metadata_key(self) -> str | None:
        """The store key of the node's own metadata document (`X/indptr/.zarray`), or None when there is none."""
        return None

    def stored_keys(self) -> list[str] | None:
        """Every key stored below this node, recursively, relative to it, sorted; None for backends without keys.

        Keys that would lead out of the store (symlinks, `..`) are never listed.
        """
        return None

    def stored_raw_keys(self) -> list[str] | None:
        """At the store root: every key as the store holds it, unnormalised (`a//b`, `\\`, `..`, a leading `/`,
        non-ASCII names kept), including keys the tree does not read. None elsewhere and for backends without keys."""
        return None

    def read_document(self, name: str) -> bytes | None:
        """The raw bytes of the metadata document `name` stored at this node (`.zattrs`, `.zmetadata`), or None.

        None when no such document is stored (or the backend has none). Raises NodeError when it is stored
        but cannot be read.
        """
        return None

    def read_json(self, key: str) -> Any:
        """The document stored at `key` (relative to this node) parsed as JSON; None when not stored.

        Raises NodeError as `read_key` does, and UnicodeDecodeError or json.JSONDecodeError when the bytes are not
        JSON. A backend may keep the parsed document for every reader (Zarr parses each once): never modify it.
        """
        raw = self.read_key(key)
        return None if raw is None else json.loads(raw.decode("utf-8"))

    def read_key(self, key: str) -> bytes | None:
        """The raw bytes stored at `key` (relative to this node, from `stored_keys`), or None when not stored.

        Raises NodeError when the key is stored but cannot be read. Array data is read by the engine's scan
        (`read_block`), never by a check: this is for documents beside the node's own.
        """
        return None

    @property
    def parent(self) -> Node | None:
        # Looked up once per node: selectors with `parent:` conditions ask for it many times.
        cached = self.__dict__.get("_parent", self)
        if cached is self:
            cached = None if self.path == "/" else self.tree.get(posixpath.dirname(self.path))
            self.__dict__["_parent"] = cached
        return cached

    def child(self, name: str) -> Node | None:
        return self.children().get(name)

    def resolve(self, relative: str) -> Node | None:
        """The node at `relative` from this one (`../indices`, `codes`, `/obs`), or None."""
        target = relative if relative.startswith("/") else posixpath.join(self.path, relative)
        return self.tree.get(normalize_path(target))

    def block_rows(self, max_elements: int = DEFAULT_BLOCK_ELEMENTS) -> list[RowRange] | None:
        """The axis-0 row ranges of this array's blocks, in order, each a whole number of storage chunks.

        None when the blocks can only be read in sequence through `blocks()` (a block's flat start is then
        known only after the blocks before it, as for the cells of a sparse TileDB array).
        """
        return None

    def read_block(self, rows: RowRange) -> Block:
        """One block: the rows `rows` (from `block_rows`), flattened in C order. Safe to call from threads."""
        raise NodeError(f"{self.path}: not an array")

    def read_shard_indexes(self, rows: RowRange) -> Block:
        """The shard indexes of the rows `rows` (from `block_rows`) as a block with no values: Zarr v3 sharded arrays
        only. Reads each shard's index bytes, never its inner chunks. Safe to call from threads."""
        raise NodeError(f"{self.path}: not a sharded array")

    def blocks(self, max_elements: int = DEFAULT_BLOCK_ELEMENTS) -> Iterator[Block]:
        """Chunk-aligned blocks of rows in storage order; the whole array, once."""
        ranges = self.block_rows(max_elements)
        if ranges is None:
            raise NodeError(f"{self.path}: not an array")
        for rows in ranges:
            yield _trusted(self.read_block(rows))

    def edge_blocks(self, max_elements: int = DEFAULT_BLOCK_ELEMENTS) -> tuple[Block, Block] | None:
        """The first and the last block only (for facts such as the first and last value); None when empty."""
        if self.kind != "array" or not self.size:
            return None
        ranges = self.block_rows(max_elements)
        if ranges is None:
            found = [b for b in self.blocks(max_elements) if b.values.size]
            return (found[0], found[-1]) if found else None
        first = _trusted(self.read_block(ranges[0]))
        return (first, first) if len(ranges) == 1 else (first, _trusted(self.read_block(ranges[-1])))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.kind} {self.path}>"


def _trusted(block: Block) -> Block:
    """`block`, when every chunk it was read from decoded; NodeError with the first problem otherwise."""
    problem = block.problem()
    if problem is not None:
        raise NodeError(problem)
    return block


def normalize_path(path: str) -> str:
    """`/a/./b/../c` -> `/a/c`; never climbs above the root."""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)


RowRange = tuple[int, int]  # [start, stop) along axis 0; a 0-d array has the one range (0, 1)


def block_row_ranges(shape: tuple[int, ...], chunks: tuple[int, ...] | None, max_elements: int) -> list[RowRange]:
    """The row ranges `row_slices` gives, as plain (start, stop) pairs (picklable, for threads and Dask tasks)."""
    if not shape:
        return [(0, 1)]
    return [(sl.start, sl.stop) for sl in row_slices(shape, chunks, max_elements)]


def row_elements(shape: tuple[int, ...]) -> int:
    """Elements per row along axis 0 (1 for 0-d and 1-d arrays)."""
    return int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else 1


def rows_per_block(shape: tuple[int, ...], chunks: tuple[int, ...] | None, max_elements: int) -> int:
    """How many rows (axis 0) one block holds: a whole number of storage chunks along axis 0."""
    if not shape:
        return 1
    row_size = int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else 1
    chunk_rows = chunks[0] if chunks else 1
    chunk_rows = max(1, chunk_rows)
    wanted = max(1, max_elements // max(1, row_size))
    return max(chunk_rows, (wanted // chunk_rows) * chunk_rows)


def row_slices(shape: tuple[int, ...], chunks: tuple[int, ...] | None, max_elements: int) -> Iterator[slice]:
    """Axis-0 slices covering the array, each a whole number of chunks long."""
    if not shape:
        yield slice(None)
        return
    step = rows_per_block(shape, chunks, max_elements)
    for start in range(0, shape[0], step):
        yield slice(start, min(shape[0], start + step))


class Tree(ABC):
    """An opened store: its root node, path lookup, and the facts about the container."""

    source: str  # the store as messages and reports name it (a URL without user, password or query string)
    format: str  # "hdf5", "zarr-v2", "zarr-v3", "tiledb"
    # What opens the store again in another process (a Dask worker), when `source` would not: the URL as
    # given, signed query string included. Never shown in a message or report.
    locator: str | None = None
    remote = False  # read over a network (a URL): the scan overlaps more block reads, to hide round trips

    @property
    @abstractmethod
    def root(self) -> Node: ...

    def get(self, path: str) -> Node | None:
        """The node at an absolute path, or None if there is none."""
        node = self.root
        for part in normalize_path(path).split("/")[1:]:
            if not part:
                continue
            node = node.children().get(part)
            if node is None:
                return None
        return node

    def prefer_attributes(self, names: frozenset[str]) -> None:  # noqa: B027 -- optional: a hint most trees ignore
        """A hint: the attributes the run reads. A backend that reads attribute values one by one (HDF5) reads
        these while it has the object open; any other is still read when asked for. Default: ignored."""

    def walk(self) -> Iterator[Node]:
        """Every node once, depth first, in sorted order; links are yielded but never entered."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(list(node.children().values())))

    def close(self) -> None:  # noqa: B027 -- optional: a tree holding nothing open inherits this
        """Release what the tree holds open (files, connections); nothing by default."""

    def __enter__(self) -> Tree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def plain(value: Any) -> Any:
    """An attribute value as plain JSON-like Python (numpy scalars and arrays unwrapped, bytes decoded)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "O" or value.dtype.kind in "SU":
            return [plain(v) for v in value.reshape(-1)] if value.ndim else plain(value[()])
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item() if not isinstance(value, np.bytes_) else plain(bytes(value))
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value
