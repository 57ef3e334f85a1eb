"""first_last: the first and the last element of an array (reads only the edge blocks)."""

from __future__ import annotations

from typing import Any, NamedTuple

from validator.kernels.block import Block


class Endpoints(NamedTuple):
    first: Any
    last: Any
    last_index: int


def summarize(block: Block) -> Endpoints:
    """The block's first and last element."""
    a = block.values
    return Endpoints(a[0].item(), a[-1].item(), block.start + a.size - 1)


def combine(left: Endpoints, right: Endpoints) -> Endpoints:
    """First of the left span, last of the right one."""
    return Endpoints(left.first, right.last, right.last_index)
