"""Write the AnnData conformance corpus: valid stores written by anndata, and broken copies of them.

Run as `python conformance-corpus/generate.py`. It (re)writes the case files under
conformance-corpus/anndata/{h5ad,zarr-v2,zarr-v3}/ and nothing else; manifest.yaml beside them lists
each case with the exact set of rule ids it fails. Every case is one function named like the case
(`csr_indptr_decreasing` writes `csr-indptr-decreasing`). Seeds are fixed, so a rerun gives the
same arrays and attributes.

Broken cases copy a valid file and edit exactly one thing with h5py, zarr or a raw JSON edit, so that
exactly one clause breaks.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anndata
import h5py
import numpy as np
import pandas as pd
import scipy.sparse as sp
import zarr

HERE = Path(__file__).resolve().parent
OUT = HERE / "anndata"
SUFFIX = {"h5ad": ".h5ad", "zarr-v2": ".zarr", "zarr-v3": ".zarr"}
CASES: dict[str, tuple[str, Callable[[Path], None]]] = {}

warnings.filterwarnings("ignore")


def case(container: str, name: str | None = None) -> Callable[[Callable[[Path], None]], Callable[[Path], None]]:
    """Register a case function; its name, with `_` as `-` (less a `_zarr_v2`/`_zarr_v3` suffix), is the case name."""

    def register(fn: Callable[[Path], None]) -> Callable[[Path], None]:
        label = name or re.sub(r"_zarr_v[23]$", "", fn.__name__).replace("_", "-")
        CASES[f"{container}/{label}"] = (container, fn)
        return fn

    return register


def target(container: str, name: str) -> Path:
    return OUT / container / f"{name}{SUFFIX[container]}"


# ---------------------------------------------------------------------------------------------- valid objects
N_OBS, N_VAR = 12, 8


def every_element_adata() -> anndata.AnnData:
    """An object with one of each element kind the spec defines (awkward arrays aside)."""
    rng = np.random.default_rng(20240101)
    dense = (rng.random((N_OBS, N_VAR)) < 0.3) * rng.integers(1, 10, (N_OBS, N_VAR))
    dense[0, 0] = 5  # first and last rows non-empty, so edits of indptr[0] / indptr[-1] stay monotonic
    dense[-1, -1] = 7
    X = sp.csr_matrix(dense.astype(np.float32))
    obs_names = [f"cell{i}" for i in range(N_OBS)]
    obs = pd.DataFrame(
        {
            "cat": pd.Categorical(["a", "b", None, "a"] * 3, categories=["a", "b"]),
            "cat_ordered": pd.Categorical(["lo", "hi", "lo", None] * 3, categories=["lo", "hi"], ordered=True),
            "int": np.arange(N_OBS, dtype=np.int64),
            "float": rng.normal(size=N_OBS),
            "nint": pd.array([1, None, 3] * 4, dtype="Int32"),
            "nbool": pd.array([True, None, False] * 4, dtype="boolean"),
        },
        index=obs_names,
    )
    var = pd.DataFrame(index=[f"gene{i}" for i in range(N_VAR)])  # a dataframe with no columns
    conn = (rng.random((N_OBS, N_OBS)) < 0.25) * rng.random((N_OBS, N_OBS))
    conn[0, 1] = 0.5
    conn[-1, 0] = 0.25
    return anndata.AnnData(
        X=X,
        obs=obs,
        var=var,
        layers={"csc": sp.csc_matrix(dense.astype(np.int32)), "dense": dense.astype(np.float64)},
        obsm={"X_pca": rng.normal(size=(N_OBS, 3)), "df": pd.DataFrame({"x": np.arange(N_OBS)}, index=obs_names)},
        varm={"PCs": rng.normal(size=(N_VAR, 2))},
        obsp={"conn": sp.csr_matrix(conn)},
        varp={"corr": np.eye(N_VAR)},
        uns={
            "int": 3,
            "float": 1.5,
            "str": "hello",
            "strs": np.array(["x", "yy", "zzz"]),
            "nums": np.arange(4),
            "nested": {"a": {"b": 1, "s": "deep"}, "arr": np.ones((2, 2))},
        },
    )


def reconsolidate(path: Path) -> None:
    """Rewrite the consolidated metadata after an edit, from what the store now holds.

    Zarr v3 groups carry inline consolidated metadata of their own, which zarr would otherwise read back stale.
    """
    for meta_file in path.rglob("zarr.json"):
        meta = json.loads(meta_file.read_text())
        if meta.pop("consolidated_metadata", None) is not None:
            meta_file.write_text(json.dumps(meta, indent=2))
    zarr.consolidate_metadata(str(path))


def open_for_edit(path: Path) -> zarr.Group:
    return zarr.open_group(str(path), mode="r+", use_consolidated=False)


def fix_zarr_string_scalars(path: Path) -> None:
    """Store every string scalar as fixed-length unicode (`<U{n}`), as the spec says; attributes are kept."""
    root = open_for_edit(path)

    def visit(group: zarr.Group) -> None:
        for name, member in list(group.members()):
            if isinstance(member, zarr.Group):
                visit(member)
            elif member.attrs.get("encoding-type") == "string":
                attrs = dict(member.attrs)
                value = str(member[()])
                del group[name]
                data = np.array(value, dtype=f"<U{max(len(value), 1)}")
                arr = group.create_array(name, shape=(), dtype=data.dtype)
                arr[()] = data
                arr.attrs.update(attrs)

    visit(root)
    reconsolidate(path)


def write_zarr(adata: anndata.AnnData, path: Path, fmt: int) -> None:
    anndata.settings.zarr_write_format = fmt
    adata.write_zarr(str(path))


@case("h5ad")
def valid_every_element(path: Path) -> None:
    every_element_adata().write_h5ad(path)


@case("zarr-v2")
def valid_every_element_zarr_v2(path: Path) -> None:
    write_zarr(every_element_adata(), path, 2)
    fix_zarr_string_scalars(path)


@case("zarr-v3")
def valid_every_element_zarr_v3(path: Path) -> None:
    write_zarr(every_element_adata(), path, 3)
    fix_zarr_string_scalars(path)


@case("zarr-v3", name="valid-sharded")
def valid_sharded_zarr_v3(path: Path) -> None:
    """anndata with auto_shard_zarr_v3 (the default of anndata 0.13): every array sharded, the string arrays with
    vlen-utf8 among the sharding codec's inner codecs; string scalars rewritten as fixed-length unicode."""
    anndata.settings.auto_shard_zarr_v3 = True
    try:
        write_zarr(every_element_adata(), path, 3)
    finally:
        anndata.settings.auto_shard_zarr_v3 = False
    fix_zarr_string_scalars(path)


