"""An HDF5 file is recognised by its signature (at offset 0, or after a user block)."""

from __future__ import annotations

from spec_validate.nodes.base import Tree
from spec_validate.nodes.formats import container_format


@container_format("hdf5", handles="file", order=10)
def open_hdf5(path: str) -> Tree | None:
    """The HDF5 file at `path`, or None when it carries no HDF5 signature."""
    from spec_validate.nodes.hdf5.tree import HDF5Tree, is_hdf5

    return HDF5Tree(path) if is_hdf5(path) else None
