"""find_duplicates: elements equal to an earlier element of the array, with the index of that first occurrence.

For short lookup tables (factor levels): the partial keeps every distinct value seen with its first index, so
its size grows with the distinct values. Past `max_distinct` it stops tracking and says so (`overflow`), and
the primitive reports the array as not checked rather than guessing.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from spec_validate.kernels.block import Block
from spec_validate.kernels.registry import kernel


class Duplicate(NamedTuple):
    index: int
    value: Any
    first: int  # the index of the earlier equal element


class DuplicatesPartial(NamedTuple):
    seen: dict  # value -> index of its first occurrence (emptied on overflow)
    count: int  # elements equal to an earlier element
    found: tuple[Duplicate, ...]  # the first `limit` of them, in index order
    overflow: bool = False


def _key(value: Any) -> Any:
    # h5py reads variable-length strings as bytes or str depending on the call: compare them as text.
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def summarize(block: Block, limit: int = 5, max_distinct: int = 1_000_000) -> DuplicatesPartial:
    """The block's distinct values with their first index, and its elements equal to an earlier one."""
    if block.uniform:  # one value repeated: every element after the first equals it
        value = block.values[0]
        key = _key(value.item() if hasattr(value, "item") else value)
        n = block.size
        found = tuple(Duplicate(block.start + i, key, block.start) for i in range(1, min(n, limit + 1)))
        return DuplicatesPartial({key: block.start}, n - 1, found)
    seen: dict = {}
    found: list[Duplicate] = []
    count = 0
    for offset, value in enumerate(block.values.tolist()):
        key = _key(value)
        index = block.start + offset
        if key in seen:
            count += 1
            if len(found) < limit:
                found.append(Duplicate(index, key, seen[key]))
        else:
            seen[key] = index
            if len(seen) > max_distinct:
                return DuplicatesPartial({}, count, tuple(found), True)
    return DuplicatesPartial(seen, count, tuple(found))


@kernel("find_duplicates", summarize=summarize)
def combine(
    left: DuplicatesPartial, right: DuplicatesPartial, limit: int = 5, max_distinct: int = 1_000_000
) -> DuplicatesPartial:
    """Both spans as one: a value of the right span seen in the left one is a duplicate too."""
    if left.overflow or right.overflow:
        return DuplicatesPartial({}, left.count + right.count, (left.found + right.found)[:limit], True)
    seen = dict(left.seen)
    cross: list[Duplicate] = []
    for key, index in right.seen.items():
        if key in seen:
            cross.append(Duplicate(index, key, seen[key]))
        else:
            seen[key] = index
    # A right-span element equal to an earlier right-span one now points at the left span's first occurrence.
    inner = [Duplicate(d.index, d.value, seen[d.value]) for d in right.found]
    found = left.found + tuple(sorted(cross + inner, key=lambda d: d.index))
    if len(seen) > max_distinct:
        return DuplicatesPartial({}, left.count + right.count + len(cross), found[:limit], True)
    return DuplicatesPartial(seen, left.count + right.count + len(cross), found[:limit])
