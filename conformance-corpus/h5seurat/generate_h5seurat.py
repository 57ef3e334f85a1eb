"""Write the h5Seurat conformance corpus: a valid file built with h5py as the spec describes, and broken copies.

Run as `python conformance-corpus/h5seurat/generate_h5seurat.py`. It (re)writes every `*.h5Seurat` case
file beside this script and `manifest.yaml`, which lists each case with the exact set of rule ids it fails.
The valid file follows SeuratDisk 0.0.0.9021's layout (one-element variable-length UTF-8 string attributes,
matrices written by R, so dense datasets are stored transposed: features x cells in R is (cells, features) here).
Each broken case copies the valid file and edits exactly one thing, so exactly one clause breaks.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
STR = h5py.string_dtype("utf-8")
N_CELLS = 6
CASES: list[dict] = []
EDITS: dict[str, Callable[[h5py.File], None]] = {}


def strings(values: list[str]) -> np.ndarray:
    return np.array(values, dtype=STR)


def put_strings(g: h5py.Group, name: str, values: list[str]) -> None:
    g.create_dataset(name, data=strings(values), dtype=STR)


def attr_strings(obj: h5py.HLObject, name: str, values: list[str]) -> None:
    obj.attrs.create(name, strings(values), dtype=STR)


def sparse(parent: h5py.Group, name: str, dense_r: np.ndarray) -> h5py.Group:
    """A dgCMatrix: CSC of the R matrix (rows x columns), `dims` = [rows, columns]."""
    g = parent.create_group(name)
    data, indices, indptr = [], [], [0]
    for j in range(dense_r.shape[1]):
        rows = np.flatnonzero(dense_r[:, j])
        indices.extend(rows.tolist())
        data.extend(dense_r[rows, j].tolist())
        indptr.append(len(indices))
    g.create_dataset("data", data=np.array(data, dtype="f8"))
    g.create_dataset("indices", data=np.array(indices, dtype="i4"))
    g.create_dataset("indptr", data=np.array(indptr, dtype="i4"))
    g.attrs.create("dims", np.array(dense_r.shape, dtype="i4"))
    return g


def factor(parent: h5py.Group, name: str, levels: list[str], values: list[int]) -> None:
    g = parent.create_group(name)
    put_strings(g, "levels", levels)
    g.create_dataset("values", data=np.array(values, dtype="i4"))


def logical(parent: h5py.Group, name: str, values: list[int]) -> None:
    ds = parent.create_dataset(name, data=np.array(values, dtype="i4"))
    attr_strings(ds, "s3class", ["logical"])


def write_adt_meta_features(adt: h5py.Group, isotype=STR, logicals: np.ndarray | None = None) -> None:
    """ADT's meta.features: a compound data frame dataset (3 rows) with a logical column named in "logicals"."""
    if "meta.features" in adt:
        del adt["meta.features"]
    row = np.dtype([("isotype", isotype), ("mean", "f8"), ("is_ctrl", "i4")])
    rows = [("IgG1", 0.5, 0), ("IgG2", 1.5, 1), ("IgG1", 2.5, 0)]
    if isotype is not STR:
        rows = [(a.encode(), b, c) for a, b, c in rows]
    ds = adt.create_dataset("meta.features", data=np.array(rows, dtype=row))
    if logicals is None:
        attr_strings(ds, "logicals", ["is_ctrl"])
    else:
        ds.attrs.create("logicals", logicals)


