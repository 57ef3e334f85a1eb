"""The OME-Zarr version a store declares, which picks the pack that checks it (0.4 on Zarr v2, 0.5 on Zarr v3).

The version is read from the metadata, never guessed from its shape: the `ome` object's `version` (0.5), else the
`version` of the first multiscale image, plate, well or label image (0.4 and before). The root declares it in most
stores; a bioformats2raw root or a `labels` group declares none, so the groups just below are read too, a bounded
number of them. A store that declares no version, or one no pack checks, gets its era all the same, and the packs
name such eras under `legacy:`: one verdict then says which version the store declares, instead of every clause.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from spec_validate.checks.ome_zarr import declared_version
from spec_validate.engine.provenance import detector
from spec_validate.engine.provenance.model import Era, WriterMark
from spec_validate.nodes.base import Node, Tree

# The versions the specification's history names; any other string is "unknown".
KNOWN = ("0.1", "0.2", "0.3", "0.4", "0.5")
OME_KEYS = ("multiscales", "plate", "well", "labels", "image-label", "bioformats2raw.layout", "omero", "series")
MOST_GROUPS_READ = 64  # below the root, breadth first: a plate's rows and wells declare their version soon enough


def _document(node: Node) -> Mapping[str, Any] | None:
    """The OME-Zarr metadata of a group in either layout: the `ome` object, else the attributes when they hold an
    OME-Zarr key (0.4 metadata in a Zarr v3 store is still 0.4 metadata)."""
    if node.kind != "group":
        return None
    attrs = node.attrs
    if isinstance(attrs.get("ome"), Mapping):
        return attrs["ome"]
    return attrs if any(k in attrs for k in OME_KEYS) else None


def _declared(tree: Tree) -> tuple[str | None, str | None, bool]:
    """(the version, the path of the group declaring it, whether any group has OME-Zarr metadata)."""
    queue, read, seen = [tree.root], 0, False
    while queue and read < MOST_GROUPS_READ:
        node = queue.pop(0)
        read += 1
        doc = _document(node)
        if doc is not None:
            seen = True
            version = declared_version(doc)
            if version is not None:
                return version, node.path, True
        if node.kind == "group" and (node.path == "/" or doc is not None or node.parent is tree.root):
            queue.extend(c for c in node.children().values() if c.kind == "group")
    return None, None, seen


@detector("ome-zarr")
def ome_zarr(tree: Tree) -> Iterator[Era | WriterMark]:
    if not tree.format.startswith("zarr") or tree.root.kind != "group":
        return
    version, where, seen = _declared(tree)
    if not seen:
        return
    if version is None:
        yield Era(
            "ome-zarr",
            "/",
            "ome-zarr-undeclared",
            "OME-Zarr metadata that declares no version",
            ("no group read declares a version (ome.version, or multiscales/plate/well/image-label version)",),
        )
    elif version in KNOWN:
        yield Era(
            "ome-zarr",
            "/",
            f"ome-zarr-{version}",
            f"OME-Zarr {version} (declared by {where})",
            (f"{where} declares version {version!r}",),
        )
    else:
        yield Era(
            "ome-zarr",
            "/",
            "ome-zarr-unknown",
            f"OME-Zarr version {version!r}, which no pack checks",
            (f"{where} declares version {version!r}",),
        )
