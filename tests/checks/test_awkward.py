"""Awkward-array primitives: the buffers a form names are arrays of the group."""

from __future__ import annotations

import json

import numpy as np
import pytest
from memory_tree import findings, tree

from spec_validate.checks.awkward import form_buffers
from spec_validate.model import NotApplicable

# The form of the spec's example, cut to three nodes: a BitMaskedArray of strings.
FORM = {
    "class": "BitMaskedArray",
    "mask": "u8",
    "valid_when": True,
    "lsb_order": True,
    "form_key": "node1",
    "content": {
        "class": "ListOffsetArray",
        "offsets": "i64",
        "form_key": "node2",
        "content": {"class": "NumpyArray", "primitive": "uint8", "form_key": "node3"},
    },
}
BUFFERS = {"node1-mask": np.zeros(1, np.uint8), "node2-offsets": np.arange(3), "node3-data": np.zeros(4, np.uint8)}


def group(form=FORM, buffers=BUFFERS):
    attrs = {"encoding-type": "awkward-array", "encoding-version": "0.1.0", "length": 2}
    if form is not None:
        attrs["form"] = form if isinstance(form, str) else json.dumps(form)
    return tree({"awk": {"@attrs": attrs, **buffers}}).get("/awk")


def test_form_buffers_passes_names_each_buffer_in_depth_order():
    assert [b for _, b, _ in form_buffers(FORM)] == ["node1-mask", "node2-offsets", "node3-data"]


def test_awkward_buffers_present_passes_every_buffer_stored():
    assert findings("awkward_buffers_present", group(), {"key": "form"}) == []


@pytest.mark.parametrize("missing", sorted(BUFFERS))
def test_awkward_buffers_present_fails_missing_buffer(missing):
    (finding,) = findings(
        "awkward_buffers_present", group(buffers={k: v for k, v in BUFFERS.items() if k != missing}), {"key": "form"}
    )
    assert finding.path == f"/awk/{missing}" and missing in finding.message


def test_awkward_buffers_present_fails_record_contents_and_union_buffers():
    form = {
        "class": "RecordArray",
        "fields": ["a", "b"],
        "contents": [
            {"class": "NumpyArray", "primitive": "int64", "form_key": "n1"},
            {"class": "UnionArray", "tags": "i8", "index": "i64", "form_key": "n2", "contents": []},
        ],
    }
    got = findings("awkward_buffers_present", group(form, {"n1-data": np.arange(2)}), {"key": "form"})
    assert sorted(f.details["buffer"] for f in got) == ["n2-index", "n2-tags"]


@pytest.mark.parametrize(
    "form",
    [
        pytest.param({"class": "NumpyArray", "primitive": "int64"}, id="no-form-key"),
        pytest.param({"class": "TensorArray", "form_key": "n1"}, id="unknown-class"),
    ],
)
def test_awkward_buffers_present_fails_unreadable_form_node(form):
    (finding,) = findings("awkward_buffers_present", group(form, {}), {"key": "form"})
    assert finding.message.startswith("form ")


@pytest.mark.parametrize("form", [None, "not json", "[1, 2]"])
def test_awkward_buffers_present_is_not_applicable_without_a_form_object(form):
    with pytest.raises(NotApplicable):
        findings("awkward_buffers_present", group(form), {"key": "form"})


# Awkward 1 names: a RecordArray of a BitMaskedArray of strings and a ListArray64 (the index width in the class).
FORM_AWKWARD_1 = {
    "class": "RecordArray",
    "fields": ["tx", "starts"],
    "contents": [
        {
            "class": "BitMaskedArray",
            "mask": "u8",
            "form_key": "node1",
            "content": {
                "class": "ListOffsetArray",
                "offsets": "i64",
                "form_key": "node2",
                "content": {"class": "NumpyArray", "primitive": "uint8", "form_key": "node3"},
            },
        },
        {
            "class": "ListArray64",
            "starts": "i64",
            "stops": "i64",
            "form_key": "node4",
            "content": {"class": "NumpyArray", "primitive": "int64", "form_key": "node5"},
        },
    ],
    "form_key": "node0",
}
BUFFERS_AWKWARD_1 = ["node1-mask", "node2-offsets", "node3-data", "node4-starts", "node4-stops", "node5-data"]


def test_form_buffers_passes_awkward_1_width_suffixed_classes():
    assert sorted(b for _, b, problem in form_buffers(FORM_AWKWARD_1) if problem is None) == BUFFERS_AWKWARD_1


def test_form_buffers_passes_awkward_1_record_contents_keyed_by_field():
    form = {"class": "RecordArray", "contents": {"x": {"class": "NumpyArray", "primitive": "int64", "form_key": "n1"}}}
    assert [b for _, b, _ in form_buffers(form)] == ["n1-data"]


def test_awkward_buffers_present_fails_missing_and_two_dimensional_buffers():
    buffers = {name: np.zeros((2, 2) if name == "node4-stops" else 4) for name in BUFFERS_AWKWARD_1 if name != "node3-data"}
    got = findings("awkward_buffers_present", group(FORM_AWKWARD_1, buffers), {"key": "form"})
    assert sorted(f.path for f in got) == ["/awk/node3-data", "/awk/node4-stops"]
    assert "one-dimensional" in next(f.message for f in got if f.path == "/awk/node4-stops")