def zero_obs_adata() -> anndata.AnnData:
    var = pd.DataFrame({"name": [f"g{i}" for i in range(4)]}, index=[f"gene{i}" for i in range(4)])
    return anndata.AnnData(X=sp.csr_matrix((0, 4), dtype=np.float32), obs=pd.DataFrame(index=pd.Index([], dtype=str)), var=var)


@case("h5ad")
def valid_zero_obs(path: Path) -> None:
    zero_obs_adata().write_h5ad(path)


@case("zarr-v2")
def valid_zero_obs_zarr_v2(path: Path) -> None:
    write_zarr(zero_obs_adata(), path, 2)
    fix_zarr_string_scalars(path)


@case("zarr-v3")
def valid_zero_obs_zarr_v3(path: Path) -> None:
    write_zarr(zero_obs_adata(), path, 3)
    fix_zarr_string_scalars(path)


def small_adata() -> anndata.AnnData:
    return anndata.AnnData(
        X=np.arange(6, dtype=np.float32).reshape(3, 2),
        obs=pd.DataFrame(index=["c0", "c1", "c2"]),
        var=pd.DataFrame(index=["g0", "g1"]),
    )


def add_awkward(f: h5py.File, name: str = "/uns/awk", length: int = 3, **overrides: Any) -> h5py.Group:
    """An awkward array group as the spec describes it: `form` (JSON string), `length`, and the buffers, each
    written as anndata writes them (write_elem: a dense array with its encoding metadata)."""
    g = f.create_group(name)
    g.attrs["encoding-type"] = "awkward-array"
    g.attrs["encoding-version"] = "0.1.0"
    g.attrs["form"] = json.dumps(
        {
            "class": "ListOffsetArray",
            "offsets": "i64",
            "content": {"class": "NumpyArray", "primitive": "int64", "form_key": "node1"},
            "form_key": "node0",
        }
    )
    g.attrs["length"] = np.int64(length)
    offsets = np.array([0, 2, 2, 5, 6, 6][: length + 1], dtype=np.int64)
    for key, data in (("node0-offsets", offsets), ("node1-data", np.arange(int(offsets[-1]), dtype=np.int64))):
        ds = g.create_dataset(key, data=data)
        ds.attrs["encoding-type"] = "array"
        ds.attrs["encoding-version"] = "0.2.0"
    for key, value in overrides.items():
        if value is None:
            del g.attrs[key]
        else:
            g.attrs[key] = value
    return g


@case("h5ad")
def valid_awkward_array(path: Path) -> None:
    small_adata().write_h5ad(path)
    with h5py.File(path, "r+") as f:
        add_awkward(f)


# ---------------------------------------------------------------------------------------------- helpers for edits
def copy_of(base: str, path: Path) -> None:
    src = target(*base.split("/", 1))
    if src.is_dir():
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(src, path)
    else:
        shutil.copyfile(src, path)


def replace(f: h5py.File, name: str, data: Any, **kwargs: Any) -> h5py.Dataset:
    """Rewrite dataset `name` with new data, keeping its attributes."""
    attrs = dict(f[name].attrs)
    del f[name]
    ds = f.create_dataset(name, data=data, **kwargs)
    for k, v in attrs.items():
        ds.attrs[k] = v
    return ds


def h5_edit(base: str = "h5ad/valid-every-element") -> Callable[[Callable[[h5py.File], None]], Callable[[Path], None]]:
    """Turn an edit of an open h5py file into a case function that copies `base` first."""

    def wrap(edit: Callable[[h5py.File], None]) -> Callable[[Path], None]:
        def fn(path: Path) -> None:
            copy_of(base, path)
            with h5py.File(path, "r+") as f:
                edit(f)

        fn.__name__ = edit.__name__
        fn.__doc__ = edit.__doc__
        return case("h5ad")(fn)

    return wrap


def set_attr(name: str, key: str, value: Any) -> Callable[[h5py.File], None]:
    def edit(f: h5py.File) -> None:
        if value is None:
            del f[name].attrs[key]
        else:
            f[name].attrs[key] = value

    return edit


def group_with(f: h5py.File, name: str, encoding_type: str, version: str) -> None:
    g = f.create_group(name)
    g.attrs["encoding-type"] = encoding_type
    g.attrs["encoding-version"] = version


def dataset_with(f: h5py.File, name: str, encoding_type: str, version: str) -> None:
    d = f.create_dataset(name, data=np.arange(4))
    d.attrs["encoding-type"] = encoding_type
    d.attrs["encoding-version"] = version


# ---------------------------------------------------------------------------------------------- element
@h5_edit()
def element_encoding_type_missing(f):
    """/obsm/X_pca loses its encoding-type (its encoding-version stays)."""
    del f["obsm/X_pca"].attrs["encoding-type"]


@h5_edit("h5ad/valid-awkward-array")
def element_encoding_version_missing(f):
    """/uns/awk (awkward arrays have no clause of their own on the version) loses encoding-version."""
    del f["uns/awk"].attrs["encoding-version"]


@h5_edit()
def element_encoding_type_unknown(f):
    """The obs column /obs/int says encoding-type 'tensor', which no reader knows."""
    f["obs/int"].attrs["encoding-type"] = "tensor"


