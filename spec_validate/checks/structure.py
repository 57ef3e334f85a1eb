"""Primitives about the hierarchy: node kinds, children, where a node lies, dimensionality and dtypes."""

from __future__ import annotations

from collections.abc import Iterator

from spec_validate.checks.api import Options, check, with_article
from spec_validate.checks.schemas import NAMES, PATH
from spec_validate.model import Finding, Scope
from spec_validate.nodes.base import Node

KINDS = {"enum": ["group", "array"]}
DTYPE_KIND_NAMES = {
    "b": "boolean",
    "i": "signed integer",
    "u": "unsigned integer",
    "f": "floating point",
    "c": "complex",
    "O": "object",
    "S": "byte string",
    "U": "unicode",
    "V": "void/structured",
    "M": "datetime",
    "m": "timedelta",
}


@check(options={"properties": {"kind": KINDS}, "required": ["kind"]}, own_metadata_only=True)
def node_kind(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The node is a `kind` (group or array)."""
    if node.kind != options["kind"]:
        what = (
            with_article(node.kind)
            if node.kind != "link"
            else f"a link that is not followed ({node.link_kind or 'of an unknown kind'})"
        )
        yield Finding(f"is {what}, expected {with_article(options['kind'])}", details={"kind": node.kind})


@check(options={"properties": {"names": NAMES, "kind": KINDS}, "required": ["names"]}, kind="group")
def child_present(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Each child in `names` exists (and is a `kind`, if given); one finding per missing or wrong child."""
    for name in options["names"]:
        child = node.child(name)
        path = f"{node.path.rstrip('/')}/{name}"
        if child is None:
            yield Finding(f"has no entry {name!r}", path=path, details={"child": name})
        elif options.get("kind") and child.kind != options["kind"]:
            yield Finding(f"{name!r} is a {child.kind}, expected a {options['kind']}", path=path, details={"child": name})


@check(
    options={
        "properties": {"equals": {"type": "integer", "minimum": 0}, "min": {"type": "integer", "minimum": 0}},
        "oneOf": [{"required": ["equals"]}, {"required": ["min"]}],
    },
    kind="array",
    own_metadata_only=True,
)
def ndim(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The array has exactly `equals` dimensions (or at least `min`)."""
    if node.shape is None:
        yield Finding("has no readable shape")
    elif "equals" in options and len(node.shape) != options["equals"]:
        yield Finding(
            f"has {len(node.shape)} dimensions {node.shape}, expected {options['equals']}", details={"shape": list(node.shape)}
        )
    elif "min" in options and len(node.shape) < options["min"]:
        yield Finding(
            f"has {len(node.shape)} dimensions {node.shape}, expected at least {options['min']}",
            details={"shape": list(node.shape)},
        )


@check(options={"properties": {"kind": KINDS}, "required": ["kind"]}, kind="group")
def children_are(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every child of the group is a `kind` (group or array); one finding per child that is not."""
    for name, child in node.children().items():
        if child.kind != options["kind"]:
            yield Finding(
                f"holds {name!r}, a {child.kind}, expected only {options['kind']}s",
                path=child.path,
                details={"child": name, "kind": child.kind},
            )


@check(
    options={"properties": {"kinds": {"type": "string", "pattern": "^[biufcOSUVMm]+$"}}, "required": ["kinds"]},
    kind="array",
    own_metadata_only=True,
)
def dtype_kind(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The array's dtype is of one of the numpy kinds in `kinds` (b boolean, i/u integer, f float, c complex...)."""
    dtype = node.dtype
    wanted = " or ".join(DTYPE_KIND_NAMES.get(k, k) for k in options["kinds"])
    if dtype is None:
        yield Finding(f"has no readable dtype, expected {wanted}")
    elif dtype.kind not in options["kinds"]:
        yield Finding(
            f"has dtype {dtype.str} ({DTYPE_KIND_NAMES.get(dtype.kind, dtype.kind)}), expected {wanted}",
            details={"dtype": dtype.str},
        )


@check(options={"properties": {"path": PATH}, "required": ["path"]})
def path_within(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The node lies below `path`, a path from the scope root (such as /uns)."""
    base = "/" + options["path"].strip("/")
    where = scope.relative_path(node)
    if not where.startswith(base.rstrip("/") + "/"):
        yield Finding(f"lies outside {base}", details={"path": where})


@check(
    options={"properties": {"bytes": {"type": "integer", "minimum": 1}}, "required": ["bytes"]}, kind="array", dtype_kinds="biufc"
)
def dtype_itemsize_at_most(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Each number of the array takes at most `bytes` bytes (a numeric dtype no wider than that).

    Not applicable when: the dtype is not numeric (strings, objects, structured).
    """
    dtype = node.dtype
    if dtype.itemsize > options["bytes"]:
        yield Finding(
            f"has dtype {dtype.str} ({dtype.itemsize * 8}-bit), expected at most {options['bytes'] * 8}-bit",
            details={"dtype": dtype.str},
        )


@check(options={"properties": {"kinds": {"type": "string", "pattern": "^[biufcOSUVMm]+$"}}, "required": ["kinds"]}, kind="array")
def dtype_kind_not(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The array's dtype is of none of the numpy kinds in `kinds` (b boolean, i/u integer, f float, ...)."""
    dtype = node.dtype
    unwanted = " or ".join(DTYPE_KIND_NAMES.get(k, k) for k in options["kinds"])
    if dtype is None:
        yield Finding(f"has no readable dtype, expected one that is not {unwanted}")
    elif dtype.kind in options["kinds"]:
        yield Finding(
            f"has dtype {dtype.str} ({DTYPE_KIND_NAMES.get(dtype.kind, dtype.kind)}), expected one that is not {unwanted}",
            details={"dtype": dtype.str},
        )
