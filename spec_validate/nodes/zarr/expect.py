"""What a remote Zarr store is asked for before its tree is read: the root documents probed, and what its consolidated
metadata says the store holds (its documents, the folders they lie in, how many keys its grids have room for).

The store moves bytes and knows no format: this module reads the documents and tells it which keys and folders to
fetch together (`RemoteStore.probe`, then `RemoteStore.expect`), so that a remote run takes two round trips before
the tree's walk, not one per node.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from spec_validate.codecs.jsondoc import JSONProblem, loads
from spec_validate.storage import remote
from spec_validate.storage.remote import RemoteStore

# Zarr metadata documents: the keys a reader probes for at every node, most of them absent; and netcdf-c's NCZarr
# keys, which the writer detection probes for (absent from nearly every store). The store keeps them once fetched,
# and answers for the absent ones from a listing.
DOCUMENTS = frozenset(
    {".zarray", ".zgroup", ".zattrs", ".zmetadata", "zarr.json", ".nczarr", ".nczgroup", ".nczarray", ".nczattrs"}
)
# The root documents asked for before the format is known, together: no more than an HTTP server's first gate lets
# through (request_gate.FIRST_LIMIT), so that they take one round trip, not two. The root `.zattrs` is not among
# them: a consolidated `.zmetadata` names it (fetched in the next batch), and otherwise a listing or a request of
# its own answers for it when the tree reads it. Where the root is listed, its listing answers for `.zarray`.
ROOT_PROBES = (".zmetadata", "zarr.json", ".zgroup", ".zarray")
# A 2-d or higher Zarr v3 array's `c/<i>` folders (one per row of chunks) are listed with the rest when it has at
# most this many rows of chunks; a larger array's are left to the walk, which lists them in one batch anyway.
MAX_PREDICTED_CHUNK_ROWS = 64


def prepare(store: RemoteStore) -> None:
    """Probe the root documents of `store`, and tell it what its consolidated metadata (if any) says it holds."""
    probes = [p for p in ROOT_PROBES if not (store.list_folders and p == ".zarray")]
    found = store.probe(probes)
    keys, complete, most_keys, chunk_folders = consolidated_index(found)
    folders = [*_folders_of(keys), *chunk_folders] if complete else []
    maybe = [] if ".zarray" in found else [".zarray"]
    store.expect(keys, folders=folders, most_keys=most_keys, complete=complete, maybe=maybe)


def consolidated_index(documents: dict[str, bytes | None]) -> tuple[list[str], bool, int | None, list[str]]:
    """From the root documents fetched: every metadata key the consolidated metadata names (v2 `.zmetadata`, v3
    `consolidated_metadata` in the root `zarr.json`) with the root documents present; whether there is consolidated
    metadata at all (else the keys are the root documents only); how many keys the store may hold (None where
    that cannot be said); and the chunk folders of the Zarr v3 arrays it names."""
    keys: set[str] = set()
    complete = False
    most_keys: int | None = None
    chunk_folders: list[str] = []
    for name in ROOT_PROBES:
        raw = documents.get(name)
        if raw is None:
            continue
        keys.add(name)
        try:
            doc = loads(raw)
        except JSONProblem:
            continue  # the validator reports a broken document; here it names no keys
        if not isinstance(doc, dict):
            continue
        if name == ".zmetadata" and isinstance(doc.get("metadata"), dict):
            keys.update(k for k in doc["metadata"] if isinstance(k, str))
            complete = True
            most_keys = keys_expected(doc["metadata"].items(), ".zarray")
        consolidated = doc.get("consolidated_metadata") if name == "zarr.json" else None
        if isinstance(consolidated, dict) and isinstance(consolidated.get("metadata"), dict):
            nodes = {p.strip("/"): d for p, d in consolidated["metadata"].items() if isinstance(p, str) and p.strip("/")}
            keys.update(f"{p}/zarr.json" for p in nodes)
            chunk_folders = [f for p, d in nodes.items() for f in chunk_folders_of(p, d)]
            complete = True
            most_keys = keys_expected(((f"{p}/zarr.json", d) for p, d in nodes.items()), "zarr.json")
    return sorted(keys), complete, most_keys, chunk_folders


def _folders_of(keys: list[str]) -> list[str]:
    """Every folder (but the root) that holds one of `keys`, or a folder that does."""
    folders: dict[str, None] = {}
    for key in keys:
        parts = key.split("/")
        for depth in range(1, len(parts)):
            folders.setdefault("/".join(parts[:depth]))
    return list(folders)


def keys_expected(documents: Iterable[tuple[str, Any]], array_document: str) -> int | None:
    """The keys a store whose consolidated metadata holds `documents` (key, parsed document) may hold: the documents,
    and every chunk each array's grid has room for (its `.zarray`, or its `zarr.json` of node type array: a sharded
    array's shards); None where a grid cannot be read (the count is then unknown)."""
    total = 0
    for key, document in documents:
        total += 1
        if key.rpartition("/")[2] != array_document or not isinstance(document, dict):
            continue
        if array_document == "zarr.json":
            if document.get("node_type") != "array":
                continue
            grid = document.get("chunk_grid")
            configuration = grid.get("configuration") if isinstance(grid, dict) else None
            chunks = configuration.get("chunk_shape") if isinstance(configuration, dict) else None
        else:
            chunks = document.get("chunks")
        counted = grid_size(document.get("shape"), chunks)
        if counted is None:
            return None
        total += counted
    return total


def grid_size(shape: Any, chunks: Any) -> int | None:
    """The chunks a grid of `chunks` over `shape` has room for; None where either is not a list of whole numbers."""
    if not isinstance(shape, list) or not isinstance(chunks, list) or len(shape) != len(chunks):
        return None
    count = 1
    for extent, chunk in zip(shape, chunks, strict=True):
        if type(extent) is not int or type(chunk) is not int or extent < 0 or chunk <= 0:
            return None
        count *= -(-extent // chunk)
        if count > remote.MOST_FLAT_LISTING_KEYS:
            return count  # enough to say it is too many; the product could be astronomically large
    return count


def chunk_folders_of(path: str, document: Any) -> list[str]:
    """The folders of a Zarr v3 array's chunk keys that its document implies: `c` where the keys begin with `c/` (the
    "default" encoding, "/" separator) and the array has elements (a 0-d array's one chunk key is `c` itself), and
    for 2 or more dimensions each `c/<i>` of its first dimension's chunk grid (up to MAX_PREDICTED_CHUNK_ROWS)."""
    if not isinstance(document, dict) or document.get("node_type") != "array":
        return []
    shape = document.get("shape")
    if not isinstance(shape, list) or not shape or not all(isinstance(n, int) and n > 0 for n in shape):
        return []
    encoding = document.get("chunk_key_encoding")
    if not isinstance(encoding, dict) or encoding.get("name") != "default":
        return []
    configuration = encoding.get("configuration")
    if isinstance(configuration, dict) and configuration.get("separator", "/") != "/":
        return []
    folders = [f"{path}/c"]
    grid = document.get("chunk_grid")
    grid_configuration = grid.get("configuration") if isinstance(grid, dict) else None
    chunk_shape = grid_configuration.get("chunk_shape") if isinstance(grid_configuration, dict) else None
    first = chunk_shape[0] if isinstance(chunk_shape, list) and chunk_shape else None
    rows = -(-shape[0] // first) if isinstance(first, int) and first > 0 else None
    if len(shape) >= 2 and rows is not None and rows <= MAX_PREDICTED_CHUNK_ROWS:
        folders += [f"{path}/c/{i}" for i in range(rows)]
    return folders