def write_valid(path: Path) -> None:
    rng = np.random.default_rng(0)
    cells = [f"cell{i}" for i in range(N_CELLS)]
    with h5py.File(path, "w") as f:
        attr_strings(f, "project", ["corpus"])
        attr_strings(f, "active.assay", ["RNA"])
        attr_strings(f, "version", ["4.1.3"])
        put_strings(f, "cell.names", cells)
        md = f.create_group("meta.data")
        attr_strings(md, "_index", ["_index"])
        attr_strings(md, "colnames", ["nCount_RNA", "orig.ident", "is_doublet", "is_cycling"])
        attr_strings(md, "logicals", ["is_doublet", "is_cycling"])
        put_strings(md, "_index", cells)
        md.create_dataset("nCount_RNA", data=rng.random(N_CELLS))
        factor(md, "orig.ident", ["a", "b"], [1, 2, 1, 1, 2, 2])
        logical(md, "is_doublet", [0, 1, 2, 0, 0, 1])
        md.create_dataset("is_cycling", data=np.array([1, 0, 0, 2, 1, 0], dtype="i4"))  # logical by "logicals" alone
        factor(f, "active.ident", ["0", "1", "2"], [1, 2, 3, 1, 2, 3])

        assays = f.create_group("assays")
        rna = assays.create_group("RNA")
        attr_strings(rna, "key", ["rna_"])
        features = ["g1", "g2", "g3", "g4"]
        put_strings(rna, "features", features)
        counts = (rng.random((4, N_CELLS)) > 0.5) * rng.integers(1, 9, (4, N_CELLS))
        counts[:, 0] = [1, 0, 2, 0]  # column 0 is never empty (the edits below rely on indptr[1] >= 1)
        sparse(rna, "counts", counts.astype("f8"))
        sparse(rna, "data", np.log1p(counts.astype("f8")))
        rna.create_dataset("scale.data", data=rng.standard_normal((N_CELLS, 2)))  # 2 scaled features x 6 cells
        put_strings(rna, "scaled.features", ["g1", "g2"])
        put_strings(rna, "variable.features", ["g1", "g2"])
        mf = rna.create_group("meta.features")  # row names in "row.names", as the spec says (SeuratDisk uses _index)
        attr_strings(mf, "colnames", ["vst.mean", "vst.variable"])
        attr_strings(mf, "logicals", ["vst.variable"])
        put_strings(mf, "row.names", features)
        mf.create_dataset("vst.mean", data=rng.random(4))
        logical(mf, "vst.variable", [1, 1, 0, 0])
        factor(mf, "vst.class", ["low", "high"], [1, 2, 2, 1])
        rna.create_group("misc")

        adt = assays.create_group("ADT")
        attr_strings(adt, "key", ["adt_"])
        put_strings(adt, "features", ["p1", "p2", "p3"])
        adt.create_dataset("counts", data=rng.integers(0, 50, (N_CELLS, 3)).astype("f8"))  # dense: stored transposed
        adt.create_dataset("data", data=rng.random((N_CELLS, 3)))
        # A data frame without factors may be a one-dimensional compound dataset, one row per feature.
        write_adt_meta_features(adt)

        reductions = f.create_group("reductions")
        pca = reductions.create_group("pca")
        attr_strings(pca, "active.assay", ["RNA"])
        attr_strings(pca, "key", ["PC_"])
        pca.attrs.create("global", np.array([0], dtype="i4"))
        pca.create_dataset("cell.embeddings", data=rng.standard_normal((2, N_CELLS)))  # 6 cells x 2 PCs in R
        pca.create_dataset("feature.loadings", data=rng.standard_normal((2, 2)))
        put_strings(pca, "features", ["g1", "g2"])
        pca.create_group("misc")
        js = pca.create_group("jackstraw")
        attr_strings(js, "s4class", ["SeuratObject:JackStrawData"])
        js.create_dataset("overall.p.values", data=rng.random((2, 2)))

        graphs = f.create_group("graphs")
        snn = np.eye(N_CELLS) + np.eye(N_CELLS, k=1) + np.eye(N_CELLS, k=-1)
        g = sparse(graphs, "RNA_snn", snn)
        attr_strings(g, "assay.used", ["RNA"])

        images = f.create_group("images")
        image = images.create_group("slice1")  # a spatial image: a custom S4 class, stored as a list
        attr_strings(image, "s4class", ["SeuratObject:VisiumV1"])
        put_strings(image, "assay", ["RNA"])
        put_strings(image, "key", ["slice1_"])
        f.create_group("commands")
        f.create_group("misc")
        tools = f.create_group("tools")
        t = tools.create_group("custom_tool")
        put_strings(t, "run", ["yes"])


def case(name: str, fails: list[str], note: str, expect: dict | None = None) -> Callable:
    def register(edit: Callable[[h5py.File], None]) -> Callable[[h5py.File], None]:
        entry = {"case": f"h5seurat/{name}", "file": f"h5seurat/{name}.h5Seurat", "fails": fails}
        if expect:
            entry["expect"] = expect
        entry["note"] = note
        CASES.append(entry)
        EDITS[name] = edit
        return edit

    return register


def replace(g: h5py.Group, name: str, data: np.ndarray, **kw) -> h5py.Dataset:
    attrs = dict(g[name].attrs) if name in g else {}
    if name in g:
        del g[name]
    ds = g.create_dataset(name, data=data, **kw)
    for k, v in attrs.items():
        ds.attrs[k] = v
    return ds


@case("valid-every-element", [], "Two assays (RNA sparse, ADT dense), a reduction, a graph, factors, logicals, misc and tools.")
def valid(f: h5py.File) -> None:
    pass


# ------------------------------------------------------------------ MUST
@case("root-project-missing", ["h5seurat.root.required-attributes"], "The root has no 'project' attribute.")
def _(f):
    del f.attrs["project"]


