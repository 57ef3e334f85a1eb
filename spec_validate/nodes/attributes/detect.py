"""A JSON file outside any store, named `*.json` or `.zattrs`, is read as an attributes document on its own."""

from __future__ import annotations

import os

from spec_validate.errors import DamagedInput, InputError
from spec_validate.nodes.base import Tree
from spec_validate.nodes.formats import container_format

NAMES = (".json", ".zattrs")


@container_format("attributes", handles="file", order=30)
def open_attributes_document(path: str) -> Tree | None:
    """The attributes document in the file `path` (nodes/attributes/tree.py), or None when its name is not a JSON
    document's; DamagedInput when it is not JSON, InputError when it is JSON but no OME-Zarr attributes."""
    if not os.path.basename(path).lower().endswith(NAMES):
        return None
    from spec_validate.codecs.jsondoc import JSONProblem, loads
    from spec_validate.nodes.attributes.tree import AttributesTree, documents
    from spec_validate.storage.keyvalue import MAX_DOCUMENT_BYTES

    size = os.path.getsize(path)
    if size > MAX_DOCUMENT_BYTES:
        raise InputError(f"{path}: a JSON file of {size} bytes, more than the {MAX_DOCUMENT_BYTES} read for a document")
    with open(path, "rb") as fh:
        raw = fh.read(MAX_DOCUMENT_BYTES + 1)
    try:
        doc = loads(raw)
    except JSONProblem as exc:
        raise DamagedInput(path, f"named as a JSON document, but {exc}") from None
    zarr_format, items = documents(doc, path)
    return AttributesTree(path, zarr_format, items)
