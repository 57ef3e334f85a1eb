"""Write the CXG 0.3.0 conformance corpus with tiledb-py: two valid CXGs (dense X; sparse Xr/Xc) and broken copies.

Run as `python conformance-corpus/cxg/generate_cxg.py` (needs the `tiledb` extra). It (re)writes the groups under
conformance-corpus/cxg/cxg-0.3.0/ and nothing else; manifest.yaml beside this file lists each case with the exact
set of rule ids it fails. Each broken case is the valid CXG built with one change (the `made` line says which).
The CXGs are tiny (4 cells, 3 genes): a TileDB group is many small files.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import tiledb

HERE = Path(__file__).resolve().parent
OUT = HERE / "cxg-0.3.0"
N_OBS, N_VAR = 4, 3
CTX = tiledb.Ctx({"sm.consolidation.mode": "fragment_meta"})


def _dim(name: str, n: int, dtype: Any = np.uint32, low: int = 0) -> tiledb.Dim:
    return tiledb.Dim(name=name, domain=(low, low + n - 1), tile=n, dtype=dtype)


def _dense(uri: Path, dims: list[tiledb.Dim], attrs: list[tiledb.Attr], data: dict, meta: dict | None = None) -> None:
    schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs, sparse=False)
    tiledb.Array.create(str(uri), schema)
    with tiledb.open(str(uri), mode="w") as array:
        array[:] = data if len(data) > 1 else next(iter(data.values()))
        for key, value in (meta or {}).items():
            array.meta[key] = value


def _sparse(
    uri: Path, dim: tiledb.Dim, other: str, values: np.ndarray, rows: np.ndarray, cols: np.ndarray, dense: bool = False
) -> None:
    """One half of the sparse pair: cells at `rows` with attributes "" (values) and `other` (the other index).

    With `dense`, a dense 1-D array instead, holding only the first value of each row (what a dense array can hold).
    """
    attrs = [tiledb.Attr("", dtype=values.dtype), tiledb.Attr(other, dtype=np.uint32)]
    if dense:
        first = np.unique(rows, return_index=True)[1]
        _dense(uri, [dim], attrs, {"": values[first], other: cols[first].astype(np.uint32)})
        return
    schema = tiledb.ArraySchema(domain=tiledb.Domain(dim), sparse=True, allows_duplicates=True, attrs=attrs)
    tiledb.Array.create(str(uri), schema)
    with tiledb.open(str(uri), mode="w") as array:
        array[rows] = {"": values, other: cols.astype(np.uint32)}


def build(
    path: Path,
    *,
    sparse: bool = False,
    omit: tuple[str, ...] = (),
    x_dtype: str = "float32",
    x_shape: tuple[int, int] = (N_OBS, N_VAR),
    col_shift: bool | None = None,
    obs_2d: bool = False,
    var_2d: bool = False,
    obs_domain: Any = np.uint32,
    emb: dict[str, np.ndarray] | None = None,
    group_meta: dict | None = None,
    obs_schema: Any = None,
    codes: tuple[int, ...] = (0, 1, 1, 0),
    x_attr: str = "",
    emb_attr: str = "",
    xr: dict | None = None,
    xc: dict | None = None,
    col_shift_n: int = N_VAR,
    col_shift_dtype: str = "float32",
    col_shift_attr: str = "",
    obs_extra: dict[str, np.ndarray] | None = None,
) -> None:
    """A CXG as the spec describes it; the keyword arguments each change one thing.

    `xr` / `xc` change one half of the sparse pair: `n` (domain length), `other` (name of the index attribute),
    `dtype` (of the values), `index_shift` (added to the first index), `dense` (a dense array), `value_shift`
    (added to the first value), `drop_last` (the last cell left out). `obs_extra` adds obs columns (name -> values),
    each one more TileDB attribute.
    """
    if path.exists():
        shutil.rmtree(path)
    tiledb.group_create(str(path))
    rng = np.random.default_rng(0)
    counts = rng.random((N_OBS, N_VAR)).astype("float32")
    if "obs" not in omit:
        schema = (
            obs_schema
            if obs_schema is not None
            else {
                "index": "name_0",
                "name_0": {"type": "string"},
                "cell_type": {"type": "categorical", "categories": ["B cell", "T cell"]},
            }
        )
        dims = [_dim("__dim_0", N_OBS, obs_domain)] + ([_dim("__dim_1", 2)] if obs_2d else [])
        names = np.array([f"cell{i}" for i in range(N_OBS)], dtype=object)
        codes = np.array(codes, dtype=np.int8)
        if obs_2d:
            names, codes = np.repeat(names[:, None], 2, axis=1), np.repeat(codes[:, None], 2, axis=1)
        extra = obs_extra or {}
        _dense(
            path / "obs",
            dims,
            [
                tiledb.Attr("name_0", dtype=str, var=True),
                tiledb.Attr("cell_type", dtype=np.int8),
                *(tiledb.Attr(k, dtype=v.dtype) for k, v in extra.items()),
            ],
            {"name_0": names, "cell_type": codes, **extra},
            {"cxg_schema": schema if isinstance(schema, str) else json.dumps(schema)},
        )
    if "var" not in omit:
        dims = [_dim("__dim_0", N_VAR)] + ([_dim("__dim_1", 2)] if var_2d else [])
        names = np.array([f"gene{i}" for i in range(N_VAR)], dtype=object)
        _dense(
            path / "var",
            dims,
            [tiledb.Attr("name_0", dtype=str, var=True)],
            {"name_0": np.repeat(names[:, None], 2, axis=1) if var_2d else names},
            {"cxg_schema": json.dumps({"index": "name_0", "name_0": {"type": "string"}})},
        )
    if "X" not in omit:
        if sparse:
            rows, cols = np.nonzero(counts)
            order = np.lexsort((rows, cols))
            halves = {
                "Xr": ("obs", N_OBS, "var", rows, cols, xr or {}),
                "Xc": ("var", N_VAR, "obs", cols[order], rows[order], xc or {}),
            }
            for name, (dim, n, other, coords, index, change) in halves.items():
                if name in omit:
                    continue
                values = (counts[rows, cols][order] if name == "Xc" else counts[rows, cols]).copy()
                values[0] += change.get("value_shift", 0)
                index = index.copy()
                index[0] += change.get("index_shift", 0)
                if change.get("drop_last"):
                    values, coords, index = values[:-1], coords[:-1], index[:-1]
                _sparse(
                    path / name,
                    _dim(dim, change.get("n", n)),
                    change.get("other", other),
                    values.astype(change.get("dtype", "float32")),
                    coords.astype(np.uint32),
                    index,
                    dense=change.get("dense", False),
                )
        else:
            data = rng.random(x_shape).astype(x_dtype)
            _dense(
                path / "X",
                [_dim("obs", x_shape[0]), _dim("var", x_shape[1])],
                [tiledb.Attr(x_attr, dtype=x_dtype)],
                {x_attr: data},
            )
    if col_shift if col_shift is not None else sparse:
        _dense(
            path / "X_col_shift",
            [_dim("var", col_shift_n)],
            [tiledb.Attr(col_shift_attr, dtype=col_shift_dtype)],
            {col_shift_attr: np.zeros(col_shift_n, col_shift_dtype)},
        )
    if "emb" not in omit:
        tiledb.group_create(str(path / "emb"))
        embeddings = emb if emb is not None else {"umap": rng.random((N_OBS, 2)).astype("float32")}
        for name, coords in embeddings.items():
            attr = (
                tiledb.Attr(emb_attr, dtype=str, var=True)
                if coords.dtype.kind == "O"
                else tiledb.Attr(emb_attr, dtype=coords.dtype)
            )
            _dense(path / "emb" / name, [_dim("obs", coords.shape[0]), _dim("dim", coords.shape[1])], [attr], {emb_attr: coords})
    if "cxg_group_metadata" not in omit:
        meta = {
            "cxg_version": "0.3.0",
            "cxg_properties": json.dumps({"title": "tiny", "about": "https://example.org"}),
            "cxg_category_colors": json.dumps({"cell_type_colors": {"B cell": "#FF0000", "T cell": "#0000FF"}}),
        }
        meta.update(group_meta or {})
        meta = {k: v for k, v in meta.items() if v is not None}
        _dense(path / "cxg_group_metadata", [_dim("__dim_0", 1)], [tiledb.Attr("", dtype=np.float64)], {"": np.zeros(1)}, meta)


# obs's default cxg_schema with a boolean column is_doublet, stored as uint8 (1/0), as the spec says.
BOOLEAN_SCHEMA = {
    "index": "name_0",
    "name_0": {"type": "string"},
    "cell_type": {"type": "categorical", "categories": ["B cell", "T cell"]},
    "is_doublet": {"type": "boolean"},
}

CASES: dict[str, dict[str, Any]] = {
    "valid-every-element": {},
    "valid-sparse-X": {"sparse": True},
    "obs-missing": {"omit": ("obs",)},
    "var-missing": {"omit": ("var",)},
    "X-missing": {"omit": ("X",)},
    "group-metadata-missing": {"omit": ("cxg_group_metadata",)},
    "emb-missing": {"omit": ("emb",)},
    "emb-empty": {"emb": {}},
    "obs-domain-int64": {"obs_domain": np.int64},
    "obs-two-dimensional": {"obs_2d": True},
    "var-two-dimensional": {"var_2d": True},
    "X-string": {"x_dtype": "S3"},
    "X-float64": {"x_dtype": "float64"},
    "X-shape-wrong": {"x_shape": (N_OBS, N_VAR + 1)},
    "X-col-shift-with-dense-X": {"col_shift": True},
    "emb-string": {"emb": {"umap": np.array([["a", "b"]] * N_OBS, dtype=object)}},
    "emb-float64": {"emb": {"umap": np.zeros((N_OBS, 2), "float64")}},
    "emb-one-column": {"emb": {"umap": np.zeros((N_OBS, 1), "float32")}},
    "cxg-version-missing": {"group_meta": {"cxg_version": None}},
    "cxg-version-not-semver": {"group_meta": {"cxg_version": "v0.3.0"}},
    "cxg-version-0.2.0": {"group_meta": {"cxg_version": "0.2.0"}},
    "cxg-properties-not-json": {"group_meta": {"cxg_properties": "title: tiny"}},
    "cxg-category-colors-not-json": {"group_meta": {"cxg_category_colors": "{'a': 1}"}},
    "obs-code-out-of-range": {"codes": (0, 1, 2, 0)},
    "cxg-schema-not-json": {"obs_schema": "{index: name_0}"},
    "cxg-schema-index-unknown": {"obs_schema": {"index": "barcode", "name_0": {"type": "string"}}},
    "cxg-schema-column-unknown": {
        "obs_schema": {
            "index": "name_0",
            "name_0": {"type": "string"},
            "batch": {"type": "categorical", "categories": ["a", "b"]},
        }
    },
    "cxg-version-0.1": {"group_meta": {"cxg_version": "0.1"}},
    "cxg-properties-title-number": {"group_meta": {"cxg_properties": json.dumps({"title": 5, "about": "https://example.org"})}},
    "cxg-properties-about-not-url": {"group_meta": {"cxg_properties": json.dumps({"title": "tiny", "about": "example.org"})}},
    "cxg-category-colors-table-misnamed": {
        "group_meta": {"cxg_category_colors": json.dumps({"cell_type": {"B cell": "#FF0000", "T cell": "#0000FF"}})}
    },
    "X-attribute-named": {"x_attr": "data"},
    "emb-attribute-named": {"emb_attr": "coords"},
    "Xc-missing": {"sparse": True, "omit": ("Xc",)},
    "Xr-shape-wrong": {"sparse": True, "xr": {"n": N_OBS + 1}},
    "Xr-attributes-wrong": {"sparse": True, "xr": {"other": "col"}},
    "Xr-var-out-of-range": {"sparse": True, "xr": {"index_shift": N_VAR}},
    "Xr-dense": {"sparse": True, "xr": {"dense": True}},
    "Xc-shape-wrong": {"sparse": True, "xc": {"n": N_VAR + 1}},
    "Xc-attributes-wrong": {"sparse": True, "xc": {"other": "row"}},
    "Xc-obs-out-of-range": {"sparse": True, "xc": {"index_shift": N_OBS}},
    "Xc-float64": {"sparse": True, "xc": {"dtype": "float64"}},
    "X-col-shift-shape-wrong": {"sparse": True, "col_shift_n": N_VAR + 1},
    "X-col-shift-float64": {"sparse": True, "col_shift_dtype": "float64"},
    "X-col-shift-attribute-named": {"sparse": True, "col_shift_attr": "shift"},
    "valid-properties-null": {"group_meta": {"cxg_properties": json.dumps({"title": None, "about": None})}},
    "Xr-Xc-different-values": {"sparse": True, "xc": {"value_shift": 0.25}},
    "Xr-Xc-different-count": {"sparse": True, "xc": {"drop_last": True}},
    "obs-column-int64": {"obs_extra": {"n_genes": np.arange(N_OBS, dtype=np.int64)}},
    "obs-column-bool": {"obs_extra": {"is_doublet": np.array([True, False, False, True])}},
    "valid-boolean-column": {"obs_extra": {"is_doublet": np.array([1, 0, 0, 1], np.uint8)}, "obs_schema": BOOLEAN_SCHEMA},
    "obs-boolean-column-two": {"obs_extra": {"is_doublet": np.array([1, 0, 2, 1], np.uint8)}, "obs_schema": BOOLEAN_SCHEMA},
    "obs-boolean-column-int8": {"obs_extra": {"is_doublet": np.array([1, 0, 0, 1], np.int8)}, "obs_schema": BOOLEAN_SCHEMA},
    "obs-boolean-column-float32": {"obs_extra": {"is_doublet": np.array([1, 0, 0, 1], np.float32)}, "obs_schema": BOOLEAN_SCHEMA},
    "cxg-private-metadata-key": {"group_meta": {"cxg_private_build": "2024-01-01"}},
}


def root_is_array(path: Path) -> None:
    """A lone TileDB array where the CXG group should be."""
    if path.exists():
        shutil.rmtree(path)
    _dense(
        path,
        [_dim("obs", N_OBS), _dim("var", N_VAR)],
        [tiledb.Attr("", dtype=np.float32)],
        {"": np.zeros((N_OBS, N_VAR), "float32")},
    )


def main(names: list[str]) -> None:
    """Write every case, or only the cases named."""
    OUT.mkdir(exist_ok=True)
    if not names or "root-is-array" in names:
        root_is_array(OUT / "root-is-array.cxg")
    for name, kwargs in CASES.items():
        if names and name not in names:
            continue
        build(OUT / f"{name}.cxg", **kwargs)
        print(f"wrote {OUT.name}/{name}.cxg")


if __name__ == "__main__":
    main(sys.argv[1:])
