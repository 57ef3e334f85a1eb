"""find_decreases: positions where an array steps down, as map (per block) + associative combine."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from spec_validate.kernels.block import Block
from spec_validate.kernels.registry import kernel


class Decrease(NamedTuple):
    index: int  # flat index of the element that is smaller than the one before it
    previous: Any
    value: Any


class MonotonicPartial(NamedTuple):
    start: int
    first: Any
    last: Any
    count: int  # every decrease in the span, not only the ones kept
    found: tuple[Decrease, ...]  # the first `limit` decreases, in index order


def summarize(block: Block, limit: int = 5) -> MonotonicPartial:
    """Decreasing positions inside one block, and its first/last values for the boundary check."""
    a = block.values
    if block.uniform:  # one value repeated never steps down
        return MonotonicPartial(block.start, a[0].item(), a[0].item(), 0, ())
    steps_down = a[1:] < a[:-1]
    bad = np.flatnonzero(steps_down)
    found = tuple(Decrease(block.start + int(i) + 1, a[i].item(), a[i + 1].item()) for i in bad[:limit])
    return MonotonicPartial(block.start, a[0].item(), a[-1].item(), int(bad.size), found)


@kernel("find_decreases", summarize=summarize)
def combine(left: MonotonicPartial, right: MonotonicPartial, limit: int = 5) -> MonotonicPartial:
    """The two spans as one: a decrease may straddle the boundary."""
    edge = (Decrease(right.start, left.last, right.first),) if right.first < left.last else ()
    found = (left.found + edge + right.found)[:limit]
    return MonotonicPartial(left.start, left.first, right.last, left.count + len(edge) + right.count, found)
