"""Shape primitives: named dimensions, references to other nodes, sibling shapes, dataframe columns."""

from __future__ import annotations

import numpy as np
import pytest
from memory_tree import fails, findings, passes, tree

from spec_validate.model import NotApplicable


def anndata(n_obs=4, n_var=3, x_shape=None, col_len=None):
    return tree(
        {
            "obs": {
                "@attrs": {"encoding-type": "dataframe", "_index": "_index"},
                "_index": np.arange(n_obs),
                "c": np.arange(col_len or n_obs),
            },
            "var": {"@attrs": {"encoding-type": "dataframe", "_index": "_index"}, "_index": np.arange(n_var)},
            "X": np.zeros(x_shape or (n_obs, n_var)),
            "Y": np.zeros((n_obs, n_var)),
            "S": {"@attrs": {"encoding-type": "csr_matrix", "shape": [n_obs, n_var]}},
        }
    )


DIMS_EQUAL = [
    pytest.param(None, 0, id="n_obs-n_var"),
    pytest.param((4, 5), 1, id="wrong-n_var"),
    pytest.param((4,), 1, id="too-few-dims"),
]


@passes("x_shape,expected", DIMS_EQUAL)
def test_dims_equal_passes(x_shape, expected):
    assert findings("dims_equal", anndata(x_shape=x_shape).get("/X"), {"dims": ["n_obs", "n_var"]}) == []


@fails("x_shape,expected", DIMS_EQUAL)
def test_dims_equal_fails(x_shape, expected):
    assert len(findings("dims_equal", anndata(x_shape=x_shape).get("/X"), {"dims": ["n_obs", "n_var"]})) == expected


def test_dims_equal_fails_message_names_dimension():
    (f,) = findings("dims_equal", anndata(x_shape=(4, 5)).get("/X"), {"dims": ["n_obs", "n_var"]})
    assert f.message == "has shape (4, 5): dimension 1 is 5, expected n_var = 3"


def test_dims_equal_passes_sparse_group_logical_shape():
    assert findings("dims_equal", anndata().get("/S"), {"dims": ["n_obs", "n_var"]}) == []


def test_dims_equal_not_applicable_without_pack_dimension():
    with pytest.raises(NotApplicable):
        findings("dims_equal", anndata().get("/X"), {"dims": ["n_cells"]})


SHAPE_DIM_EQUALS = [
    pytest.param({"equals": 4}, 0, id="literal"),
    pytest.param({"axis": 1, "equals": {"node": "/var", "length": True}}, 0, id="reference"),
    pytest.param({"axis": 1, "equals": {"node": "/var", "length": True, "plus": 1}}, 1, id="plus-one"),
    pytest.param({"axis": 5, "equals": 1}, 1, id="no-such-axis"),
]


@passes("options,expected", SHAPE_DIM_EQUALS)
def test_shape_dim_equals_passes(options, expected):
    assert findings("shape_dim_equals", anndata().get("/X"), options) == []


@fails("options,expected", SHAPE_DIM_EQUALS)
def test_shape_dim_equals_fails(options, expected):
    assert len(findings("shape_dim_equals", anndata().get("/X"), options)) == expected


def test_shape_dim_equals_not_applicable_when_referent_missing():
    with pytest.raises(NotApplicable):
        findings("shape_dim_equals", anndata().get("/X"), {"equals": {"node": "../nowhere", "length": True}})


SAME_SHAPE = [pytest.param(None, 0, id="equal"), pytest.param((4, 2), 1, id="different")]


@passes("x_shape,expected", SAME_SHAPE)
def test_same_shape_passes(x_shape, expected):
    assert findings("same_shape", anndata(x_shape=x_shape).get("/X"), {"other": "../Y"}) == []


@fails("x_shape,expected", SAME_SHAPE)
def test_same_shape_fails(x_shape, expected):
    (f,) = findings("same_shape", anndata(x_shape=x_shape).get("/X"), {"other": "../Y"})
    assert f.message == "has shape (4, 2), but /Y has shape (4, 3)"


def test_same_shape_not_applicable_when_other_missing():
    with pytest.raises(NotApplicable):
        findings("same_shape", anndata().get("/X"), {"other": "../nope"})


CHILDREN_FIRST_DIM = [pytest.param(None, 0, id="equal-columns"), pytest.param(5, 1, id="long-column")]


