"""TileDB backend (tiledb-py, imported lazily): groups and arrays as nodes, opened read-only, never written.

TileDB reads every file in an object's folder and follows symlinks, so no object is handed to it before its folder
has been checked: only regular files and folders, none a symlink (a link could lead out of the store, or back into
it without end), nothing named by a URI outside the store. A member or array that fails the check, or that TileDB
cannot read, is reported on the tree with its path and reason; the rest of the store is still read.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cached_property
from typing import Any

import numpy as np

from spec_validate.errors import InputError
from spec_validate.kernels.block import Block
from spec_validate.nodes.base import (
    DEFAULT_BLOCK_ELEMENTS,
    Node,
    Storage,
    StoreProblem,
    StringStorage,
    Tree,
    Unreadable,
    check_block_size,
    describe,
    element_bytes,
    plain,
    rows_per_block,
    uniform_block,
)

# Files or folders that mark a directory as a TileDB group or array (old and new layouts).
GROUP_MARKERS = ("__tiledb_group.tdb", "__group")
# The child of a sparse array that shows its stored cells: coordinates and attribute values, one record per cell.
# TileDB reserves names starting "__", so no attribute can be called this.
CELLS = "__cells"
ARRAY_MARKERS = ("__schema", "__array_schema.tdb")
INSTALL_HINT = "install spec-validate[tiledb] to read TileDB groups and arrays"


# The most entries an object's folder may hold to be checked (fragments, commits, metadata files): far beyond a real one.
MAX_ENTRIES = 100_000
# How deep inside an object's folder its files lie (`__fragments/<fragment>/a0.tdb`).
MAX_OBJECT_DEPTH = 4


# TileDB's generic tile header (schemas, metadata, group details): format version, persisted size, tile size, datatype,
# cell size, encryption, filter pipeline size. TileDB allocates from these sizes before it can find them wrong.
GENERIC_TILE = struct.Struct("<IQQBQBI")
TILE_FOLDERS = ("__schema", "__meta", "__group")
MAX_TILE_BYTES = 256 * 2**20


def looks_like_tiledb(path: str) -> bool:
    """True when the directory holds a TileDB group or array marker (no tiledb import needed)."""
    return any(os.path.lexists(os.path.join(path, m)) for m in GROUP_MARKERS + ARRAY_MARKERS)


def unsafe_entry(folder: str, only_own: bool) -> str | None:
    """Why TileDB must not open the object in `folder`, or None: a symlink, FIFO, socket or device among its files.

    `only_own`: a group's own files only (its `__`-prefixed entries); its members are checked when opened.
    Folders nested deeper than an object's own layout, or more entries than a real object holds, are refused too.
    """
    count = 0
    stack = [(folder, 0)]
    while stack:
        here, depth = stack.pop()
        try:
            entries = list(os.scandir(here))
        except OSError as exc:
            return f"{here} cannot be listed ({exc.strerror or exc})"
        for entry in entries:
            if only_own and here == folder and not entry.name.startswith("__"):
                continue
            count += 1
            if count > MAX_ENTRIES:
                return f"holds more than {MAX_ENTRIES} files"
            why = _entry_problem(entry, here, depth)
            if why is not None:
                return f"{os.path.relpath(entry.path, folder)} {why}"
            if entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, depth + 1))
    return None


def _entry_problem(entry: os.DirEntry, here: str, depth: int) -> str | None:
    """Why one entry of an object's folder (at `depth` below it, in the folder `here`) must not reach TileDB."""
    try:
        mode = entry.stat(follow_symlinks=False).st_mode
    except OSError as exc:
        return f"cannot be examined ({exc.strerror or exc})"
    if stat.S_ISLNK(mode):
        return "is a symlink"
    if stat.S_ISDIR(mode):
        return "nests deeper than a TileDB object does" if depth >= MAX_OBJECT_DEPTH else None
    if not stat.S_ISREG(mode):
        return "is not a regular file (a FIFO, socket or device)"
    if os.path.basename(here) in TILE_FOLDERS:
        return tile_header_problem(entry.path)
    return None