# ---------------------------------------------------------------------------------------------- anndata group
@case("zarr-v2")
def anndata_root_is_array(path: Path) -> None:
    """The store's root, which says it is an AnnData object, is an array."""
    shutil.rmtree(path, ignore_errors=True)
    z = zarr.create_array(str(path), shape=(2,), dtype="i4", zarr_format=2)
    z[:] = [1, 2]
    z.attrs.update({"encoding-type": "anndata", "encoding-version": "0.1.0"})


def attr_case(name: str, node: str, key: str, value: Any, doc: str, base: str = "h5ad/valid-every-element") -> None:
    """A case that sets (or, with None, deletes) one attribute."""
    edit = set_attr(node, key, value)
    edit.__name__ = name.replace("-", "_")
    edit.__doc__ = doc
    globals()[edit.__name__] = h5_edit(base)(edit)


attr_case("anndata-encoding-version-wrong", "/", "encoding-version", "0.2.0", "The root says encoding-version 0.2.0.")


@h5_edit()
def anndata_var_missing(f):
    """The AnnData group has no var."""
    del f["var"]


attr_case("anndata-var-not-dataframe", "/var", "encoding-type", "raw", "/var says it is a raw group, not a dataframe.")
attr_case("anndata-X-not-array", "/X", "encoding-type", "raw", "/X says it is a raw group, not an array.")
attr_case("anndata-X-shape-wrong", "/X", "shape", np.array([N_OBS, N_VAR + 1]), "/X claims one column more than var has.")
attr_case("anndata-layers-not-array", "/layers/dense", "encoding-type", "raw", "A layer says it is raw.")


@h5_edit()
def anndata_layers_shape_wrong(f):
    """/layers/dense has one column too many."""
    replace(f, "layers/dense", np.zeros((N_OBS, N_VAR + 1)))


attr_case("anndata-obsm-wrong-type", "/obsm/X_pca", "encoding-type", "raw", "An obsm entry says it is raw.")


@h5_edit()
def anndata_obsm_shape_wrong(f):
    """/obsm/X_pca has one row too many."""
    replace(f, "obsm/X_pca", np.zeros((N_OBS + 1, 3)))


attr_case("anndata-varm-wrong-type", "/varm/PCs", "encoding-type", "raw", "A varm entry says it is raw.")


@h5_edit()
def anndata_varm_shape_wrong(f):
    """/varm/PCs has one row too few."""
    replace(f, "varm/PCs", np.zeros((N_VAR - 1, 2)))


attr_case("anndata-obsp-not-array", "/obsp/conn", "encoding-type", "raw", "An obsp entry says it is raw.")
attr_case("anndata-obsp-shape-wrong", "/obsp/conn", "shape", np.array([N_OBS, N_OBS + 1]), "/obsp/conn is n_obs x (n_obs + 1).")
attr_case("anndata-varp-not-array", "/varp/corr", "encoding-type", "raw", "A varp entry says it is raw.")


@h5_edit()
def anndata_varp_shape_wrong(f):
    """/varp/corr is n_var x (n_var - 1)."""
    replace(f, "varp/corr", np.zeros((N_VAR, N_VAR - 1)))


attr_case("anndata-uns-entry-unknown-type", "/uns/int", "encoding-type", "tensor", "A uns entry says 'tensor'.")

# ---------------------------------------------------------------------------------------------- dict, array
attr_case("dict-not-group", "/uns/int", "encoding-type", "dict", "A dataset says it is a dict.")
attr_case("dict-encoding-version-wrong", "/uns/nested", "encoding-version", "0.2.0", "A dict with version 0.2.0.")


@h5_edit()
def array_stored_as_group(f):
    """A group says it is a dense array."""
    group_with(f, "uns/nested/grouped_array", "array", "0.2.0")


attr_case("array-encoding-version-wrong", "/obsm/X_pca", "encoding-version", "0.1.0", "A dense array with version 0.1.0.")


# ---------------------------------------------------------------------------------------------- sparse
@h5_edit()
def csr_not_group(f):
    """A dataset says it is a csr_matrix."""
    dataset_with(f, "uns/nested/flat_csr", "csr_matrix", "0.1.0")


@h5_edit()
def csc_not_group(f):
    """A dataset says it is a csc_matrix."""
    dataset_with(f, "uns/nested/flat_csc", "csc_matrix", "0.1.0")


@h5_edit()
def csr_data_missing(f):
    """/X has no data array."""
    del f["X/data"]


@h5_edit()
def csc_data_missing(f):
    """/layers/csc has no data array."""
    del f["layers/csc/data"]


attr_case("csr-encoding-version-wrong", "/X", "encoding-version", "0.2.0", "A CSR matrix with version 0.2.0.")
attr_case("csc-encoding-version-wrong", "/layers/csc", "encoding-version", "0.2.0", "A CSC matrix with version 0.2.0.")
attr_case("csr-shape-not-integer", "/X", "shape", np.array([float(N_OBS), float(N_VAR)]), "/X's shape is floats.")
attr_case(
    "csc-shape-not-integer", "/layers/csc", "shape", np.array([float(N_OBS), float(N_VAR)]), "/layers/csc's shape is floats."
)


@h5_edit()
def csr_data_two_dimensional(f):
    """/X/data is a column vector (nnz, 1)."""
    replace(f, "X/data", f["X/data"][:].reshape(-1, 1))


@h5_edit()
def csc_data_two_dimensional(f):
    """/layers/csc/data is a column vector (nnz, 1)."""
    replace(f, "layers/csc/data", f["layers/csc/data"][:].reshape(-1, 1))


@h5_edit()
def csr_indices_float(f):
    """/X/indices are stored as floats."""
    replace(f, "X/indices", f["X/indices"][:].astype(np.float64))


@h5_edit()
def csc_indices_float(f):
    """/layers/csc/indices are stored as floats."""
    replace(f, "layers/csc/indices", f["layers/csc/indices"][:].astype(np.float64))


