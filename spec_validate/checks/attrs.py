"""Primitives about a node's attributes (HDF5 attributes, Zarr `.zattrs` / `attributes`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from spec_validate.checks.api import Options, check
from spec_validate.checks.schemas import KEY, NAMES
from spec_validate.codecs.jsondoc import JSONProblem, loads
from spec_validate.excerpt import cut
from spec_validate.model import Finding, NotApplicable, Scope
from spec_validate.nodes.base import Node

TYPES = ["string", "boolean", "integer", "number", "array", "object", "string-array", "integer-array"]


def type_name(value: Any) -> str:
    """The JSON-ish name of a value's type, as findings print it."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    if value is None:
        return "null"
    return type(value).__name__


def is_type(value: Any, expected: str) -> bool:
    if expected == "string-array":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if expected == "integer-array":
        return isinstance(value, list) and all(type_name(v) == "integer" for v in value)
    if expected == "number":
        return type_name(value) in ("integer", "number")
    return type_name(value) == expected


@check(options={"properties": {"key": KEY}, "required": ["key"]}, own_metadata_only=True)
def attr_present(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The node has the attribute `key`."""
    if options["key"] not in node.attrs:
        yield Finding(f"attribute {options['key']!r} is missing", details={"key": options["key"]})


@check(
    options={
        "properties": {
            "key": KEY,
            "type": {"enum": TYPES},
            "length": {"type": "integer", "minimum": 0},
            "minimum": {"type": "number"},
        },
        "required": ["key", "type"],
    },
    own_metadata_only=True,
)
def attr_type(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The attribute `key`, when present, has JSON type `type` (and `length` items, each >= `minimum`, if given).

    Not applicable when: the attribute is absent (attr_present reports that).
    """
    key = options["key"]
    if key not in node.attrs:
        raise NotApplicable(f"{node.path} has no attribute {key!r}")
    value = node.attrs[key]
    if not is_type(value, options["type"]):
        yield Finding(
            f"attribute {key!r} is {type_name(value)} {_short(value)}, expected {options['type']}",
            details={"key": key, "value": _jsonable(value)},
        )
        return
    if "length" in options and len(value) != options["length"]:
        yield Finding(f"attribute {key!r} has {len(value)} items, expected {options['length']}", details={"key": key})
    if "minimum" in options:
        low = [v for v in (value if isinstance(value, list) else [value]) if v < options["minimum"]]
        if low:
            yield Finding(f"attribute {key!r} has values below {options['minimum']}: {low[:5]}", details={"key": key})


@check(options={"properties": {"key": KEY, "value": {}}, "required": ["key", "value"]}, own_metadata_only=True)
def attr_equals(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The attribute `key` is present and equals `value` (same JSON type and value)."""
    key, expected = options["key"], options["value"]
    if key not in node.attrs:
        yield Finding(f"attribute {key!r} is missing (expected {expected!r})", details={"key": key})
        return
    value = node.attrs[key]
    if type_name(value) != type_name(expected) or value != expected:
        yield Finding(
            f"attribute {key!r} is {_short(value)}, expected {expected!r}", details={"key": key, "value": _jsonable(value)}
        )


@check(
    options={"properties": {"key": KEY, "values": {"type": "array", "minItems": 1}}, "required": ["key", "values"]},
    own_metadata_only=True,
)
def attr_one_of(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The attribute `key` is present and is one of `values`."""
    key, allowed = options["key"], options["values"]
    if key not in node.attrs:
        yield Finding(f"attribute {key!r} is missing", details={"key": key})
        return
    value = node.attrs[key]
    if not any(type_name(value) == type_name(a) and value == a for a in allowed):
        yield Finding(
            f"attribute {key!r} is {_short(value)}, expected one of {', '.join(map(repr, allowed))}",
            details={"key": key, "value": _jsonable(value)},
        )


_PLAIN_RELEASE = re.compile(r"[0-9]+(?:\.[0-9]+)*")


@check(options={"properties": {"key": KEY}, "required": ["key"]}, own_metadata_only=True)
def attr_version(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The attribute `key`, when present and a string, parses as a version (PEP 440, as `packaging` reads it).

    Not applicable when: the attribute is absent or not a string (attr_present / attr_type report that).
    """
    value = node.attrs.get(options["key"])
    if not isinstance(value, str):
        raise NotApplicable(f"{node.path} has no string attribute {options['key']!r}")
    if _PLAIN_RELEASE.fullmatch(value):
        return  # `0.1.0`, the usual case, is a version without asking packaging (whose import costs a small run)
    from packaging.version import InvalidVersion, Version

    try:
        Version(value)
    except InvalidVersion:
        yield Finding(f"attribute {options['key']!r} is {value!r}, which is not a version", details={"value": value})


@check(
    options={"properties": {"key": KEY, "type": {"enum": ["object", "array", "any"]}}, "required": ["key"]},
    own_metadata_only=True,
)
def attr_json(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The attribute `key`, when present and a string, holds JSON text (of type `type`, default object).

    Not applicable when: the attribute is absent or not a string.
    """
    value = node.attrs.get(options["key"])
    if not isinstance(value, str):
        raise NotApplicable(f"{node.path} has no string attribute {options['key']!r}")
    try:
        parsed = loads(value)
    except JSONProblem as exc:
        yield Finding(f"attribute {options['key']!r} is {exc}")
        return
    expected = options.get("type", "object")
    if expected != "any" and type_name(parsed) != expected:
        yield Finding(f"attribute {options['key']!r} holds JSON {type_name(parsed)}, expected {expected}")


@check(options={"properties": {"key": KEY, "kind": {"enum": ["array", "group"]}}, "required": ["key"]})
def attr_names_child(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The string attribute `key` names a child of this node (of kind `kind`, if given).

    A child of the wrong kind is reported with its kind and, when it has one, its `encoding-type`: what stands
    where the clause asks for something else (such as anndata's nullable-string-array group where a dataframe's
    index array belongs) is what a writer's note explains.

    Not applicable when: the attribute is absent or not a string.
    """
    name = node.attrs.get(options["key"])
    if not isinstance(name, str):
        raise NotApplicable(f"{node.path} has no string attribute {options['key']!r}")
    child = node.child(name)
    if child is None:
        yield Finding(f"attribute {options['key']!r} names {name!r}, but there is no such child", details={"child": name})
    elif options.get("kind") and child.kind != options["kind"]:
        details: dict[str, Any] = {"child": name, "kind": child.kind}
        encoding = child.attrs.get("encoding-type")
        said = ""
        if isinstance(encoding, str):
            details["encoding-type"] = encoding
            said = f" (encoding-type {encoding!r})"
        yield Finding(
            f"{options['key']!r} names {name!r}, which is a {child.kind}{said}, not an {options['kind']}", details=details
        )


@check(options={"properties": {"key": KEY, "except_named_by": NAMES}, "required": ["key"]})
def attr_lists_children(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The string-array attribute `key` names each child exactly once, apart from children named by `except_named_by` attributes, which it does not name.

    Not applicable when: the attribute is absent or not an array of strings, or an `except_named_by`
    attribute is absent or not a string (which child it sets apart is then unknown; its own rule reports it).
    """
    listed = node.attrs.get(options["key"])
    if not is_type(listed, "string-array"):
        raise NotApplicable(f"{node.path} has no string-array attribute {options['key']!r}")
    # Checked before the set is built: an attribute that is no string (R writes a one-element array) names no entry.
    unnamed = [k for k in options.get("except_named_by", []) if not isinstance(node.attrs.get(k), str)]
    if unnamed:
        raise NotApplicable(f"{node.path} has no string attribute {unnamed[0]!r}, so which entry it sets apart is unknown")
    excluded = {node.attrs[k]: k for k in options.get("except_named_by", [])}
    children = [n for n in node.children() if n not in excluded]
    missing = [n for n in listed if node.child(n) is None]
    # Sets and counts, not list scans: a dataframe of 30,000 columns is checked in linear time.
    named = set(listed)
    unlisted = [n for n in children if n not in named]
    repeated = sorted(n for n, count in Counter(listed).items() if count > 1)
    if missing:
        yield Finding(
            f"{options['key']!r} lists {missing[:10]}, which are not entries of the group", details={"missing": missing[:10]}
        )
    if unlisted:
        yield Finding(f"entries {unlisted[:10]} are not listed in {options['key']!r}", details={"unlisted": unlisted[:10]})
    if repeated:
        yield Finding(f"{options['key']!r} lists {repeated[:10]} more than once", details={"repeated": repeated[:10]})
    for name in sorted({n for n in listed if n in excluded}):
        yield Finding(
            f"{options['key']!r} lists {name!r}, which {excluded[name]!r} names: that entry is not one of those listed",
            details={"listed": name, "named_by": excluded[name]},
        )


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return cut(text, limit)


def _jsonable(value: Any) -> Any:
    return value if type_name(value) in ("string", "integer", "number", "boolean", "array", "object", "null") else repr(value)
