"""open_store(path or URL) -> Tree: which transport reaches the input, then which format reader reads it.

A local path is offered to the container formats' detectors (`nodes/formats.py`: each format package registers its
own); a URL is read through a remote store (`storage/remote.py`) as an HDF5 file or a Zarr store.
"""

from __future__ import annotations

import os
from typing import Any

from spec_validate.errors import DamagedInput, InputError
from spec_validate.nodes.base import Tree
from spec_validate.nodes.formats import detectors


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
    from spec_validate.storage.urls import is_url

    if is_url(path):
        return open_url(path, list_folders)
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file or directory")
    import stat

    mode = os.stat(path).st_mode
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        # Opening a FIFO for reading waits for a writer; a device could be anything: neither is ever opened.
        raise InputError(f"{path}: not a regular file or directory (a FIFO, socket or device); never opened")
    if os.path.isdir(path):
        return _open_directory(path)
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: permission denied")
    for detector in detectors("file"):
        tree = detector.open(path)
        if tree is not None:
            return tree
    damage = _damage(path)
    if damage is not None:
        raise DamagedInput(path, damage)
    raise InputError(f"{path}: not an HDF5 file or a Zarr store")


def _open_directory(path: str) -> Tree:
    for detector in detectors("directory"):
        tree = detector.open(path)
        if tree is not None:
            return tree
    if path.rstrip("/").endswith(".cxg"):
        raise InputError(f"{path}: a .cxg directory, but no TileDB group or array in it (no __tiledb_group.tdb)")
    if path.rstrip("/" + os.sep).lower().endswith(ZARR_EXTENSIONS):  # named a store: one that is empty fails
        raise DamagedInput(path, "not a Zarr store, as its name says: no .zgroup, .zarray, .zattrs or zarr.json in it")
    raise InputError(f"{path}: a directory, but not a Zarr store (no .zgroup, .zarray, .zattrs or zarr.json)")


HDF5_EXTENSIONS = (".h5ad", ".h5mu", ".h5seurat", ".h5", ".hdf5", ".nwb")
ZARR_EXTENSIONS = (".zarr",)
# File names that say what the file holds, and so what it fails to be when its bytes are not that (empty, cut short,
# overwritten): a damaged file, reported as failing, where a file of any other name is one this tool does not read.
CLAIMED_BY_NAME = (
    (".zarr.zip", "not a zip file, as a .zarr.zip is"),
    (".h5ad", "not an HDF5 file, as an .h5ad is"),
    (".h5mu", "not an HDF5 file, as an .h5mu is"),
    (".h5seurat", "not an HDF5 file, as an .h5Seurat is"),
)


def _damage(path: str) -> str | None:
    """Why the file at `path`, which no reader opened, is not what its name says; None where its name says nothing
    (or names no format this tool's packs describe)."""
    name = os.path.basename(path).lower()
    size = os.path.getsize(path)
    if name.endswith(ZARR_EXTENSIONS):
        return f"not a Zarr store, as a .zarr is: a file of {size} bytes, where a store is a directory (a zip is named .zarr.zip)"
    said = next((said for suffix, said in CLAIMED_BY_NAME if name.endswith(suffix)), None)
    if said is None:
        return None
    return f"{said}: " + (
        "it is empty (0 bytes)" if size == 0 else f"its first bytes are not that format's ({size} bytes in all)"
    )


# Offsets at which an HDF5 file's signature may stand (after a user block of 512 bytes or a power of two above it).
_HDF5_SIGNATURE_OFFSETS = (0, 512, 1024, 2048, 4096, 8192)


def open_url(url: str, list_folders: bool = True) -> Tree:
    """Open the store at `url` read-only: an HDF5 file (by its signature) or a Zarr v2/v3 store.

    `list_folders` False: a Zarr store with consolidated metadata is read from it alone, no folder listed (see
    remote.RemoteStore).

    Raises:
        InputError: one line naming the redacted URL and the reason (not found, access denied, no credentials,
            a protocol whose package is missing, not a store this tool reads).
    """
    from urllib.parse import urlsplit

    from spec_validate.storage import remote

    shown = remote.redact_url(url)
    if urlsplit(url).path.rstrip("/").lower().endswith(".cxg"):
        raise InputError(f"{shown}: CXG (TileDB) stores are read from local paths only; copy the store to a local directory")
    fs, path = remote.filesystem(url)
    try:
        tree = _open(fs, path, url, shown, list_folders)
        tree.locator = url
        tree.remote = True
        tree.list_folders = list_folders
        return tree
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"{shown}: {remote.describe_error(exc, url)}") from None


