"""Primitives for h5Seurat files: R matrix dimensions, attributes naming other groups' entries, string storage."""

from __future__ import annotations

from collections.abc import Iterator

from validator.checks.registry import Options, check
from validator.checks.schemas import KEY, PATH, REF
from validator.checks.storage import string_storage
from validator.engine.context import NotApplicable, Scope
from validator.nodes.base import Node
from validator.report.model import Finding


def r_dims(node: Node) -> tuple[int, int] | None:
    """The (rows, columns) of a matrix as R sees it: a dense dataset's stored shape reversed, or a sparse group's `dims`."""
    if node.kind == "array":
        if node.shape is None or len(node.shape) != 2:
            return None
        return (node.shape[1], node.shape[0])
    dims = node.attrs.get("dims")
    if isinstance(dims, list) and len(dims) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in dims):
        return (dims[0], dims[1])
    return None


@check(options={"properties": {"rows": REF, "cols": REF, "other": PATH}})
def matrix_dims_equal(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The matrix's R dimensions have `rows` rows and `cols` columns, and equal those of the matrix at `other`, where given.

    R dimensions are the stored shape reversed for a dense dataset (R writes column-major, so h5py sees
    the transpose) and the `dims` attribute for a sparse group. Not applicable when: either matrix's
    dimensions are unknown (not 2-D, or a sparse group without `dims`) or a reference is missing.
    """
    dims = r_dims(node)
    if dims is None:
        raise NotApplicable(f"the R dimensions of {node.path} are unknown")
    if "other" in options:
        other = scope.node(node, options["other"])
        if other is None:
            raise NotApplicable(f"no node at {options['other']}")
        theirs = r_dims(other)
        if theirs is None:
            raise NotApplicable(f"the R dimensions of {other.path} are unknown")
        if dims != theirs:
            yield Finding(f"is {dims[0]} x {dims[1]} in R order, but {other.path} is {theirs[0]} x {theirs[1]}",
                          details={"dims": list(dims), "other": list(theirs)})
    for axis, name in ((0, "rows"), (1, "cols")):
        if name in options:
            expected = scope.value(node, options[name])
            if dims[axis] != expected:
                yield Finding(f"has {dims[axis]} {'rows' if axis == 0 else 'columns'} in R order (stored shape "
                              f"{node.shape if node.kind == 'array' else 'dims ' + str(list(dims))}), expected {expected}",
                              details={"dims": list(dims), "expected": expected})


@check(options={"properties": {"key": KEY, "of": PATH}, "required": ["key", "of"]})
def attr_values_name_children(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Each string in the attribute `key` names an entry of the group at `of`.

    Not applicable when: the attribute is absent or holds no strings (attr_present / attr_type report that),
    or there is no node at `of`.
    """
    value = node.attrs.get(options["key"])
    names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    names = [n for n in names if isinstance(n, str)]
    if not names:
        return
    target = scope.node(node, options["of"])
    if target is None:
        raise NotApplicable(f"no node at {options['of']}")
    for name in names:
        if target.kind != "group" or target.child(name) is None:
            yield Finding(f"attribute {options['key']!r} names {name!r}, but {target.path} has no such entry",
                          details={"key": options["key"], "name": name})


@check(
    options={
        "properties": {"length": {"enum": ["variable", "fixed"]}, "charset": {"enum": ["utf-8", "ascii", "utf-32"]}},
        "required": ["length"],
    },
    kind="array",
    dtype_kinds="OSU",
)
def strings_stored_as(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """An array of strings stores them as `length` (variable or fixed) strings in `charset`, when given.

    As string_storage, but only for arrays whose dtype can hold strings (numpy kinds O, S, U).
    Not applicable when: the array is numeric or compound.
    """
    yield from string_storage(node, options, scope)


@check(options={"properties": {"key": KEY, "count": {"type": "integer", "minimum": 1}}, "required": ["key"]})
def attr_strings(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The attribute `key`, when present, holds one or more strings (exactly `count`, if given); a scalar string counts as one.

    R writes a character vector of length one either as a scalar or as a one-element array; both are one value.
    Not applicable when: the attribute is absent (attr_present reports that).
    """
    key = options["key"]
    if key not in node.attrs:
        return
    value = node.attrs[key]
    values = [value] if isinstance(value, str) else value if isinstance(value, list) else None
    if values is None or not values or not all(isinstance(v, str) for v in values):
        yield Finding(f"attribute {key!r} is {type(value).__name__} {str(value)[:60]}, expected character value(s)",
                      details={"key": key})
    elif "count" in options and len(values) != options["count"]:
        yield Finding(f"attribute {key!r} holds {len(values)} strings, expected {options['count']}", details={"key": key, "count": len(values)})