@case("root-version-two-values", ["h5seurat.root.attributes-single-character"], "The root 'version' holds two strings.")
def _(f):
    attr_strings(f, "version", ["4.1.3", "5.0.0"])


@case(
    "root-active-assay-unknown", ["h5seurat.root.active-assay-exists"], "The root says active.assay SCT; /assays has RNA and ADT."
)
def _(f):
    attr_strings(f, "active.assay", ["SCT"])


@case(
    "root-meta-data-missing",
    ["h5seurat.root.required-datasets"],
    "There is no /meta.data.",
    {"h5seurat.root.required-datasets": {"path": "/meta.data"}},
)
def _(f):
    del f["meta.data"]


@case(
    "meta-data-column-short",
    ["h5seurat.meta.data.rows"],
    "/meta.data/nCount_RNA has 5 rows; there are 6 cells.",
    {"h5seurat.meta.data.rows": {"path": "/meta.data/nCount_RNA"}},
)
def _(f):
    replace(f["meta.data"], "nCount_RNA", np.zeros(N_CELLS - 1))


@case(
    "assay-features-missing",
    ["h5seurat.assay.features-and-data"],
    "/assays/ADT has no features.",
    {"h5seurat.assay.features-and-data": {"path": "/assays/ADT/features"}},
)
def _(f):
    del f["assays/ADT/features"]


@case(
    "assay-features-two-dimensional",
    ["h5seurat.assay.features-one-dimensional-character"],
    "/assays/RNA/features is a 4 x 1 string dataset.",
)
def _(f):
    replace(f["assays/RNA"], "features", strings(["g1", "g2", "g3", "g4"]).reshape(4, 1), dtype=STR)


@case(
    "assay-data-not-transposed",
    ["h5seurat.assay.data-dimensions"],
    "/assays/ADT/data and counts are stored as (features, cells) = (3, 6), i.e. 6 features x 3 cells in R: "
    "a row-major writer forgot to transpose.",
    {"h5seurat.assay.data-dimensions": {"path": "/assays/ADT/data"}},
)
def _(f):
    replace(f["assays/ADT"], "data", np.zeros((3, N_CELLS)))
    replace(f["assays/ADT"], "counts", np.zeros((3, N_CELLS)))


@case("assay-key-missing", ["h5seurat.assay.key"], "/assays/ADT has no 'key' attribute.")
def _(f):
    del f["assays/ADT"].attrs["key"]


@case(
    "assay-counts-dims-differ",
    ["h5seurat.assay.counts-same-dimensions"],
    "/assays/ADT/counts is 3 x 5 in R (stored (5, 3)); data is 3 x 6.",
)
def _(f):
    replace(f["assays/ADT"], "counts", np.zeros((5, 3)))


@case(
    "assay-scale-data-cells-wrong",
    ["h5seurat.assay.scale-data-dimensions"],
    "/assays/RNA/scale.data is stored (5, 2): 5 columns (cells) in R, the file has 6 cells.",
)
def _(f):
    replace(f["assays/RNA"], "scale.data", np.zeros((5, 2)))


@case(
    "assay-meta-features-rows-wrong",
    ["h5seurat.assay.meta-features-rows"],
    "/assays/RNA/meta.features/vst.mean has 3 rows; there are 4 features.",
    {"h5seurat.assay.meta-features-rows": {"path": "/assays/RNA/meta.features/vst.mean"}},
)
def _(f):
    replace(f["assays/RNA/meta.features"], "vst.mean", np.zeros(3))


@case(
    "assay-meta-features-factor-rows-wrong",
    ["h5seurat.assay.meta-features-factor-rows"],
    "/assays/RNA/meta.features/vst.class (a factor column) has 3 values; there are 4 features.",
    {"h5seurat.assay.meta-features-factor-rows": {"path": "/assays/RNA/meta.features/vst.class/values"}},
)
def _(f):
    replace(f["assays/RNA/meta.features/vst.class"], "values", np.array([1, 2, 2], dtype="i4"))


@case("reduction-active-assay-unknown", ["h5seurat.reduction.active-assay"], "/reductions/pca says active.assay RNA and SCT.")
def _(f):
    attr_strings(f["reductions/pca"], "active.assay", ["RNA", "SCT"])


@case("reduction-key-missing", ["h5seurat.reduction.key"], "/reductions/pca has no 'key' attribute.")
def _(f):
    del f["reductions/pca"].attrs["key"]


@case("reduction-global-not-logical", ["h5seurat.reduction.global"], "/reductions/pca 'global' is 3, not 0, 1 or 2.")
def _(f):
    f["reductions/pca"].attrs.create("global", np.array([3], dtype="i4"))


