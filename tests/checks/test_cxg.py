"""CXG primitives: TileDB domains, X_col_shift beside X, embeddings, cxg_version, cxg_schema index."""

from __future__ import annotations

import json

import numpy as np
import pytest
from memory_tree import Arr, fails, findings, passes, tree

from validator.nodes.base import Storage


def tdb(values, dims=(("d0", "<u4", 0),), sparse=False, attrs=None, meta=None):
    """A memory array carrying TileDB schema facts as the tiledb backend reports them."""
    values = np.asarray(values)
    extra = {"sparse": sparse,
             "dims": [{"name": n, "dtype": t, "domain": [lo, lo + values.shape[i] - 1], "tile": 1}
                      for i, (n, t, lo) in enumerate(dims)],
             "attrs": [{"name": a, "dtype": values.dtype.str} for a in (attrs or [""])]}
    return Arr(values, attrs=meta or {}, storage=Storage(format="tiledb", extra=extra))


TILEDB_DOMAIN = [
    pytest.param(tdb(np.zeros(3)), 0, id="uint32-zero-based"),
    pytest.param(tdb(np.zeros((3, 2)), dims=(("obs", "<u4", 0), ("var", "<u4", 0))), 0, id="two-uint32-dims"),
    pytest.param(tdb(np.zeros(3), dims=(("d0", "<u8", 0),)), 1, id="uint64"),
    pytest.param(tdb(np.zeros(3), dims=(("d0", "<i8", 0),)), 1, id="int64"),
    pytest.param(tdb(np.zeros(3), dims=(("d0", "<u4", 1),)), 1, id="starts-at-one"),
    pytest.param(Arr(np.zeros(3)), 0, id="not-tiledb"),
]


@passes("spec,expected", TILEDB_DOMAIN)
def test_tiledb_domain_passes(spec, expected):
    assert findings("tiledb_domain", tree({"a": spec}).get("/a"), {"dtype": "uint32", "zero_based": True}) == []


@fails("spec,expected", TILEDB_DOMAIN)
def test_tiledb_domain_fails(spec, expected):
    assert len(findings("tiledb_domain", tree({"a": spec}).get("/a"), {"dtype": "uint32", "zero_based": True})) == expected


ABSENT_UNLESS_SPARSE = [
    pytest.param({}, 0, id="no-X"),
    pytest.param({"X": tdb(np.zeros(3), sparse=True)}, 0, id="sparse-X"),
    pytest.param({"X": tdb(np.zeros(3))}, 1, id="dense-X"),
]


@pytest.mark.parametrize("siblings,expected", ABSENT_UNLESS_SPARSE)
def test_absent_unless_sparse(siblings, expected):
    t = tree({"X_col_shift": tdb(np.zeros(3)), **siblings})
    assert len(findings("absent_unless_sparse", t.get("/X_col_shift"), {"other": "../X"})) == expected


@pytest.mark.parametrize("children,expected", [
    pytest.param({"umap": np.zeros((3, 2))}, 0, id="one-embedding"),
    pytest.param({}, 1, id="empty"),
    pytest.param({"sub": {}}, 1, id="only-a-group"),
])
def test_array_children_at_least(children, expected):
    assert len(findings("array_children_at_least", tree({"emb": children}).get("/emb"), {"min": 1})) == expected


@pytest.mark.parametrize("shape,expected", [
    pytest.param((3, 2), 0, id="two-columns"), pytest.param((3, 5), 0, id="five-columns"),
    pytest.param((3, 1), 1, id="one-column"), pytest.param((3,), 1, id="one-dimensional"),
])
def test_shape_dim_at_least(shape, expected):
    node = tree({"e": np.zeros(shape)}).get("/e")
    assert len(findings("shape_dim_at_least", node, {"axis": 1, "min": 2})) == expected


@pytest.mark.parametrize("dtype,expected", [
    pytest.param("<f4", 0, id="float32"), pytest.param(">f4", 0, id="float32-big-endian"),
    pytest.param("<f8", 1, id="float64"), pytest.param("<i4", 1, id="int32"),
])
def test_dtype_equals(dtype, expected):
    node = tree({"X": np.zeros(2, dtype=dtype)}).get("/X")
    assert len(findings("dtype_equals", node, {"dtype": "float32"})) == expected


SEMVER = [
    pytest.param("0.3.0", 0, id="release"), pytest.param("1.0.0-rc.1+build.5", 0, id="pre-release-build"),
    pytest.param("0.1", 1, id="cxg-0.1-short-form"), pytest.param("v0.3.0", 1, id="v-prefix"),
    pytest.param("01.0.0", 1, id="leading-zero"),
]


@passes("value,expected", SEMVER)
def test_attr_semver_passes(value, expected):
    assert findings("attr_semver", tree({"m": Arr(np.zeros(1), attrs={"cxg_version": value})}).get("/m"), {"key": "cxg_version"}) == []


@fails("value,expected", SEMVER)
def test_attr_semver_fails(value, expected):
    assert len(findings("attr_semver", tree({"m": Arr(np.zeros(1), attrs={"cxg_version": value})}).get("/m"), {"key": "cxg_version"})) == expected


@pytest.mark.parametrize("value,message", [
    pytest.param("0.3.0", None, id="current"),
    pytest.param("0.2.0", "cxg_version 0.2.0: this pack checks 0.3.0", id="0.2.0"),
    pytest.param("0.1", "cxg_version 0.1: this pack checks 0.3.0", id="0.1"),
    pytest.param("v0.3.0", None, id="not-a-version-left-to-attr_semver"),
])
def test_cxg_version_is(value, message):
    node = tree({"m": Arr(np.zeros(1), attrs={"cxg_version": value})}).get("/m")
    found = findings("cxg_version_is", node, {"key": "cxg_version", "version": "0.3.0"})
    assert [f.message for f in found] == ([message] if message else [])


@pytest.mark.parametrize("schema,expected", [
    pytest.param({"index": "name_0"}, 0, id="names-attribute"),
    pytest.param({"index": "barcode"}, 1, id="unknown-attribute"),
    pytest.param({"name_0": {"type": "string"}}, 1, id="no-index"),
    pytest.param({"index": 3}, 1, id="index-not-string"),
    pytest.param("not json", 0, id="not-json-left-to-attr_json"),
])
def test_schema_index_names_attribute(schema, expected):
    meta = {"cxg_schema": schema if isinstance(schema, str) else json.dumps(schema)}
    node = tree({"obs": tdb(np.zeros(3), attrs=["name_0", "cell_type"], meta=meta)}).get("/obs")
    assert len(findings("schema_index_names_attribute", node, {"key": "cxg_schema"})) == expected
