"""An attributes document on its own, read as the one group of a Zarr store that holds nothing else.

The first levels of conformance the OME-Zarr specification project names (its conformance README: "Validating a
single zarr attributes object", which "Cannot validate references to other objects in the zarr hierarchy") judge
one group's attributes without the hierarchy around them. Such a document is a JSON file: the attributes of a Zarr
v2 group (its `.zattrs`: OME-Zarr 0.4 keeps its metadata there), the attributes of a Zarr v3 group (an object with
`ome`: 0.5 and later), or a whole Zarr v3 group document (`zarr.json`, as the specification's examples are).

It is read as the root group of a store in memory (`storage/memory.py`) holding only that group's documents, so
every clause about the group's own metadata is judged as in a store. What its members are is not known: the
root's `members_unread` says so, and the engine then reports every clause that reads more than the group's own
metadata (the arrays, wells, fields and label images the metadata names) as not checked, with that reason, never as
passed or failed. The tree's format is `zarr-v2-attributes` or `zarr-v3-attributes`, so that the packs of Zarr
stores (whose clauses are about stored documents and keys this input has none of) do not apply to it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from spec_validate.errors import InputError
from spec_validate.nodes.zarr.tree import ZarrTree
from spec_validate.storage.memory import MemoryStore

# Why the members of the document's group are not known: the reason every clause about the hierarchy is not checked.
HIERARCHY_UNKNOWN = "needs the hierarchy: an attributes document on its own (the nodes its metadata names are not known)"
# The top-level keys of OME-Zarr metadata in a Zarr v2 group's attributes (0.4 and before); 0.5 puts them under `ome`.
OME_KEYS = ("multiscales", "plate", "well", "labels", "image-label", "bioformats2raw.layout", "omero", "series")


def documents(doc: Any, name: str) -> tuple[int, dict[str, bytes]]:
    """(the Zarr format, the documents of the one group) for a parsed attributes document; InputError, naming
    `name`, when it is none this reader takes."""
    if not isinstance(doc, Mapping):
        raise InputError(f"{name}: a JSON file, but not an attributes document (an object): it holds {type(doc).__name__}")
    if "zarr_format" in doc or "node_type" in doc:  # a whole zarr.json
        if doc.get("zarr_format") != 3 or doc.get("node_type") != "group":
            raise InputError(
                f"{name}: a Zarr metadata document, but not a Zarr v3 group's (zarr_format {doc.get('zarr_format')!r}, "
                f"node_type {doc.get('node_type')!r}); OME-Zarr metadata is a group's"
            )
        return 3, {"zarr.json": _encoded(doc)}
    if isinstance(doc.get("ome"), Mapping):
        return 3, {"zarr.json": _encoded({"zarr_format": 3, "node_type": "group", "attributes": doc})}
    if any(k in doc for k in OME_KEYS):
        return 2, {".zgroup": _encoded({"zarr_format": 2}), ".zattrs": _encoded(doc)}
    raise InputError(
        f"{name}: a JSON file, but not an OME-Zarr attributes document: no 'ome' object (0.5 and later) and none of "
        f"{', '.join(OME_KEYS)} (0.4)"
    )


def _encoded(doc: Any) -> bytes:
    return json.dumps(doc).encode("utf-8")


class AttributesTree(ZarrTree):
    """The group of one attributes document, at `/`; its members unknown (`HIERARCHY_UNKNOWN`)."""

    def __init__(self, location: str, zarr_format: int, items: Mapping[str, bytes]) -> None:
        super().__init__(MemoryStore(location, items), zarr_format)
        self.format = f"zarr-v{zarr_format}-attributes"
        self.root.members_unread = HIERARCHY_UNKNOWN
