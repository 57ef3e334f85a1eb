"""Array-value primitives, fed with facts computed by the engine over in-memory blocks."""

from __future__ import annotations

import numpy as np
import pytest
from memory_tree import Arr, fails, findings, passes, tree

from spec_validate.model import NotApplicable


def node(values, chunks=(3,), **siblings):
    return tree({"g": {"a": Arr(values, chunks=chunks), **siblings}}).get("/g/a")


NON_DECREASING = [
    pytest.param([0, 1, 1, 5, 9], 0, id="sorted-with-ties"),
    pytest.param([4], 0, id="single"),
    pytest.param([0, 1, 2, 1, 9], 1, id="one-drop"),
    pytest.param([0, 1, 2, 3, 1], 1, id="drop-across-chunk-boundary"),
    pytest.param([5, 4, 3, 2, 1, 0, -1, -2], 5, id="capped-at-max-examples"),
]


@passes("values,expected", NON_DECREASING)
def test_non_decreasing_passes(values, expected):
    assert findings("non_decreasing", node(np.array(values))) == []


@fails("values,expected", NON_DECREASING)
def test_non_decreasing_fails(values, expected):
    assert len(findings("non_decreasing", node(np.array(values)))) == expected


def test_non_decreasing_fails_finding_names_index_values_and_count():
    (f,) = findings("non_decreasing", node(np.array([0, 1, 2, 1, 9])))
    assert f.index == (3,)
    assert f.details == {"previous": 2, "value": 1, "count": 1}


def test_non_decreasing_fails_index_unravelled_for_2d():
    got = findings("non_decreasing", node(np.array([[0, 1], [2, 0]]), chunks=(1, 2)))
    assert [f.index for f in got] == [(1, 1)]


def test_non_decreasing_fails_max_examples_option():
    got = findings("non_decreasing", node(np.arange(10)[::-1].copy()), {"max_examples": 2})
    assert [f.index for f in got] == [(1,), (2,)] and got[0].details["count"] == 9


FIRST_VALUE = [pytest.param({"equals": 0}, 0, id="zero"), pytest.param({"equals": 1}, 1, id="not-one")]


@passes("options,expected", FIRST_VALUE)
def test_first_value_equals_passes(options, expected):
    assert findings("first_value_equals", node(np.arange(7)), options) == []


@fails("options,expected", FIRST_VALUE)
def test_first_value_equals_fails(options, expected):
    (f,) = findings("first_value_equals", node(np.arange(7)), options)
    assert f.index == (0,) and f.message == "first element is 0, expected 1"


LAST_VALUE = [
    pytest.param({"equals": 6}, 0, id="literal"),
    pytest.param({"equals": {"node": "../b", "length": True}}, 0, id="sibling-length"),
    pytest.param({"equals": {"node": "../b", "length": True, "plus": 1}}, 1, id="off-by-one"),
]


@passes("options,expected", LAST_VALUE)
def test_last_value_equals_passes(options, expected):
    assert findings("last_value_equals", node(np.arange(7), b=np.zeros(6)), options) == []


@fails("options,expected", LAST_VALUE)
def test_last_value_equals_fails(options, expected):
    (f,) = findings("last_value_equals", node(np.arange(7), b=np.zeros(6)), options)
    assert f.index == (6,) and f.details == {"value": 6, "expected": 7}


def test_last_value_equals_fails_on_empty_array():
    (f,) = findings("last_value_equals", node(np.array([], dtype=int)), {"equals": 0})
    assert "empty" in f.message


def test_last_value_equals_not_applicable_when_referent_missing():
    with pytest.raises(NotApplicable):
        findings("last_value_equals", node(np.arange(3)), {"equals": {"node": "../missing", "length": True}})


@pytest.mark.parametrize(
    ("primitive", "options"),
    [
        pytest.param("non_decreasing", {}, id="non_decreasing"),
        pytest.param("first_value_equals", {"equals": 0}, id="first_value_equals"),
        pytest.param("last_value_equals", {"equals": 0}, id="last_value_equals"),
    ],
)
def test_order_primitives_not_applicable_on_a_0d_array(primitive, options):
    # A 0-d array has no axis: neither an order of its elements nor a first or last one.
    with pytest.raises(NotApplicable, match="is 0-d"):
        findings(primitive, tree({"a": np.array(3)}).get("/a"), options)


VALUES_IN_RANGE = [
    pytest.param(np.arange(10), {"min": 0, "max": 9}, 0, id="inside"),
    pytest.param(np.array([np.nan, 0.5]), {"min": 0, "max": 1}, 0, id="nan-ignored"),
    pytest.param(np.arange(10), {"min": 0, "max": {"node": "../b", "length": True}}, 2, id="beyond-sibling-length"),
    pytest.param(np.array([-1, 0, 1]), {"min": 0}, 1, id="below-open-max"),
]


@passes("values,options,expected", VALUES_IN_RANGE)
def test_values_in_range_passes(values, options, expected):
    assert findings("values_in_range", node(values, b=np.zeros(7)), options) == []


@fails("values,options,expected", VALUES_IN_RANGE)
def test_values_in_range_fails(values, options, expected):
    got = findings("values_in_range", node(values, b=np.zeros(7)), options)
    assert len(got) == expected
    assert all(f.details["count"] == expected for f in got)


def test_values_in_range_passes_the_missing_marker():
    t = tree({"v": np.array([1, -2147483648, 2], dtype="i4")})
    assert findings("values_in_range", t.get("/v"), {"min": 1, "max": 2, "missing": -2147483648}) == []
    assert len(findings("values_in_range", t.get("/v"), {"min": 1, "max": 2})) == 1


def test_values_unique_fails_each_repeat_naming_its_first_occurrence():
    t = tree({"levels": np.array(["a", "b", "a", "c", "b"], dtype=object)})
    got = findings("values_unique", t.get("/levels"))
    assert [(f.index, f.details["first"]) for f in got] == [((2,), 0), ((4,), 1)]
    assert findings("values_unique", tree({"v": np.array(["a", "b"], dtype=object)}).get("/v")) == []


VALUES_NONZERO = [
    pytest.param(np.array([1.5, -2.0, 3.0, np.nan]), 0, id="nonzero-and-nan"),
    pytest.param(np.array([1.0, 0.0, 2.0, 0.0, 0.0]), 3, id="explicit-zeros"),
    pytest.param(np.zeros(7), 7, id="all-zero"),
]


@passes("values,expected", VALUES_NONZERO)
def test_values_nonzero_passes(values, expected):
    assert findings("values_nonzero", node(values)) == []


@fails("values,expected", VALUES_NONZERO)
def test_values_nonzero_fails(values, expected):
    (f,) = findings("values_nonzero", node(values))
    assert f.details["count"] == expected
    assert f.index == (f.details["first"],) == (int(np.flatnonzero(values == 0)[0]),)


def test_values_nonzero_fails_naming_the_first_positions_up_to_max_examples():
    (f,) = findings("values_nonzero", node(np.array([0, 1, 0, 0, 2, 0])), {"max_examples": 2})
    assert f.details == {"count": 4, "first": 0, "indexes": [0, 2]}
    assert "4 zero(s) among its 6 elements, the first at index 0" in f.message
