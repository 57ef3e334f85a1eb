"""count_equal: the count and first positions of one value agree with numpy at every block size and grouping."""

from __future__ import annotations

import numpy as np
import pytest
from splitting import CHUNK, FOLDS, fold_left, split

from spec_validate.kernels import equal
from spec_validate.kernels.block import Block
from spec_validate.kernels.blocks import reduce_serial

SIZES = [
    pytest.param(1, id="size-1"),
    pytest.param(7, id="size-7"),
    pytest.param(CHUNK, id="chunk"),
    pytest.param(None, id="whole"),
]


def _cases():
    rng = np.random.default_rng(3)
    ints = rng.integers(0, 4, 90)
    floats = rng.normal(size=90)
    floats[[2, 30, 31, 88]] = 0.0
    floats[[5, 40]] = np.nan
    floats[50] = -0.0
    return [
        pytest.param(ints, 0, id="ints-zeros"),
        pytest.param(ints, 3, id="ints-threes"),
        pytest.param(np.arange(1, 41), 0, id="none-equal"),
        pytest.param(floats, 0, id="floats-with-nan-and-negative-zero"),
        pytest.param(np.zeros(33), 0, id="all-equal"),
    ]


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("a,value", _cases())
def test_count_equal_passes_same_answer_at_every_block_size_and_grouping(a, value, size, fold):
    got = fold(equal, split(a, size or a.size), value=value, limit=4)
    hits = np.flatnonzero(a == value)
    assert got.count == hits.size
    assert list(got.found) == [int(i) for i in hits[:4]]


def test_count_equal_passes_nan_equals_nothing():
    got = fold_left(equal, split(np.array([np.nan, 1.0, np.nan]), 1), value=0)
    assert got == equal.EqualPartial(0, ())


def test_count_equal_passes_with_empty_blocks_skipped():
    a = np.array([1, 0])
    got = reduce_serial(equal, [Block(0, a[:0]), Block(0, a[:1]), Block(1, a[1:1]), Block(1, a[1:])], value=0)
    assert got == equal.EqualPartial(1, (1,))
