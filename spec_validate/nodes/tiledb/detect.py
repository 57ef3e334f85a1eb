"""A TileDB group or array (a CXG) is recognised by its marker files, without importing tiledb."""

from __future__ import annotations

from spec_validate.nodes.base import Tree
from spec_validate.nodes.formats import container_format


@container_format("tiledb", handles="directory", order=10)
def open_tiledb(path: str) -> Tree | None:
    """The TileDB group or array in the directory `path`, or None when it holds no TileDB marker."""
    from spec_validate.nodes.tiledb.tree import TileDBTree, looks_like_tiledb

    return TileDBTree(path) if looks_like_tiledb(path) else None
