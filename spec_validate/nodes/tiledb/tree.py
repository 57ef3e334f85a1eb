"""TileDB backend (tiledb-py, imported lazily): groups and arrays as nodes, opened read-only, never written.

TileDB reads every file in an object's folder and follows symlinks, so no object is handed to it before its folder
has been checked: only regular files and folders, none a symlink (a link could lead out of the store, or back into
it without end), nothing named by a URI outside the store, and TileDB's own files (generic tiles, fragment
metadata) with sizes that fit what they hold (`fragments.py`). A member or array that fails the check, or that
TileDB cannot read, is reported on the tree with its path and reason; the rest of the store is still read.

Every call into libtiledb goes through the tree's reader (`service.py`): by default a process of its own, so that
a crash of the library on a corrupt file is that part's unreadable record, not the end of the run. Which objects
are groups and arrays is decided here from their marker files, as TileDB decides it.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

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
    element_bytes,
    rows_per_block,
    uniform_block,
)
from spec_validate.nodes.tiledb.fragments import tile_header_problem
from spec_validate.nodes.tiledb.library import Failure, budget_for

if TYPE_CHECKING:
    from spec_validate.nodes.tiledb.service import IsolatedReader, LocalReader

# Files or folders that mark a directory as a TileDB group or array (old and new layouts).
GROUP_MARKERS = ("__tiledb_group.tdb", "__group")
# The child of a sparse array that shows its stored cells: coordinates and attribute values, one record per cell.
# TileDB reserves names starting "__", so no attribute can be called this.
CELLS = "__cells"
ARRAY_MARKERS = ("__schema", "__array_schema.tdb")
INSTALL_HINT = "install spec-validate[tiledb] to read TileDB groups and arrays"
# Read through a reader process of the tree's own (False: in this process, for tests that change the library's
# budgets). A crash of libtiledb then ends only that process.
ISOLATE = True


# The most entries an object's folder may hold to be checked (fragments, commits, metadata files): far beyond a real one.
MAX_ENTRIES = 100_000
# How deep inside an object's folder its files lie (`__fragments/<fragment>/a0.tdb`).
MAX_OBJECT_DEPTH = 4


# The folders whose files are each one generic tile (schemas, metadata, group details), checked before TileDB reads
# them (`fragments.tile_header_problem`).
TILE_FOLDERS = ("__schema", "__meta", "__group")


def looks_like_tiledb(path: str) -> bool:
    """True when the directory holds a TileDB group or array marker (no tiledb import needed)."""
    return any(os.path.lexists(os.path.join(path, m)) for m in GROUP_MARKERS + ARRAY_MARKERS)


def object_kind(folder: str) -> str | None:
    """The kind of TileDB object in the folder ("array", "group" or None), as TileDB's `object_type` says: an array
    by its `__schema` folder (or the older `__array_schema.tdb` file), else a group by its `__group` folder (or
    `__tiledb_group.tdb` file). TileDB takes anything but a folder as a file there (a FIFO too: it is reported when
    the object is opened)."""

    def folder_at(name: str) -> bool:
        return os.path.isdir(os.path.join(folder, name))

    def file_at(name: str) -> bool:
        return os.path.exists(os.path.join(folder, name)) and not folder_at(name)

    if folder_at("__schema") or file_at("__array_schema.tdb"):
        return "array"
    if folder_at("__group") or file_at("__tiledb_group.tdb"):
        return "group"
    return None


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


def _require_tiledb() -> None:
    """InputError unless tiledb-py is installed (it is imported by the reader, not here)."""
    try:
        missing = sys.modules.get("tiledb", ...) is None or importlib.util.find_spec("tiledb") is None
    except (ImportError, ValueError):
        missing = True
    if missing:
        raise InputError(f"{INSTALL_HINT} (no module named 'tiledb')")


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
        if not os.path.isdir(os.path.join(self.uri, "__group")):
            return {}  # an old-layout group (only __tiledb_group.tdb) carries no metadata
        if not self._safe:
            raise Unreadable(f"{self.path}: the group is not opened")
        try:
            return self.tree.reader.call("group_meta", self.uri, what=f"reading the metadata of {self.path}")
        except Failure as exc:
            raise self.tree.unreadable(self.path, f"{self.path}: {exc}") from None

    @cached_property
    def _children(self) -> dict[str, Node]:
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
            kind = object_kind(uri)
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
                members = self.tree.reader.call("group_members", self.uri, what=f"listing the members of {self.path}")
                found.update(members)
            except Failure as exc:  # those in its folder are still read: whether it has others is unknown
                self.members_unread = f"{self.path}: {exc}"
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

    def _check_folder(self) -> None:
        """Unreadable, reported, unless the array's folder may be handed to TileDB (its files checked)."""
        why = unsafe_entry(self.uri, only_own=False)
        if why is not None:
            raise self.tree.unreadable(self.path, f"{self.path}: {why}; the array is not opened")

    @cached_property
    def _info(self) -> dict[str, Any]:
        got = self.__dict__.get("_info_error")
        if got is not None:
            raise Unreadable(got)
        try:
            self._check_folder()
            info = self.tree.reader.call("array_info", self.uri, what=f"opening {self.path}")
        except Unreadable as exc:
            self.__dict__["_info_error"] = str(exc)
            raise
        except Failure as exc:
            message = f"{self.path}: {exc}"
            self.__dict__["_info_error"] = message
            raise self.tree.unreadable(self.path, message) from None
        string = info["string"]
        return {
            **info,
            "string": StringStorage(*string) if string is not None else None,
            "dtype": np.dtype(info["dtype"]) if info["dtype"] is not None else None,
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
                    query: tuple = ("cells", (attr,), (), lo, hi)
                else:
                    check_block_size(self.path, shape, (rows.start, rows.stop), element_bytes(dtype))
                    query = ("dense", attr, lo, hi)
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


class _Reader:
    """An array open for a scan in the tree's reader (a budget it grows itself when TileDB asks for more); a failure
    to open it, or to read rows of it, is reported as this array's."""

    def __init__(self, node: TileDBArrayNode, budget: int) -> None:
        self.node, self.budget = node, budget

    def __enter__(self) -> _Reader:
        node = self.node
        node._check_folder()
        try:
            self.scan = node.tree.reader.scan(node.uri, self.budget, what=f"opening {node.path}")
        except Failure as exc:
            raise node.tree.unreadable(node.path, f"{node.path}: {exc}") from None
        return self

    def __exit__(self, *exc: object) -> None:
        self.scan.close()

    def batches(self, query: tuple, rows: slice) -> Iterator[Any]:
        """The batches of `query` (`library.Scan.first`); a failure to read them is this array's rows unreadable."""
        path = self.node.path
        try:
            yield from self.scan.batches(query, what=f"reading {path} rows {rows.start}..{rows.stop}")
        except Failure as exc:
            message = f"{path}: rows {rows.start}..{rows.stop} cannot be read ({exc})"
            raise self.node.tree.unreadable(path, message) from None


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
        """The cells stored, as the fragments' metadata says (0 where it cannot be read: the scan says why)."""
        try:
            self._array._check_folder()
            return self.tree.reader.call("cell_count", self.uri, what=f"counting the cells of {self._array.path}")
        except (Failure, Unreadable):
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
                for result in reader.batches(("cells", tuple(attrs), tuple(dims), lo, hi), rows):
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
        _require_tiledb()
        self.source = path
        uri = os.path.abspath(path)
        self._real_root = os.path.realpath(uri)
        self._seen: dict[str, str] = {self._real_root: "/"}  # real folder -> the node path it is read as
        kind = object_kind(uri)
        if kind == "group":
            self._root: Node = TileDBGroupNode(self, "/", uri)
        elif kind == "array":
            self._root = TileDBArrayNode(self, "/", uri)
        else:
            raise InputError(f"{path}: not a TileDB group or array")
        # Started now: the reader imports TileDB while the run loads its packs. (Imported here: every run imports this
        # module, for the name CELLS, and only a TileDB store needs a reader.)
        from spec_validate.nodes.tiledb import service

        self.reader: IsolatedReader | LocalReader = service.IsolatedReader() if ISOLATE else service.LocalReader()

    def close(self) -> None:
        self.reader.close()

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
