"""reference_objects: elements of an object array that are, or hold, hdmf-zarr reference objects.

A reference object is a dict with a "source" and a "path" (hdmf-zarr's ZarrReference); an element holds one when
it is one, or when it is a row (a list, or an object keyed by field name) with one among its values. The kernel
counts every such element and keeps the first `limit` of them, in index order: a dataset whose zarr_dtype marks
no references is read element by element, and each of these is a reference no reader resolves.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from spec_validate.excerpt import json_excerpt
from spec_validate.kernels.block import Block
from spec_validate.kernels.registry import kernel


class Holder(NamedTuple):
    index: int
    text: str  # the element, shortened, for a message


class ReferenceObjectsPartial(NamedTuple):
    count: int  # elements holding a reference object: every one counted
    found: tuple[Holder, ...]  # the first `limit` of them, in index order


def is_reference(value: Any) -> bool:
    """A reference object as hdmf-zarr writes one (ZarrReference): a dict with a source and a path."""
    return isinstance(value, dict) and "source" in value and "path" in value


def holds_reference(value: Any) -> bool:
    """The element is a reference object, or a row with one among its values."""
    if is_reference(value):
        return True
    row = list(value.values()) if isinstance(value, dict) else value
    return isinstance(row, (list, tuple)) and any(is_reference(v) for v in row)


def summarize(block: Block, limit: int = 20) -> ReferenceObjectsPartial:
    """The elements of one block that hold a reference object."""
    if block.uniform:  # one value repeated: judged once, counted for each
        one = summarize(Block(block.start, block.values[:1]), limit)
        n = block.size
        if not one.count:
            return one
        return ReferenceObjectsPartial(n, tuple(one.found[0]._replace(index=block.start + i) for i in range(min(n, limit))))
    count = 0
    found: list[Holder] = []
    for offset, value in enumerate(block.values.reshape(-1)):
        value = value.item() if isinstance(value, np.generic) else value
        if holds_reference(value):
            count += 1
            if len(found) < limit:
                found.append(Holder(block.start + offset, json_excerpt(value)))
    return ReferenceObjectsPartial(count, tuple(found))


@kernel("reference_objects", summarize=summarize)
def combine(left: ReferenceObjectsPartial, right: ReferenceObjectsPartial, limit: int = 20) -> ReferenceObjectsPartial:
    """Both spans as one; the left span's elements come first."""
    return ReferenceObjectsPartial(left.count + right.count, (left.found + right.found)[:limit])
