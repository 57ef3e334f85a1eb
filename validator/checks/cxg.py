"""Primitives for CXG (TileDB) groups: TileDB schema facts, cxg_version, cxg_schema, embeddings."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import numpy as np

from validator.checks.registry import Options, check
from validator.checks.schemas import KEY, PATH
from validator.engine.context import NotApplicable, Scope
from validator.kernels.facts import FactRequest
from validator.nodes.base import Node
from validator.report.model import Finding

# semver.org 2.0.0, the suggested regular expression.
SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
# Versions written before 0.3.0 (the spec's version history), recognised even when they are not semver.
OLDER_CXG_VERSIONS = ("0.1", "0.2.0")


def _tiledb_facts(node: Node) -> dict | None:
    storage = node.storage
    return storage.extra if storage is not None and storage.format == "tiledb" else None


@check(options={"properties": {"dtype": {"type": "string"}, "zero_based": {"type": "boolean"}}, "required": ["dtype"]},
       kind="array")
def tiledb_domain(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every dimension of the TileDB array has dtype `dtype` and (with `zero_based`) a domain starting at 0.

    Not applicable when: the array is not a TileDB array (no schema facts).
    """
    facts = _tiledb_facts(node)
    if facts is None:
        return
    want = np.dtype(options["dtype"])
    for dim in facts.get("dims", []):
        if np.dtype(dim["dtype"]) != want:
            yield Finding(f"dimension {dim['name']!r} has domain type {np.dtype(dim['dtype']).name}, expected {want.name}",
                          details={"dimension": dim["name"], "dtype": np.dtype(dim["dtype"]).name})
        elif options.get("zero_based") and dim["domain"][0] != 0:
            yield Finding(f"dimension {dim['name']!r} has domain {dim['domain']}, which does not start at 0",
                          details={"dimension": dim["name"], "domain": dim["domain"]})


