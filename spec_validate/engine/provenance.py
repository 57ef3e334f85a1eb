"""What a store carries about when and by what it was written: the era of its layout and its likely writers.

Read from metadata only (attributes, the layout of groups and arrays, and for Zarr the raw text of a few
metadata documents), never from array data. Each finding names its evidence, so a report can say why it
thinks a file is an anndata 0.7 file, or that its Zarr documents were written by zarr-python 3.

A writer is identified per *role* (the layer of the store it wrote: the Zarr documents, the AnnData
elements, ...). Two writers of one role exclude each other: a store whose Zarr documents tensorstore wrote
was not written by zarr-python. `Provenance.fits` decides whether a rule's writer note may be shown on a
store: when the store shows that writer, or shows nothing that contradicts it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from spec_validate.engine import activity
from spec_validate.nodes.base import Node, Tree


class WriterMark(NamedTuple):
    """A writer the store shows, for one role."""

    name: str  # as packs name writers in `writers:` ("zarr-python", "anndata", "SeuratDisk", ...)
    versions: str  # a PEP 440 specifier the evidence allows ("" when it says nothing about the version)
    role: str  # the layer it wrote: "zarr", "anndata", "mudata", "h5seurat", "hdmf-zarr", "cxg"
    evidence: str

    @property
    def label(self) -> str:
        return f"{self.name} {self.versions}".strip()


class Era(NamedTuple):
    """The era of the layout found at one node (a scope root): which version of the format it follows."""

    family: str  # "anndata", "h5seurat", "hdmf-zarr", "cxg"
    path: str  # the node it describes ("/", or "/mod/rna" in a MuData file)
    id: str  # what packs' `legacy.eras` name: "anndata-pre-0.7", "anndata-0.7", "anndata-0.8", "cxg-0.2.0", ...
    label: str  # for people: "anndata < 0.7 (obs/var as HDF5 compound datasets)"
    evidence: tuple[str, ...] = ()


# Which role each writer named in the built-in packs' `writers:` plays, so a note can be matched against
# what the store shows. A name not listed here is never contradicted (nothing is known about it).
ROLES: Mapping[str, str] = {
    "zarr-python": "zarr",
    "tensorstore": "zarr",
    "zarr.js": "zarr",
    "netcdf-c": "zarr",
    "anndata": "anndata",
    "SeuratDisk": "anndata",
    "mudata": "mudata",
    "hdmf-zarr": "hdmf-zarr",
    "cellxgene data-portal converter": "cxg",
    "cellxgene converter": "cxg",
}


class Provenance(NamedTuple):
    eras: tuple[Era, ...] = ()
    writers: tuple[WriterMark, ...] = ()

    def era_at(self, path: str, family: str) -> Era | None:
        return next((e for e in self.eras if e.path == path and e.family == family), None)

    def fits(self, name: str, versions: str = "") -> bool:
        """Whether a note about writer `name` (`versions`) may be shown on this store.

        Yes when the store shows that writer (and, where both versions are specifiers, they overlap), or shows
        no writer for the role the writer plays; no when it shows another writer of that role, or this writer
        in versions the note's do not include.
        """
        role = ROLES.get(name)
        shown = [w for w in self.writers if w.name == name]
        if shown:
            return any(_overlap(w.versions, versions) for w in shown)
        if role is None:
            return True
        return not any(w.role == role for w in self.writers)

    def describe(self) -> str:
        """One line for a report header: the eras and the likely writers."""
        parts = []
        eras = sorted({e.label for e in self.eras})
        if eras:
            parts.append("era: " + "; ".join(eras))
        writers = []
        for w in self.writers:
            if w.label not in writers:
                writers.append(w.label)
        if writers:
            parts.append("likely written by " + ", ".join(writers))
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "eras": [
                {"family": e.family, "path": e.path, "id": e.id, "label": e.label, "evidence": list(e.evidence)}
                for e in self.eras
            ],
            "writers": [{"name": w.name, "versions": w.versions, "role": w.role, "evidence": w.evidence} for w in self.writers],
        }


# ------------------------------------------------------------------------------------------ versions
_CLAUSE = re.compile(r"\s*(==|!=|>=|<=|>|<)\s*v?(\d+(?:\.\d+)*)\s*\Z")


def _interval(spec: str) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """[low, high) of a simple specifier ("<0.8", ">=0.7,<0.8", "==0.1.86"), or None when it is not one."""
    spec = spec.strip()
    if not spec:
        return None
    low: tuple[int, ...] = ()
    high: tuple[int, ...] = (10**9,)
    for part in spec.split(","):
        m = _CLAUSE.match(part)
        if m is None:
            return None
        op, v = m.group(1), tuple(int(x) for x in m.group(2).split("."))
        if op == ">=":
            low = max(low, v)
        elif op == ">":
            low = max(low, v + (1,))
        elif op == "<":
            high = min(high, v)
        elif op == "<=":
            high = min(high, v + (10**9,))
        elif op == "==":
            low, high = max(low, v), min(high, v + (10**9,))
        else:  # "!=" narrows nothing worth comparing
            continue
    return low, high


def _overlap(a: str, b: str) -> bool:
    """Whether two version specifiers can hold the same version; True when either is not a simple specifier."""
    ia, ib = _interval(a), _interval(b)
    if ia is None or ib is None:
        return True
    return _pad(ia[0]) < _pad(ib[1]) and _pad(ib[0]) < _pad(ia[1])


def _pad(v: tuple[int, ...]) -> tuple[int, ...]:
    return v + (0,) * (6 - len(v))


# ------------------------------------------------------------------------------------------ detection
def detect(tree: Tree) -> Provenance:
    """The eras and likely writers a store shows. Reads metadata only; never raises on odd metadata."""
    eras: list[Era] = []
    writers: list[WriterMark] = []
    for found in (_anndata(tree), _mudata(tree), _h5seurat(tree), _hdmf_zarr(tree), _cxg(tree), _zarr_writer(tree)):
        for item in found:
            (eras if isinstance(item, Era) else writers).append(item)
    return Provenance(tuple(eras), tuple(_dedupe(writers)))


def _dedupe(writers: list[WriterMark]) -> Iterator[WriterMark]:
    seen = set()
    for w in writers:
        if (w.name, w.versions, w.role) not in seen:
            seen.add((w.name, w.versions, w.role))
            yield w


def _safe(fn):
    """Detection never breaks a run: a detector that meets metadata it cannot read finds nothing."""

    def run(tree: Tree) -> list[Any]:
        activity.reading(f"reading metadata to recognise the era and writer ({fn.__name__.strip('_')})")
        try:
            return list(fn(tree))
        except Exception:  # noqa: BLE001 (odd metadata is the rules' business, not provenance's)
            return []

    run.__name__ = fn.__name__
    return run


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


@_safe
def _anndata(tree: Tree) -> Iterator[Era | WriterMark]:
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
    if compound:
        evidence.append(
            f"{', '.join(compound)} {'is an HDF5 compound dataset' if len(compound) == 1 else 'are compound datasets'}"
        )
    if any(name in root.children() for name in ("raw.X", "raw.var", "raw.varm")):
        evidence.append(f"{root.path.rstrip('/')}/raw.X-style dotted names instead of a raw group")
    sparse = [n.path for n in root.children().values() if n.kind == "group" and "h5sparse_format" in n.attrs]
    if sparse:
        evidence.append(f"{sparse[0]} uses the h5sparse_format attributes")
    if evidence:
        return Era(
            "anndata",
            root.path,
            "anndata-pre-0.7",
            "anndata < 0.7 (obs and var as compound datasets, no encoding metadata)",
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
    """Who wrote the AnnData elements: SeuratDisk's Convert() leaves Seurat's marks; else anndata, of the era's versions."""
    seurat = _seurat_marks(root)
    if seurat is not None:
        return WriterMark("SeuratDisk", "", "anndata", seurat)
    versions = {"anndata-pre-0.7": "<0.7", "anndata-0.7": ">=0.7,<0.8", "anndata-0.8": ">=0.8"}[era.id]
    return WriterMark("anndata", versions, "anndata", era.evidence[0] if era.evidence else era.label)


