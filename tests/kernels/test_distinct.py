"""distinct_values: the distinct values agree with numpy's at every block size and grouping, and past the bound the
smallest ones are kept and the overflow said, whatever the grouping."""

from __future__ import annotations

import numpy as np
import pytest
from splitting import CHUNK, FOLDS, split

from spec_validate.kernels import distinct
from spec_validate.kernels.block import Block
from spec_validate.kernels.registry import get

SIZES = [
    pytest.param(1, id="size-1"),
    pytest.param(7, id="size-7"),
    pytest.param(CHUNK, id="chunk"),
    pytest.param(None, id="whole"),
]


def _cases():
    rng = np.random.default_rng(5)
    return [
        pytest.param(rng.integers(0, 6, 90).astype("uint8"), id="few-labels"),
        pytest.param(rng.integers(-50, 50, 200).astype("int32"), id="many-labels"),
        pytest.param(np.zeros(40, dtype="uint16"), id="background-only"),
        pytest.param(np.arange(100, dtype="int64")[::-1].copy(), id="all-distinct"),
    ]


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("a", _cases())
def test_distinct_values_passes_same_answer_at_every_block_size_and_grouping(a, size, fold):
    got = fold(distinct, split(a, size or a.size))
    assert got.overflow is False
    assert got.values.tolist() == np.unique(a).tolist()


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("size", SIZES)
def test_distinct_values_passes_the_smallest_are_kept_past_the_bound(size, fold):
    a = np.random.default_rng(8).permutation(60).astype("int32")
    got = fold(distinct, split(a, size or a.size), max_distinct=10)
    assert got.overflow is True
    assert got.values.tolist() == list(range(10))


def test_distinct_values_passes_at_the_bound_exactly_without_overflow():
    got = distinct.summarize(Block(0, np.arange(10)), max_distinct=10)
    assert got.overflow is False and got.values.size == 10


def test_distinct_values_passes_a_uniform_block_is_one_value_without_touching_each_element():
    huge = np.broadcast_to(np.array([3], dtype="uint32"), (2**40,))
    got = distinct.summarize(Block(0, huge))
    assert got.values.tolist() == [3]
    assert got.overflow is False


def test_distinct_values_passes_it_is_registered():
    assert get("distinct_values").combine is distinct.combine
