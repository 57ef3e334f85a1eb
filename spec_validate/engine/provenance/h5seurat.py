"""h5Seurat's era (the Seurat version its root records) and its writer, SeuratDisk."""

from __future__ import annotations

from collections.abc import Iterator

from spec_validate.engine.provenance import detector
from spec_validate.engine.provenance.model import Era, WriterMark
from spec_validate.nodes.base import Tree


# The SeuratDisk mark here is of the h5Seurat layer; SeuratDisk's role for writer notes is the AnnData one (its
# Convert() to .h5ad), which the anndata detector declares.
@detector("h5seurat")
def h5seurat(tree: Tree) -> Iterator[Era | WriterMark]:
    root = tree.root
    if tree.format != "hdf5" or root.kind != "group":
        return
    attrs = root.attrs
    if "active.assay" not in attrs and not ("project" in attrs and "version" in attrs):
        return
    version = attrs.get("version")
    version = version[0] if isinstance(version, list) and version else version
    label = f"Seurat {version}" if isinstance(version, str) else "Seurat (version not recorded)"
    yield Era(
        "h5seurat",
        "/",
        f"seurat-{version}" if isinstance(version, str) else "seurat",
        f"h5Seurat of {label}",
        ("/ carries the h5Seurat attributes (project, active.assay, version)",),
    )
    yield WriterMark("SeuratDisk", "", "h5seurat", "the h5Seurat root attributes, which SeuratDisk writes")
