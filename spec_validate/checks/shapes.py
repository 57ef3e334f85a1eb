"""Primitives about shapes: against named dimensions, other nodes, and siblings."""

from __future__ import annotations

from collections.abc import Iterator

from spec_validate.checks.api import Options, check
from spec_validate.checks.schemas import PATH, REF
from spec_validate.model import Finding, NotApplicable, Scope
from spec_validate.nodes.base import Node


def _shape(node: Node, scope: Scope) -> tuple[int, ...]:
    shape = scope.logical_shape(node)
    if shape is None:
        raise NotApplicable(f"the shape of {node.path} is unknown")
    return shape


@check(
    options={
        "properties": {
            "dims": {"type": "array", "items": {"anyOf": [{"type": "string"}, REF]}, "minItems": 1},
            "exact": {"type": "boolean"},
        },
        "required": ["dims"],
    }
)
def dims_equal(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The element's leading dimensions equal `dims` (names such as n_obs, or references), one by one; with `exact`, it has no other dimension.

    The element's shape is its logical shape: an array's shape, a sparse group's `shape` attribute,
    a dataframe's index length. Not applicable when: the shape or a dimension is unknown.
    """
    shape = _shape(node, scope)
    expected = [scope.dimension(d, node) if isinstance(d, str) else scope.value(node, d) for d in options["dims"]]
    names = [d if isinstance(d, str) else str(e) for d, e in zip(options["dims"], expected, strict=False)]
    if len(shape) < len(expected):
        yield Finding(
            f"has shape {shape}, expected at least {len(expected)} dimensions ({', '.join(names)})",
            details={"shape": list(shape)},
        )
        return
    if options.get("exact") and len(shape) != len(expected):
        yield Finding(
            f"has shape {shape}: {len(shape)} dimensions, expected exactly {len(expected)} ({', '.join(names)})",
            details={"shape": list(shape), "expected": expected},
        )
        return
    wrong = [(i, shape[i], e, n) for i, (e, n) in enumerate(zip(expected, names, strict=False)) if shape[i] != e]
    if wrong:
        text = "; ".join(
            f"dimension {i} is {got}, expected {name} = {want}"
            if name != str(want)
            else f"dimension {i} is {got}, expected {want}"
            for i, got, want, name in wrong
        )
        yield Finding(f"has shape {shape}: {text}", details={"shape": list(shape), "expected": expected})


@check(options={"properties": {"axis": {"type": "integer", "minimum": 0}, "equals": REF}, "required": ["equals"]})
def shape_dim_equals(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Dimension `axis` (default 0) of the element equals `equals` (a number or a reference).

    Not applicable when: the shape or the referenced value is unknown.
    """
    axis = options.get("axis", 0)
    shape = _shape(node, scope)
    expected = scope.value(node, options["equals"])
    if len(shape) <= axis:
        yield Finding(f"has shape {shape}, which has no dimension {axis}", details={"shape": list(shape)})
    elif shape[axis] != expected:
        yield Finding(
            f"dimension {axis} is {shape[axis]}, expected {expected}", details={"shape": list(shape), "expected": expected}
        )


@check(options={"properties": {"other": PATH}, "required": ["other"]})
def same_shape(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The element has the same shape as the node at `other`.

    Not applicable when: `other` does not exist or either shape is unknown.
    """
    other = scope.node(node, options["other"])
    if other is None:
        raise NotApplicable(f"no node at {options['other']}")
    mine, theirs = _shape(node, scope), _shape(other, scope)
    if mine != theirs:
        yield Finding(
            f"has shape {mine}, but {other.path} has shape {theirs}", details={"shape": list(mine), "other": list(theirs)}
        )


@check(kind="group")
def children_first_dim_equal(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every entry of the group has the same first dimension as the group's own logical shape (a dataframe's index).

    Not applicable when: the group's length is unknown (no index). Entries whose shape is unknown are reported,
    except an entry whose encoding-type has a shape definition in the pack that it does not meet (a categorical
    without codes): that encoding's own structural rule reports what is missing.
    """
    length = _shape(node, scope)[0]
    for name, child in node.children().items():
        shape = scope.logical_shape(child)
        if shape is None and child.kind == "group" and str(child.attrs.get("encoding-type")) in scope.pack.shapes:
            continue
        if shape is None or not shape:
            yield Finding(f"entry {name!r} has no first dimension", path=child.path)
        elif shape[0] != length:
            yield Finding(
                f"entry {name!r} has first dimension {shape[0]}, the index has {length}",
                path=child.path,
                details={"length": shape[0], "expected": length},
            )
