"""first_last: the first and last element whatever the block size or grouping."""

from __future__ import annotations

import numpy as np
import pytest
from splitting import CHUNK, FOLDS, split

from spec_validate.kernels import endpoints
from spec_validate.kernels.block import Block
from spec_validate.kernels.blocks import reduce_serial

SIZES = [
    pytest.param(1, id="size-1"),
    pytest.param(7, id="size-7"),
    pytest.param(CHUNK, id="chunk"),
    pytest.param(None, id="whole"),
]


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(
    "a",
    [
        pytest.param(np.arange(3, 50), id="ints"),
        pytest.param(np.array([2.5]), id="single"),
        pytest.param(np.linspace(0, 1, 29), id="floats"),
    ],
)
def test_first_last_passes_same_answer_at_every_block_size_and_grouping(a, size, fold):
    got = fold(endpoints, split(a, size or a.size))
    assert got == endpoints.Endpoints(a[0].item(), a[-1].item(), a.size - 1)


def test_first_last_passes_with_empty_blocks_skipped():
    a = np.array([4, 5, 6])
    got = reduce_serial(endpoints, [Block(0, a[:0]), Block(0, a[:2]), Block(2, a[2:]), Block(3, a[3:])])
    assert got == endpoints.Endpoints(4, 6, 2)


def test_first_last_passes_empty_array_gives_none():
    assert reduce_serial(endpoints, []) is None
