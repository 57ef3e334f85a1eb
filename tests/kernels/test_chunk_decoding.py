"""chunk_problems: the chunk records of every block, counted exactly and kept first ones first."""

from __future__ import annotations

import numpy as np
import pytest
from splitting import FOLDS

from spec_validate.kernels import chunk_decoding
from spec_validate.kernels.block import Block, ChunkRead


def _blocks(per_block: int) -> list[Block]:
    reads = [ChunkRead(str(i), None if i % 3 else f"/x: chunk {i} does not decode") for i in range(30)]
    return [Block(i, np.zeros(1), tuple(reads[i : i + per_block])) for i in range(0, 30, per_block)]


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("per_block", [1, 4, 30])
def test_chunk_problems_passes_same_answer_at_every_block_size_and_grouping(per_block, fold):
    got = fold(chunk_decoding, _blocks(per_block), limit=4)
    assert (got.read, got.bad) == (30, 10)
    assert [p.key for p in got.found] == ["0", "3", "6", "9"]


def test_block_problem_passes_gives_the_first_bad_chunk():
    block = _blocks(30)[0]
    assert block.problem() == "/x: chunk 0 does not decode"
    assert Block(0, np.zeros(1), (ChunkRead("1"),)).problem() is None
