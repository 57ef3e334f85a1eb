"""count_outside: elements below `low` or above `high`, with min, max and the first offenders."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from spec_validate.kernels.block import Block
from spec_validate.kernels.registry import kernel


class Offender(NamedTuple):
    index: int
    value: Any


class BoundsPartial(NamedTuple):
    minimum: Any
    maximum: Any
    count: int  # elements outside [low, high]
    found: tuple[Offender, ...]  # the first `limit` of them, in index order


def _values(block: Block, field: str | None, ignore: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """The block's values (one field of a compound block, with `field`), and the positions kept when `ignore` is set."""
    a = block.values if field is None else np.asarray(block.values[field]).reshape(-1)
    if ignore is None:
        return a, None
    kept = np.flatnonzero(a != ignore)
    return a[kept], kept


def summarize(
    block: Block, low: Any = None, high: Any = None, limit: int = 5, field: str | None = None, ignore: Any = None
) -> BoundsPartial:
    """Min, max and out-of-range elements of one block (NaN is never counted as out of range).

    `field` reads one member of a compound array; `ignore` is a value that is never counted (R's NA_integer_,
    -2147483648, in factor codes), nor taken into min and max.
    """
    if block.uniform:
        return _uniform(block, low, high, limit, field, ignore)
    a, kept = _values(block, field, ignore)
    if not a.size:
        return BoundsPartial(None, None, 0, ())
    if a.dtype.kind in "fc":
        minimum, maximum = _nan_extremes(a)
    else:
        minimum, maximum = a.min().item(), a.max().item()
    # The common case, every element in range, costs two reductions; the mask is built only when needed.
    if minimum is None or ((low is None or minimum >= low) and (high is None or maximum <= high)):
        return BoundsPartial(minimum, maximum, 0, ())
    outside = np.zeros(a.shape, dtype=bool)
    if low is not None:
        outside |= a < low
    if high is not None:
        outside |= a > high
    bad = np.flatnonzero(outside)
    at = bad if kept is None else kept[bad]  # positions in the block, ignored elements counted in
    found = tuple(Offender(block.start + int(j), a[i].item()) for i, j in zip(bad[:limit], at[:limit], strict=True))
    return BoundsPartial(minimum, maximum, int(bad.size), found)


def _uniform(block: Block, low: Any, high: Any, limit: int, field: str | None, ignore: Any) -> BoundsPartial:
    """A block of one value repeated (rows where nothing is stored): judged once, its count the block's size."""
    value = block.values[0] if field is None else block.values[0][field]
    v = value.item() if isinstance(value, np.generic) else value
    if v != v or (ignore is not None and v == ignore):  # NaN or the ignored value: no extremes, never out of range
        return BoundsPartial(None, None, 0, ())
    if (low is None or v >= low) and (high is None or v <= high):
        return BoundsPartial(v, v, 0, ())
    n = block.size
    return BoundsPartial(v, v, n, tuple(Offender(block.start + i, v) for i in range(min(n, limit))))


def _nan_extremes(a: np.ndarray) -> tuple[Any, Any]:
    """Min and max ignoring NaN; (None, None) when every element is NaN."""
    minimum, maximum = a.min(), a.max()
    if not (np.isnan(minimum) or np.isnan(maximum)):
        return minimum.item(), maximum.item()
    numbers = a[~np.isnan(a)]
    return (numbers.min().item(), numbers.max().item()) if numbers.size else (None, None)


def _pick(a: Any, b: Any, choose: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return choose(a, b)


@kernel("count_outside", summarize=summarize)
def combine(
    left: BoundsPartial,
    right: BoundsPartial,
    low: Any = None,
    high: Any = None,
    limit: int = 5,
    field: str | None = None,
    ignore: Any = None,
) -> BoundsPartial:
    """Both spans as one; offenders stay in index order because left precedes right."""
    return BoundsPartial(
        _pick(left.minimum, right.minimum, min),
        _pick(left.maximum, right.maximum, max),
        left.count + right.count,
        (left.found + right.found)[:limit],
    )
