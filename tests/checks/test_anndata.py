"""AnnData primitives: the buffers an awkward array's form reads."""

from __future__ import annotations

import json

import numpy as np
import pytest
from memory_tree import findings, tree

from validator.checks.anndata import form_buffers
from validator.primitive_api import NotApplicable

FORM = {"class": "RecordArray", "fields": ["tx", "starts"], "contents": [
    {"class": "BitMaskedArray", "mask": "u8", "form_key": "node1", "content": {
        "class": "ListOffsetArray", "offsets": "i64", "form_key": "node2",
        "content": {"class": "NumpyArray", "primitive": "uint8", "form_key": "node3"}}},
    {"class": "ListArray64", "starts": "i64", "stops": "i64", "form_key": "node4",
     "content": {"class": "NumpyArray", "primitive": "int64", "form_key": "node5"}},
], "form_key": "node0"}
BUFFERS = ["node1-mask", "node2-offsets", "node3-data", "node4-starts", "node4-stops", "node5-data"]


def awkward(drop=(), two_d=()):
    children = {name: np.zeros((2, 2) if name in two_d else 4) for name in BUFFERS if name not in drop}
    return tree({"awk": {"@attrs": {"form": json.dumps(FORM), "length": 2}, **children}}).get("/awk")


def test_form_buffers_names_every_buffer_of_the_form():
    assert sorted(name for name, _ in form_buffers(FORM)) == BUFFERS


def test_awkward_buffers_present_passes_every_buffer():
    assert findings("awkward_buffers_present", awkward(), {"key": "form"}) == []


def test_awkward_buffers_present_fails_missing_and_two_dimensional_buffers():
    got = findings("awkward_buffers_present", awkward(drop=("node3-data",), two_d=("node4-stops",)), {"key": "form"})
    assert sorted(f.path for f in got) == ["/awk/node3-data", "/awk/node4-stops"]


def test_awkward_buffers_present_is_not_applicable_without_a_json_form():
    node = tree({"awk": {"@attrs": {"form": "ListOffsetArray(int64)"}}}).get("/awk")
    with pytest.raises(NotApplicable):
        findings("awkward_buffers_present", node, {"key": "form"})