def _seurat_marks(root: Node) -> str | None:
    """What SeuratDisk's Convert(h5Seurat -> h5ad) leaves: Seurat graph attributes, categories without `ordered`."""
    uns = root.child("uns")
    stack = [uns] if uns is not None and uns.kind == "group" else []
    while stack:
        node = stack.pop()
        if "assay.used" in node.attrs:
            return f"{node.path} carries Seurat's 'assay.used' attribute"
        stack.extend(c for c in node.children().values() if c.kind == "group")
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


@_safe
def _mudata(tree: Tree) -> Iterator[WriterMark]:
    root = tree.root
    if root.kind == "group" and root.attrs.get("encoder") == "mudata":
        version = root.attrs.get("encoder-version")
        yield WriterMark(
            "mudata",
            f"=={version}" if isinstance(version, str) and version else "",
            "mudata",
            f"/ says encoder 'mudata'{f' {version}' if version else ''}",
        )


@_safe
def _h5seurat(tree: Tree) -> Iterator[Era | WriterMark]:
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


@_safe
def _hdmf_zarr(tree: Tree) -> Iterator[Era | WriterMark]:
    root = tree.root
    if not tree.format.startswith("zarr") or root.kind != "group":
        return
    attrs = root.attrs
    typed = "namespace" in attrs and ("neurodata_type" in attrs or "data_type" in attrs)
    if ".specloc" not in attrs and not typed and "neurodata_type" not in attrs:
        return
    cache_name = attrs.get(".specloc") if isinstance(attrs.get(".specloc"), str) else "specifications"
    cache = tree.get("/" + cache_name.strip("/"))
    cached = []
    if cache is not None and cache.kind == "group":
        for ns, group in cache.children().items():
            versions = [v for v, g in group.children().items() if g.kind == "group"] if group.kind == "group" else []
            cached.append(f"{ns} {', '.join(versions)}" if versions else ns)
    kind = attrs.get("neurodata_type") or attrs.get("data_type")
    nwb = attrs.get("nwb_version")
    label = f"NWB {nwb}" if isinstance(nwb, str) else f"{attrs.get('namespace', 'HDMF')} {kind or ''}".strip()
    if cached:
        label += f" (cached namespaces: {'; '.join(cached)})"
    yield Era(
        "hdmf-zarr",
        "/",
        f"nwb-{nwb}" if isinstance(nwb, str) else "hdmf",
        label,
        (f"/ is typed {kind!r} in namespace {attrs.get('namespace')!r}",),
    )
    if ".specloc" in attrs:
        yield WriterMark("hdmf-zarr", "", "hdmf-zarr", "/ carries hdmf-zarr's reserved '.specloc' attribute")