@case("reduction-cell-embeddings-missing", ["h5seurat.reduction.cell-embeddings"], "/reductions/pca has no cell.embeddings.")
def _(f):
    del f["reductions/pca/cell.embeddings"]


@case(
    "reduction-cell-embeddings-not-transposed",
    ["h5seurat.reduction.cell-embeddings-rows"],
    "/reductions/pca/cell.embeddings is stored (6, 2), i.e. 2 rows in R: a row-major writer forgot to transpose.",
)
def _(f):
    replace(f["reductions/pca"], "cell.embeddings", np.zeros((N_CELLS, 2)))


@case("graph-assay-used-missing", ["h5seurat.graph.sparse-with-assay-used"], "/graphs/RNA_snn has no 'assay.used' attribute.")
def _(f):
    del f["graphs/RNA_snn"].attrs["assay.used"]


@case("misc-missing", ["h5seurat.misc.present"], "There is no /misc group.")
def _(f):
    del f["misc"]


@case("tools-missing", ["h5seurat.tools.present"], "There is no /tools group.")
def _(f):
    del f["tools"]


@case(
    "sparse-indices-shorter-than-data",
    ["h5seurat.sparse.indices-data-same-length"],
    "/assays/RNA/counts/indices has one entry fewer than data.",
)
def _(f):
    g = f["assays/RNA/counts"]
    replace(g, "indices", g["indices"][:-1])


@case(
    "sparse-indptr-starts-at-one",
    ["h5seurat.sparse.indptr-starts-at-zero"],
    "/graphs/RNA_snn/indptr[0] is 1.",
    {"h5seurat.sparse.indptr-starts-at-zero": {"path": "/graphs/RNA_snn/indptr", "index": [0]}},
)
def _(f):
    p = f["graphs/RNA_snn/indptr"][:]
    p[0] = 1
    replace(f["graphs/RNA_snn"], "indptr", p)


@case(
    "sparse-indptr-decreasing",
    ["h5seurat.sparse.indptr-monotonic"],
    "/graphs/RNA_snn/indptr[3] is set above indptr[4] (first and last entries unchanged).",
    {"h5seurat.sparse.indptr-monotonic": {"path": "/graphs/RNA_snn/indptr", "index": [4]}},
)
def _(f):
    p = f["graphs/RNA_snn/indptr"][:]
    p[3] = p[4] + 1
    replace(f["graphs/RNA_snn"], "indptr", p)


@case("sparse-indptr-ends-short", ["h5seurat.sparse.indptr-ends-at-nnz"], "/graphs/RNA_snn/indptr ends at nnz - 1.")
def _(f):
    p = f["graphs/RNA_snn/indptr"][:]
    p[-1] -= 1
    replace(f["graphs/RNA_snn"], "indptr", p)


@case(
    "sparse-indices-out-of-range",
    ["h5seurat.sparse.indices-in-range"],
    "/assays/RNA/data/indices[0] is 4; the matrix has 4 rows (0-based 0..3).",
    {"h5seurat.sparse.indices-in-range": {"path": "/assays/RNA/data/indices", "index": [0]}},
)
def _(f):
    i = f["assays/RNA/data/indices"][:]
    i[0] = 4
    replace(f["assays/RNA/data"], "indices", i)


@case(
    "logical-value-three",
    ["h5seurat.logical.values"],
    "/meta.data/is_doublet (s3class logical) holds a 3.",
    {"h5seurat.logical.values": {"path": "/meta.data/is_doublet", "index": [2]}},
)
def _(f):
    v = f["meta.data/is_doublet"][:]
    v[2] = 3
    replace(f["meta.data"], "is_doublet", v)


# ------------------------------------------------------------------ SHOULD
@case("cell-names-integers", ["h5seurat.cell.names.one-dimensional-character"], "/cell.names holds integers.")
def _(f):
    replace(f, "cell.names", np.arange(N_CELLS))


@case(
    "graph-assay-used-two-values",
    ["h5seurat.graph.assay-used-single-character"],
    "/graphs/RNA_snn 'assay.used' holds RNA and ADT.",
)
def _(f):
    attr_strings(f["graphs/RNA_snn"], "assay.used", ["RNA", "ADT"])


@case(
    "character-fixed-length-ascii",
    ["h5seurat.character.variable-length-utf8"],
    "/assays/ADT/features is stored as fixed-length ASCII strings (|S2).",
)
def _(f):
    replace(f["assays/ADT"], "features", np.array([b"p1", b"p2", b"p3"]))


@case(
    "sparse-indptr-length-wrong",
    ["h5seurat.sparse.indptr-length"],
    "/graphs/RNA_snn says dims [6, 5]: indptr should then have 6 entries; it has 7.",
)
def _(f):
    f["graphs/RNA_snn"].attrs.create("dims", np.array([N_CELLS, N_CELLS - 1], dtype="i4"))


