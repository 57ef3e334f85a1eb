"""distinct_values: the distinct values an array holds, up to a bound.

For arrays whose values name things listed elsewhere (the labels of a label image, which its metadata describes):
the partial keeps the distinct values seen, sorted, in one numpy array, so its size grows with the distinct values,
never with the elements. Past `max_distinct` it keeps the smallest `max_distinct` of them and says it stopped
(`overflow`): each value it keeps is held by the array all the same, but the set is no longer complete, and a
primitive must not judge what it would need the whole set for.

Keeping the smallest values is what makes the combine associative at the bound: the smallest k of a union are the
smallest k of the union of each part's smallest k, whatever the grouping.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from spec_validate.kernels.block import Block
from spec_validate.kernels.registry import kernel


class DistinctPartial(NamedTuple):
    values: np.ndarray  # the distinct values seen, sorted ascending; at most `max_distinct` of them
    overflow: bool = False  # more than `max_distinct` distinct values: `values` holds the smallest `max_distinct`

    def __eq__(self, other: object) -> bool:  # the values compared as a whole, not element by element
        return (
            isinstance(other, DistinctPartial)
            and self.overflow == other.overflow
            and np.array_equal(self.values, other.values, equal_nan=self.values.dtype.kind in "fc")
        )

    __hash__ = None  # type: ignore[assignment]  # it holds an array


def _bounded(values: np.ndarray, max_distinct: int, overflow: bool = False) -> DistinctPartial:
    if values.size > max_distinct:
        return DistinctPartial(values[:max_distinct], True)
    return DistinctPartial(values, overflow)


def summarize(block: Block, max_distinct: int = 100_000) -> DistinctPartial:
    """The block's distinct values (NaN, if any, once and last, as numpy sorts it)."""
    a = block.values
    if block.uniform:  # rows where nothing is stored: one value, however many elements it stands for
        return DistinctPartial(np.unique(a[:1]))
    return _bounded(np.unique(a), max_distinct)


@kernel("distinct_values", summarize=summarize)
def combine(left: DistinctPartial, right: DistinctPartial, max_distinct: int = 100_000) -> DistinctPartial:
    """Both spans as one: the union of their distinct values, bounded again."""
    return _bounded(np.union1d(left.values, right.values), max_distinct, left.overflow or right.overflow)
