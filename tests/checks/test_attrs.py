"""Attribute primitives on in-memory nodes."""

from __future__ import annotations

import numpy as np
import pytest
from memory_tree import fails, findings, passes, tree

from spec_validate.model import NotApplicable

G = {
    "@attrs": {
        "encoding-type": "dataframe",
        "encoding-version": "0.2.0",
        "ordered": True,
        "n": 3,
        "x": 1.5,
        "names": ["a", "b"],
        "ints": [1, 2, 3],
        "json_obj": '{"a": 1}',
        "json_list": "[1]",
        "not_json": "{oops",
        "_index": "idx",
        "column-order": ["a", "b"],
        "bad_version": "not.a.version!",
        "pre_version": "0.2.0rc1",
        "padded_version": "0.2.0.",
    },
    "idx": [1, 2],
    "a": [1, 2],
    "b": {"@attrs": {}},
}


def node():
    return tree(G).root


CASES = [
    # (primitive, options, expected number of findings)
    pytest.param("attr_present", {"key": "ordered"}, 0, id="attr_present-passes-present"),
    pytest.param("attr_present", {"key": "missing"}, 1, id="attr_present-fails-absent"),
    pytest.param("attr_type", {"key": "ordered", "type": "boolean"}, 0, id="attr_type-passes-boolean"),
    pytest.param("attr_type", {"key": "n", "type": "boolean"}, 1, id="attr_type-fails-integer-not-boolean"),
    pytest.param("attr_type", {"key": "ordered", "type": "integer"}, 1, id="attr_type-fails-bool-is-not-integer"),
    pytest.param("attr_type", {"key": "n", "type": "number"}, 0, id="attr_type-passes-integer-is-number"),
    pytest.param(
        "attr_type", {"key": "names", "type": "string-array", "length": 2}, 0, id="attr_type-passes-string-array-length"
    ),
    pytest.param("attr_type", {"key": "names", "type": "string-array", "length": 3}, 1, id="attr_type-fails-wrong-length"),
    pytest.param("attr_type", {"key": "ints", "type": "integer-array", "minimum": 2}, 1, id="attr_type-fails-below-minimum"),
    pytest.param("attr_type", {"key": "ints", "type": "string-array"}, 1, id="attr_type-fails-int-array-not-strings"),
    pytest.param("attr_equals", {"key": "encoding-type", "value": "dataframe"}, 0, id="attr_equals-passes-equal"),
    pytest.param("attr_equals", {"key": "encoding-type", "value": "array"}, 1, id="attr_equals-fails-different"),
    pytest.param("attr_equals", {"key": "ordered", "value": 1}, 1, id="attr_equals-fails-true-is-not-1"),
    pytest.param("attr_equals", {"key": "missing", "value": 1}, 1, id="attr_equals-fails-absent"),
    pytest.param("attr_one_of", {"key": "encoding-type", "values": ["array", "dataframe"]}, 0, id="attr_one_of-passes-listed"),
    pytest.param("attr_one_of", {"key": "encoding-type", "values": ["array"]}, 1, id="attr_one_of-fails-unlisted"),
    pytest.param("attr_one_of", {"key": "missing", "values": ["array"]}, 1, id="attr_one_of-fails-absent"),
    pytest.param("attr_version", {"key": "encoding-version"}, 0, id="attr_version-passes-version"),
    pytest.param("attr_version", {"key": "bad_version"}, 1, id="attr_version-fails-not-a-version"),
    pytest.param("attr_version", {"key": "pre_version"}, 0, id="attr_version-passes-pre-release-through-packaging"),
    pytest.param("attr_version", {"key": "padded_version"}, 1, id="attr_version-fails-trailing-dot"),
    pytest.param("attr_json", {"key": "json_obj"}, 0, id="attr_json-passes-object"),
    pytest.param("attr_json", {"key": "json_list"}, 1, id="attr_json-fails-array-not-object"),
    pytest.param("attr_json", {"key": "json_list", "type": "array"}, 0, id="attr_json-passes-array-when-asked"),
    pytest.param("attr_json", {"key": "not_json"}, 1, id="attr_json-fails-not-json"),
    pytest.param("attr_names_child", {"key": "_index"}, 0, id="attr_names_child-passes-child-exists"),
    pytest.param("attr_names_child", {"key": "_index", "kind": "group"}, 1, id="attr_names_child-fails-wrong-kind"),
    pytest.param("attr_names_child", {"key": "encoding-type"}, 1, id="attr_names_child-fails-no-such-child"),
    pytest.param(
        "attr_lists_children",
        {"key": "column-order", "except_named_by": ["_index"]},
        0,
        id="attr_lists_children-passes-all-listed",
    ),
    pytest.param("attr_lists_children", {"key": "column-order"}, 1, id="attr_lists_children-fails-index-unlisted"),
    pytest.param(
        "attr_lists_children", {"key": "names", "except_named_by": ["_index"]}, 0, id="attr_lists_children-passes-same-names"
    ),
]