@case("sparse-dims-three-values", ["h5seurat.sparse.dims-two-integers"], "/assays/RNA/counts 'dims' is [4, 6, 1].")
def _(f):
    f["assays/RNA/counts"].attrs.create("dims", np.array([4, N_CELLS, 1], dtype="i4"))


@case("factor-levels-integers", ["h5seurat.factor.levels-character"], "/meta.data/orig.ident/levels holds integers.")
def _(f):
    replace(f["meta.data/orig.ident"], "levels", np.array([1, 2], dtype="i4"))


@case("factor-values-float", ["h5seurat.factor.values-integer"], "/active.ident/values is float64 (values still 1..3).")
def _(f):
    replace(f["active.ident"], "values", f["active.ident/values"][:].astype("f8"))


@case(
    "factor-values-zero",
    ["h5seurat.factor.values-in-levels"],
    "/active.ident/values[0] is 0; R factor codes start at 1.",
    {"h5seurat.factor.values-in-levels": {"path": "/active.ident/values", "index": [0]}},
)
def _(f):
    v = f["active.ident/values"][:]
    v[0] = 0
    replace(f["active.ident"], "values", v)


@case(
    "dataframe-dataset-two-dimensional",
    ["h5seurat.dataframe.dataset-one-dimensional-compound"],
    "/assays/ADT/meta.features is a 3 x 2 float dataset, not a one-dimensional compound one.",
)
def _(f):
    replace(f["assays/ADT"], "meta.features", np.zeros((3, 2)))


@case(
    "dataframe-row-names-two-dimensional",
    ["h5seurat.dataframe.row-names-character"],
    "/assays/RNA/meta.features/row.names is a 4 x 1 string dataset.",
)
def _(f):
    replace(f["assays/RNA/meta.features"], "row.names", strings(["g1", "g2", "g3", "g4"]).reshape(4, 1), dtype=STR)


@case("dataframe-logicals-integers", ["h5seurat.dataframe.logicals-character"], "/meta.data 'logicals' is [1].")
def _(f):
    f["meta.data"].attrs.create("logicals", np.array([1], dtype="i4"))


@case(
    "s4class-two-values",
    ["h5seurat.s4class.single-character"],
    "/reductions/pca/jackstraw 's4class' holds SeuratObject and JackStrawData as two strings.",
)
def _(f):
    attr_strings(f["reductions/pca/jackstraw"], "s4class", ["SeuratObject", "JackStrawData"])


@case(
    "assay-meta-features-dataset-rows-wrong",
    ["h5seurat.assay.meta-features-dataset-rows"],
    "/assays/ADT/meta.features (a compound dataset) has 2 rows; there are 3 features.",
)
def _(f):
    replace(f["assays/ADT"], "meta.features", f["assays/ADT/meta.features"][:2])


# ------------------------------------------------------------------ MUST (derived), added with the attribute and compound checks
@case(
    "assay-scaled-features-missing",
    ["h5seurat.assay.scaled-features-present"],
    "/assays/RNA has scale.data but no scaled.features.",
    {"h5seurat.assay.scaled-features-present": {"path": "/assays/RNA/scaled.features"}},
)
def _(f):
    del f["assays/RNA/scaled.features"]


@case(
    "assay-scaled-features-two-dimensional",
    ["h5seurat.assay.scaled-features-one-dimensional-character"],
    "/assays/RNA/scaled.features is a 2 x 1 string dataset (still 2 entries along its first dimension).",
)
def _(f):
    replace(f["assays/RNA"], "scaled.features", strings(["g1", "g2"]).reshape(2, 1), dtype=STR)


@case(
    "assay-scale-data-rows-wrong",
    ["h5seurat.assay.scale-data-rows"],
    "/assays/RNA/scaled.features lists 3 features; scale.data is stored (6, 2), i.e. 2 scaled features x 6 cells in R.",
    {"h5seurat.assay.scale-data-rows": {"path": "/assays/RNA/scale.data"}},
)
def _(f):
    replace(f["assays/RNA"], "scaled.features", strings(["g1", "g2", "g3"]), dtype=STR)


@case(
    "assay-variable-features-two-dimensional",
    ["h5seurat.assay.variable-features-one-dimensional-character"],
    "/assays/RNA/variable.features is a 2 x 1 string dataset.",
)
def _(f):
    replace(f["assays/RNA"], "variable.features", strings(["g1", "g2"]).reshape(2, 1), dtype=STR)


