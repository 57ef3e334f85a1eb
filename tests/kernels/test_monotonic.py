"""find_decreases: the same answer at every block size and grouping as a plain numpy scan."""

from __future__ import annotations

import numpy as np
import pytest
from splitting import CHUNK, FOLDS, fold_left, split

from spec_validate.kernels import monotonic
from spec_validate.kernels.block import Block
from spec_validate.kernels.blocks import reduce_pool, reduce_serial

SIZES = [
    pytest.param(1, id="size-1"),
    pytest.param(7, id="size-7"),
    pytest.param(CHUNK, id="chunk"),
    pytest.param(None, id="whole"),
]


def reference(a: np.ndarray, limit: int):
    bad = np.flatnonzero(a[1:] < a[:-1]) + 1
    return int(bad.size), [(int(i), a[i - 1].item(), a[i].item()) for i in bad[:limit]]


def _arrays():
    rng = np.random.default_rng(0)
    sorted_ = np.sort(rng.integers(0, 1000, 100))
    with_drops = sorted_.copy()
    with_drops[[7, 13, 14, 50, 99]] = [0, 1, 0, 3, 2]  # 13/14 straddle the 7- and 13-element block boundaries
    return [
        pytest.param(sorted_, id="non-decreasing"),
        pytest.param(with_drops, id="five-drops"),
        pytest.param(np.arange(60)[::-1].copy(), id="all-decreasing"),
        pytest.param(np.array([1.0, 2.0, 2.0, 1.5, 3.0, -1.0]), id="floats"),
        pytest.param(np.array([5]), id="single"),
    ]


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("a", _arrays())
def test_find_decreases_passes_same_answer_at_every_block_size_and_grouping(a, size, fold):
    limit = 3
    got = fold(monotonic, split(a, size or a.size), limit=limit)
    count, found = reference(a, limit)
    assert got.count == count
    assert [(d.index, d.previous, d.value) for d in got.found] == found
    assert (got.first, got.last, got.start) == (a[0].item(), a[-1].item(), 0)


@pytest.mark.parametrize("boundary", [pytest.param(7, id="at-7"), pytest.param(CHUNK, id="at-chunk")])
def test_find_decreases_fails_on_decrease_straddling_block_boundary(boundary):
    a = np.arange(30)
    a[boundary:] -= 5  # the only drop is between a[boundary-1] and a[boundary]
    got = fold_left(monotonic, split(a, boundary))
    assert got.count == 1
    assert got.found == (monotonic.Decrease(boundary, boundary - 1, boundary - 5),)


def test_find_decreases_passes_with_empty_blocks_skipped():
    a = np.array([1, 2, 0, 3])
    blocks = [Block(0, a[:2]), Block(2, a[2:2]), Block(2, a[2:]), Block(4, a[4:])]
    got = reduce_serial(monotonic, blocks, limit=5)
    assert got.count == 1 and got.found[0].index == 2


def test_find_decreases_passes_empty_array_gives_none():
    assert reduce_serial(monotonic, [Block(0, np.array([], dtype=int))]) is None


def test_find_decreases_passes_thread_pool_equals_serial():
    from concurrent.futures import ThreadPoolExecutor

    a = np.random.default_rng(1).integers(0, 50, 500)
    blocks = split(a, 7)
    with ThreadPoolExecutor(4) as pool:
        assert reduce_pool(monotonic, blocks, pool, limit=4) == reduce_serial(monotonic, blocks, limit=4)


def test_find_decreases_fails_counts_beyond_limit():
    a = np.array([3, 2, 1, 0, -1, -2, -3])
    got = fold_left(monotonic, split(a, 2), limit=2)
    assert got.count == 6 and [d.index for d in got.found] == [1, 2]
