"""Primitives about array values. They never read data: the engine hands them kernel results."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from spec_validate.checks.api import Options, check
from spec_validate.checks.schemas import REF
from spec_validate.kernels.facts import FactRequest
from spec_validate.model import Finding, NotApplicable, NotChecked, Omitted, Scope
from spec_validate.nodes.base import Node

LIMIT = {"max_examples": {"type": "integer", "minimum": 1, "maximum": 1000}}


def position(node: Node, flat: int) -> tuple[int, ...]:
    """A flat C-order index as an index into the array's shape."""
    if not node.shape or len(node.shape) == 1:
        return (flat,)
    return tuple(int(i) for i in np.unravel_index(flat, node.shape))


def _ordered(node: Node) -> None:
    """Raise NotApplicable for an array with no axis to order its elements along (0-d, or no readable shape)."""
    if not node.shape:
        raise NotApplicable(f"{node.path} is 0-d or has no readable shape, so its elements have no order")


def _decreases(node: Node, options: Options, scope: Scope) -> Mapping[str, FactRequest]:
    _ordered(node)
    return {"decreases": FactRequest("find_decreases", (("limit", options.get("max_examples", 5)),))}


@check(options={"properties": {**LIMIT}}, kind="array", dtype_kinds="iuf", facts=_decreases)
def non_decreasing(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """Each element is greater than or equal to the element before it.

    Memory: one block at a time; the whole array is scanned once, shared with every other rule on it.
    Reports the first `max_examples` (default 5) decreasing positions and how many there are in all.
    Not applicable when: the array is 0-d or its shape is unknown.
    """
    result = facts["decreases"]
    if result is None or not result.count:
        return
    for d in result.found:
        yield Finding(
            f"decreases at index {d.index}: {d.previous} -> {d.value} ({result.count} decrease(s) in all)",
            index=position(node, d.index),
            details={"previous": d.previous, "value": d.value, "count": result.count},
        )
    if result.count > len(result.found):
        yield Omitted(result.count - len(result.found))


def _endpoints(node: Node, options: Options, scope: Scope) -> Mapping[str, FactRequest]:
    _ordered(node)
    scope.value(node, options["equals"])  # resolve now: a missing referent makes the clause not applicable
    return {"ends": FactRequest("first_last", edges_only=True)}


@check(options={"properties": {"equals": REF}, "required": ["equals"]}, kind="array", dtype_kinds="iuf", facts=_endpoints)
def first_value_equals(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """The array is not empty and its first element equals `equals`.

    Reads only the first block.
    Not applicable when: the array is 0-d or its shape is unknown, or `equals` refers to something missing.
    """
    expected = scope.value(node, options["equals"])
    ends = facts["ends"]
    if ends is None:
        yield Finding(f"is empty, expected a first element {expected}")
    elif ends.first != expected:
        yield Finding(
            f"first element is {ends.first}, expected {expected}",
            index=position(node, 0),
            details={"value": ends.first, "expected": expected},
        )


@check(options={"properties": {"equals": REF}, "required": ["equals"]}, kind="array", dtype_kinds="iuf", facts=_endpoints)
def last_value_equals(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """The array is not empty and its last element equals `equals` (a number or a reference such as another array's length).

    Reads only the last block.
    Not applicable when: the array is 0-d or its shape is unknown, or `equals` refers to something missing.
    """
    expected = scope.value(node, options["equals"])
    ends = facts["ends"]
    if ends is None:
        yield Finding(f"is empty, expected a last element {expected}")
    elif ends.last != expected:
        yield Finding(
            f"last element is {ends.last}, expected {expected}",
            index=position(node, ends.last_index),
            details={"value": ends.last, "expected": expected},
        )


def _bounds(node: Node, options: Options, scope: Scope) -> Mapping[str, FactRequest]:
    low = scope.value(node, options["min"]) if "min" in options else None
    high = scope.value(node, options["max"]) if "max" in options else None
    params = (("low", low), ("high", high), ("limit", options.get("max_examples", 5)))
    if "missing" in options:
        params += (("ignore", options["missing"]),)
    return {"outside": FactRequest("count_outside", params)}


@check(
    options={"properties": {"min": REF, "max": REF, "missing": {"type": "number"}, **LIMIT}},
    kind="array",
    dtype_kinds="iuf",
    facts=_bounds,
)
def values_in_range(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """Every element lies in [`min`, `max`] (each bound a number or a reference; an absent bound is open), or equals `missing`.

    `missing` is the value that marks a missing element (R's NA_integer_, -2147483648), never out of range.
    Memory: one block at a time; every element is scanned. Reports the first `max_examples` offenders.
    """
    result = facts["outside"]
    if result is None or not result.count:
        return
    low = scope.value(node, options["min"]) if "min" in options else None
    high = scope.value(node, options["max"]) if "max" in options else None
    bounds = f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"
    for o in result.found:
        yield Finding(
            f"element {o.value} at index {o.index} is outside {bounds} ({result.count} in all; min {result.minimum}, max {result.maximum})",
            index=position(node, o.index),
            details={"value": o.value, "count": result.count, "min": result.minimum, "max": result.maximum},
        )
    if result.count > len(result.found):
        yield Omitted(result.count - len(result.found))


def _duplicates(node: Node, options: Options, scope: Scope) -> Mapping[str, FactRequest]:
    _ordered(node)
    return {"duplicates": FactRequest("find_duplicates", (("limit", options.get("max_examples", 5)),))}


@check(options={"properties": {**LIMIT}}, kind="array", dtype_kinds="biuSUO", facts=_duplicates)
def values_unique(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """No element equals an earlier element of the array.

    Memory: one block at a time, plus every distinct value with its first index (for lookup tables such as factor
    levels); past a million distinct values the array is reported as not checked.
    Not applicable when: the array is 0-d or its shape is unknown.
    """
    result = facts["duplicates"]
    if result is None:
        return
    if result.overflow:
        raise NotChecked(f"{node.path} holds more than a million distinct values; their uniqueness is not checked")
    for d in result.found:
        yield Finding(
            f"element {d.value!r} at index {d.index} repeats the one at index {d.first} ({result.count} repeat(s) in all)",
            index=position(node, d.index),
            details={"value": d.value, "first": d.first, "count": result.count},
        )
    if result.count > len(result.found):
        yield Omitted(result.count - len(result.found))


def _zeros(node: Node, options: Options, scope: Scope) -> Mapping[str, FactRequest]:
    return {"zeros": FactRequest("count_equal", (("value", 0), ("limit", options.get("max_examples", 5))))}


@check(options={"properties": {**LIMIT}}, kind="array", dtype_kinds="iuf", facts=_zeros)
def values_nonzero(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """No element is zero (NaN is not zero).

    One finding per array: how many zeros it stores, where the first is, and the first `max_examples` (default 5)
    positions. Memory: one block at a time; every element is scanned, shared with other rules on this array.
    """
    result = facts["zeros"]
    if result is None or not result.count:
        return
    size = int(np.prod(node.shape)) if node.shape else 1
    first = result.found[0]
    yield Finding(
        f"stores {result.count} zero(s) among its {size} elements, the first at index {first}",
        index=position(node, first),
        details={"count": result.count, "first": first, "indexes": list(result.found)},
    )
