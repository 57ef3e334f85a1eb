"""Running kernels over blocks: empty blocks skipped; serial, pool and fold give the same answer."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from splitting import split

from spec_validate.kernels.block import Block
from spec_validate.kernels.blocks import fold, non_empty, reduce_pool, reduce_serial
from spec_validate.kernels.registry import all_kernels, get

PARAMS = {
    "find_decreases": {"limit": 3},
    "count_outside": {"low": 10, "high": 80, "limit": 3},
    "count_equal": {"value": 7, "limit": 3},
    "first_last": {},
    "chunk_problems": {"limit": 3},
    "pickle_calls": {"limit": 3},
    "invalid_json": {"limit": 3},
    "reference_elements": {"limit": 3, "max_targets": 5},
    "cell_digest": {"fields": ()},
    "find_duplicates": {"limit": 3},
    "reference_objects": {"limit": 3},
    "shard_index_problems": {"limit": 3},
    "distinct_values": {"max_distinct": 50},
}


def test_non_empty_passes_skips_empty_blocks():
    blocks = [Block(0, np.array([])), Block(0, np.array([1])), Block(1, np.array([]))]
    assert [b.start for b in non_empty(blocks)] == [0]


def test_fold_passes_nothing_gives_none():
    assert fold(get("first_last"), []) is None


@pytest.mark.parametrize("name", sorted(all_kernels()))
def test_reduce_pool_passes_equals_serial(name):
    kernel, params = get(name), PARAMS[name]
    a = np.random.default_rng(3).integers(0, 100, 333)
    blocks = split(a, 10) + [Block(333, a[333:])]
    with ThreadPoolExecutor(4) as pool:
        assert reduce_pool(kernel, blocks, pool, **params) == reduce_serial(kernel, blocks, **params)
