"""find_duplicates: the same repeats, first occurrences and count at every block size and grouping."""

from __future__ import annotations

import numpy as np
import pytest
from splitting import FOLDS, block_sizes, split

from spec_validate.kernels import duplicates


def reference(values: list, limit: int):
    first: dict = {}
    found = []
    for i, v in enumerate(values):
        if v in first:
            found.append((i, v, first[v]))
        else:
            first[v] = i
    return len(found), found[:limit]


CASES = [
    pytest.param(np.array(["a", "b", "c"], dtype=object), id="unique"),
    pytest.param(np.array(["a", "b", "a", "c", "b", "a"] * 4, dtype=object), id="repeats"),
    pytest.param(np.array([b"x", b"y", b"x"], dtype=object), id="bytes"),
    pytest.param(np.array([3, 1, 3, 3, 2, 1]), id="integers"),
]


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("size", block_sizes(24))
@pytest.mark.parametrize("a", CASES)
def test_find_duplicates_passes_same_as_a_plain_scan(a, size, fold):
    got = fold(duplicates, split(a, size), limit=3)
    count, found = reference([duplicates._key(v) for v in a.tolist()], 3)
    assert got.count == count
    assert [(d.index, d.value, d.first) for d in got.found] == found
    assert not got.overflow


def test_find_duplicates_fails_overflow_past_max_distinct():
    got = duplicates.summarize(split(np.arange(10), 10)[0], limit=3, max_distinct=5)
    assert got.overflow
