"""A Zarr v2 or v3 store, in a directory or a zip file, is recognised by its metadata documents."""

from __future__ import annotations

from spec_validate.errors import DamagedInput, InputError
from spec_validate.nodes.base import Tree
from spec_validate.nodes.formats import container_format


@container_format("zarr", handles="directory", order=20)
def open_zarr_directory(path: str) -> Tree | None:
    """The Zarr store in the directory `path`, or None when it holds no Zarr document."""
    from spec_validate.nodes.zarr.tree import ZarrTree, detect_zarr_format
    from spec_validate.storage.keyvalue import DirectoryStore

    kv = DirectoryStore(path)
    zarr_format = detect_zarr_format(kv)
    if zarr_format is None:
        kv.close()
        return None
    return ZarrTree(kv, zarr_format)


@container_format("zarr-zip", handles="file", order=20)
def open_zarr_zip(path: str) -> Tree | None:
    """The Zarr store zipped in the file `path`; None for a file that is no zip; InputError for a zip of no store."""
    import zipfile  # here, not at the top: an HDF5 run never needs it

    if not zipfile.is_zipfile(path):
        return None
    from spec_validate.nodes.zarr.tree import ZarrTree, detect_zarr_format
    from spec_validate.storage.keyvalue import ZipStore

    kv = ZipStore(path)
    zarr_format = detect_zarr_format(kv)
    if zarr_format is None:
        kv.close()
        if path.lower().endswith(".zarr.zip"):  # named a zipped store: one holding none fails
            raise DamagedInput(path, "a zip file, but no Zarr store in it, as a .zarr.zip holds")
        raise InputError(f"{path}: a zip file, but not a zipped Zarr store")
    return ZarrTree(kv, zarr_format)