def tile_header_problem(path: str) -> str | None:
    """Why the generic tile in the file `path` (a schema, metadata or group details) is not one TileDB may read, or None.

    Its header's sizes must add up to the file's, and the tile and cell sizes be ones a real tile has: a corrupt size
    field would have TileDB allocate gigabytes before it found out.
    """
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(GENERIC_TILE.size)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if len(head) < GENERIC_TILE.size:
        return "is shorter than a TileDB tile header (truncated)"
    _, persisted, tile, _, cell, _, pipeline = GENERIC_TILE.unpack(head)
    if GENERIC_TILE.size + pipeline + persisted != size:
        return f"has a tile header that says {GENERIC_TILE.size + pipeline + persisted} bytes, but holds {size} (corrupt)"
    if tile > MAX_TILE_BYTES:
        return f"has a tile header that says the tile holds {tile} bytes, more than {MAX_TILE_BYTES} (corrupt)"
    if not 0 < cell <= max(tile, 1):
        return f"has a tile header with cell size {cell} for a tile of {tile} bytes (corrupt)"
    return None


def _tiledb():
    try:
        import tiledb
    except ImportError as exc:  # the optional extra is not installed
        raise InputError(f"{INSTALL_HINT} ({exc})") from None
    return tiledb


# TileDB's own read budget is 10 GB, and a sparse query run to completion grows its buffers until every cell fits:
# reading a 5e7-value CXG held 2.8 GB. Every read here runs on a context of its own with a bounded budget instead,
# and sparse cells come in batches that fill fixed buffers (see `_cell_batches`); an array whose tiles need more
# (TileDB loads a whole tile) is opened under a budget sized from its schema, up to MAX_READ_BUDGET.
READ_BUDGET = 64 * 2**20  # sm.mem.total_budget of a read
RESULT_BUFFER = 4 * 2**20  # py.init_buffer_bytes: each field's buffer for a batch of sparse cells
MAX_READ_BUDGET = 10 * 2**30  # TileDB's default: no array is refused that TileDB alone would read
_contexts: dict[tuple[int, bool], Any] = {}  # (budget, under a data limit) -> context