@passes("col_len,expected", CHILDREN_FIRST_DIM)
def test_children_first_dim_equal_passes(col_len, expected):
    assert findings("children_first_dim_equal", anndata(col_len=col_len).get("/obs")) == []


@fails("col_len,expected", CHILDREN_FIRST_DIM)
def test_children_first_dim_equal_fails(col_len, expected):
    (f,) = findings("children_first_dim_equal", anndata(col_len=col_len).get("/obs"))
    assert f.path == "/obs/c" and f.details == {"length": 5, "expected": 4}


def test_dims_equal_exact_fails_a_third_dimension():
    from memory_tree import findings, scope, tree

    t = tree(
        {
            "obs": {"@attrs": {"_index": "i", "encoding-type": "dataframe"}, "i": np.arange(3)},
            "var": {"@attrs": {"_index": "i", "encoding-type": "dataframe"}, "i": np.arange(2)},
            "X": np.zeros((3, 2, 4)),
            "Y": np.zeros((3, 2)),
        }
    )
    (f,) = findings("dims_equal", t.get("/X"), {"dims": ["n_obs", "n_var"], "exact": True}, sc=scope(t))
    assert "expected exactly 2" in f.message
    assert findings("dims_equal", t.get("/X"), {"dims": ["n_obs", "n_var"]}, sc=scope(t)) == []
    assert findings("dims_equal", t.get("/Y"), {"dims": ["n_obs", "n_var"], "exact": True}, sc=scope(t)) == []


def _nullable(n: int) -> dict:
    values = np.array(["s"] * n, dtype=object)
    return {"@attrs": {"encoding-type": "nullable-string-array"}, "values": values, "mask": np.zeros(n, bool)}


def pandas3(x_shape=(4, 3), col_len=4):
    """anndata with pandas 3 (or allow_write_nullable_strings): the index and string columns are nullable-string-array
    groups; anndata.dataframe.index-array reports the index, and the shapes must still be checked."""
    from memory_tree import ANNDATA_SHAPES, scope

    t = tree(
        {
            "obs": {
                "@attrs": {"encoding-type": "dataframe", "_index": "_index"},
                "_index": _nullable(4),
                "c": _nullable(col_len),
            },
            "var": {"@attrs": {"encoding-type": "dataframe", "_index": "_index"}, "_index": _nullable(3)},
            "X": np.zeros(x_shape),
        }
    )
    return t, scope(t, shapes={**ANNDATA_SHAPES, "nullable-string-array": {"child": "values"}})


@pytest.mark.parametrize(("x_shape", "expected"), [((4, 3), 0), ((5, 3), 1)], ids=["n_obs-n_var", "wrong-n_obs"])
def test_dims_equal_checks_dataframes_whose_index_is_a_nullable_string_group(x_shape, expected):
    t, sc = pandas3(x_shape=x_shape)
    assert len(findings("dims_equal", t.get("/X"), {"dims": ["n_obs", "n_var"]}, sc=sc)) == expected


def test_children_first_dim_equal_fails_a_column_of_a_dataframe_whose_index_is_a_nullable_string_group():
    t, sc = pandas3(col_len=5)
    (f,) = findings("children_first_dim_equal", t.get("/obs"), sc=sc)
    assert f.path == "/obs/c" and f.details == {"length": 5, "expected": 4}


def test_dims_equal_not_applicable_when_the_index_group_nests_another_group():
    # One level of group elements at most: a group linked into itself would otherwise have no end.
    from memory_tree import ANNDATA_SHAPES, scope

    nested = {"@attrs": {"encoding-type": "nullable-string-array"}, "values": _nullable(4)}
    t = tree(
        {
            "obs": {"@attrs": {"encoding-type": "dataframe", "_index": "_index"}, "_index": nested},
            "var": {"@attrs": {"encoding-type": "dataframe", "_index": "_index"}, "_index": np.arange(3)},
            "X": np.zeros((4, 3)),
        }
    )
    sc = scope(t, shapes={**ANNDATA_SHAPES, "nullable-string-array": {"child": "values"}})
    with pytest.raises(NotApplicable, match="length of /obs is unknown"):
        findings("dims_equal", t.get("/X"), {"dims": ["n_obs", "n_var"]}, sc=sc)