def _drop_middle(a: np.ndarray) -> np.ndarray:
    """indptr one entry short, still starting at 0, ending at nnz and non-decreasing."""
    mid = len(a) // 2
    return np.concatenate([a[:mid], a[mid + 1 :]])


@h5_edit()
def csr_indptr_short(f):
    """/X/indptr lacks one row pointer."""
    replace(f, "X/indptr", _drop_middle(f["X/indptr"][:]))


@h5_edit()
def csc_indptr_short(f):
    """/layers/csc/indptr lacks one column pointer."""
    replace(f, "layers/csc/indptr", _drop_middle(f["layers/csc/indptr"][:]))


def _start_not_zero(a: np.ndarray) -> np.ndarray:
    assert a[1] > 0, "the first row/column must be non-empty"
    a = a.copy()
    a[0] = 1
    return a


@h5_edit()
def csr_indptr_start_nonzero(f):
    """/X/indptr[0] is 1."""
    replace(f, "X/indptr", _start_not_zero(f["X/indptr"][:]))


@h5_edit()
def csc_indptr_start_nonzero(f):
    """/layers/csc/indptr[0] is 1."""
    replace(f, "layers/csc/indptr", _start_not_zero(f["layers/csc/indptr"][:]))


DECREASE_AT = 6


def _decrease(a: np.ndarray) -> np.ndarray:
    """indptr[k] set above indptr[k + 1]: the one decrease is at index k + 1."""
    a = a.copy()
    a[DECREASE_AT - 1] = a[DECREASE_AT] + 1
    return a


@h5_edit()
def csr_indptr_decreasing(f):
    """/X/indptr decreases once, at index 6."""
    replace(f, "X/indptr", _decrease(f["X/indptr"][:]))


@h5_edit()
def csc_indptr_decreasing(f):
    """/layers/csc/indptr decreases once, at index 6."""
    replace(f, "layers/csc/indptr", _decrease(f["layers/csc/indptr"][:]))


def _drop_last_value(f: h5py.File, group: str) -> None:
    for name in ("indices", "data"):
        replace(f, f"{group}/{name}", f[f"{group}/{name}"][:-1])


@h5_edit()
def csr_indptr_end_wrong(f):
    """/X stores one value fewer than indptr[-1] says (indices and data both shortened)."""
    _drop_last_value(f, "X")


@h5_edit()
def csc_indptr_end_wrong(f):
    """/layers/csc stores one value fewer than indptr[-1] says."""
    _drop_last_value(f, "layers/csc")


@h5_edit()
def csr_data_short(f):
    """/X/data is one shorter than /X/indices."""
    replace(f, "X/data", f["X/data"][:-1])


@h5_edit()
def csc_data_short(f):
    """/layers/csc/data is one shorter than its indices."""
    replace(f, "layers/csc/data", f["layers/csc/data"][:-1])


@h5_edit()
def csr_indices_out_of_range(f):
    """/X/indices[3] is n_var, one past the last column."""
    a = f["X/indices"][:]
    a[3] = N_VAR
    replace(f, "X/indices", a)


@h5_edit()
def csc_indices_out_of_range(f):
    """/layers/csc/indices[3] is n_obs, one past the last row."""
    a = f["layers/csc/indices"][:]
    a[3] = N_OBS
    replace(f, "layers/csc/indices", a)


DEEP_ROWS = 2_000_000
DEEP_AT = 1_500_000


