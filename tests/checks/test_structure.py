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
def test_under_path(path, expected):
    from memory_tree import findings, scope, tree

    t = tree({"uns": {"x": np.float64(1.0), "a": {"b": np.float64(2.0)}}, "threshold": np.float64(0.5)})
    assert len(findings("under_path", t.get(path), {"path": "/uns"}, sc=scope(t))) == expected
