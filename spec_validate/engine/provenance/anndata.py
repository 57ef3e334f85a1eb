"""AnnData's eras (before 0.7, 0.7, 0.8 and later) and writers: anndata, SeuratDisk's Convert(), MuData.

anndata's versions are narrowed by what only newer releases write (Zarr v3, nullable-string-array); SeuratDisk is
told by the Seurat marks its Convert() leaves."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain, islice

from spec_validate.engine.provenance import detector
from spec_validate.engine.provenance.model import Era, WriterMark
from spec_validate.nodes.base import Node, Tree


def _anndata_roots(tree: Tree) -> Iterator[Node]:
    """The root if it looks like an AnnData group, and groups that say they are one (MuData's /mod/<name>)."""
    root = tree.root
    if tree.format == "tiledb":
        return
    if root.kind == "group" and (
        root.attrs.get("encoding-type") == "anndata" or (root.child("obs") is not None and root.child("var") is not None)
    ):
        yield root
    mod = root.child("mod") if root.kind == "group" else None
    if mod is not None and mod.kind == "group":
        for child in mod.children().values():
            if child.kind == "group" and child.attrs.get("encoding-type") == "anndata":
                yield child


@detector("anndata", roles={"anndata": "anndata", "SeuratDisk": "anndata"})
def anndata(tree: Tree) -> Iterator[Era | WriterMark]:
    for root in _anndata_roots(tree):
        era = anndata_era(root)
        if era is None:
            continue
        yield era
        writer = anndata_writer(root, era)
        if writer is not None:
            yield writer


def anndata_era(root: Node) -> Era | None:
    """The anndata era of an AnnData-shaped group: before 0.7, 0.7, or 0.8 and later (the on-disk spec)."""
    attrs = root.attrs
    version = attrs.get("encoding-version")
    if attrs.get("encoding-type") == "anndata":
        return Era(
            "anndata",
            root.path,
            "anndata-0.8",
            f"anndata >= 0.8 (encoding-version {version})",
            (f"{root.path} has encoding-type 'anndata'",),
        )
    obs, var = root.child("obs"), root.child("var")
    if obs is None or var is None:
        return None
    evidence: list[str] = []
    compound = [n.path for n in (obs, var) if n.kind == "array" and n.dtype is not None and n.dtype.names]
    if compound:  # named as the storage read calls it: HDF5 has compound datasets, Zarr structured dtypes
        hdf5 = root.tree.format == "hdf5"
        one, many = ("an HDF5 compound dataset", "compound datasets") if hdf5 else ("a structured array", "structured arrays")
        evidence.append(f"{', '.join(compound)} {'is ' + one if len(compound) == 1 else 'are ' + many}")
    if any(name in root.children() for name in ("raw.X", "raw.var", "raw.varm")):
        evidence.append(f"{root.path.rstrip('/')}/raw.X-style dotted names instead of a raw group")
    sparse = [n.path for n in root.children().values() if n.kind == "group" and "h5sparse_format" in n.attrs]
    if sparse:
        evidence.append(f"{sparse[0]} uses the h5sparse_format attributes")
    if evidence:
        layout = "compound datasets" if root.tree.format == "hdf5" else "structured arrays"
        return Era(
            "anndata",
            root.path,
            "anndata-pre-0.7",
            f"anndata < 0.7 (obs and var as {layout}, no encoding metadata)",
            tuple(evidence),
        )
    frame = [n for n in (obs, var) if n.kind == "group" and n.attrs.get("encoding-type") == "dataframe"]
    old = [n.path for n in frame if n.attrs.get("encoding-version") == "0.1.0"]
    categories = [n.path for n in (obs, var) if n.kind == "group" and n.child("__categories") is not None]
    if old or categories:
        evidence.append(f"{root.path} has no encoding metadata")
        if old:
            evidence.append(f"{', '.join(old)} dataframe encoding-version 0.1.0")
        if categories:
            evidence.append(f"categories under {categories[0]}/__categories")
        return Era(
            "anndata",
            root.path,
            "anndata-0.7",
            "anndata 0.7 (before the 0.8 encoding metadata; dataframe 0.1.0)",
            tuple(evidence),
        )
    return None


def anndata_writer(root: Node, era: Era) -> WriterMark | None:
    """Who wrote the AnnData elements: SeuratDisk's Convert() leaves Seurat's marks; else anndata, of the era's
    versions, narrowed by what only newer releases write (`newer_layouts`)."""
    seurat = _seurat_marks(root)
    if seurat is not None:
        return WriterMark("SeuratDisk", "", "anndata", seurat)
    versions = {"anndata-pre-0.7": "<0.7", "anndata-0.7": ">=0.7,<0.8", "anndata-0.8": ">=0.8"}[era.id]
    evidence = era.evidence[0] if era.evidence else era.label
    newer = newer_layouts(root) if era.id == "anndata-0.8" else []
    if newer:
        since = max(v for v, _ in newer)
        versions = f">={since[0]}.{since[1]}"
        evidence = "; ".join(why for _, why in sorted(newer, reverse=True))
    return WriterMark("anndata", versions, "anndata", evidence)


# Layouts only newer anndata releases write, with the first release that writes each (its release notes):
# nullable-string-array, pandas' string arrays as `values` + `mask` (0.11, behind allow_write_nullable_strings;
# from 0.13 the default under pandas 3, whose strings are all such arrays), and Zarr v3 (0.12, with zarr-python 3).
NULLABLE_STRINGS_SINCE = (0, 11)
ZARR_V3_SINCE = (0, 12)
# The dataframes searched for a nullable-string-array, and the columns read in all: a bound of their own, so a
# dataframe of 30,000 columns costs writer detection no read of every column's metadata.
MOST_COLUMNS_SEARCHED = 1000


def newer_layouts(root: Node) -> list[tuple[tuple[int, int], str]]:
    """What an AnnData group of the 0.8 era shows that only newer anndata releases write: (first release, evidence)."""
    found: list[tuple[tuple[int, int], str]] = []
    if root.tree.format == "zarr-v3":
        found.append((ZARR_V3_SINCE, f"{root.path} is a Zarr v3 group, which anndata writes from 0.12"))
    nullable = _nullable_string_array(root)
    if nullable is not None:
        found.append(
            (
                NULLABLE_STRINGS_SINCE,
                f"{nullable} is a nullable-string-array group, which anndata writes from 0.11 with "
                "allow_write_nullable_strings (by default under pandas 3 from 0.13)",
            )
        )
    return found


def _nullable_string_array(root: Node) -> str | None:
    """The path of the first nullable-string-array among the dataframes' indexes, then their columns (obs, var,
    raw/var, and the dataframes of obsm and varm), reading at most MOST_COLUMNS_SEARCHED nodes' metadata."""
    raw = root.child("raw")
    nodes = [root.child("obs"), root.child("var"), raw.child("var") if raw is not None and raw.kind == "group" else None]
    for mapping in (root.child("obsm"), root.child("varm")):
        if mapping is not None and mapping.kind == "group":
            nodes.extend(islice(mapping.children().values(), MOST_COLUMNS_SEARCHED))
    nodes = nodes[:MOST_COLUMNS_SEARCHED]
    frames = [n for n in nodes if n is not None and n.kind == "group" and n.attrs.get("encoding-type") == "dataframe"]
    budget = MOST_COLUMNS_SEARCHED - len(nodes)
    # The indexes first: under pandas 3 every string index is such an array, and a dataframe has one index.
    indexes = [frame.attrs.get("_index") for frame in frames]
    children = [frame.child(i) for frame, i in zip(frames, indexes, strict=True) if isinstance(i, str)]
    columns = (c for frame in frames for c in frame.children().values())
    for child in chain(children, islice(columns, max(budget - len(children), 0))):
        if child is not None and child.attrs.get("encoding-type") == "nullable-string-array":
            return child.path
    return None


# SeuratDisk's Convert() puts its graphs' `assay.used` a level or two below uns: the search for it is bounded, so a
# file of thousands of nested or sibling groups costs writer detection no walk of them all (the engine's walk has
# bounds of its own, and reports what lies past them).
SEURAT_MARK_DEPTH = 4
MOST_GROUPS_SEARCHED = 1000


def _seurat_marks(root: Node) -> str | None:
    """What SeuratDisk's Convert(h5Seurat -> h5ad) leaves: Seurat graph attributes, categories without `ordered`."""
    uns = root.child("uns")
    stack = [(uns, 0)] if uns is not None and uns.kind == "group" else []
    visited = 0
    while stack and visited < MOST_GROUPS_SEARCHED:
        node, depth = stack.pop()
        visited += 1
        if "assay.used" in node.attrs:
            return f"{node.path} carries Seurat's 'assay.used' attribute"
        if depth < SEURAT_MARK_DEPTH:
            stack.extend((c, depth + 1) for c in node.children().values() if c.kind == "group")
    for frame in (root.child("obs"), root.child("var")):
        cats = frame.child("__categories") if frame is not None and frame.kind == "group" else None
        if cats is not None and cats.kind == "group":
            tables = [c for c in cats.children().values() if c.kind == "array"]
            codes = [frame.child(c.name) for c in tables]
            if (
                tables
                and not any("ordered" in c.attrs for c in tables)
                and not any(c is not None and "categories" in c.attrs for c in codes)
            ):
                return (
                    f"{cats.path} tables carry no 'ordered' and their codes no 'categories' reference (anndata 0.7 writes both)"
                )
    return None


@detector("mudata", roles={"mudata": "mudata"})
def mudata(tree: Tree) -> Iterator[WriterMark]:
    root = tree.root
    if root.kind == "group" and root.attrs.get("encoder") == "mudata":
        version = root.attrs.get("encoder-version")
        yield WriterMark(
            "mudata",
            f"=={version}" if isinstance(version, str) and version else "",
            "mudata",
            f"/ says encoder 'mudata'{f' {version}' if version else ''}",
        )