@case("assay-misc-not-list", ["h5seurat.assay.misc-list"], "/assays/RNA/misc is a string dataset, not a group (list).")
def _(f):
    del f["assays/RNA/misc"]
    put_strings(f["assays/RNA"], "misc", ["note"])


@case(
    "reduction-misc-not-list", ["h5seurat.reduction.misc-list"], "/reductions/pca/misc is a string dataset, not a group (list)."
)
def _(f):
    del f["reductions/pca/misc"]
    put_strings(f["reductions/pca"], "misc", ["note"])


@case(
    "reduction-jackstraw-no-s4class",
    ["h5seurat.reduction.jackstraw-s4-group"],
    "/reductions/pca/jackstraw has no 's4class' attribute.",
)
def _(f):
    del f["reductions/pca/jackstraw"].attrs["s4class"]


@case("image-no-s4class", ["h5seurat.image.s4-group"], "/images/slice1 has no 's4class' attribute.")
def _(f):
    del f["images/slice1"].attrs["s4class"]


@case(
    "sparse-datasets-missing",
    ["h5seurat.sparse.datasets-present"],
    "/assays/RNA/counts (a sparse group) has no indptr.",
    {"h5seurat.sparse.datasets-present": {"path": "/assays/RNA/counts/indptr"}},
)
def _(f):
    del f["assays/RNA/counts/indptr"]


@case(
    "dataframe-column-two-dimensional",
    ["h5seurat.dataframe.column-one-dimensional"],
    "/meta.data/nCount_RNA is stored (6, 2): still one row per cell, but not one-dimensional.",
)
def _(f):
    replace(f["meta.data"], "nCount_RNA", np.zeros((N_CELLS, 2)))


@case(
    "dataframe-factor-column-without-levels",
    ["h5seurat.dataframe.group-column-factor"],
    "/meta.data/orig.ident (a group column, so a factor) has values but no levels.",
    {"h5seurat.dataframe.group-column-factor": {"path": "/meta.data/orig.ident/levels"}},
)
def _(f):
    del f["meta.data/orig.ident/levels"]


@case(
    "dataframe-colnames-unknown",
    ["h5seurat.dataframe.colnames-name-columns"],
    "/meta.data 'colnames' also lists percent.mt, which is not a column of the group.",
)
def _(f):
    attr_strings(f["meta.data"], "colnames", ["nCount_RNA", "orig.ident", "is_doublet", "is_cycling", "percent.mt"])


@case(
    "dataframe-logicals-unknown",
    ["h5seurat.dataframe.logicals-name-columns"],
    "/meta.data 'logicals' also lists is_singlet, which is not a column of the group.",
)
def _(f):
    attr_strings(f["meta.data"], "logicals", ["is_doublet", "is_cycling", "is_singlet"])


@case(
    "dataframe-logical-column-unencoded",
    ["h5seurat.dataframe.logical-columns-encoded"],
    "/meta.data/is_cycling (named in 'logicals', without s3class) holds a 3.",
    {"h5seurat.dataframe.logical-columns-encoded": {"path": "/meta.data/is_cycling", "index": [2]}},
)
def _(f):
    v = f["meta.data/is_cycling"][:]
    v[2] = 3
    replace(f["meta.data"], "is_cycling", v)


@case("s3class-not-character", ["h5seurat.s3class.character"], "/meta.data/is_doublet 's3class' is the integer 1.")
def _(f):
    f["meta.data/is_doublet"].attrs.create("s3class", np.array([1], dtype="i4"))


# ------------------------------------------------------------------ SHOULD, added with the attribute and compound checks
@case(
    "character-attribute-fixed-length-ascii",
    ["h5seurat.character.attributes-variable-length-utf8"],
    "/assays/ADT 'key' is stored as a fixed-length ASCII string attribute (|S4).",
)
def _(f):
    f["assays/ADT"].attrs.create("key", np.array([b"adt_"]), dtype="S4")


@case(
    "character-compound-member-fixed-length",
    ["h5seurat.character.compound-members-variable-length-utf8"],
    "/assays/ADT/meta.features member isotype is a fixed-length ASCII string (|S4).",
)
def _(f):
    write_adt_meta_features(f["assays/ADT"], isotype="S4")


@case(
    "dense-matrix-one-dimensional",
    ["h5seurat.dense.two-dimensional"],
    "/reductions/pca/cell.embeddings is one-dimensional (12,).",
)
def _(f):
    replace(f["reductions/pca"], "cell.embeddings", np.zeros(2 * N_CELLS))


@case(
    "dataframe-dataset-logicals-integers",
    ["h5seurat.dataframe.dataset-logicals-character"],
    "/assays/ADT/meta.features (a compound dataset) 'logicals' is [1].",
)
def _(f):
    write_adt_meta_features(f["assays/ADT"], logicals=np.array([1], dtype="i4"))


