"""Who wrote a Zarr v2 store's documents: zarr-python 2 or 3, tensorstore, zarr.js (how `.zarray` is spelled), netcdf-c
(its NCZarr keys)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from spec_validate.engine.provenance import detector
from spec_validate.engine.provenance.model import WriterMark
from spec_validate.nodes.base import Node, Tree

NCZARR_KEYS = (".nczarr", ".nczgroup", ".nczarray", ".nczattrs")
ZARR_JS_ORDER = ["zarr_format", "shape", "chunks", "dtype", "fill_value", "order", "compressor", "filters"]


@detector("zarr", roles={"zarr-python": "zarr", "tensorstore": "zarr", "zarr.js": "zarr", "netcdf-c": "zarr"})
def zarr_writer(tree: Tree) -> Iterator[WriterMark]:
    """Who wrote the Zarr v2 documents, from how the first `.zarray` is spelled (and netcdf-c's own keys)."""
    if tree.format != "zarr-v2":
        return
    root = tree.root
    array = _first_array(root)
    raw = array.read_document(".zarray") if array is not None else None
    mark = _netcdf_c(root, array, raw) or (_spelling(array, raw) if array is not None and raw is not None else None)
    if mark is None:
        marker = _zarr3_marker(root)
        mark = WriterMark("zarr-python", ">=3", "zarr", marker) if marker else None
    if mark is not None:
        yield mark


def _netcdf_c(root: Node, array: Node | None, raw: bytes | None) -> WriterMark | None:
    """netcdf-c's NCZarr marks: its own keys at the root or beside the first array, or `_nczarr_*` keys in the
    root's documents or the first `.zarray`."""
    for name in NCZARR_KEYS:
        if root.read_document(name) is not None:
            return WriterMark("netcdf-c", "", "zarr", f"the store holds netcdf-c's NCZarr key {name}")
    for name in (".zgroup", ".zattrs"):
        document = root.read_document(name)
        if document is not None and b"_nczarr" in document:
            return WriterMark("netcdf-c", "", "zarr", f"{name} holds netcdf-c's _nczarr_ keys")
    if array is None or raw is None:
        return None
    if b"_nczarr" in raw:
        return WriterMark("netcdf-c", "", "zarr", f"{array.metadata_key} holds netcdf-c's _nczarr_ keys")
    if array.path != "/" and array.read_document(".nczarray") is not None:
        return WriterMark("netcdf-c", "", "zarr", f"{array.path.strip('/')}/.nczarray, netcdf-c's NCZarr key")
    return None


def _spelling(array: Node, raw: bytes) -> WriterMark | None:
    """The writer whose JSON spelling the first `.zarray` has (indentation and key order), or None."""
    text = raw.decode("utf-8", errors="replace")
    try:
        keys = list(json.loads(text))
    except ValueError:
        return None
    where = array.metadata_key
    lines = text.strip().split("\n")
    indent = len(lines[1]) - len(lines[1].lstrip(" ")) if len(lines) > 1 else 0
    if indent == 4 and keys == sorted(keys):
        return WriterMark(
            "zarr-python", "<3", "zarr", f"{where} is JSON indented by 4 with sorted keys, as zarr-python 2 writes it"
        )
    if indent == 2 and keys != sorted(keys) and keys[:1] == ["shape"]:
        return WriterMark("zarr-python", ">=3", "zarr", f"{where} is JSON indented by 2 in zarr-python 3's key order")
    if len(lines) == 1 and keys[: len(ZARR_JS_ORDER)] == ZARR_JS_ORDER:
        return WriterMark("zarr.js", "", "zarr", f"{where} is compact JSON in zarr.js's key order")
    if len(lines) == 1 and keys == sorted(keys) and "dimension_separator" in keys:
        return WriterMark("tensorstore", "", "zarr", f"{where} is compact JSON with sorted keys, as tensorstore writes it")
    return None


def _zarr3_marker(root: Node) -> str | None:
    """zarr-python 3 (zarr_format=2) marks nested groups in `.zmetadata` with a "consolidated_metadata" entry."""
    raw = root.read_document(".zmetadata")
    if raw is None or b'"consolidated_metadata"' not in raw:
        return None
    try:
        entries = json.loads(raw).get("metadata", {})
    except (ValueError, AttributeError):
        return None
    for key, doc in entries.items() if isinstance(entries, dict) else ():
        if key.endswith(".zgroup") and isinstance(doc, dict) and "consolidated_metadata" in doc:
            return f".zmetadata entry {key} carries zarr-python 3's consolidated_metadata marker"
    return None


def _first_array(root: Node, limit: int = 200) -> Node | None:
    """The first array in tree order (breadth first, at most `limit` nodes looked at)."""
    queue = [root]
    seen = 0
    while queue and seen < limit:
        node = queue.pop(0)
        seen += 1
        if node.kind == "array":
            return node
        queue.extend(node.children().values())
    return None