@case("h5ad")
def csr_indptr_decreasing_deep(path: Path) -> None:
    """A 2,000,000 x 4 CSR X with 3,000,000 stored values whose indptr decreases once, at index 1,500,000.

    Written with h5py, chunked and gzip-compressed with shuffle: the arrays are regular, so the file stays small.
    The obs index is an integer array (the spec asks only for an array), which compresses where strings would not.
    """
    counts = np.tile(np.array([1, 2], dtype=np.int64), DEEP_ROWS // 2)
    indptr = np.zeros(DEEP_ROWS + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    nnz = int(indptr[-1])
    indices = np.tile(np.array([0, 1, 3], dtype=np.int32), nnz // 3)
    indptr[DEEP_AT - 1] = indptr[DEEP_AT] + 1
    comp = dict(chunks=(1 << 18,), compression="gzip", compression_opts=9, shuffle=True)
    with h5py.File(path, "w") as f:
        f.attrs.update({"encoding-type": "anndata", "encoding-version": "0.1.0"})
        x = f.create_group("X")
        x.attrs.update({"encoding-type": "csr_matrix", "encoding-version": "0.1.0", "shape": np.array([DEEP_ROWS, 4])})
        x.create_dataset("indptr", data=indptr, **comp)
        x.create_dataset("indices", data=indices, **comp)
        x.create_dataset("data", data=np.ones(nnz, dtype=np.float32), **comp)
        obs = f.create_group("obs")
        obs.attrs.update(
            {
                "encoding-type": "dataframe",
                "encoding-version": "0.2.0",
                "_index": "_index",
                "column-order": np.array([], dtype=h5py.string_dtype()),
            }
        )
        idx = obs.create_dataset("_index", data=np.arange(DEEP_ROWS, dtype=np.int64), **comp)
        idx.attrs.update({"encoding-type": "array", "encoding-version": "0.2.0"})
        var = f.create_group("var")
        var.attrs.update(
            {
                "encoding-type": "dataframe",
                "encoding-version": "0.2.0",
                "_index": "_index",
                "column-order": np.array([], dtype=h5py.string_dtype()),
            }
        )
        vidx = var.create_dataset("_index", data=np.array([f"g{i}" for i in range(4)], dtype=h5py.string_dtype()))
        vidx.attrs.update({"encoding-type": "string-array", "encoding-version": "0.2.0"})


# ---------------------------------------------------------------------------------------------- dataframe
@h5_edit()
def dataframe_not_group(f):
    """A dataset says it is a dataframe."""
    dataset_with(f, "uns/nested/flat_df", "dataframe", "0.2.0")


attr_case("dataframe-index-attr-not-string", "/obsm/df", "_index", np.int64(0), "/obsm/df's _index is the integer 0.")
attr_case("dataframe-encoding-version-wrong", "/obsm/df", "encoding-version", "0.1.0", "A dataframe with version 0.1.0.")
attr_case("dataframe-column-order-missing", "/obsm/df", "column-order", None, "/obsm/df has no column-order.")
attr_case(
    "dataframe-column-order-unknown-column",
    "/obsm/df",
    "column-order",
    np.array(["x", "y"], dtype=object),
    "/obsm/df's column-order names a column 'y' that is not there.",
)


@h5_edit()
def dataframe_index_array_missing(f):
    """/obsm/df names '_index' as its index, but the array is gone."""
    del f["obsm/df/_index"]


@h5_edit()
def dataframe_column_length_wrong(f):
    """/obsm/df/x has one row more than the index."""
    replace(f, "obsm/df/x", np.arange(N_OBS + 1))


@h5_edit()
def dataframe_chunks_not_shared(f):
    """/obs/int is chunked in 5s while the other columns are contiguous (the SHOULD clause)."""
    replace(f, "obs/int", f["obs/int"][:], chunks=(5,))


# ---------------------------------------------------------------------------------------------- scalars
@h5_edit()
def scalar_not_zero_dimensional(f):
    """/uns/int is a one-element 1-D array."""
    replace(f, "uns/int", np.array([3]))


attr_case(
    "numeric-scalar-encoding-version-wrong", "/uns/int", "encoding-version", "0.1.0", "A numeric scalar with version 0.1.0."
)


@h5_edit()
def numeric_scalar_is_string(f):
    """/uns/int says numeric-scalar but holds a string."""
    replace(f, "uns/int", "three", dtype=h5py.string_dtype())


attr_case("string-encoding-version-wrong", "/uns/str", "encoding-version", "0.1.0", "A string scalar with version 0.1.0.")


@h5_edit()
def string_scalar_fixed_length(f):
    """/uns/str is stored as fixed-length bytes (|S5)."""
    replace(f, "uns/str", np.array(b"hello", dtype="S5"))


# ---------------------------------------------------------------------------------------------- categorical
@h5_edit()
def categorical_not_group(f):
    """A dataset says it is categorical."""
    dataset_with(f, "uns/nested/flat_cat", "categorical", "0.2.0")


attr_case("categorical-encoding-version-wrong", "/obs/cat", "encoding-version", "0.1.0", "A categorical with version 0.1.0.")
attr_case("categorical-ordered-not-boolean", "/obs/cat", "ordered", np.int64(0), "/obs/cat's ordered is the integer 0.")


@h5_edit()
def categorical_codes_missing(f):
    """/obs/cat has no codes."""
    del f["obs/cat/codes"]


@h5_edit()
def categorical_codes_float(f):
    """/obs/cat/codes are floats (values 0.0, 1.0 and -1.0)."""
    replace(f, "obs/cat/codes", f["obs/cat/codes"][:].astype(np.float32))


@h5_edit()
def categorical_code_too_large(f):
    """/obs/cat/codes[1] is 2, with 2 categories."""
    a = f["obs/cat/codes"][:]
    a[1] = 2
    replace(f, "obs/cat/codes", a)


@h5_edit()
def categorical_code_below_minus_one(f):
    """/obs/cat/codes[2] is -2."""
    a = f["obs/cat/codes"][:]
    a[2] = -2
    replace(f, "obs/cat/codes", a)


@h5_edit()
def categorical_categories_missing(f):
    """/obs/cat has no categories."""
    del f["obs/cat/categories"]


# ---------------------------------------------------------------------------------------------- string arrays
@h5_edit()
def string_array_not_array(f):
    """A group says it is a string-array."""
    group_with(f, "uns/nested/grouped_strings", "string-array", "0.2.0")


attr_case("string-array-encoding-version-wrong", "/uns/strs", "encoding-version", "0.1.0", "A string array with version 0.1.0.")


@h5_edit()
def string_array_fixed_length(f):
    """/uns/strs is stored as fixed-length bytes (|S3)."""
    replace(f, "uns/strs", np.array([b"x", b"yy", b"zzz"], dtype="S3"))


# ---------------------------------------------------------------------------------------------- nullable
attr_case(
    "nullable-integer-encoding-version-wrong", "/obs/nint", "encoding-version", "0.2.0", "A nullable integer with version 0.2.0."
)
attr_case(
    "nullable-boolean-encoding-version-wrong", "/obs/nbool", "encoding-version", "0.2.0", "A nullable boolean with version 0.2.0."
)


@h5_edit()
def nullable_integer_not_group(f):
    """A dataset says it is nullable-integer."""
    dataset_with(f, "uns/nested/flat_nint", "nullable-integer", "0.1.0")


@h5_edit()
def nullable_boolean_not_group(f):
    """A dataset says it is nullable-boolean."""
    dataset_with(f, "uns/nested/flat_nbool", "nullable-boolean", "0.1.0")


@h5_edit()
def nullable_integer_values_missing(f):
    """/obs/nint has no values."""
    del f["obs/nint/values"]


@h5_edit()
def nullable_boolean_values_missing(f):
    """/obs/nbool has no values."""
    del f["obs/nbool/values"]


@h5_edit()
def nullable_integer_values_float(f):
    """/obs/nint/values are floats."""
    replace(f, "obs/nint/values", f["obs/nint/values"][:].astype(np.float64))


@h5_edit()
def nullable_boolean_values_uint8(f):
    """/obs/nbool/values are uint8 0/1, not booleans."""
    replace(f, "obs/nbool/values", f["obs/nbool/values"][:].astype(np.uint8))


@h5_edit()
def nullable_integer_mask_missing(f):
    """/obs/nint has no mask."""
    del f["obs/nint/mask"]


@h5_edit()
def nullable_boolean_mask_missing(f):
    """/obs/nbool has no mask."""
    del f["obs/nbool/mask"]


@h5_edit()
def nullable_integer_mask_uint8(f):
    """/obs/nint/mask is uint8 0/1, not booleans."""
    replace(f, "obs/nint/mask", f["obs/nint/mask"][:].astype(np.uint8))


@h5_edit()
def nullable_boolean_mask_uint8(f):
    """/obs/nbool/mask is uint8 0/1, not booleans."""
    replace(f, "obs/nbool/mask", f["obs/nbool/mask"][:].astype(np.uint8))


@h5_edit()
def nullable_integer_mask_short(f):
    """/obs/nint/mask is one shorter than values."""
    replace(f, "obs/nint/mask", f["obs/nint/mask"][:-1])


@h5_edit()
def nullable_boolean_mask_short(f):
    """/obs/nbool/mask is one shorter than values."""
    replace(f, "obs/nbool/mask", f["obs/nbool/mask"][:-1])


# ---------------------------------------------------------------------------------------------- awkward
attr_case(
    "awkward-array-length-missing",
    "/uns/awk",
    "length",
    None,
    "The awkward array has no length.",
    base="h5ad/valid-awkward-array",
)
attr_case(
    "awkward-array-form-not-json",
    "/uns/awk",
    "form",
    "ListOffsetArray(int64)",
    "The awkward array's form is not JSON.",
    base="h5ad/valid-awkward-array",
)


@h5_edit("h5ad/valid-awkward-array")
def awkward_array_buffer_missing(f):
    """/uns/awk has no node1-data, the buffer its form's NumpyArray (form_key node1) reads."""
    del f["uns/awk/node1-data"]


@h5_edit("h5ad/valid-awkward-array")
def awkward_array_buffer_unencoded(f):
    """/uns/awk/node0-offsets, written as anndata writes buffers (write_elem), lost its encoding-type."""
    del f["uns/awk/node0-offsets"].attrs["encoding-type"]


@case("h5ad")
def valid_awkward_array_in_obsm_varm(path: Path) -> None:
    """Awkward arrays in varm (as the spec's own AwkwardArrays section stores varm/transcript) and in obsm."""
    small_adata().write_h5ad(path)
    with h5py.File(path, "r+") as f:
        add_awkward(f, "/varm/transcript", length=2)
        add_awkward(f, "/obsm/ragged", length=3)


# ---------------------------------------------------------------------------------------------- legacy files
def _strip_encoding(f: h5py.File, names: tuple[str, ...]) -> None:
    for name in names:
        for key in ("encoding-type", "encoding-version"):
            if key in f[name].attrs:
                del f[name].attrs[key]


@case("h5ad")
def legacy_anndata_0_7(path: Path) -> None:
    """The anndata 0.7 layout: no encoding metadata on the root, X or the mappings; dataframes at 0.1.0."""
    small_adata().write_h5ad(path)
    with h5py.File(path, "r+") as f:
        _strip_encoding(f, ("/", "X", "layers", "obsm", "obsp", "varm", "varp", "uns"))
        for name in ("obs", "var"):
            f[name].attrs["encoding-version"] = "0.1.0"


@case("h5ad")
def legacy_anndata_pre_0_7(path: Path) -> None:
    """The layout before anndata 0.7: obs and var as HDF5 compound datasets, no attributes anywhere."""
    with h5py.File(path, "w") as f:
        f.create_dataset("X", data=np.arange(6, dtype=np.float32).reshape(3, 2))
        f.create_dataset("obs", data=np.array([(b"c0", 1), (b"c1", 2), (b"c2", 3)], dtype=[("index", "S2"), ("n_genes", "<i8")]))
        f.create_dataset("var", data=np.array([(b"g0",), (b"g1",)], dtype=[("index", "S2")]))
        f.create_group("uns")


# A small object in the layouts before anndata 0.8, written field by field as anndata wrote them (anndata 0.7.8's
# write_series and write_sparse_compressed; before 0.7, _to_dict_fixed_width_arrays and the h5sparse attributes), so
# that the clauses that hold in every era have something to check: a 4 x 3 CSR X, a categorical obs column.
LEGACY_X = sp.csr_matrix(np.array([[1, 0, 2], [0, 0, 3], [4, 5, 0], [0, 0, 6]], dtype=np.float32))
LEGACY_CODES = np.array([0, 1, -1, 0], dtype=np.int8)  # -1: a missing value
LEGACY_CATEGORIES = ["B", "T"]


def _legacy_0_7(root: Any, reference: Callable[[Any], Any]) -> None:
    """The anndata 0.7 layout into an h5py File or a zarr Group: X a csr_matrix 0.1.0 group, obs and var dataframes
    at encoding-version 0.1.0 with the categorical column's codes pointing at __categories/<column> (`reference`:
    an HDF5 object reference, or the relative path anndata 0.7 stores in Zarr), no encoding metadata on the root
    or the mappings."""

    def put(group: Any, name: str, data: np.ndarray) -> Any:
        if data.dtype.kind == "U":  # text: variable-length strings, as anndata 0.7 wrote them
            if isinstance(group, h5py.Group):
                return group.create_dataset(name, data=data.astype(object), dtype=h5py.string_dtype())
            arr = group.create_array(name, shape=data.shape, dtype=str)
            arr[:] = data
            return arr
        if isinstance(group, h5py.Group):
            return group.create_dataset(name, data=data)
        arr = group.create_array(name, shape=data.shape, dtype=data.dtype)
        arr[:] = data
        return arr

    x = root.create_group("X")
    x.attrs.update({"encoding-type": "csr_matrix", "encoding-version": "0.1.0", "shape": list(LEGACY_X.shape)})
    for name in ("data", "indices", "indptr"):
        put(x, name, getattr(LEGACY_X, name))
    obs = root.create_group("obs")
    frame = {"_index": "_index", "encoding-type": "dataframe", "encoding-version": "0.1.0"}
    obs.attrs.update({**frame, "column-order": ["cell_type"]})
    put(obs, "_index", np.array(["c0", "c1", "c2", "c3"]))
    table = put(obs.create_group("__categories"), "cell_type", np.array(LEGACY_CATEGORIES))
    table.attrs["ordered"] = False
    codes = put(obs, "cell_type", LEGACY_CODES)
    codes.attrs["categories"] = reference(table)
    var = root.create_group("var")
    var.attrs.update({**frame, "column-order": ["n_cells"]})
    put(var, "_index", np.array(["g0", "g1", "g2"]))
    put(var, "n_cells", np.array([2, 1, 3], dtype=np.int64))
    put(root.create_group("obsm"), "X_pca", np.zeros((4, 2), dtype=np.float32))
    root.create_group("uns")


def _legacy_pre_0_7(root: Any) -> None:
    """The layout before anndata 0.7 into an h5py File or a zarr Group: obs and var as structured (compound) arrays,
    the codes a field of obs with their categories in uns/<column>_categories, X a group with the h5sparse
    attributes, no attributes anywhere else."""

    def put(group: Any, name: str, data: np.ndarray) -> None:
        if isinstance(group, h5py.Group):
            group.create_dataset(name, data=data)
        else:
            group.create_array(name, shape=data.shape, dtype=data.dtype)[:] = data

    rows = list(zip([b"c0", b"c1", b"c2", b"c3"], LEGACY_CODES, strict=True))
    obs = np.array(rows, dtype=[("index", "S2"), ("cell_type", "i1")])
    put(root, "obs", obs)
    put(root, "var", np.array([(b"g0",), (b"g1",), (b"g2",)], dtype=[("index", "S2")]))
    x = root.create_group("X")
    x.attrs.update({"h5sparse_format": "csr", "h5sparse_shape": list(LEGACY_X.shape)})
    for name in ("data", "indices", "indptr"):
        put(x, name, getattr(LEGACY_X, name))
    put(root.create_group("uns"), "cell_type_categories", np.array([c.encode() for c in LEGACY_CATEGORIES]))


@case("h5ad")
def legacy_anndata_0_7_sparse(path: Path) -> None:
    """The anndata 0.7 layout with a CSR X and a categorical obs column (codes, __categories/cell_type)."""
    with h5py.File(path, "w") as f:
        _legacy_0_7(f, lambda node: node.ref)


@h5_edit("h5ad/legacy-anndata-0-7-sparse")
def legacy_anndata_0_7_indptr_decreasing(f):
    """/X/indptr of an anndata 0.7 file decreases at index 2 (3 -> 2): anndata reads the file, scipy cannot build X."""
    f["X/indptr"][1:3] = [3, 2]


@h5_edit("h5ad/legacy-anndata-0-7-sparse")
def legacy_anndata_0_7_codes_out_of_range(f):
    """/obs/cell_type[1] of an anndata 0.7 file is 2, with 2 categories in /obs/__categories/cell_type."""
    f["obs/cell_type"][1] = 2


@case("h5ad")
def legacy_anndata_pre_0_7_h5sparse(path: Path) -> None:
    """The layout before anndata 0.7 with X a CSR group in the h5sparse attributes (h5sparse_format, h5sparse_shape)."""
    with h5py.File(path, "w") as f:
        _legacy_pre_0_7(f)


@h5_edit("h5ad/legacy-anndata-pre-0-7-h5sparse")
def legacy_anndata_pre_0_7_indptr_past_nnz(f):
    """/X/indptr of a file before anndata 0.7 (h5sparse attributes) ends at 8, past the 6 stored values."""
    f["X/indptr"][-1] = 8


@case("zarr-v2")
def legacy_anndata_0_7_zarr_v2(path: Path) -> None:
    """The anndata 0.7 layout on Zarr v2, as anndata 0.7's write_zarr left it: no consolidated metadata, the codes'
    categories attribute the path __categories/cell_type."""
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    _legacy_0_7(root, lambda node: f"__categories/{node.basename}")


@case("zarr-v2")
def legacy_anndata_pre_0_7_indptr_decreasing_zarr_v2(path: Path) -> None:
    """The layout before anndata 0.7 on Zarr v2 (structured obs and var, h5sparse X) with /X/indptr decreasing at
    index 2 (3 -> 2)."""
    root = zarr.open_group(str(path), mode="w", zarr_format=2)
    _legacy_pre_0_7(root)
    root["X/indptr"][1:3] = [3, 2]


# ---------------------------------------------------------------------------------------------- uns encodings
@case("h5ad")
def valid_uns_rec_array(path: Path) -> None:
    """scanpy's rank_genes_groups as anndata writes it: structured arrays with encoding-type rec-array."""
    adata = small_adata()
    names = np.rec.fromarrays([np.array(["g0", "g1"]), np.array(["g1", "g0"])], names=["0", "1"])
    scores = np.rec.fromarrays([np.array([2.5, 1.0], dtype=np.float32), np.array([1.5, 0.5], dtype=np.float32)], names=["0", "1"])
    adata.uns["rank_genes_groups"] = {"names": names, "scores": scores, "params": {"method": "t-test"}}
    adata.write_h5ad(path)


@case("h5ad")
def valid_uns_bytes(path: Path) -> None:
    """A byte-string scalar in uns with encoding-type bytes, which anndata reads (read_scalar); written with h5py."""
    small_adata().write_h5ad(path)
    with h5py.File(path, "r+") as f:
        ds = f["uns"].create_dataset("checksum", data=np.bytes_(b"\x00\xffabc"))
        ds.attrs["encoding-type"] = "bytes"
        ds.attrs["encoding-version"] = "0.2.0"


@h5_edit()
def numeric_scalar_encoded_as_array(f):
    """The 0-d numeric /uns/int says encoding-type array (a dense array) instead of numeric-scalar."""
    f["uns/int"].attrs["encoding-type"] = "array"


@h5_edit()
def string_scalar_encoded_as_string_array(f):
    """The 0-d string /uns/str says encoding-type string-array instead of string."""
    f["uns/str"].attrs["encoding-type"] = "string-array"


@h5_edit()
def scalar_outside_uns(f):
    """A string scalar (encoding-type string) stored at /note, beside obs and var rather than inside uns."""
    d = f.create_dataset("note", data="kept outside uns", dtype=h5py.string_dtype())
    d.attrs["encoding-type"] = "string"
    d.attrs["encoding-version"] = "0.2.0"


@h5_edit()
def scalar_numeric_outside_uns(f):
    """A numeric scalar /threshold beside obs and var, outside uns (a SHOULD)."""
    ds = f.create_dataset("threshold", data=np.float64(0.5))
    ds.attrs["encoding-type"] = "numeric-scalar"
    ds.attrs["encoding-version"] = "0.2.0"


@h5_edit()
def anndata_X_three_dimensional(f):
    """/X is a dense (n_obs, n_var, 2) array: its leading dimensions are right, but X is two-dimensional."""
    del f["X"]
    ds = f.create_dataset("X", data=np.zeros((N_OBS, N_VAR, 2), dtype=np.float32))
    ds.attrs["encoding-type"] = "array"
    ds.attrs["encoding-version"] = "0.2.0"


@h5_edit()
def anndata_layers_three_dimensional(f):
    """/layers/dense is (n_obs, n_var, 3)."""
    replace(f, "layers/dense", np.zeros((N_OBS, N_VAR, 3)))


@h5_edit()
def dataframe_column_order_lists_index(f):
    """/obs lists its index array, named by _index, in column-order."""
    f["obs"].attrs["column-order"] = np.array(list(f["obs"].attrs["column-order"]) + [f["obs"].attrs["_index"]], dtype=object)


@h5_edit()
def dataframe_index_one_element_array(f):
    """/obs stores _index as a one-element array of strings, as R writers store string attributes."""
    f["obs"].attrs["_index"] = np.array([f["obs"].attrs["_index"]], dtype=h5py.string_dtype())


# ---------------------------------------------------------------------------------------------- zarr-only clauses
@case("zarr-v2", name="anndata-0.12-string-scalars")
def anndata_0_12_string_scalars(path: Path) -> None:
    """anndata 0.12's own Zarr v2 output, untouched: string scalars are variable-length strings."""
    write_zarr(every_element_adata(), path, 2)


@case("zarr-v3", name="anndata-0.12-string-scalars")
def anndata_0_12_string_scalars_zarr_v3(path: Path) -> None:
    """anndata 0.12's own Zarr v3 output, untouched."""
    write_zarr(every_element_adata(), path, 3)


def _fixed_length_strings(path: Path) -> None:
    root = open_for_edit(path)
    uns = root["uns"]
    attrs = dict(uns["strs"].attrs)
    data = np.asarray(uns["strs"][:]).astype("<U3")
    del uns["strs"]
    arr = uns.create_array("strs", shape=data.shape, dtype=data.dtype)
    arr[:] = data
    arr.attrs.update(attrs)
    reconsolidate(path)


@case("zarr-v2")
def string_array_fixed_length_unicode(path: Path) -> None:
    """/uns/strs is stored as fixed-length unicode (<U3) without the vlen-utf8 codec."""
    copy_of("zarr-v2/valid-every-element", path)
    _fixed_length_strings(path)


@case("zarr-v3")
def string_array_fixed_length_unicode_zarr_v3(path: Path) -> None:
    """/uns/strs is stored as fixed-length unicode without the vlen-utf8 codec (Zarr v3)."""
    copy_of("zarr-v3/valid-every-element", path)
    _fixed_length_strings(path)


@case("zarr-v2")
def categorical_code_too_large_zarr_v2(path: Path) -> None:
    """/obs/cat/codes[1] is 2, with 2 categories (a value scan through zarr-python)."""
    copy_of("zarr-v2/valid-every-element", path)
    codes = zarr.open_array(str(path / "obs" / "cat" / "codes"), mode="r+")
    codes[1] = 2
    reconsolidate(path)


@case("zarr-v3")
def dataframe_encoding_version_wrong_zarr_v3(path: Path) -> None:
    """/obsm/df says encoding-version 0.1.0: a raw JSON edit of zarr.json."""
    copy_of("zarr-v3/valid-every-element", path)
    meta_file = path / "obsm" / "df" / "zarr.json"
    meta = json.loads(meta_file.read_text())
    meta["attributes"]["encoding-version"] = "0.1.0"
    meta_file.write_text(json.dumps(meta, indent=2))
    reconsolidate(path)


# ---------------------------------------------------------------------------------------------- dataframe columns
@h5_edit()
def dataframe_column_two_dimensional(f):
    """/obs/int is an (n_obs, 2) array: two columns in one array (anndata refuses it)."""
    replace(f, "obs/int", np.arange(2 * N_OBS, dtype=np.int64).reshape(N_OBS, 2))


@h5_edit()
def dataframe_categorical_codes_two_dimensional(f):
    """/obs/cat/codes is an (n_obs, 1) array (anndata reads the column back as plain objects)."""
    replace(f, "obs/cat/codes", f["obs/cat/codes"][:].reshape(N_OBS, 1))


@case("zarr-v2")
def dataframe_column_two_dimensional_zarr_v2(path: Path) -> None:
    """/obs/int is an (n_obs, 2) array (Zarr v2)."""
    copy_of("zarr-v2/valid-every-element", path)
    obs = open_for_edit(path)["obs"]
    attrs = dict(obs["int"].attrs)
    data = np.arange(2 * N_OBS, dtype=np.int64).reshape(N_OBS, 2)
    del obs["int"]
    arr = obs.create_array("int", shape=data.shape, dtype=data.dtype)
    arr[:] = data
    arr.attrs.update(attrs)
    reconsolidate(path)


def main(argv: list[str]) -> None:
    wanted = set(argv)
    for name, (container, fn) in CASES.items():
        if wanted and name not in wanted and name.split("/", 1)[1] not in wanted:
            continue
        path = target(container, name.split("/", 1)[1])
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        fn(path)
        print(f"wrote {path.relative_to(HERE)}")


if __name__ == "__main__":
    main(sys.argv[1:])