@case(
    "s4class-double-colon",
    ["h5seurat.s4class.package-class-form"],
    "/reductions/pca/jackstraw 's4class' is SeuratObject::JackStrawData (two colons).",
)
def _(f):
    attr_strings(f["reductions/pca/jackstraw"], "s4class", ["SeuratObject::JackStrawData"])


# ------------------------------------------------------------------ what R and SeuratDisk write (passing)
@case("factor-values-na-integer", [], "/meta.data/orig.ident holds R's NA_integer_ (-2147483648): a missing value, not a code.")
def _(f):
    replace(f["meta.data/orig.ident"], "values", np.array([1, 2, -2147483648, 1, 2, 2], dtype="i4"))


@case("list-with-row-names-entry", [], "/misc/params, a list (not a data frame), has an integer entry named row.names.")
def _(f):
    params = f["misc"].create_group("params")
    params.create_dataset("row.names", data=np.array([1, 2, 3], dtype="i4"))
    params.create_dataset("k", data=np.array([20], dtype="i4"))


@case("object-reference-dataset", [], "/misc/refs is a dataset of HDF5 object references, not strings.")
def _(f):
    f["misc"].create_dataset("refs", data=[f["cell.names"].ref, f["meta.data"].ref], dtype=h5py.ref_dtype)


@case(
    "valid-sparse-without-dims", [], "/assays/RNA/data and counts without the optional dims: checked against cells and features."
)
def _(f):
    for name in ("data", "counts"):
        del f[f"assays/RNA/{name}"].attrs["dims"]


@case("assay-is-dataset", ["h5seurat.assay.stored-as-group"], "/assays/ADT, an assay the file holds, is replaced by a dataset.")
def _(f):
    del f["assays/ADT"]
    f["assays"].create_dataset("ADT", data=np.zeros((N_CELLS, 3)))


# ------------------------------------------------------------------ statements without a key word (issue #17)
@case("assay-not-group", ["h5seurat.assay.stored-as-group"], "/assays/extra is a dataset, not an assay group.")
def _(f):
    f["assays"].create_dataset("extra", data=np.zeros(3))


@case("reduction-not-group", ["h5seurat.reduction.stored-as-group"], "/reductions/umap is a dataset, not a reduction group.")
def _(f):
    f["reductions"].create_dataset("umap", data=np.zeros((2, N_CELLS)))


@case(
    "sparse-without-dims-columns-wrong",
    ["h5seurat.assay.sparse-columns"],
    "/assays/RNA/data has no dims, and its indptr has n_cells + 2 entries (an extra empty column).",
)
def _(f):
    data = f["assays/RNA/data"]
    del data.attrs["dims"]
    indptr = data["indptr"][()]
    replace(data, "indptr", np.append(indptr, indptr[-1]).astype("i4"))


@case(
    "sparse-without-dims-rows-wrong",
    ["h5seurat.assay.sparse-rows"],
    "/assays/RNA/data has no dims, and its first row number is 4, for 4 features (0-based rows 0 to 3).",
    expect={"h5seurat.assay.sparse-rows": {"path": "/assays/RNA/data/indices", "index": [0]}},
)
def _(f):
    data = f["assays/RNA/data"]
    del data.attrs["dims"]
    indices = data["indices"][()]
    indices[0] = 4
    replace(data, "indices", indices)


@case(
    "reduction-global-boolean",
    ["h5seurat.reduction.global"],
    "/reductions/pca 'global' is an HDF5 boolean (h5py's FALSE/TRUE enum).",
)
def _(f):
    del f["reductions/pca"].attrs["global"]
    f["reductions/pca"].attrs["global"] = np.bool_(False)


@case(
    "reduction-global-r-logical",
    ["h5seurat.reduction.global"],
    "/reductions/pca 'global' is R's logical enum (FALSE 0, TRUE 1, NA 2), not an integer.",
)
def _(f):
    del f["reductions/pca"].attrs["global"]
    logical_enum = h5py.enum_dtype({"FALSE": 0, "TRUE": 1, "NA": 2}, basetype="i1")
    f["reductions/pca"].attrs.create("global", np.array([0], dtype="i1"), dtype=logical_enum)


@case(
    "factor-levels-repeated",
    ["h5seurat.factor.levels-unique"],
    "/meta.data/orig.ident lists the level 'a' twice.",
    expect={"h5seurat.factor.levels-unique": {"path": "/meta.data/orig.ident/levels", "index": [1]}},
)
def _(f):
    replace(f["meta.data/orig.ident"], "levels", strings(["a", "a"]), dtype=STR)


