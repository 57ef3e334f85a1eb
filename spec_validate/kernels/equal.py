"""count_equal: elements equal to `value`, with how many there are and the first positions."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from spec_validate.kernels.block import Block
from spec_validate.kernels.registry import kernel


class EqualPartial(NamedTuple):
    count: int  # elements equal to `value`
    found: tuple[int, ...]  # the flat indexes of the first `limit` of them, in index order


def summarize(block: Block, value: Any = 0, limit: int = 5) -> EqualPartial:
    """The elements of one block equal to `value` (NaN equals nothing; -0.0 equals 0)."""
    a = block.values
    if block.uniform:
        # Rows where nothing is stored: one comparison stands for the whole block, whatever its size.
        if a[0] != value:
            return EqualPartial(0, ())
        n = block.size  # the elements it stands for, past what any view could hold
        return EqualPartial(n, tuple(block.start + i for i in range(min(n, limit))))
    hits = np.flatnonzero(a == value)
    return EqualPartial(int(hits.size), tuple(block.start + int(i) for i in hits[:limit]))


@kernel("count_equal", summarize=summarize)
def combine(left: EqualPartial, right: EqualPartial, value: Any = 0, limit: int = 5) -> EqualPartial:
    """Both spans as one; positions stay in index order because left precedes right."""
    return EqualPartial(left.count + right.count, (left.found + right.found)[:limit])