@_safe
def _cxg(tree: Tree) -> Iterator[Era | WriterMark]:
    if tree.format != "tiledb":
        return
    root = tree.root
    meta = root.child("cxg_group_metadata") if root.kind == "group" else None
    if meta is None:
        if root.kind == "group" and root.child("obs") is not None:
            yield Era(
                "cxg",
                "/",
                "cxg-unnamed",
                "CXG unnamed development version (no cxg_group_metadata)",
                ("no cxg_group_metadata array, which the CXG version history says marks that version",),
            )
        return
    version = meta.attrs.get("cxg_version")
    corpora = meta.attrs.get("corpora")
    schema = None
    try:
        parsed = json.loads(corpora) if isinstance(corpora, str) else None
        if isinstance(parsed, dict):
            schema = parsed.get("schema_version") or (parsed.get("version") or {}).get("corpora_schema_version")
    except (ValueError, AttributeError):
        schema = None
    label = f"CXG {version}" if isinstance(version, str) else "CXG (no cxg_version)"
    if schema:
        label += f" (Corpora schema {schema})"
    yield Era(
        "cxg",
        "/",
        f"cxg-{version}" if isinstance(version, str) else "cxg",
        label,
        (f"cxg_group_metadata cxg_version {version!r}",),
    )
    if root.child("uns") is not None and root.child("uns").kind == "array":
        yield WriterMark(
            "cellxgene data-portal converter",
            "",
            "cxg",
            "an `uns` array beside the CXG arrays, which only the data-portal converter writes",
        )
    elif version in ("0.1", "0.2.0"):
        yield WriterMark("cellxgene converter", "", "cxg", f"cxg_version {version!r}, which cellxgene's own converter wrote")


# ------------------------------------------------------------------------------------------ Zarr v2 writers
NCZARR_KEYS = (".nczarr", ".nczgroup", ".nczarray", ".nczattrs")
ZARR_JS_ORDER = ["zarr_format", "shape", "chunks", "dtype", "fill_value", "order", "compressor", "filters"]


@_safe
def _zarr_writer(tree: Tree) -> Iterator[WriterMark]:
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
