"""The read-only node tree every backend presents: groups, arrays, attributes, storage facts, blocks."""

from __future__ import annotations

import bisect
import math
import posixpath
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any, Literal, NamedTuple, overload

import numpy as np

from spec_validate.errors import NodeError, NotDecoded
from spec_validate.kernels.block import Block
from spec_validate.storage.keyvalue import MAX_DEPTH, MAX_DOCUMENT_BYTES

NodeKind = Literal["group", "array", "link"]

# A block holds at most about this many elements unless a single storage chunk is larger:
# big enough to amortise per-call overhead, small enough to keep memory flat.
DEFAULT_BLOCK_ELEMENTS = 1 << 22
# The most bytes one block may take in memory. A block holds whole chunks along axis 0 and every element along the
# other axes, so declared shapes and chunks (2**25 x 2**25) could ask for any size: past this, a block is read only
# when no chunk of it is stored (then it is the fill value, never materialised), and otherwise refused.
MAX_BLOCK_BYTES = 256 * 2**20
# An object element (a string) in memory: its pointer and the smallest Python object behind it. Blocks of objects
# are bounded by this, not by the pointer's 8 bytes.
OBJECT_ELEMENT_BYTES = 32
# The most chunks one block reads: a declared chunk shape of one element makes every element a chunk (a lookup and
# a read each); past this, the block is not read.
MAX_CHUNKS_PER_BLOCK = 1 << 20
# The most bytes a broadcast view of a uniform block stands for: numpy makes no view past 2**63 bytes (even one that
# takes none), so a longer uniform block is held as its one value and its count.
MAX_VIEW_BYTES = 1 << 62
# Past this many blocks, an array's blocks are planned around the chunks actually stored: a run of blocks with no
# stored chunk is one block of the fill value, so a declared 2**62 elements with nothing written is one block.
SPARSE_PLAN_BLOCKS = 1024


class StringStorage(NamedTuple):
    """How strings are stored, as the spec talks about them."""

    length: Literal["variable", "fixed"]
    charset: str | None  # "utf-8", "ascii", or None when the container does not say
    container_dtype: str  # the stored dtype as written ("|O", "<U16", "vlen str", "|S10")


class Storage(NamedTuple):
    """Container-level facts about an array, whatever the backend."""

    format: str  # "hdf5", "zarr-v2", "zarr-v3", "tiledb"; "zarr-v2-attributes", "zarr-v3-attributes" (nodes/attributes)
    string: StringStorage | None = None
    codecs: tuple[str, ...] = ()  # codec / filter ids in order (zarr: filters then compressor)
    compressor: str | None = None
    fill_value: Any = None
    layout: str | None = None  # hdf5: "contiguous", "chunked", "compact"
    metadata_key: str | None = None  # zarr: the key of the stored metadata document
    extra: Mapping[str, Any] | None = None  # backend-specific facts (TileDB: sparse, dims, attrs)


class Unreadable(NodeError):
    """A node, or a part of one (its attributes, its members, its metadata), that cannot be read.

    The tree reports it once (`Tree.problems`); clauses that need that part skip the node, which the report
    names as not checked, and every other clause keeps its verdict.
    """


class StoreProblem:
    """Something in the store that could not be read, in one line: a node, its attributes or members, a document."""

    __slots__ = ("key", "message", "path")

    def __init__(self, key: str, message: str, path: str | None = None) -> None:
        self.key = key  # a node path (`/X/indptr`) or a store key (`X/indptr/.zarray`)
        # The underlying error, in one line, without the key in front (reports show the key beside it).
        self.message = one_line(message.removeprefix(f"{key}: "))
        self.path = path  # the node it belongs to, where known

    def __repr__(self) -> str:
        return f"{self.key}: {self.message}"


