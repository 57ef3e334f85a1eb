"""A uniform block (one value repeated, held once: rows where nothing is stored) summarises as the same values
materialised would, and without touching each element: one of 2**56 elements is summarised at once."""

from __future__ import annotations

import numpy as np
import pytest

from validator.kernels import bounds, json_text, monotonic, references
from validator.kernels.block import Block
from validator.nodes.base import MAX_UNIFORM_ELEMENTS, uniform_block

CASES = [  # kernel, params, dtype, value, (the field counting bad elements, whether every element is bad)
    pytest.param(bounds, {"low": 0, "high": 10}, np.dtype("<i8"), 3, ("count", False), id="bounds-inside"),
    pytest.param(bounds, {"low": 5, "high": 10}, np.dtype("<i8"), 3, ("count", True), id="bounds-below"),
    pytest.param(bounds, {"low": 0, "high": 1}, np.dtype("<f8"), np.nan, ("count", False), id="bounds-nan"),
    pytest.param(monotonic, {}, np.dtype("<i4"), 7, ("count", False), id="monotonic"),
    pytest.param(json_text, {}, np.dtype(object), "{}", ("count", False), id="json-valid"),
    pytest.param(json_text, {}, np.dtype(object), "{", ("count", True), id="json-invalid"),
    pytest.param(references, {}, np.dtype(object), None, ("malformed", True), id="references-malformed"),
    pytest.param(
        references, {}, np.dtype(object), {"source": "other.zarr", "path": "/a"}, ("foreign", True), id="references-foreign"
    ),
]


def materialised(start: int, value, dtype: np.dtype, count: int) -> Block:
    values = np.empty(count, dtype=dtype)
    values[:] = [value] * count if dtype.hasobject else value
    return Block(start, values)


@pytest.mark.parametrize("kernel,params,dtype,value,bad", CASES)
@pytest.mark.parametrize("count", [2, 30])
def test_uniform_passes_same_summary_as_the_values_materialised(kernel, params, dtype, value, bad, count):
    got = kernel.summarize(uniform_block(100, value, dtype, count), **params)
    want = kernel.summarize(materialised(100, value, dtype, count), **params)
    assert repr(got) == repr(want)  # repr: NaN compares unequal to itself


@pytest.mark.parametrize("kernel,params,dtype,value,bad", CASES)
def test_uniform_passes_the_largest_block_at_once(kernel, params, dtype, value, bad):
    """Touching each element would take 2**56 elements' memory and time."""
    field, every = bad
    got = kernel.summarize(uniform_block(0, value, dtype, MAX_UNIFORM_ELEMENTS), **params)
    assert getattr(got, field) == (MAX_UNIFORM_ELEMENTS if every else 0)
