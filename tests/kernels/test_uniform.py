"""A uniform block (one value repeated, held once: rows where nothing is stored) summarises as the same values
materialised would, and without touching each element: one of any number of elements is summarised at once."""

from __future__ import annotations

import numpy as np
import pytest

from spec_validate.kernels import bounds, digest, duplicates, equal, json_text, monotonic, reference_objects, references
from spec_validate.kernels.block import Block
from spec_validate.nodes.base import uniform_block


def every(n: int) -> int:
    return n


def none(n: int) -> int:
    return 0


def after_the_first(n: int) -> int:
    return n - 1


REFERENCE = {"source": "other.zarr", "path": "/a"}
CASES = [  # kernel, params, dtype, value, (the field that counts, its value for n equal elements)
    pytest.param(bounds, {"low": 0, "high": 10}, np.dtype("<i8"), 3, ("count", none), id="bounds-inside"),
    pytest.param(bounds, {"low": 5, "high": 10}, np.dtype("<i8"), 3, ("count", every), id="bounds-below"),
    pytest.param(bounds, {"low": 0, "high": 1}, np.dtype("<f8"), np.nan, ("count", none), id="bounds-nan"),
    pytest.param(bounds, {"low": 5, "ignore": 3}, np.dtype("<i4"), 3, ("count", none), id="bounds-ignored"),
    pytest.param(monotonic, {}, np.dtype("<i4"), 7, ("count", none), id="monotonic"),
    pytest.param(equal, {"value": 0}, np.dtype("<f8"), 0.0, ("count", every), id="equal-fill-zero"),
    pytest.param(equal, {"value": 0}, np.dtype("<f8"), 1.5, ("count", none), id="equal-other"),
    pytest.param(json_text, {}, np.dtype(object), "{}", ("count", none), id="json-valid"),
    pytest.param(json_text, {}, np.dtype(object), "{", ("count", every), id="json-invalid"),
    pytest.param(references, {}, np.dtype(object), None, ("malformed", every), id="references-malformed"),
    pytest.param(references, {}, np.dtype(object), REFERENCE, ("foreign", every), id="references-foreign"),
    pytest.param(reference_objects, {}, np.dtype(object), REFERENCE, ("count", every), id="reference-objects"),
    pytest.param(reference_objects, {}, np.dtype(object), "x", ("count", none), id="reference-objects-none"),
    pytest.param(duplicates, {}, np.dtype("<i8"), 4, ("count", after_the_first), id="duplicates"),
    pytest.param(digest, {}, np.dtype("<f4"), 0.5, ("count", every), id="digest"),
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
@pytest.mark.parametrize("count", [2**56, 2**124], ids=["2**56", "2**124"])
def test_uniform_passes_the_largest_block_at_once(kernel, params, dtype, value, bad, count):
    """Touching each element would take the block's memory and time; 2**124 is more than any numpy view stands for
    (a declared 2**62 x 2**62 with nothing written is one such block)."""
    field, expected = bad
    got = kernel.summarize(uniform_block(0, value, dtype, count), **params)
    assert getattr(got, field) == expected(count)
