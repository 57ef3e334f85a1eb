"""first_last: the first and the last element of an array (reads only the edge blocks)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from spec_validate.kernels.block import Block
from spec_validate.kernels.registry import kernel


class Endpoints(NamedTuple):
    first: Any
    last: Any
    last_index: int


def summarize(block: Block) -> Endpoints:
    """The block's first and last element."""
    a = block.values
    return Endpoints(_plain(a[0]), _plain(a[-1]), block.start + block.size - 1)


def _plain(value: Any) -> Any:
    """A numpy scalar as a Python value; an element of an object array (a str, a dict) as it is."""
    return value.item() if isinstance(value, np.generic) else value


@kernel("first_last", summarize=summarize)
def combine(left: Endpoints, right: Endpoints) -> Endpoints:
    """First of the left span, last of the right one."""
    return Endpoints(left.first, right.last, right.last_index)