def one_line(text: str, limit: int = 500) -> str:
    """`text` as one line of at most `limit` characters (library errors span lines and can be long)."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def describe(exc: BaseException) -> str:
    """An exception as `Type: first words`, in one line."""
    message = one_line(str(exc), 300)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class Attributes(Mapping[str, Any]):
    """A node's attributes, where some could not be read: those are listed, and reading one raises Unreadable.

    So a clause that needs such an attribute skips the node (it is reported once, by the tree), and clauses about
    the other attributes keep their verdicts.
    """

    def __init__(self, values: Mapping[str, Any], unreadable: Mapping[str, str] | None = None) -> None:
        self._values = dict(values)
        self._unreadable = dict(unreadable or {})

    def __getitem__(self, key: str) -> Any:
        if key in self._unreadable:
            raise Unreadable(self._unreadable[key])
        return self._values[key]

    def __contains__(self, key: object) -> bool:
        return key in self._values or key in self._unreadable

    def __iter__(self) -> Iterator[str]:
        yield from self._values
        yield from (k for k in self._unreadable if k not in self._values)

    def __len__(self) -> int:
        return len(self._values) + sum(1 for k in self._unreadable if k not in self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Attributes):
            return self._values == other._values and self._unreadable == other._unreadable
        return not self._unreadable and isinstance(other, Mapping) and self._values == dict(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Attributes({self._values!r}, unreadable={sorted(self._unreadable)!r})"


class Node(ABC):
    """One group or array in a store. Read-only; data is read only through `blocks()`."""

    path: str
    kind: NodeKind
    tree: Tree

    @property
    def name(self) -> str:
        # The last segment of the path (posixpath.basename, at a third of its cost: rules read it on every node).
        return self.path.rpartition("/")[2] or "/"

    @property
    @abstractmethod
    def attrs(self) -> Mapping[str, Any]:
        """Attributes as plain JSON-like values (str, int, float, bool, None, list, dict).

        Raises Unreadable when they cannot be read at all (the tree reports it once).
        """

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
        # Exact, never wrapped: a declared 2**40 x 2**40 must not come out negative (numpy's int64 product would).
        return None if self.shape is None else math.prod(self.shape)

    def children(self) -> dict[str, Node]:
        """Direct children by name, in sorted order. Empty for arrays.

        Never raises: members that cannot be listed or opened are reported on the tree (`Tree.problems`) and left out;
        a group none of whose members could be listed says why in `members_unread`.
        """
        return {}

    # Why the group's members could not be listed at all (its children then are none), as the tree reported it; None
    # where they were. A member it names may exist: `child` cannot say it is absent, and a clause on the group that
    # reads more than its own metadata or name is not checked (the engine's `_advance`).
    members_unread: str | None = None
    # Why the node itself could not be read (its object header, its metadata document), as the tree reported it: what
    # it holds is unknown, and so its kind where it is a link node standing for it. A clause on it that reads more
    # than its name is not checked, and `child` does not answer a link node of unknown kind for it.
    unread: str | None = None

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

        Keys that would lead out of the store (symlinks, `..`) are never listed. Unreadable where a folder below it
        could not be listed: the keys are then not all known.
        """
        return None

    @property
    def keys_listed(self) -> bool:
        """True when `stored_keys` names every key stored below the node, from listings of the store. False for a
        remote store that was not listed: its keys are then only those its consolidated metadata names, so a
        clause on the keys stored (chunk keys, stray keys, nodes left out of that metadata) cannot be checked."""
        return True

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
        """The document stored at `key` (relative to this node) parsed as JSON within bounds (`jsondoc.loads`); None
        when not stored.

        Raises NodeError as `read_key` does, and JSONProblem when the bytes are no JSON this tool reads. A backend
        may keep the parsed document for every reader (Zarr parses each once): never modify it.
        """
        from spec_validate.codecs.jsondoc import loads

        raw = self.read_key(key)
        return None if raw is None else loads(raw)

    def read_key(self, key: str, limit: int = MAX_DOCUMENT_BYTES) -> bytes | None:
        """The raw bytes stored at `key` (relative to this node, from `stored_keys`), or None when not stored.

        Raises NodeError when the key is stored but cannot be read, and TooLarge (a NodeError naming the key, its size
        and the bound) when it holds more than `limit` bytes: refused before a byte of it is read, locally, in a zip
        and remotely alike. Array data is read by the engine's scan (`read_block`), never by a check: this is for
        documents beside the node's own (Zarr documents, or a file such as bioformats2raw's `OME/METADATA.ome.xml`).
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
        """The member `name`; None where the group has none of that name. Unreadable where its members could not be
        listed (`members_unread`): it may have one; and where it is a member that could not be read at all (`unread`)."""
        found = self.children().get(name)
        if found is None and self.members_unread is not None:
            raise Unreadable(self.members_unread)
        if found is not None and found.unread is not None and found.kind == "link":
            raise Unreadable(found.unread)  # a member there, but whether an array or a group is unknown
        return found

    def resolve(self, relative: str) -> Node | None:
        """The node at `relative` from this one (`../indices`, `codes`, `/obs`), or None."""
        target = relative if relative.startswith("/") else posixpath.join(self.path, relative)
        return self.tree.get(normalize_path(target))

    def values_in(self) -> tuple[str, str] | None:
        """(the path of another array, a field of its records) when this array's values are that field, in the order
        that array's blocks give them, so one pass over that array yields both (a column of a sparse TileDB array and
        its cells); None when its values are read on their own."""
        return None

    def block_rows(self, max_elements: int = DEFAULT_BLOCK_ELEMENTS) -> Sequence[RowRange] | None:
        """The axis-0 row ranges of this array's blocks, in order, each a whole number of storage chunks.

        A sequence computed on demand (`RowRanges`), never a list as long as a declared shape asks for. None when
        the blocks can only be read in sequence through `blocks()` (a block's flat start is then known only after
        the blocks before it, as for the cells of a sparse TileDB array).
        """
        return None

    def fetch_ahead(self, rows: RowRange) -> Any:
        """Start fetching what `read_block(rows)` reads, without waiting (a remote store's chunks), and return what to
        hand it as `fetched`; None where nothing is started (here: every backend whose reads do not wait on a
        network, and any block that cannot be planned)."""
        return None

    def read_block(self, rows: RowRange, fetched: Any = None) -> Block:
        """One block: the rows `rows` (from `block_rows`), flattened in C order. Safe to call from threads.

        Rows where no chunk is stored come back as the fill value without being materialised (`Block.uniform`).
        `fetched`: what `fetch_ahead(rows)` returned, if it was called.
        """
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
            found = [b for b in self.blocks(max_elements) if b.size]
            return (found[0], found[-1]) if found else None
        first = _trusted(self.read_block(ranges[0]))
        return (first, first) if len(ranges) == 1 else (first, _trusted(self.read_block(ranges[-1])))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.kind} {self.path}>"


def _trusted(block: Block) -> Block:
    """`block`, when every chunk it was read from decoded; NodeError with the first problem otherwise (NotDecoded
    where the only one is a chunk whole but not read: its pickle calls a class)."""
    damage = block.damage()
    if damage is not None:
        raise NodeError(damage)
    unread = block.unread()
    if unread is not None:
        raise NotDecoded(unread)
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


def block_row_ranges(shape: tuple[int, ...], chunks: tuple[int, ...] | None, max_elements: int) -> RowRanges:
    """The row ranges `row_slices` gives, as plain (start, stop) pairs (picklable, for threads and Dask tasks)."""
    if not shape:
        return RowRanges(1, 1)
    return RowRanges(shape[0], rows_per_block(shape, chunks, max_elements))


class RowRanges(Sequence[RowRange]):
    """The block row ranges of an array, each computed when asked for: a declared 2**80 rows lists nothing up front.

    Dense: `rows` rows in blocks of `step`. Sparse (`data` given, the sorted indices of the blocks that hold a
    stored chunk): each such block as usual, and every run of blocks between them as one range, whatever its
    length, which reads as the fill value without being materialised (`uniform_block`). What a sparse plan keeps
    is two numbers per stored block (which block, and where its range falls in the sequence), never one per
    declared row or block.
    """

    def __init__(self, rows: int, step: int, data: Sequence[int] | None = None) -> None:
        self.rows, self.step = rows, max(1, step)
        self._blocks = -(-rows // self.step)
        self._stored: list[int] | None = None  # sparse: the blocks that hold a stored chunk, in order
        self._at: list[int] = []  # sparse: the position of each of those blocks' range in the sequence
        self._length = self._blocks
        if data is not None:
            self._stored, covered, length = [], 0, 0  # `covered`: the next block no range covers yet
            for b in data:
                if b < covered or b >= self._blocks:
                    continue
                length += b > covered  # the run of blocks before it, as one range
                self._stored.append(b)
                self._at.append(length)
                length += 1
                covered = b + 1
            self._length = length + (covered < self._blocks)

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, i: int) -> RowRange: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[RowRange]: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += self._length
        if not 0 <= i < self._length:
            raise IndexError(i)
        if self._stored is None:
            return self._range(i, i + 1)
        j = bisect.bisect_right(self._at, i) - 1  # the last stored block at or before position i
        if j >= 0 and self._at[j] == i:
            return self._range(self._stored[j], self._stored[j] + 1)
        # The run of blocks after stored block j (before the first, where j is -1) up to the next one.
        first = self._stored[j] + 1 if j >= 0 else 0
        return self._range(first, self._stored[j + 1] if j + 1 < len(self._stored) else self._blocks)

    def _range(self, first: int, stop: int) -> RowRange:
        """The rows of blocks [first, stop)."""
        return (first * self.step, min(self.rows, stop * self.step))

    def __iter__(self) -> Iterator[RowRange]:
        if self._stored is None:
            for start in range(0, self.rows, self.step):
                yield (start, min(self.rows, start + self.step))
            return
        covered = 0
        for b in self._stored:
            if b > covered:
                yield self._range(covered, b)
            yield self._range(b, b + 1)
            covered = b + 1
        if covered < self._blocks:
            yield self._range(covered, self._blocks)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Sequence)
            and len(self) == len(other)
            and all(a == tuple(b) for a, b in zip(self, other, strict=True))
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RowRanges({self.rows} rows, {len(self)} blocks)"


def plan_rows(
    shape: tuple[int, ...],
    chunks: tuple[int, ...] | None,
    max_elements: int,
    itemsize: int,
    stored_rows: Callable[[], Sequence[int] | None],
) -> RowRanges:
    """The blocks of an array, planned around its stored chunks when there are many blocks or they are large.

    `stored_rows` gives the sorted axis-0 chunk indices that hold at least one stored chunk (None: unknown, read
    every block). It is asked only when the dense plan would have more than SPARSE_PLAN_BLOCKS blocks or blocks
    of more than MAX_BLOCK_BYTES bytes, so a small array costs no listing.
    """
    dense = block_row_ranges(shape, chunks, max_elements)
    if not shape or (len(dense) <= SPARSE_PLAN_BLOCKS and block_bytes(shape, dense.step, itemsize) <= MAX_BLOCK_BYTES):
        return dense
    stored = stored_rows()
    if stored is None:
        return dense
    chunk_rows = max(1, chunks[0]) if chunks else 1
    return RowRanges(shape[0], dense.step, sorted({(r * chunk_rows) // dense.step for r in stored}))


def block_bytes(shape: tuple[int, ...], rows: int, itemsize: int) -> int:
    """Bytes a block of `rows` rows of an array of `shape` takes in memory."""
    return rows * row_elements(shape) * max(1, itemsize)


def stored_in(stored: Sequence[int], chunk_rows: int, rows: RowRange) -> bool:
    """True when a chunk row of `stored` (sorted axis-0 chunk indices) overlaps the rows [start, stop)."""
    first, last = rows[0] // max(1, chunk_rows), (rows[1] - 1) // max(1, chunk_rows)
    at = bisect.bisect_left(stored, first)
    return at < len(stored) and stored[at] <= last


def uniform_block(start: int, value: Any, dtype: np.dtype, count: int) -> Block:
    """`count` elements all equal to `value`, held once (`Block.count`): no memory for them, whatever their number.

    Its values are a read-only broadcast view of all of them where numpy can make one (it makes none of more than
    2**63 bytes, even one that takes none), else of the one value: kernels read `Block.size`, never the view's.
    """
    scalar = np.empty((), dtype=dtype)
    scalar[()] = value
    if count <= 1:
        return Block(start, np.broadcast_to(scalar.reshape(1), (max(0, count),)))
    viewable = count * max(1, dtype.itemsize) < MAX_VIEW_BYTES
    return Block(start, np.broadcast_to(scalar.reshape(1), (count if viewable else 1,)), count=count)


def check_block_size(path: str, shape: tuple[int, ...], rows: RowRange, itemsize: int) -> None:
    """NotDecoded when the block `rows` would take more than MAX_BLOCK_BYTES in memory (declared sizes are not trusted)."""
    size = block_bytes(shape, rows[1] - rows[0], itemsize)
    if size > MAX_BLOCK_BYTES:
        raise NotDecoded(
            f"{path}: not decoded: a block of rows {rows[0]}..{rows[1]} would take {size} bytes in memory, more than "
            f"the {MAX_BLOCK_BYTES} this tool reads at once (declared shape {list(shape)}); not read"
        )


def element_bytes(dtype: np.dtype | None, stored: int = 0) -> int:
    """Bytes one element takes in memory, for bounding a block: an object (a string) is counted at
    OBJECT_ELEMENT_BYTES, its pointer and the smallest object behind it, not the pointer's 8."""
    if dtype is None:
        return max(1, stored)
    return max(dtype.itemsize, stored, OBJECT_ELEMENT_BYTES if dtype.hasobject else 1)


def check_chunk_count(path: str, rows: RowRange, count: int) -> None:
    """NotDecoded when a block spans more than MAX_CHUNKS_PER_BLOCK chunks (declared chunk shapes of one element)."""
    if count > MAX_CHUNKS_PER_BLOCK:
        raise NotDecoded(
            f"{path}: not decoded: the block of rows {rows[0]}..{rows[1]} spans {count} chunks, more than the "
            f"{MAX_CHUNKS_PER_BLOCK} this tool reads for one block"
        )


def linear_index(index: Sequence[int], grid: Sequence[int]) -> int:
    """The position of grid cell `index` in C order (a chunk's place in its array's grid of chunks)."""
    out = 0
    for i, g in zip(index, grid, strict=False):
        out = out * g + i
    return out


def row_elements(shape: tuple[int, ...]) -> int:
    """Elements per row along axis 0 (1 for 0-d and 1-d arrays)."""
    return math.prod(shape[1:]) if len(shape) > 1 else 1


def rows_per_block(shape: tuple[int, ...], chunks: tuple[int, ...] | None, max_elements: int) -> int:
    """How many rows (axis 0) one block holds: a whole number of storage chunks along axis 0."""
    if not shape:
        return 1
    row_size = row_elements(shape)
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


class SignatureToken:
    """A distinct signature of one tree (`Tree.signature_token`): equal only to itself."""

    __slots__ = ("number",)

    def __init__(self, number: int) -> None:
        self.number = number

    def __repr__(self) -> str:
        return f"<signature {self.number}>"


class Tree(ABC):
    """An opened store: its root node, path lookup, and the facts about the container."""

    source: str  # the store as messages and reports name it (a URL without user, password or query string)
    format: str  # "hdf5", "zarr-v2", "zarr-v3", "tiledb"; "zarr-v2-attributes", "zarr-v3-attributes" (nodes/attributes)
    # What opens the store again in another process (a Dask worker), when `source` would not: the URL as
    # given, signed query string included. Never shown in a message or report.
    locator: str | None = None
    remote = False  # read over a network (a URL): the scan overlaps more block reads, to hide round trips
    list_folders = True  # False: a remote store opened to be read without listing (open_store's list_folders)
    # Told what the tree starts reading that may take long on a hostile input, naming the node ("reading the
    # attributes of /uns/x": an object of 100,000 attributes). The engine sets its activity line here, which
    # `--timeout` names when time runs out: without it, the time was charged to whatever the engine said last.
    tell: Callable[..., None] | None = None  # `engine.activity.reading`: its words, joined only when someone listens

    @property
    @abstractmethod
    def root(self) -> Node: ...

    @property
    def problems(self) -> list[StoreProblem]:
        """What could not be read, each reported once: nodes, attributes, members, documents, links out of the store."""
        found = self.__dict__.get("_problems")
        if found is None:
            found = self.__dict__["_problems"] = []
        return found

    def signature_token(self, signature: Hashable | None) -> Hashable | None:
        """One object for each distinct signature of this tree (None stays None): nodes of equal signatures get the
        same object, so the engine's grouping by signature, done for each selection, hashes an identity rather than
        a signature's nested values. A backend whose signatures are costly to hash returns these."""
        if signature is None:
            return None
        tokens = self.__dict__.get("_signature_tokens")
        if tokens is None:
            tokens = self.__dict__["_signature_tokens"] = {}
        token = tokens.get(signature)
        if token is None:
            token = tokens[signature] = SignatureToken(len(tokens))
        return token

    def note_problem(self, problem: StoreProblem) -> None:
        """Report `problem` once (by key)."""
        if all(p.key != problem.key for p in self.problems):
            self.problems.append(problem)

    def unreadable(self, key: str, message: str, path: str | None = None) -> Unreadable:
        """Report that `key` cannot be read, and the Unreadable to raise for it."""
        self.note_problem(StoreProblem(key, message, path if path is not None else key if key.startswith("/") else None))
        return Unreadable(one_line(message))

    def get(self, path: str) -> Node | None:
        """The node at an absolute path, or None if there is none; Unreadable where the path leads through a group
        whose members could not be listed (`Node.members_unread`): it may be there."""
        node = self.root
        for part in normalize_path(path).split("/")[1:]:
            if not part:
                continue
            node = node.child(part)
            if node is None:
                return None
        return node

    def prefer_attributes(self, names: frozenset[str]) -> None:  # noqa: B027 -- optional: a hint most trees ignore
        """A hint: the attributes the run reads. A backend that reads attribute values one by one (HDF5) reads
        these while it has the object open; any other is still read when asked for. Default: ignored."""

    def walk(self) -> Iterator[Node]:
        """Every node once, depth first, in sorted order; links are yielded but never entered."""
        return walk(self.root)

    def close(self) -> None:  # noqa: B027 -- optional: a tree holding nothing open inherits this
        """Release what the tree holds open (files, connections); nothing by default."""

    def __enter__(self) -> Tree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def walk(top: Node) -> Iterator[Node]:
    """`top` and every node below it once, depth first, in sorted order; never deeper than MAX_DEPTH levels below it.

    Ends on any input: a node met again (a backend that hands out one object under two paths) is not entered again,
    and groups nested past MAX_DEPTH are reported once and not entered.
    """
    seen: set[int] = set()
    base = top.path.rstrip("/").count("/")
    stack = [top]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        if node.kind == "link":
            continue
        if node.path.count("/") - base >= MAX_DEPTH:
            node.tree.note_problem(
                StoreProblem(node.path, f"groups nest more than {MAX_DEPTH} levels deep; nothing below is read", node.path)
            )
            continue
        children = list(node.children().values())
        here = node.path.rstrip("/")
        for child in children:
            # Its parent is known here: a selector's `parent:` need not look it up from the root (`Node.parent`).
            if child.path.rpartition("/")[0] == here:
                child.__dict__.setdefault("_parent", node)
        stack.extend(reversed(children))


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