def _data_limit() -> int | None:
    """The process's data limit (--memory-limit sets RLIMIT_DATA), or None."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_DATA)[0]
    except (ImportError, AttributeError, OSError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft


def read_budgets() -> tuple[int, int]:
    """(the budget a read starts with, the most any read may have). Under a data limit both fit it: an eighth of
    the limit to start with (TileDB's readers size their buffers from the budget), half of it at most."""
    limit = _data_limit()
    if limit is None:
        return READ_BUDGET, MAX_READ_BUDGET
    base = min(READ_BUDGET, max(32 * 2**20, limit // 8))
    return base, max(base, limit // 2)


def context(tiledb: Any, budget: int | None = None) -> Any:
    """A TileDB context whose reads stay within `budget` bytes (default: `read_budgets()[0]`), made once per budget.

    Under a data limit it runs two threads each for compute and I/O (their stacks count towards the limit).
    """
    budget = budget or read_budgets()[0]
    limited = _data_limit() is not None
    ctx = _contexts.get((budget, limited))
    if ctx is None:
        config = {
            "sm.mem.total_budget": str(budget),
            "sm.memory_budget": str(budget // 2),
            "sm.memory_budget_var": str(budget // 2),
            "py.init_buffer_bytes": str(RESULT_BUFFER),
        }
        if limited:
            config.update({"sm.compute_concurrency_level": "2", "sm.io_concurrency_level": "2"})
        ctx = _contexts[budget, limited] = tiledb.Ctx(tiledb.Config(config))
    return ctx


def tile_bytes(schema: Any) -> int:
    """The most bytes one tile of one field of the array holds once decoded (a sparse array's tiles hold `capacity`
    cells; a dense array's, the product of its tile extents). A variable-sized field counts its offsets only."""
    if schema.sparse:
        cells = int(schema.capacity)
    else:
        cells = 1
        for dim in schema.domain:
            cells *= int(dim.tile) if dim.tile is not None else 1
    fields = [np.dtype(d.dtype) for d in schema.domain] + [np.dtype(a.dtype) for a in schema]
    widest = max((8 if f.kind in "SUO" else f.itemsize for f in fields), default=8)
    return cells * widest


def budget_for(tiles: int) -> int:
    """The read budget for an array whose largest tile holds `tiles` bytes: room for four such tiles (TileDB holds
    one per field it reads, and its readers split the budget), at least the starting budget, a power of two (arrays
    alike share a context), at most the most allowed."""
    base, most = read_budgets()
    need = max(base, 4 * tiles)
    return min(most, 1 << (need - 1).bit_length())


def over_budget(exc: BaseException) -> bool:
    """Whether TileDB refused a read for want of memory budget (a tile larger than it allows)."""
    return "budget" in str(exc)  # "...increase memory budget", "Unable to copy one tile with current budget/buffers"


def _object_type(tiledb, uri: str) -> str | None:
    try:
        return tiledb.object_type(uri, ctx=context(tiledb))
    except Exception:  # an unreadable entry is not a member
        return None


def _meta(meta) -> dict[str, Any]:
    # Metadata values that are JSON strings stay strings: the spec stores JSON text (cxg_schema) that way.
    return {str(k): plain(meta[k]) for k in sorted(meta.keys())}


class TileDBGroupNode(Node):
    kind = "group"

    def __init__(self, tree: TileDBTree, path: str, uri: str) -> None:
        self.tree, self.path, self.uri = tree, path, uri

    @cached_property
    def _safe(self) -> bool:
        """True when TileDB may open the group (its own files checked), else reported once."""
        why = unsafe_entry(self.uri, only_own=True)
        if why is not None:
            self.tree.note_problem(StoreProblem(self.path, f"{self.path}: {why}; the group is not opened", self.path))
        return why is None

    @cached_property
    def attrs(self) -> Mapping[str, Any]:
        tiledb = self.tree.tiledb
        if not os.path.isdir(os.path.join(self.uri, "__group")):
            return {}  # an old-layout group (only __tiledb_group.tdb) carries no metadata
        if not self._safe:
            raise Unreadable(f"{self.path}: the group is not opened")
        try:
            with tiledb.Group(self.uri, mode="r", ctx=context(tiledb)) as group:
                return _meta(group.meta)
        except Exception as exc:
            raise self.tree.unreadable(self.path, f"{self.path}: the group's metadata cannot be read ({describe(exc)})") from None

    @cached_property
    def _children(self) -> dict[str, Node]:
        tiledb = self.tree.tiledb
        found = self._members()
        out: dict[str, Node] = {}
        for name in sorted(found):
            path = f"{self.path.rstrip('/')}/{name}"
            if not name or "/" in name or name in (".", ".."):
                self._report(path, f"{self.path}: a member named {name!r} cannot be a node; not read")
                continue
            uri = self.tree.inside(found[name], path)
            if uri is None:
                continue
            kind = _object_type(tiledb, uri)
            if kind == "group":
                out[name] = TileDBGroupNode(self.tree, path, uri)
            elif kind == "array":
                out[name] = TileDBArrayNode(self.tree, path, uri)
        return out

    def _members(self) -> dict[str, str]:
        """Member name -> URI or folder. Groups written before the group format of TileDB 2.8 list no members; their
        members are the TileDB objects in the group's folder. Newer groups may also name members by URI."""
        found: dict[str, str] = {}
        # The group's own files are checked whatever its layout: a special file in place of an old-layout group's
        # marker (which TileDB never reads here) is still no TileDB group, and the report says so.
        safe = self._safe
        if os.path.isdir(os.path.join(self.uri, "__group")) and safe:
            try:
                with self.tree.tiledb.Group(self.uri, mode="r", ctx=context(self.tree.tiledb)) as group:
                    for member in group:
                        found[member.name or os.path.basename(member.uri.rstrip("/"))] = member.uri
            except Exception as exc:  # those in its folder are still read: whether it has others is unknown
                self.members_unread = f"{self.path}: the group's members cannot be read ({describe(exc)})"
                self._report(self.path, self.members_unread)
        try:
            names = sorted(os.listdir(self.uri))
        except OSError as exc:  # the members it names are read; whether its folder holds others is unknown
            names = []
            self.members_unread = f"{self.path}: its folder cannot be listed ({exc.strerror or exc})"
            self._report(self.path, self.members_unread)
        for name in names:
            full = os.path.join(self.uri, name)
            if name in found or name.startswith("__"):
                continue
            if os.path.islink(full):
                path = f"{self.path.rstrip('/')}/{name}"
                self._report(path, f"{path}: a symlink; not followed")
            elif os.path.isdir(full):
                found[name] = full
        return found

    def _report(self, key: str, message: str) -> None:
        self.tree.note_problem(StoreProblem(key, message, self.path))

    def children(self) -> dict[str, Node]:
        return self._children


class TileDBArrayNode(Node):
    """A TileDB array; its values are those of its first attribute.

    An array with several attributes (CXG `obs`, `var`, `Xr`) also has one child node per attribute, so
    rules can select a column (`/obs/cell_type`) and its values are scanned like any array's.
    """

    kind = "array"
    attribute: str | None = None  # set on the node for one attribute of a multi-attribute array

    def __init__(self, tree: TileDBTree, path: str, uri: str) -> None:
        self.tree, self.path, self.uri = tree, path, uri

    def children(self) -> dict[str, Node]:
        if self.attribute is not None:
            return {}
        try:
            return self._attribute_nodes
        except Unreadable:  # reported by the tree: an array that cannot be opened shows no columns
            return {}

    @cached_property
    def _attribute_nodes(self) -> dict[str, Node]:
        out: dict[str, Node] = {}
        if self._info["sparse"]:
            out[CELLS] = TileDBCellsNode(self)
        if len(self._info["attrs"]) < 2:
            return out
        for a in sorted(self._info["attrs"], key=lambda a: a["name"]):
            if a["name"]:  # the anonymous attribute has no name to address it by
                out[a["name"]] = TileDBAttributeNode(self, a["name"])
        return out

    def _open(self, budget: int | None = None):
        """The array opened read-only, its reads within `budget` bytes (default: the starting budget)."""
        why = unsafe_entry(self.uri, only_own=False)
        if why is not None:
            raise self.tree.unreadable(self.path, f"{self.path}: {why}; the array is not opened")
        try:
            return self.tree.tiledb.open(self.uri, mode="r", ctx=context(self.tree.tiledb, budget))
        except Exception as exc:
            raise self.tree.unreadable(self.path, f"{self.path}: cannot open TileDB array ({describe(exc)})") from None

    @cached_property
    def _info(self) -> dict[str, Any]:
        got = self.__dict__.get("_info_error")
        if got is not None:
            raise Unreadable(got)
        try:
            return self._read_info()
        except Unreadable as exc:
            self.__dict__["_info_error"] = str(exc)
            raise
        except Exception as exc:
            message = f"{self.path}: the array's schema or metadata cannot be read ({describe(exc)})"
            self.__dict__["_info_error"] = message
            raise self.tree.unreadable(self.path, message) from None

    def _read_info(self) -> dict[str, Any]:
        with self._open() as array:
            schema = array.schema
            dims = [
                {"name": d.name, "dtype": np.dtype(d.dtype).str, "domain": [plain(v) for v in d.domain], "tile": plain(d.tile)}
                for d in schema.domain
            ]
            attrs = [{"name": a.name, "dtype": np.dtype(a.dtype).str} for a in schema]
            first = schema.attr(0) if schema.nattr else None
            string = None
            if first is not None and np.dtype(first.dtype).kind in "SU":
                # TileDB stores var-sized strings as UTF-8 (or ASCII) bytes; fixed-size ones as cell_val_num bytes.
                charset = "ascii" if np.dtype(first.dtype).kind == "S" else "utf-8"
                string = StringStorage("variable" if first.isvar else "fixed", charset, np.dtype(first.dtype).str)
            try:
                nonempty = array.nonempty_domain()
            except Exception:
                nonempty = ()
            fills = {a.name: a.fill for a in schema}
            try:
                tiles = tile_bytes(schema)
            except (TypeError, ValueError, OverflowError):  # extents no number can take: the starting budget
                tiles = 0
            return {
                "tiles": tiles,
                "string": string,
                "sparse": bool(schema.sparse),
                "dims": dims,
                "attrs": attrs,
                "dtype": np.dtype(schema.attr(0).dtype) if schema.nattr else None,
                "meta": _meta(array.meta),
                "nonempty": nonempty,
                "fills": fills,
            }

    @property
    def attrs(self) -> Mapping[str, Any]:
        return self._info["meta"]

    @property
    def shape(self) -> tuple[int, ...]:
        out = []
        for d in self._info["dims"]:
            lo, hi = d["domain"]
            out.append(int(hi) - int(lo) + 1 if isinstance(lo, int) and isinstance(hi, int) else 0)
        return tuple(out)

    @property
    def dtype(self) -> np.dtype | None:
        return self._info["dtype"]

    @property
    def chunks(self) -> tuple[int, ...] | None:
        tiles = [d["tile"] for d in self._info["dims"]]
        return tuple(int(t) for t in tiles) if all(isinstance(t, int) for t in tiles) else None

    @property
    def storage(self) -> Storage:
        info = self._info
        return Storage(
            format="tiledb", string=info["string"], extra={"sparse": info["sparse"], "dims": info["dims"], "attrs": info["attrs"]}
        )

    def blocks(self, max_elements: int = DEFAULT_BLOCK_ELEMENTS) -> Iterator[Block]:
        """Tile-aligned row blocks of the first attribute (dense: C order; sparse: the cells stored in those rows)."""
        info = self._info
        if not info["attrs"]:
            return
        attr = self.attribute if self.attribute is not None else info["attrs"][0]["name"]
        lows = [d["domain"][0] for d in info["dims"]]
        shape = self.shape
        row = int(np.prod(shape[1:], dtype=object)) if len(shape) > 1 else 1
        dtype = self.dtype if self.dtype is not None else np.dtype("u1")
        nonempty = info.get("nonempty")
        with _Reader(self, budget_for(info["tiles"])) as reader:
            start = 0
            for rows in _merged(shape, rows_per_block(shape, self.chunks, max_elements), nonempty, lows[0]):
                lo, hi = lows[0] + rows.start, lows[0] + rows.stop - 1
                if rows.step == 0:  # rows outside the non-empty domain: the fill value (dense) or no cells (sparse)
                    if not info["sparse"]:
                        fill = np.asarray(info["fills"].get(attr, 0)).reshape(-1)
                        yield uniform_block(start, fill[0] if fill.size else 0, dtype, (rows.stop - rows.start) * row)
                        start += (rows.stop - rows.start) * row
                    continue
                if info["sparse"]:
                    query = lambda array: _cell_batches(array, [attr], [], lo, hi)  # noqa: B023, E731 (run at once)
                else:
                    check_block_size(self.path, shape, (rows.start, rows.stop), element_bytes(dtype))
                    query = lambda array: [array.query(attrs=[attr])[lo : hi + 1]]  # noqa: B023, E731 (one batch)
                for result in reader.batches(query, rows):
                    # One attribute comes back as a bare ndarray, several as a mapping by name.
                    values = np.asarray(result[attr] if isinstance(result, Mapping) else result).reshape(-1)
                    yield Block(start, values)
                    start += values.size

    def edge_blocks(self, max_elements: int = DEFAULT_BLOCK_ELEMENTS) -> tuple[Block, Block] | None:
        first = last = None
        for block in self.blocks(max_elements):  # kept: the first and the latest, not every block
            if first is None:
                first = block
            last = block
        return (first, last) if first is not None else None


def _cell_batches(array: Any, attrs: list[str], dims: list[str], lo: Any, hi: Any) -> Iterator[Mapping[str, Any]]:
    """The cells of a sparse array whose first coordinate lies in lo..hi, a batch at a time as TileDB returns them
    (an incomplete query: each batch fills TileDB-Py's result buffers, `py.init_buffer_bytes`, and no more).

    Run to completion instead, a query grows its buffers until every cell fits: a sparse array's rows say nothing of
    how many cells they hold, so a row block sized by elements could hold the whole array.
    """
    yield from array.query(attrs=attrs, dims=dims, return_incomplete=True).multi_index[lo:hi]


class _Reader:
    """An array open for reading under a budget; a query TileDB refuses for want of budget before its first batch is
    run again with the array reopened under four times the budget, up to the most allowed."""

    def __init__(self, node: TileDBArrayNode, budget: int) -> None:
        self.node, self.budget = node, budget

    def __enter__(self) -> _Reader:
        self.array = self.node._open(self.budget)
        return self

    def __exit__(self, *exc: object) -> None:
        self.array.close()

    def batches(self, query: Callable[[Any], Iterable[Any]], rows: slice) -> Iterator[Any]:
        """The batches of `query(array)`; a failure to read them is this array's rows that cannot be read."""
        most = read_budgets()[1]
        while True:
            try:
                results = iter(query(self.array))
                first = next(results, _DONE)
                break
            except Exception as exc:
                if not over_budget(exc) or self.budget >= most:
                    raise self._unreadable(rows, exc) from None
            self.array.close()
            self.budget = min(most, self.budget * 4)
            self.array = self.node._open(self.budget)
        if first is _DONE:
            return
        yield first
        try:
            yield from results
        except Exception as exc:
            raise self._unreadable(rows, exc) from None

    def _unreadable(self, rows: slice, exc: BaseException) -> Unreadable:
        path = self.node.path
        return self.node.tree.unreadable(path, f"{path}: rows {rows.start}..{rows.stop} cannot be read ({describe(exc)})")


_DONE = object()


def _merged(shape: tuple[int, ...], step: int, nonempty: Any, low: Any) -> Iterator[slice]:
    """The row slices of blocks of `step` rows, with the rows before and after the array's non-empty domain (along
    the first dimension) as one slice of step 0 each: nothing is written there, so a declared 2**62 rows with
    nothing written is not gone through block by block (the slices are worked out from the domain, not listed)."""
    rows = shape[0] if shape else 1
    try:
        first, last = (int(x) - int(low) for x in nonempty[0]) if nonempty else (0, rows - 1)
    except (TypeError, ValueError, IndexError):
        first, last = 0, rows - 1
    if nonempty is None:  # nothing written at all
        first, last = 0, -1
    first, last = max(0, first), min(rows - 1, last)
    if first > last:
        if rows > 0:
            yield slice(0, rows, 0)
        return
    begin, end = first // step * step, min(rows, (last // step + 1) * step)  # the blocks holding written rows
    if begin > 0:
        yield slice(0, begin, 0)
    for at in range(begin, end, step):
        yield slice(at, min(end, at + step))
    if end < rows:
        yield slice(end, rows, 0)


class TileDBAttributeNode(TileDBArrayNode):
    """One attribute (column) of a multi-attribute TileDB array, at `<array path>/<attribute name>`."""

    def __init__(self, array: TileDBArrayNode, attribute: str) -> None:
        super().__init__(array.tree, f"{array.path.rstrip('/')}/{attribute}", array.uri)
        self.attribute = attribute
        self._array = array

    @cached_property
    def _info(self) -> dict[str, Any]:
        info = self._array._info
        dtype = next(np.dtype(a["dtype"]) for a in info["attrs"] if a["name"] == self.attribute)
        return {**info, "dtype": dtype, "meta": {}, "string": None}

    def values_in(self) -> tuple[str, str] | None:
        """A sparse array's cells carry every attribute: one pass over them gives this column's facts too."""
        return (f"{self._array.path.rstrip('/')}/{CELLS}", self.attribute) if self._info["sparse"] else None

    @property
    def storage(self) -> Storage:
        info = self._info
        return Storage(
            format="tiledb",
            extra={
                "sparse": info["sparse"],
                "attribute_of": self._array.path,
                "attrs": [{"name": self.attribute, "dtype": info["dtype"].str}],
            },
        )


class TileDBCellsNode(TileDBArrayNode):
    """The stored cells of a sparse TileDB array, at `<array path>/__cells`: a one-dimensional structured array with
    one field per dimension (the cell's coordinates) and per attribute ("" for the anonymous one), in the order
    the array returns its cells. Two arrays that store one matrix differently (CXG `Xr` and `Xc`) can then be
    summarised cell by cell, each in its own pass."""

    def __init__(self, array: TileDBArrayNode) -> None:
        super().__init__(array.tree, f"{array.path.rstrip('/')}/{CELLS}", array.uri)
        self.attribute = CELLS
        self._array = array

    @cached_property
    def _info(self) -> dict[str, Any]:
        info = self._array._info
        names = [d["name"] for d in info["dims"]] + [a["name"] for a in info["attrs"]]
        formats = [np.dtype(d["dtype"]) for d in info["dims"]] + [np.dtype(a["dtype"]) for a in info["attrs"]]
        # A var-sized attribute (strings) comes back as objects.
        formats = [f if f.kind not in "SU" else np.dtype(object) for f in formats]
        return {**info, "dtype": np.dtype({"names": names, "formats": formats}), "meta": {}, "string": None}

    @cached_property
    def _cell_count(self) -> int:
        try:
            fragments = self.tree.tiledb.array_fragments(self.uri, ctx=context(self.tree.tiledb))
            return int(sum(fragments.cell_num))
        except Exception:  # an old layout without fragment info: the count is not known before reading
            return 0

    @property
    def shape(self) -> tuple[int, ...]:
        return (self._cell_count,)

    @property
    def chunks(self) -> tuple[int, ...] | None:
        return None

    @property
    def storage(self) -> Storage:
        info = self._info
        return Storage(
            format="tiledb", extra={"sparse": True, "cells_of": self._array.path, "dims": info["dims"], "attrs": info["attrs"]}
        )

    def blocks(self, max_elements: int = DEFAULT_BLOCK_ELEMENTS) -> Iterator[Block]:
        """The cells stored in tile-aligned row blocks of the array's first dimension, in the array's order."""
        info = self._array._info
        dims = [d["name"] for d in info["dims"]]
        attrs = [a["name"] for a in info["attrs"]]
        low = info["dims"][0]["domain"][0]
        dtype = self._info["dtype"]
        with _Reader(self._array, budget_for(info["tiles"])) as reader:
            start = 0
            # Runs of rows outside the non-empty domain hold no cells: not queried (a declared 2**62 rows).
            shape = self._array.shape
            step = rows_per_block(shape, self._array.chunks, max_elements)
            for rows in _merged(shape, step, info.get("nonempty"), low):
                if rows.step == 0:
                    continue
                lo, hi = low + rows.start, low + rows.stop - 1
                for result in reader.batches(lambda array: _cell_batches(array, attrs, dims, lo, hi), rows):  # noqa: B023
                    count = len(np.asarray(result[dims[0]]))
                    values = np.empty(count, dtype=dtype)
                    for name in dims + attrs:
                        values[name] = np.asarray(result[name])
                    yield Block(start, values)
                    start += count


class TileDBTree(Tree):
    """A TileDB group (or a single array) opened read-only."""

    format = "tiledb"

    def __init__(self, path: str) -> None:
        self.tiledb = _tiledb()
        self.source = path
        uri = os.path.abspath(path)
        self._real_root = os.path.realpath(uri)
        self._seen: dict[str, str] = {self._real_root: "/"}  # real folder -> the node path it is read as
        kind = _object_type(self.tiledb, uri)
        if kind == "group":
            self._root: Node = TileDBGroupNode(self, "/", uri)
        elif kind == "array":
            self._root = TileDBArrayNode(self, "/", uri)
        else:
            raise InputError(f"{path}: not a TileDB group or array")

    @property
    def root(self) -> Node:
        return self._root

    def inside(self, uri: str, path: str) -> str | None:
        """The local folder of member `uri` when it lies inside the store and is not read already; else None, reported."""
        local = uri[7:] if uri.startswith("file://") else uri
        if "://" in local:
            self.note_problem(StoreProblem(path, f"{path}: a member at {local}, outside the store; not read", path))
            return None
        if not os.path.isabs(local):
            local = os.path.join(self._real_root, local)
        if os.path.islink(local):
            self.note_problem(StoreProblem(path, f"{path}: a symlink; not followed", path))
            return None
        real = os.path.realpath(local)
        if real != self._real_root and not real.startswith(self._real_root + os.sep):
            self.note_problem(StoreProblem(path, f"{path}: a member at {local}, outside the store; not read", path))
            return None
        if real in self._seen and self._seen[real] != path:
            self.note_problem(
                StoreProblem(path, f"{path}: names the folder already read as {self._seen[real]}; not read again", path)
            )
            return None
        self._seen[real] = path
        return local
