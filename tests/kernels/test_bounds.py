"""count_outside: counts, min/max and the first offenders agree with numpy at every block size and grouping."""

from __future__ import annotations

import numpy as np
import pytest
from splitting import CHUNK, FOLDS, fold_left, split

from spec_validate.kernels import bounds
from spec_validate.kernels.block import Block
from spec_validate.kernels.blocks import reduce_serial

SIZES = [
    pytest.param(1, id="size-1"),
    pytest.param(7, id="size-7"),
    pytest.param(CHUNK, id="chunk"),
    pytest.param(None, id="whole"),
]


def reference(a, low, high, limit):
    outside = np.zeros(a.shape, bool)
    if low is not None:
        outside |= a < low
    if high is not None:
        outside |= a > high
    bad = np.flatnonzero(outside)
    numbers = a[~np.isnan(a)] if a.dtype.kind == "f" else a
    mn = numbers.min().item() if numbers.size else None
    mx = numbers.max().item() if numbers.size else None
    return int(bad.size), [(int(i), a[i].item()) for i in bad[:limit]], mn, mx


def _cases():
    rng = np.random.default_rng(2)
    ints = rng.integers(-20, 120, 90)
    floats = rng.normal(size=90)
    floats[[3, 20, 21, 89]] = np.nan
    return [
        pytest.param(ints, 0, 100, id="ints-both-bounds"),
        pytest.param(ints, 0, None, id="ints-low-only"),
        pytest.param(ints, None, 100, id="ints-high-only"),
        pytest.param(np.arange(40), 0, 39, id="all-inside"),
        pytest.param(floats, -1.0, 1.0, id="floats-with-nan"),
    ]


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("a,low,high", _cases())
def test_count_outside_passes_same_answer_at_every_block_size_and_grouping(a, low, high, size, fold):
    got = fold(bounds, split(a, size or a.size), low=low, high=high, limit=4)
    count, found, mn, mx = reference(a, low, high, 4)
    assert got.count == count
    assert [(o.index, o.value) for o in got.found] == found
    assert (got.minimum, got.maximum) == (mn, mx)


def test_count_outside_passes_nan_is_never_out_of_range():
    a = np.array([np.nan, 0.5, np.nan])
    got = fold_left(bounds, split(a, 1), low=0.0, high=1.0)
    assert got.count == 0 and got.found == ()
    assert (got.minimum, got.maximum) == (0.5, 0.5)


def test_count_outside_passes_all_nan_block_has_no_min_max():
    a = np.array([np.nan, np.nan, 2.0, 3.0])
    got = fold_left(bounds, split(a, 2), low=0, high=10)
    assert (got.minimum, got.maximum, got.count) == (2.0, 3.0, 0)


def test_count_outside_fails_offenders_across_blocks_in_index_order():
    a = np.array([0, 5, 0, 0, 9, 0, 7])
    got = fold_left(bounds, split(a, 3), low=0, high=4, limit=2)
    assert got.count == 3 and [(o.index, o.value) for o in got.found] == [(1, 5), (4, 9)]


def test_count_outside_passes_with_empty_blocks_skipped():
    a = np.array([1, 200])
    got = reduce_serial(bounds, [Block(0, a[:0]), Block(0, a[:1]), Block(1, a[1:1]), Block(1, a[1:])], low=0, high=100)
    assert got.count == 1 and got.found[0] == bounds.Offender(1, 200)


def test_count_outside_passes_ignored_value_never_counted():
    from spec_validate.kernels.block import Block

    a = np.array([1, -2147483648, 3, 9, -2147483648], dtype="i4")
    got = bounds.summarize(Block(0, a), low=1, high=3, limit=5, ignore=-2147483648)
    assert got.count == 1 and [(o.index, o.value) for o in got.found] == [(3, 9)]
    assert (got.minimum, got.maximum) == (1, 9)


def test_count_outside_passes_field_of_a_compound_block():
    from spec_validate.kernels.block import Block

    a = np.array([(0.5, 0), (1.5, 3), (2.5, 1)], dtype=[("mean", "f8"), ("flag", "i4")])
    got = bounds.summarize(Block(10, a), low=0, high=2, limit=5, field="flag")
    assert got.count == 1 and [(o.index, o.value) for o in got.found] == [(11, 3)]
