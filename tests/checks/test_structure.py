"""Structure primitives: node kinds, children, dimensionality, dtype kinds."""

from __future__ import annotations

import numpy as np
import pytest
from memory_tree import fails, findings, passes, tree

T = {"g": {"a": np.arange(3), "m": np.zeros((2, 2)), "s": np.array(["x"]), "sub": {}}}


def at(path):
    return tree(T).get(path)


NODE_KIND = [
    pytest.param("/g", {"kind": "group"}, 0, id="group"),
    pytest.param("/g/a", {"kind": "array"}, 0, id="array"),
    pytest.param("/g/a", {"kind": "group"}, 1, id="array-not-group"),
    pytest.param("/g", {"kind": "array"}, 1, id="group-not-array"),
]


@passes("path,options,expected", NODE_KIND)
def test_node_kind_passes(path, options, expected):
    assert findings("node_kind", at(path), options) == []


@fails("path,options,expected", NODE_KIND)
def test_node_kind_fails(path, options, expected):
    assert len(findings("node_kind", at(path), options)) == expected


CHILD_PRESENT = [
    pytest.param({"names": ["a", "m"]}, 0, id="all-present"),
    pytest.param({"names": ["sub"], "kind": "group"}, 0, id="right-kind"),
    pytest.param({"names": ["a", "zz", "yy"]}, 2, id="one-finding-per-missing"),
    pytest.param({"names": ["sub"], "kind": "array"}, 1, id="wrong-kind"),
]


@passes("options,expected", CHILD_PRESENT)
def test_child_present_passes(options, expected):
    assert findings("child_present", at("/g"), options) == []


@fails("options,expected", CHILD_PRESENT)
def test_child_present_fails(options, expected):
    got = findings("child_present", at("/g"), options)
    assert len(got) == expected
    assert all(f.path.startswith("/g/") for f in got)


NDIM = [
    pytest.param("/g/a", 1, 0, id="1d"),
    pytest.param("/g/m", 2, 0, id="2d"),
    pytest.param("/g/m", 1, 1, id="2d-not-1d"),
]


@passes("path,equals,expected", NDIM)
def test_ndim_passes(path, equals, expected):
    assert findings("ndim", at(path), {"equals": equals}) == []


@fails("path,equals,expected", NDIM)
def test_ndim_fails(path, equals, expected):
    assert len(findings("ndim", at(path), {"equals": equals})) == expected


DTYPE_KIND = [
    pytest.param("/g/a", "iu", 0, id="integer"),
    pytest.param("/g/s", "OU", 0, id="unicode"),
    pytest.param("/g/m", "iu", 1, id="float-not-integer"),
]


@passes("path,kinds,expected", DTYPE_KIND)
def test_dtype_kind_passes(path, kinds, expected):
    assert findings("dtype_kind", at(path), {"kinds": kinds}) == []


@fails("path,kinds,expected", DTYPE_KIND)
def test_dtype_kind_fails(path, kinds, expected):
    (f,) = findings("dtype_kind", at(path), {"kinds": kinds})
    assert f.message == "has dtype <f8 (floating point), expected signed integer or unsigned integer"


def test_ndim_min_passes_and_fails():
    from memory_tree import findings, tree

    t = tree({"s": np.float64(1.0), "v": np.zeros(3)})
    assert findings("ndim", t.get("/v"), {"min": 1}) == []
    (f,) = findings("ndim", t.get("/s"), {"min": 1})
    assert "at least 1" in f.message


def test_children_are_fails_each_child_of_another_kind():
    from memory_tree import findings, tree

    t = tree({"core": {"2.7.0": {}, "namespace": np.array("x"), "nwb.base": np.array("y")}})
    got = findings("children_are", t.get("/core"), {"kind": "group"})
    assert sorted(f.path for f in got) == ["/core/namespace", "/core/nwb.base"]


@pytest.mark.parametrize(("path", "expected"), [("/uns/x", 0), ("/uns/a/b", 0), ("/threshold", 1), ("/uns", 1)])
def test_path_within_scalars_in_uns(path, expected):
    from memory_tree import findings, scope, tree

    t = tree({"uns": {"x": np.float64(1.0), "a": {"b": np.float64(2.0)}}, "threshold": np.float64(0.5)})
    assert len(findings("path_within", t.get(path), {"path": "/uns"}, sc=scope(t))) == expected


PATH_WITHIN = [
    pytest.param("/g/a", {"path": "/g"}, 0, id="below"),
    pytest.param("/g/sub", {"path": "g/"}, 0, id="below-path-without-slashes"),
    pytest.param("/g", {"path": "/g"}, 1, id="the-path-itself"),
    pytest.param("/g/a", {"path": "/gg"}, 1, id="a-sibling-with-a-longer-name"),
]


@passes("path,options,expected", PATH_WITHIN)
def test_path_within_passes(path, options, expected):
    assert findings("path_within", at(path), options) == []


@fails("path,options,expected", PATH_WITHIN)
def test_path_within_fails(path, options, expected):
    (finding,) = findings("path_within", at(path), options)
    assert finding.message.startswith("lies outside /g")


ITEMSIZE = [
    pytest.param(np.arange(3, dtype=np.int32), 4, 0, id="int32"),
    pytest.param(np.zeros(2, dtype=np.float32), 4, 0, id="float32"),
    pytest.param(np.zeros(2, dtype=np.uint8), 4, 0, id="uint8"),
    pytest.param(np.arange(3, dtype=np.int64), 4, 1, id="int64"),
    pytest.param(np.zeros(2, dtype=np.float64), 4, 1, id="float64"),
]


@passes("values,size,expected", ITEMSIZE)
def test_dtype_itemsize_at_most_passes(values, size, expected):
    assert findings("dtype_itemsize_at_most", tree({"x": values}).get("/x"), {"bytes": size}) == []


@fails("values,size,expected", ITEMSIZE)
def test_dtype_itemsize_at_most_fails(values, size, expected):
    (finding,) = findings("dtype_itemsize_at_most", tree({"x": values}).get("/x"), {"bytes": size})
    assert finding.message.endswith("expected at most 32-bit")


@pytest.mark.parametrize(
    ("values", "kinds", "expected"),
    [
        pytest.param(np.zeros(2, dtype=np.uint8), "b", 0, id="uint8"),
        pytest.param(np.array(["x"]), "b", 0, id="unicode"),
        pytest.param(np.array([True]), "b", 1, id="boolean"),
        pytest.param(np.zeros(2), "fc", 1, id="float-among-several"),
    ],
)
def test_dtype_kind_not(values, kinds, expected):
    got = findings("dtype_kind_not", tree({"x": values}).get("/x"), {"kinds": kinds})
    assert len(got) == expected
    assert all("expected one that is not" in f.message for f in got)


def test_node_kind_message_takes_the_right_article():
    found = findings("node_kind", at("/g"), {"kind": "array"})
    assert [f.message for f in found] == ["is a group, expected an array"]
