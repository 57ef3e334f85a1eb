"""shard_index_problems: every kind of shard index problem counted exactly, the first ones kept, at every split."""

from __future__ import annotations

import numpy as np
import pytest
from splitting import FOLDS

from spec_validate.kernels import shard_index
from spec_validate.kernels.block import Block, ShardIndex

EMPTY = 2**64 - 1


def shard(key: str, pairs: list[tuple[int, int]] | None, size: int = 100, problem: str | None = None) -> ShardIndex:
    array = None if pairs is None else np.array(pairs, dtype=np.uint64).reshape(-1, 2)
    return ShardIndex(key, size, array, problem, 0, size - 36, (2, 2))


SHARDS = [
    shard("c/0", [(0, 10), (10, 10), (EMPTY, EMPTY), (20, 44)]),  # fine: the last chunk ends where the index starts
    shard("c/1", None, problem="its index fails its crc32c check"),  # decodes
    shard("c/2", [(0, 10), (60, 10), (EMPTY, 5), (5, EMPTY)]),  # ranges (60+10 > 64), empty-pairs twice
    shard("c/3", [(0, 10), (5, 10), (0, 3), (30, 0)]),  # no-overlap: chunks 1 and 2 overlap chunk 0
    shard("c/4", [(2**64 - 2, 5), (0, 64), (EMPTY, EMPTY), (EMPTY, EMPTY)]),  # ranges: offset near 2**64 (no overflow)
]


def blocks(per_block: int) -> list[Block]:
    return [Block(i, np.zeros(1), shards=tuple(SHARDS[i : i + per_block])) for i in range(0, len(SHARDS), per_block)]


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("per_block", [1, 2, 5])
def test_shard_index_problems_passes_same_answer_at_every_block_size_and_grouping(per_block, fold):
    got = fold(shard_index, blocks(per_block), limit=1)
    assert got.read == 5
    assert got.counts == {"decodes": 1, "ranges": 2, "empty-pairs": 2, "no-overlap": 2}
    assert [(p.check, p.key) for p in got.found] == [
        ("decodes", "c/1"),
        ("empty-pairs", "c/2"),
        ("ranges", "c/2"),
        ("no-overlap", "c/3"),
    ]


def test_shard_index_problems_passes_clean_shard():
    counts, found = shard_index.problems(SHARDS[0])
    assert counts == {} and found == []


def test_shard_index_problems_fails_naming_the_inner_chunk_by_grid_index():
    _, found = shard_index.problems(SHARDS[2])
    ranges = [p for p in found if p.check == "ranges"]
    assert ranges[0].inner == (0, 1) and "[60, 70)" in ranges[0].message