def _open(fs: Any, path: str, url: str, shown: str, list_folders: bool = True) -> Tree:
    # A URL ending in .zarr names a store's root: its documents are asked for at once, without first asking what
    # the URL itself is (over HTTP a directory URL costs a HEAD, a redirect and a listing page: four requests).
    from urllib.parse import urlsplit

    from spec_validate.storage import remote

    tried_zarr = urlsplit(url).path.rstrip("/").lower().endswith(ZARR_EXTENSIONS)
    if tried_zarr:
        tree = _open_zarr(fs, path, url, list_folders)
        if tree is not None:
            return tree
    info: dict[str, Any] | None = None
    missing: str | None = None  # why there is no file at the URL itself
    try:
        info = fs.info(path)
    except FileNotFoundError as exc:
        cause = remote.underlying_error(exc)
        # Not there, or an HTTP directory its server does not list (404, 403): a Zarr store may still answer
        # for its keys. Any other failure (no connection, TLS) ends here.
        if cause is not exc and not isinstance(getattr(cause, "status", None), int):
            raise InputError(f"{shown}: {remote.describe_error(exc, url)}") from None
        missing = remote.describe_error(exc, url)
    if missing and urlsplit(url).path.lower().endswith(HDF5_EXTENSIONS):
        raise InputError(f"{shown}: {missing}")
    if info is not None and info.get("type") == "file":
        tree = _open_file(fs, path, info, url, shown)
        if tree is not None:
            return tree
    tree = None if tried_zarr else _open_zarr(fs, path, url, list_folders)
    if tree is not None:
        return tree
    if missing:
        raise InputError(f"{shown}: {missing}")
    raise InputError(f"{shown}: not an HDF5 file or a Zarr store")


def _open_zarr(fs: Any, path: str, url: str, list_folders: bool = True) -> Tree | None:
    """The Zarr store at `path`, or None when no Zarr document answers there."""

    from urllib.parse import urlsplit

    from spec_validate.nodes.zarr import expect
    from spec_validate.nodes.zarr.tree import ZarrTree, detect_zarr_format
    from spec_validate.storage import remote

    named = urlsplit(url).path.rstrip("/").lower().endswith(ZARR_EXTENSIONS)
    kv = remote.RemoteStore(fs, path, url, list_folders, small_keys=expect.DOCUMENTS, root_is_store=named)
    expect.prepare(kv)
    zarr_format = detect_zarr_format(kv)
    if zarr_format is not None:
        return ZarrTree(kv, zarr_format)
    kv.close()
    return None


def _open_file(fs: Any, path: str, info: dict[str, Any], url: str, shown: str) -> Tree | None:
    """An HDF5 tree when the file at `path` has the HDF5 signature; None when it may be a directory page (HTTP)."""
    from urllib.parse import urlsplit

    from spec_validate.nodes.hdf5.tree import HDF5_SIGNATURE, HDF5Tree
    from spec_validate.storage import remote

    http = remote.protocol(url) in remote.HTTP_PROTOCOLS
    if info.get("size") is None:
        # No Content-Length: fsspec can only stream such a file, and HDF5 needs to seek.
        with fs.open(path, "rb", block_size=0) as fh:
            head = fh.read(8)
        if head == HDF5_SIGNATURE:
            raise InputError(
                f"{shown}: the server gives no size for this HDF5 file; reading HDF5 needs its size and range requests"
            )
        return None if http else _not_a_store(shown)
    fh = fs.open(
        path,
        "rb",
        block_size=remote.HDF5_BLOCK_SIZE,
        cache_type="blockcache",
        cache_options={"maxblocks": remote.HDF5_MAX_BLOCKS},
    )
    try:
        if http and info["size"] > remote.HDF5_BLOCK_SIZE and not _serves_ranges(fh):
            fh.close()
            with fs.open(path, "rb", block_size=0) as stream:  # streamed: only the first bytes are read
                head = stream.read(8)
            if head != HDF5_SIGNATURE and not urlsplit(url).path.lower().endswith(HDF5_EXTENSIONS):
                return None  # not HDF5 (a large directory page?): the Zarr reader decides
            raise InputError(
                f"{shown}: the server ignores range requests (it sends the whole file for every read); "
                "reading HDF5 over HTTP needs them"
            )
        if _signature_at(fh):
            tree = HDF5Tree(fh, source=shown)  # from here on the tree closes the file
            if info["size"] > remote.HDF5_BLOCK_SIZE:
                # Past the first block (whose one read holds a small file whole), where ranges are known to work,
                # a scan fetches each block's chunks together.
                tree.range_reader = remote.RangeReader(fs, path, url, int(info["size"]))
            return tree
        fh.seek(0)
        magic = fh.read(4)
        fh.close()
    except BaseException:
        fh.close()
        raise
    if magic == b"PK\x03\x04":
        raise InputError(f"{shown}: a zip file; zipped Zarr stores are read from local paths only")
    return None if http else _not_a_store(shown)  # an HTTP server answers a directory URL with a page


def _serves_ranges(fh: Any) -> bool:
    """True when the HTTP server answers a range request with that range, asked for one byte at offset 1.

    fsspec reads the first block of a file from any server (it stops reading a whole-file answer there), but
    fails on the first block past it, deep inside the HDF5 library; so a file larger than one block is tried
    first, with one request of one byte. A server ignoring the Range header is told apart before its body is read.
    """
    try:
        fh._fetch_range(1, 2)
    except ValueError:  # fsspec: "The HTTP server doesn't appear to support range requests"
        return False
    return True


def _not_a_store(shown: str) -> Tree:
    raise InputError(f"{shown}: not an HDF5 file or a Zarr store")


def _signature_at(fh: Any) -> bool:
    """True when the HDF5 signature is at offset 0 or at a user-block offset (the first block holds them all)."""
    from spec_validate.nodes.hdf5.tree import HDF5_SIGNATURE

    signature = HDF5_SIGNATURE
    for offset in _HDF5_SIGNATURE_OFFSETS:
        fh.seek(offset)
        if fh.read(8) == signature:
            return True
    return False