@case(
    "dataframe-compound-logical-member-three",
    ["h5seurat.dataframe.compound-logicals-encoded"],
    "/assays/ADT/meta.features member is_ctrl, named in 'logicals', holds 3.",
)
def _(f):
    ds = f["assays/ADT/meta.features"]
    rows = ds[()]
    rows["is_ctrl"][1] = 3
    ds[...] = rows


@case("graphs-not-group", ["h5seurat.graph.graphs-group"], "/graphs is a dataset, not a group of graphs.")
def _(f):
    del f["graphs"]
    f.create_dataset("graphs", data=np.zeros(3))


@case("images-not-group", ["h5seurat.image.images-group"], "/images is a dataset, not a group of images.")
def _(f):
    del f["images"]
    f.create_dataset("images", data=np.zeros(3))


@case(
    "sparse-indices-float",
    ["h5seurat.sparse.index-arrays-integer"],
    "/assays/RNA/data/indices are stored as float64 (the same row numbers).",
)
def _(f):
    g = f["assays/RNA/data"]
    replace(g, "indices", g["indices"][()].astype("f8"))


@case("root-version-not-a-number", ["h5seurat.root.version-number"], "The root 'version' is 'v4', not a version number.")
def _(f):
    attr_strings(f, "version", ["v4"])


@case(
    "image-seurat-version-old",
    ["h5seurat.image.seurat-version"],
    "The root 'version' is 3.1.5, older than the 3.1.5.9900 spatial images need; /images/slice1 is an image.",
)
def _(f):
    attr_strings(f, "version", ["3.1.5"])


@case(
    "factor-enum-dataset",
    ["h5seurat.factor.not-enum"],
    "/meta.data/orig.ident, a factor, is an HDF5 enum dataset (levels a, b as enum members), not a levels/values group.",
    {"h5seurat.factor.not-enum": {"path": "/meta.data/orig.ident"}},
)
def _(f):
    del f["meta.data/orig.ident"]
    levels = h5py.enum_dtype({"a": 1, "b": 2}, basetype="i4")
    f["meta.data"].create_dataset("orig.ident", data=np.array([1, 2, 1, 1, 2, 2], dtype="i4"), dtype=levels)


@case(
    "dataframe-compound-factor-enum-member",
    ["h5seurat.dataframe.factors-in-group"],
    "/meta.data is a compound data frame dataset whose factor column orig.ident is an HDF5 enum member.",
    {"h5seurat.dataframe.factors-in-group": {"path": "/meta.data"}},
)
def _(f):
    del f["meta.data"]
    levels = h5py.enum_dtype({"a": 1, "b": 2}, basetype="i4")
    row = np.dtype([("nCount_RNA", "f8"), ("orig.ident", levels)])
    rows = np.array([(10.0 * i, 1 + i % 2) for i in range(N_CELLS)], dtype=row)
    f.create_dataset("meta.data", data=rows)


@case(
    "sparse-data-all-zero",
    ["h5seurat.sparse.data-non-zero"],
    "/assays/RNA/counts/data holds only zeros: every stored element is an explicit 0 (a SHOULD).",
    {"h5seurat.sparse.data-non-zero": {"path": "/assays/RNA/counts/data", "index": [0]}},
)
def _(f):
    g = f["assays/RNA/counts"]
    replace(g, "data", np.zeros(g["data"].shape, dtype="f8"))


@case(
    "sparse-data-explicit-zero",
    ["h5seurat.sparse.data-non-zero"],
    "/graphs/RNA_snn/data[3] is an explicit 0 (a SHOULD).",
    {"h5seurat.sparse.data-non-zero": {"path": "/graphs/RNA_snn/data", "index": [3]}},
)
def _(f):
    d = f["graphs/RNA_snn/data"][:]
    d[3] = 0
    replace(f["graphs/RNA_snn"], "data", d)


HEADER = """\
# The h5Seurat conformance cases, written by generate_h5seurat.py beside this file (do not edit by hand).
# fails: the exact set of rule ids whose status is `failed` (any level); [] means the case conforms.
# expect: the first finding's node path and index for a rule.
"""


def main(argv: list[str]) -> None:
    valid_path = HERE / "valid-every-element.h5Seurat"
    write_valid(valid_path)
    for entry in CASES:
        name = entry["case"].split("/", 1)[1]
        if name == "valid-every-element":
            continue
        path = HERE / f"{name}.h5Seurat"
        shutil.copyfile(valid_path, path)
        with h5py.File(path, "r+") as f:
            EDITS[name](f)
    text = yaml.safe_dump(CASES, sort_keys=False, width=120, default_flow_style=None)
    (HERE / "manifest.yaml").write_text(HEADER + text, encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
