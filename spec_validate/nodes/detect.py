"""open_store(path) -> Tree: which backend reads this path."""

from __future__ import annotations

import os

from spec_validate.errors import InputError
from spec_validate.nodes.base import Tree


def open_store(path: str, list_folders: bool = True) -> Tree:
    """Open `path` read-only as a node tree.

    Args:
        path: an HDF5 file (`.h5ad`, `.h5seurat`, ...), a Zarr v2/v3 directory store, a zipped Zarr store,
            or a TileDB group or array (a CXG; needs the `tiledb` extra). Or a URL (`s3://`, `gs://`,
            `https://`, ...) of an HDF5 file or a Zarr v2/v3 store, read through fsspec (the `remote` extra).
        list_folders: False to read a remote Zarr store that has consolidated metadata from it alone, listing no
            folder (fewer requests; a node it leaves out is not seen, and the clauses on stored keys are not
            checked). Local stores are listed.

    Returns:
        The tree; close it (or use it as a context manager) when done.

    Raises:
        InputError: the path is missing, unreadable, or not a store this tool reads. Messages about a URL
            name it without user, password or query string.
    """
    from spec_validate.nodes.urls import is_url

    if is_url(path):
        from spec_validate.nodes.remote import open_url

        return open_url(path, list_folders)
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file or directory")
    import stat

    mode = os.stat(path).st_mode
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        # Opening a FIFO for reading waits for a writer; a device could be anything: neither is ever opened.
        raise InputError(f"{path}: not a regular file or directory (a FIFO, socket or device); never opened")
    if os.path.isdir(path):
        from spec_validate.nodes.keyvalue import DirectoryStore
        from spec_validate.nodes.tiledb import TileDBTree, looks_like_tiledb
        from spec_validate.nodes.zarr import ZarrTree, detect_zarr_format

        if looks_like_tiledb(path):
            return TileDBTree(path)
        kv = DirectoryStore(path)
        zarr_format = detect_zarr_format(kv)
        if zarr_format is None:
            if path.rstrip("/").endswith(".cxg"):
                raise InputError(f"{path}: a .cxg directory, but no TileDB group or array in it (no __tiledb_group.tdb)")
            raise InputError(f"{path}: a directory, but not a Zarr store (no .zgroup, .zarray, .zattrs or zarr.json)")
        return ZarrTree(kv, zarr_format)
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: permission denied")
    from spec_validate.nodes.hdf5 import HDF5Tree, is_hdf5

    if is_hdf5(path):
        return HDF5Tree(path)
    import zipfile  # here, not at the top: an HDF5 run never needs it

    if zipfile.is_zipfile(path):
        from spec_validate.nodes.keyvalue import ZipStore
        from spec_validate.nodes.zarr import ZarrTree, detect_zarr_format

        kv = ZipStore(path)
        zarr_format = detect_zarr_format(kv)
        if zarr_format is None:
            kv.close()
            raise InputError(f"{path}: a zip file, but not a zipped Zarr store")
        return ZarrTree(kv, zarr_format)
    raise InputError(f"{path}: not an HDF5 file or a Zarr store")
