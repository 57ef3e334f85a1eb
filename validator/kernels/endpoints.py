"""first_last: the first and the last element of an array (reads only the edge blocks)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from validator.nodes.base import Block


@dataclass(frozen=True)
class Endpoints:
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
