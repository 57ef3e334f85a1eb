"""h5Seurat primitives: R matrix dimensions, attributes naming entries elsewhere, string storage of string arrays."""

from __future__ import annotations

import numpy as np
import pytest
from memory_tree import Arr, fails, findings, passes, tree

from validator.engine.context import NotApplicable
from validator.nodes.base import Storage, StringStorage

VLEN = Storage("hdf5", StringStorage("variable", "utf-8", "variable-length utf-8 string"))
FIXED = Storage("hdf5", StringStorage("fixed", "ascii", "fixed[3] ascii string"))


def seurat(dense_shape=(5, 3), sparse_dims=(3, 5)):
    # A dense 3 x 5 (R order) matrix is stored as 5 x 3; a sparse one says dims [3, 5].
    return tree({
        "cell.names": np.array(["a", "b", "c", "d", "e"], dtype=object),
        "features": np.array(["f1", "f2", "f3"], dtype=object),
        "dense": np.zeros(dense_shape),
        "sparse": {"@attrs": {"dims": list(sparse_dims)}},
        "nodims": {},
        "assays": {"RNA": {}},
        "red": {"@attrs": {"active.assay": ["RNA"], "many": ["RNA", "ADT"], "single": "RNA"}},
    })


MATRIX_DIMS = [
    pytest.param("/dense", {"rows": 3, "cols": 5}, 0, id="dense-transposed"),
    pytest.param("/sparse", {"rows": {"node": "/features", "length": True}, "cols": {"node": "/cell.names", "length": True}}, 0, id="sparse-dims-refs"),
    pytest.param("/dense", {"other": "/sparse"}, 0, id="dense-like-sparse"),
    pytest.param("/dense", {"rows": 5}, 1, id="dense-stored-order-is-wrong"),
    pytest.param("/sparse", {"cols": 4}, 1, id="sparse-cols"),
    pytest.param("/dense", {"rows": 4, "cols": 4}, 2, id="both-wrong"),
]


@passes("path,options,expected", MATRIX_DIMS)
def test_matrix_dims_equal_passes(path, options, expected):
    t = seurat()
    assert findings("matrix_dims_equal", t.get(path), options) == []


@fails("path,options,expected", MATRIX_DIMS)
def test_matrix_dims_equal_fails(path, options, expected):
    t = seurat()
    assert len(findings("matrix_dims_equal", t.get(path), options)) == expected


def test_matrix_dims_equal_fails_other_with_different_dims():
    t = seurat(sparse_dims=(3, 4))
    (f,) = findings("matrix_dims_equal", t.get("/dense"), {"other": "/sparse"})
    assert "3 x 5" in f.message and "3 x 4" in f.message


def test_matrix_dims_equal_passes_not_applicable_without_dims():
    t = seurat()
    with pytest.raises(NotApplicable):
        findings("matrix_dims_equal", t.get("/nodims"), {"rows": 3})


ATTR_NAMES = [
    pytest.param("active.assay", 0, id="list-of-one"),
    pytest.param("single", 0, id="plain-string"),
    pytest.param("many", 1, id="one-missing-of-two"),
    pytest.param("absent", 0, id="absent-attribute"),
]


@passes("key,expected", ATTR_NAMES)
def test_attr_values_name_children_passes(key, expected):
    assert findings("attr_values_name_children", seurat().get("/red"), {"key": key, "of": "/assays"}) == []


@fails("key,expected", ATTR_NAMES)
def test_attr_values_name_children_fails(key, expected):
    (f,) = findings("attr_values_name_children", seurat().get("/red"), {"key": key, "of": "/assays"})
    assert "'ADT'" in f.message


def test_attr_values_name_children_passes_not_applicable_without_target():
    with pytest.raises(NotApplicable):
        findings("attr_values_name_children", seurat().get("/red"), {"key": "single", "of": "/nowhere"})


STRINGS = [
    pytest.param(Arr(np.array(["a"], dtype=object), storage=VLEN), 0, id="vlen-utf8"),
    pytest.param(Arr(np.array([b"abc"]), storage=FIXED), 1, id="fixed-ascii"),
]


@passes("arr,expected", STRINGS)
def test_strings_stored_as_passes(arr, expected):
    node = tree({"s": arr}).get("/s")
    assert findings("strings_stored_as", node, {"length": "variable", "charset": "utf-8"}) == []


@fails("arr,expected", STRINGS)
def test_strings_stored_as_fails(arr, expected):
    node = tree({"s": arr}).get("/s")
    assert len(findings("strings_stored_as", node, {"length": "variable", "charset": "utf-8"})) == expected


def test_strings_stored_as_passes_precondition_excludes_numbers():
    from validator.checks import registry

    assert registry.get("strings_stored_as").dtype_kinds == "OSU"


ATTR_STRINGS = [
    pytest.param("single", {"count": 1}, 0, id="scalar-is-one"),
    pytest.param("active.assay", {"count": 1}, 0, id="one-element-list"),
    pytest.param("many", {}, 0, id="one-or-more"),
    pytest.param("absent", {"count": 1}, 0, id="absent"),
    pytest.param("many", {"count": 1}, 1, id="two-for-one"),
    pytest.param("number", {}, 1, id="not-strings"),
]


@passes("key,options,expected", ATTR_STRINGS)
def test_attr_strings_passes(key, options, expected):
    node = tree({"g": {"@attrs": {"single": "x", "active.assay": ["RNA"], "many": ["a", "b"], "number": 3}}}).get("/g")
    assert findings("attr_strings", node, {"key": key, **options}) == []


@fails("key,options,expected", ATTR_STRINGS)
def test_attr_strings_fails(key, options, expected):
    node = tree({"g": {"@attrs": {"single": "x", "active.assay": ["RNA"], "many": ["a", "b"], "number": 3}}}).get("/g")
    assert len(findings("attr_strings", node, {"key": key, **options})) == expected
