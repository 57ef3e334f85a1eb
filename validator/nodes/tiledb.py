"""TileDB backend (tiledb-py, imported lazily): groups and arrays as nodes, opened read-only, never written."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import Any

import numpy as np

from validator.errors import InputError
from validator.kernels.block import Block
from validator.nodes.base import (
    DEFAULT_BLOCK_ELEMENTS,
    Node,
    NodeError,
    Storage,
    StringStorage,
    Tree,
    plain,
    row_slices,
)

# Files or folders that mark a directory as a TileDB group or array (old and new layouts).
GROUP_MARKERS = ("__tiledb_group.tdb", "__group")
# The child of a sparse array that shows its stored cells: coordinates and attribute values, one record per cell.
# TileDB reserves names starting "__", so no attribute can be called this.
CELLS = "__cells"
ARRAY_MARKERS = ("__schema", "__array_schema.tdb")
INSTALL_HINT = "install spec-validate[tiledb] to read TileDB groups and arrays"


def looks_like_tiledb(path: str) -> bool:
    """True when the directory holds a TileDB group or array marker (no tiledb import needed)."""
    return any(os.path.exists(os.path.join(path, m)) for m in GROUP_MARKERS + ARRAY_MARKERS)


def _tiledb():
    try:
        import tiledb
    except ImportError as exc:  # the optional extra is not installed
        raise InputError(f"{INSTALL_HINT} ({exc})") from None
    return tiledb


def _object_type(tiledb, uri: str) -> str | None:
    try:
        return tiledb.object_type(uri)
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
    def attrs(self) -> Mapping[str, Any]:
        tiledb = self.tree.tiledb
        try:
            with tiledb.Group(self.uri, mode="r") as group:
                return _meta(group.meta)
        except Exception:  # an old-layout group (only __tiledb_group.tdb) carries no metadata
            return {}

    @cached_property
    def _children(self) -> dict[str, Node]:
        tiledb = self.tree.tiledb
        found: dict[str, str] = {}
        # Groups written before the group format of TileDB 2.8 list no members; their members are the
        # TileDB objects in the group's folder. Newer groups may also name members by URI.
        try:
            with tiledb.Group(self.uri, mode="r") as group:
                for member in group:
                    name = member.name or os.path.basename(member.uri.rstrip("/"))
                    uri = member.uri[7:] if member.uri.startswith("file://") else member.uri
                    found[name] = uri
        except Exception:
            pass
        if os.path.isdir(self.uri):
            for name in os.listdir(self.uri):
                full = os.path.join(self.uri, name)
                if name not in found and not name.startswith("__") and os.path.isdir(full):
                    found[name] = full
        out: dict[str, Node] = {}
        for name in sorted(found):
            kind = _object_type(tiledb, found[name])
            path = f"{self.path.rstrip('/')}/{name}"
            if kind == "group":
                out[name] = TileDBGroupNode(self.tree, path, found[name])
            elif kind == "array":
                out[name] = TileDBArrayNode(self.tree, path, found[name])
        return out

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
        return self._attribute_nodes

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

    def _open(self):
        try:
            return self.tree.tiledb.open(self.uri, mode="r")
        except Exception as exc:
            raise NodeError(f"{self.path}: cannot open TileDB array ({exc})") from None

    @cached_property
    def _info(self) -> dict[str, Any]:
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
            return {
                "string": string,
                "sparse": bool(schema.sparse),
                "dims": dims,
                "attrs": attrs,
                "dtype": np.dtype(schema.attr(0).dtype) if schema.nattr else None,
                "meta": _meta(array.meta),
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
        with self._open() as array:
            start = 0
            for rows in row_slices(shape, self.chunks, max_elements):
                lo, hi = lows[0] + rows.start, lows[0] + rows.stop - 1
                if info["sparse"]:
                    result = array.query(attrs=[attr], dims=[]).multi_index[lo:hi]
                else:
                    result = array.query(attrs=[attr])[lo : hi + 1]
                # One attribute comes back as a bare ndarray, several as a mapping by name.
                values = np.asarray(result[attr] if isinstance(result, Mapping) else result).reshape(-1)
                yield Block(start, values)
                start += values.size

    def edge_blocks(self, max_elements: int = DEFAULT_BLOCK_ELEMENTS) -> tuple[Block, Block] | None:
        blocks = list(self.blocks(max_elements))
        return (blocks[0], blocks[-1]) if blocks else None


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
            fragments = self.tree.tiledb.array_fragments(self.uri)
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
        with self._array._open() as array:
            start = 0
            for rows in row_slices(self._array.shape, self._array.chunks, max_elements):
                result = array.query(attrs=attrs, dims=dims).multi_index[low + rows.start : low + rows.stop - 1]
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