# Where the attribute a primitive judges is absent or of no usable type, the clause is not applicable (its
# presence and type are attr_present's and attr_type's to report): never a silent pass.
NOT_APPLICABLE = [
    pytest.param(
        "attr_type", {"key": "missing", "type": "string"}, "no attribute 'missing'", id="attr_type-absent-left-to-attr_present"
    ),
    pytest.param("attr_version", {"key": "missing"}, "no string attribute 'missing'", id="attr_version-absent"),
    pytest.param("attr_version", {"key": "n"}, "no string attribute 'n'", id="attr_version-non-string-left-to-attr_type"),
    pytest.param("attr_json", {"key": "missing"}, "no string attribute 'missing'", id="attr_json-absent"),
    pytest.param("attr_json", {"key": "names"}, "no string attribute 'names'", id="attr_json-non-string"),
    pytest.param("attr_names_child", {"key": "missing"}, "no string attribute 'missing'", id="attr_names_child-absent"),
    pytest.param("attr_names_child", {"key": "n"}, "no string attribute 'n'", id="attr_names_child-non-string"),
    pytest.param(
        "attr_lists_children", {"key": "missing"}, "no string-array attribute 'missing'", id="attr_lists_children-absent"
    ),
    pytest.param(
        "attr_lists_children", {"key": "ints"}, "no string-array attribute 'ints'", id="attr_lists_children-not-string-array"
    ),
    pytest.param(
        "attr_lists_children",
        {"key": "column-order", "except_named_by": ["_index", "missing"]},
        "no string attribute 'missing'",
        id="attr_lists_children-except_named_by-absent",
    ),
]


@pytest.mark.parametrize(("primitive", "options", "reason"), NOT_APPLICABLE)
def test_attr_primitive_is_not_applicable(primitive, options, reason):
    with pytest.raises(NotApplicable, match=reason):
        findings(primitive, node(), options)


@passes("primitive,options,expected", CASES)
def test_attr_primitive_passes(primitive, options, expected):
    got = findings(primitive, node(), options)
    assert got == [], [f.message for f in got]


@fails("primitive,options,expected", CASES)
def test_attr_primitive_fails(primitive, options, expected):
    got = findings(primitive, node(), options)
    assert len(got) == expected, [f.message for f in got]


def test_attr_lists_children_fails_missing_unlisted_and_repeated():
    t = tree({"@attrs": {"order": ["a", "a", "ghost"]}, "a": [1], "b": [2]})
    messages = [f.message for f in findings("attr_lists_children", t.root, {"key": "order"})]
    assert len(messages) == 3
    assert "ghost" in messages[0] and "'b'" in messages[1] and "more than once" in messages[2]


def test_attr_type_fails_message_names_key_type_and_expected():
    (f,) = findings("attr_type", node(), {"key": "n", "type": "string"})
    assert f.message == "attribute 'n' is integer 3, expected string"
    assert f.details == {"key": "n", "value": 3}


def test_attr_lists_children_fails_listing_the_index():
    from memory_tree import findings, tree

    t = tree({"df": {"@attrs": {"_index": "ids", "column-order": ["a", "ids"]}, "ids": np.arange(2), "a": np.arange(2)}})
    (f,) = findings("attr_lists_children", t.get("/df"), {"key": "column-order", "except_named_by": ["_index"]})
    assert "'ids'" in f.message and f.details == {"listed": "ids", "named_by": "_index"}


def test_attr_lists_children_is_not_applicable_with_a_one_element_array_index():
    from memory_tree import findings, tree

    t = tree({"df": {"@attrs": {"_index": ["ids"], "column-order": ["a"]}, "ids": np.arange(2), "a": np.arange(2)}})
    with pytest.raises(NotApplicable):
        findings("attr_lists_children", t.get("/df"), {"key": "column-order", "except_named_by": ["_index"]})


def test_attr_names_child_fails_naming_the_kind_and_encoding_of_what_stands_there():
    # anndata >= 0.11 (nullable strings; 0.13's default under pandas 3) writes a dataframe's index as a
    # nullable-string-array group: the finding carries what the writer note on anndata.dataframe.index-array explains.
    index = {"@attrs": {"encoding-type": "nullable-string-array", "encoding-version": "0.1.0"}, "values": [1], "mask": [0]}
    t = tree({"df": {"@attrs": {"_index": "_index"}, "_index": index}})
    (f,) = findings("attr_names_child", t.get("/df"), {"key": "_index", "kind": "array"})
    assert f.message == "'_index' names '_index', which is a group (encoding-type 'nullable-string-array'), not an array"
    assert f.details == {"child": "_index", "kind": "group", "encoding-type": "nullable-string-array"}


def test_attr_names_child_fails_without_encoding_type_leaves_it_out():
    t = tree({"df": {"@attrs": {"_index": "ids"}, "ids": {}}})
    (f,) = findings("attr_names_child", t.get("/df"), {"key": "_index", "kind": "array"})
    assert f.details == {"child": "ids", "kind": "group"}