@check(options={"properties": {"other": PATH}, "required": ["other"]})
def absent_unless_sparse(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The node at `other` is absent or a sparse TileDB array (so this node may exist beside it)."""
    other = node.resolve(options["other"])
    if other is None or other.kind != "array":
        return
    facts = _tiledb_facts(other)
    if facts is not None and not facts.get("sparse"):
        yield Finding(f"exists although {other.path} is a dense array", details={"other": other.path})


@check(options={"properties": {"min": {"type": "integer", "minimum": 1}}, "required": ["min"]}, kind="group")
def array_children_at_least(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The group has at least `min` arrays as direct children."""
    arrays = [n for n in node.children().values() if n.kind == "array"]
    if len(arrays) < options["min"]:
        yield Finding(f"holds {len(arrays)} arrays, expected at least {options['min']}", details={"count": len(arrays)})


@check(options={"properties": {"axis": {"type": "integer", "minimum": 0}, "min": {"type": "integer", "minimum": 0}},
                "required": ["axis", "min"]}, kind="array")
def shape_dim_at_least(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The array has dimension `axis`, and it is at least `min` long."""
    shape, axis = node.shape or (), options["axis"]
    if len(shape) <= axis:
        yield Finding(f"has shape {tuple(shape)}, with no dimension {axis}", details={"shape": list(shape)})
    elif shape[axis] < options["min"]:
        yield Finding(f"has shape {tuple(shape)}: dimension {axis} is {shape[axis]}, expected at least {options['min']}",
                      details={"shape": list(shape)})


@check(options={"properties": {"dtype": {"type": "string"}}, "required": ["dtype"]}, kind="array", dtype_kinds="biufc")
def dtype_equals(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The numeric array's dtype is `dtype` (byte order aside).

    Not applicable when: the array is not numeric (dtype_kind reports that).
    """
    want = np.dtype(options["dtype"])
    if node.dtype.newbyteorder("=") != want.newbyteorder("="):
        yield Finding(f"has dtype {node.dtype.name}, expected {want.name}", details={"dtype": node.dtype.name})


@check(options={"properties": {"key": KEY}, "required": ["key"]})
def attr_semver(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The attribute `key`, when present and a string, is a Semantic Versioning 2.0.0 version.

    Not applicable when: the attribute is absent or not a string.
    """
    value = node.attrs.get(options["key"])
    if isinstance(value, str) and not SEMVER.match(value):
        note = " (the short form CXG 0.1 wrote)" if value in OLDER_CXG_VERSIONS else ""
        yield Finding(f"attribute {options['key']!r} is {value!r}, which is not a semantic version 2.0 version{note}",
                      details={"value": value})


@check(options={"properties": {"key": KEY, "version": {"type": "string"}}, "required": ["key", "version"]})
def cxg_version_is(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The attribute `key` names `version`; a file of another (semver or known older) version is reported with it.

    Not applicable when: the attribute is absent, not a string, or not a version at all (attr_semver reports that).
    """
    value = node.attrs.get(options["key"])
    if not isinstance(value, str) or value == options["version"]:
        return
    if SEMVER.match(value) or value in OLDER_CXG_VERSIONS:
        yield Finding(f"{options['key']} {value}: this pack checks {options['version']}",
                      details={"value": value, "expected": options["version"]})


@check(options={"properties": {"key": KEY}, "required": ["key"]}, kind="array")
def schema_index_names_attribute(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The JSON object in attribute `key` has a string `index` naming one of the array's TileDB attributes.

    Not applicable when: the attribute is absent or not a JSON object (attr_json reports that).
    """
    value = node.attrs.get(options["key"])
    if not isinstance(value, str):
        return
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return
    if not isinstance(parsed, dict):
        return
    facts = _tiledb_facts(node) or {}
    names = [a["name"] for a in facts.get("attrs", [])]
    index = parsed.get("index")
    if index is None:
        yield Finding(f"{options['key']} has no 'index'")
    elif not isinstance(index, str):
        yield Finding(f"{options['key']} index is {index!r}, not a string", details={"index": index})
    elif index not in names:
        yield Finding(f"{options['key']} index {index!r} names no attribute of the array ({', '.join(names)})",
                      details={"index": index})


def _categories(node: Node, key: str) -> list | None:
    parent = node.parent
    text = parent.attrs.get(key) if parent is not None else None
    try:
        schema = json.loads(text) if isinstance(text, str) else None
    except json.JSONDecodeError:
        return None
    entry = schema.get(node.name) if isinstance(schema, dict) else None
    if isinstance(entry, dict) and entry.get("type") == "categorical" and isinstance(entry.get("categories"), list):
        return entry["categories"]
    return None


def _codes_bounds(node: Node, options: Options, scope: Scope):
    categories = _categories(node, options["key"])
    if categories is None:
        raise NotApplicable(f"{node.path} is not a categorical column of the array's {options['key']}")
    params = (("low", 0), ("high", len(categories) - 1), ("limit", options.get("max_examples", 5)))
    return {"outside": FactRequest("count_outside", params)}


@check(options={"properties": {"key": KEY, "max_examples": {"type": "integer", "minimum": 1, "maximum": 1000}},
                "required": ["key"]}, kind="array", dtype_kinds="iu", facts=_codes_bounds)
def codes_within_categories(node: Node, options: Options, scope: Scope, facts) -> Iterator[Finding]:
    """Every integer code of a categorical column indexes its categories (0 to len(categories) - 1) in the parent's `key`.

    The categories come from the JSON in the parent array's attribute `key` (cxg_schema), entry named like the column.
    Memory: one block at a time; every element is scanned, shared with other rules on this column.
    Not applicable when: the column has no categorical entry in `key`.
    """
    result = facts["outside"]
    if result is None or not result.count:
        return
    n = len(_categories(node, options["key"]) or [])
    for o in result.found:
        yield Finding(f"code {o.value} at index {o.index} is outside the {n} categories [0, {n - 1}] "
                      f"({result.count} in all; min {result.minimum}, max {result.maximum})",
                      index=(o.index,), details={"value": o.value, "count": result.count})
