"""Primitives for CXG (TileDB) groups: TileDB schema facts, cxg_version, cxg_schema, embeddings."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import numpy as np

from spec_validate.checks.api import Options, check
from spec_validate.checks.schemas import KEY, NAMES, PATH
from spec_validate.codecs.jsondoc import JSONProblem, loads
from spec_validate.kernels.facts import FactRequest
from spec_validate.model import Finding, NotApplicable, Omitted, Scope
from spec_validate.nodes.base import Node
from spec_validate.nodes.tiledb.tree import CELLS

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


@check(
    options={"properties": {"dtype": {"type": "string"}, "zero_based": {"type": "boolean"}}, "required": ["dtype"]}, kind="array"
)
def tiledb_domain(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every dimension of the TileDB array has dtype `dtype` and (with `zero_based`) a domain starting at 0.

    Not applicable when: the array is not a TileDB array (no schema facts) or its facts record no dimensions.
    """
    facts = _tiledb_facts(node)
    if facts is None:
        raise NotApplicable(f"{node.path} is not a TileDB array (no schema facts)")
    if not facts.get("dims"):
        raise NotApplicable(f"{node.path} has no TileDB dimensions in its schema facts")
    want = np.dtype(options["dtype"])
    for dim in facts["dims"]:
        if np.dtype(dim["dtype"]) != want:
            yield Finding(
                f"dimension {dim['name']!r} has domain type {np.dtype(dim['dtype']).name}, expected {want.name}",
                details={"dimension": dim["name"], "dtype": np.dtype(dim["dtype"]).name},
            )
        elif options.get("zero_based") and dim["domain"][0] != 0:
            yield Finding(
                f"dimension {dim['name']!r} has domain {dim['domain']}, which does not start at 0",
                details={"dimension": dim["name"], "domain": dim["domain"]},
            )


@check(options={"properties": {"other": PATH}, "required": ["other"]})
def absent_unless_sparse(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The node at `other` is absent or a sparse TileDB array (so this node may exist beside it).

    Not applicable when: `other` is an array that is not a TileDB array (no schema facts say whether it is sparse).
    """
    other = node.resolve(options["other"])
    if other is None or other.kind != "array":
        return
    facts = _tiledb_facts(other)
    if facts is None:
        raise NotApplicable(f"{other.path} is not a TileDB array (no schema facts), so whether it is sparse is unknown")
    if not facts.get("sparse"):
        yield Finding(f"exists although {other.path} is a dense array", details={"other": other.path})


@check(options={"properties": {"min": {"type": "integer", "minimum": 1}}, "required": ["min"]}, kind="group")
def array_children_at_least(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The group has at least `min` arrays as direct children."""
    arrays = [n for n in node.children().values() if n.kind == "array"]
    if len(arrays) < options["min"]:
        yield Finding(f"holds {len(arrays)} arrays, expected at least {options['min']}", details={"count": len(arrays)})


@check(
    options={
        "properties": {"axis": {"type": "integer", "minimum": 0}, "min": {"type": "integer", "minimum": 0}},
        "required": ["axis", "min"],
    },
    kind="array",
)
def shape_dim_at_least(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The array has dimension `axis`, and it is at least `min` long."""
    shape, axis = node.shape or (), options["axis"]
    if len(shape) <= axis:
        yield Finding(f"has shape {tuple(shape)}, with no dimension {axis}", details={"shape": list(shape)})
    elif shape[axis] < options["min"]:
        yield Finding(
            f"has shape {tuple(shape)}: dimension {axis} is {shape[axis]}, expected at least {options['min']}",
            details={"shape": list(shape)},
        )


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
    if not isinstance(value, str):
        raise NotApplicable(f"{node.path} has no string attribute {options['key']!r}")
    if not SEMVER.match(value):
        note = " (the short form CXG 0.1 wrote)" if value in OLDER_CXG_VERSIONS else ""
        yield Finding(
            f"attribute {options['key']!r} is {value!r}, which is not a semantic version 2.0 version{note}",
            details={"value": value},
        )


@check(
    options={
        "properties": {
            "key": KEY,
            "version": {"type": "string"},
            "known": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "required": ["key", "version"],
    }
)
def cxg_version_is(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The attribute `key` names `version`; a file of another version is reported with the version it carries.

    `known` maps the versions of the spec's version history to what each one is; a known version is reported
    with that meaning even when it is not a semantic version (CXG 0.1 wrote "0.1").
    Not applicable when: the attribute is absent, not a string, or neither a known version nor a semantic
    version (attr_semver reports that).
    """
    value = node.attrs.get(options["key"])
    if not isinstance(value, str):
        raise NotApplicable(f"{node.path} has no string attribute {options['key']!r}")
    if value == options["version"]:
        return
    known = options.get("known") or {}
    if value in known:
        yield Finding(
            f"{options['key']} is {value!r}: CXG {value}, {known[value]}; this pack checks {options['version']}",
            details={"value": value, "expected": options["version"], "meaning": known[value]},
        )
    elif SEMVER.match(value):
        yield Finding(
            f"{options['key']} is {value!r}, a version the spec's version history does not list; "
            f"this pack checks {options['version']}",
            details={"value": value, "expected": options["version"]},
        )
    else:
        raise NotApplicable(f"{node.path} attribute {options['key']!r} is {value!r}, neither a known nor a semantic version")


def _schema_facts(node: Node) -> dict:
    facts = _tiledb_facts(node)
    if facts is None:
        raise NotApplicable(f"{node.path} is not a TileDB array (no schema facts)")
    if "attribute_of" in facts:
        raise NotApplicable(f"{node.path} is one attribute of {facts['attribute_of']}, not a TileDB array")
    return facts


def _names(names: list[str]) -> str:
    return "[" + ", ".join(json.dumps(n) for n in names) + "]"


@check(
    options={"properties": {"names": NAMES, "kinds": {"type": "string", "pattern": "^[biufc]+$"}}, "required": ["names"]},
    kind="array",
)
def tiledb_attributes(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The TileDB array's attributes are exactly `names`, in schema order ("" is the anonymous one), each of a numpy kind in `kinds` when given.

    Not applicable when: the node is not a TileDB array (no schema facts), or is one attribute of a multi-attribute array.
    """
    attrs = _schema_facts(node).get("attrs", [])
    names = [a["name"] for a in attrs]
    if names != list(options["names"]):
        yield Finding(f"has attributes {_names(names)}, expected {_names(options['names'])}", details={"attributes": names})
    kinds = options.get("kinds")
    for a in attrs if kinds else ():
        dtype = np.dtype(a["dtype"])
        if dtype.kind not in kinds:
            yield Finding(
                f"attribute {json.dumps(a['name'])} has dtype {dtype.str}, expected numpy kind {' or '.join(kinds)}",
                details={"attribute": a["name"], "dtype": dtype.str},
            )


@check(options={"properties": {"sparse": {"type": "boolean"}}, "required": ["sparse"]}, kind="array")
def tiledb_sparse(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The TileDB array is a sparse array (with `sparse: true`) or a dense one (with `sparse: false`).

    Not applicable when: the node is not a TileDB array (no schema facts).
    """
    sparse = bool(_schema_facts(node).get("sparse"))
    if sparse != options["sparse"]:
        yield Finding(
            f"is a {'sparse' if sparse else 'dense'} TileDB array, expected a {'sparse' if options['sparse'] else 'dense'} one",
            details={"sparse": sparse},
        )


@check(options={"properties": {"others": {"type": "array", "items": PATH, "minItems": 1}}, "required": ["others"]}, kind="array")
def dtype_same_as(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The array's dtype equals (byte order aside) that of the first array found among `others`, tried in order.

    Not applicable when: none of `others` is an array with a dtype.
    """
    other = next(
        (
            o
            for o in (scope.node(node, p) for p in options["others"])
            if o is not None and o.kind == "array" and o.dtype is not None
        ),
        None,
    )
    if other is None:
        raise NotApplicable(f"none of {', '.join(options['others'])} is an array")
    if node.dtype is None or node.dtype.newbyteorder("=") != other.dtype.newbyteorder("="):
        mine = node.dtype.str if node.dtype is not None else "unknown"
        yield Finding(
            f"has dtype {mine}, but {other.path} has {other.dtype.str}", details={"dtype": mine, "other": other.dtype.str}
        )


def _json_object(node: Node, key: str) -> dict:
    value = node.attrs.get(key)
    try:
        parsed = loads(value) if isinstance(value, str) else None
    except JSONProblem:
        parsed = None
    if not isinstance(parsed, dict):
        raise NotApplicable(f"{node.path} attribute {key!r} is absent or not a JSON object")
    return parsed


def _is_http_url(value: object) -> bool:
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


JSON_FIELD_TYPES = {"string": lambda v: isinstance(v, str), "http-url": _is_http_url}
JSON_FIELD_WORDS = {"string": "a string", "http-url": "a string holding an absolute http or https URL"}


@check(
    options={
        "properties": {
            "key": KEY,
            "field": KEY,
            "type": {"enum": sorted(JSON_FIELD_TYPES)},
            "null_is_absent": {"type": "boolean"},
        },
        "required": ["key", "field", "type"],
    }
)
def attr_json_field(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """When the JSON object in attribute `key` has the name `field`, its value is a `type` (string; http-url: an absolute http or https URL), or null with `null_is_absent`.

    Not applicable when: the attribute is absent or not a JSON object (attr_json reports that), or the object
    has no name `field` (or, with `null_is_absent`, holds null there: an optional field with no value).
    """
    parsed = _json_object(node, options["key"])
    field = options["field"]
    if field not in parsed:
        raise NotApplicable(f"{node.path} attribute {options['key']!r} has no {field!r}")
    if parsed[field] is None and options.get("null_is_absent"):
        raise NotApplicable(f"{node.path} attribute {options['key']!r} holds null for {field!r}: the optional field has no value")
    if not JSON_FIELD_TYPES[options["type"]](parsed[field]):
        value = json.dumps(parsed[field])
        yield Finding(
            f"{options['key']} {field!r} is {value[:80]}, expected {JSON_FIELD_WORDS[options['type']]}",
            details={"field": field, "value": parsed[field] if isinstance(parsed[field], (str, int, float, bool)) else value},
        )


RGB = re.compile(r"#[0-9A-Fa-f]{6}")


@check(options={"properties": {"key": KEY, "suffix": {"type": "string", "minLength": 1}}, "required": ["key", "suffix"]})
def color_tables(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Each name in the JSON object in attribute `key` ends with `suffix`, and its value maps label names to "#RRGGBB" colors.

    Not applicable when: the attribute is absent or not a JSON object (attr_json reports that).
    """
    parsed = _json_object(node, options["key"])
    for name, table in parsed.items():
        if not name.endswith(options["suffix"]):
            yield Finding(f"{options['key']} table {name!r} is not named <category>{options['suffix']}", details={"table": name})
        if not isinstance(table, dict):
            yield Finding(
                f"{options['key']} table {name!r} is {json.dumps(table)[:60]}, expected a dictionary of label colors",
                details={"table": name},
            )
            continue
        bad = [(label, color) for label, color in table.items() if not (isinstance(color, str) and RGB.fullmatch(color))]
        if bad:
            label, color = bad[0]
            yield Finding(
                f"{options['key']} table {name!r} maps {label!r} to {json.dumps(color)}, not an RGB color #RRGGBB "
                f"({len(bad)} such label(s))",
                details={"table": name, "label": label},
            )


@check(options={"properties": {"key": KEY, "except": NAMES}, "required": ["key"]}, kind="array")
def schema_columns_name_attributes(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Each top-level name of the JSON object in attribute `key` (apart from `except`) names a TileDB attribute of the array and holds a JSON object.

    Not applicable when: the attribute is absent or not a JSON object (attr_json reports that), or the array
    is not a TileDB array.
    """
    parsed = _json_object(node, options["key"])
    columns = {a["name"] for a in _schema_facts(node).get("attrs", [])}
    for name, entry in parsed.items():
        if name in options.get("except", []):
            continue
        if name not in columns:
            yield Finding(
                f"{options['key']} has an entry {name!r}, which names no attribute of the array", details={"column": name}
            )
        elif not isinstance(entry, dict):
            yield Finding(
                f"{options['key']} entry {name!r} is {json.dumps(entry)[:60]}, expected a JSON dictionary",
                details={"column": name},
            )


@check(options={"properties": {"key": KEY}, "required": ["key"]}, kind="array")
def schema_index_names_attribute(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The JSON object in attribute `key` has a string `index` naming one of the array's TileDB attributes.

    Not applicable when: the attribute is absent or not a JSON object (attr_json reports that), or the array is
    not a TileDB array (its attributes are unknown).
    """
    parsed = _json_object(node, options["key"])
    names = [a["name"] for a in _schema_facts(node).get("attrs", [])]
    index = parsed.get("index")
    if index is None:
        yield Finding(f"{options['key']} has no 'index'")
    elif not isinstance(index, str):
        yield Finding(f"{options['key']} index is {index!r}, not a string", details={"index": index})
    elif index not in names:
        yield Finding(
            f"{options['key']} index {index!r} names no attribute of the array ({', '.join(names)})", details={"index": index}
        )


def _categories(node: Node, key: str) -> list | None:
    parent = node.parent
    text = parent.attrs.get(key) if parent is not None else None
    try:
        schema = loads(text) if isinstance(text, str) else None
    except JSONProblem:
        return None
    entry = schema.get(node.name) if isinstance(schema, dict) else None
    if isinstance(entry, dict) and entry.get("type") == "categorical" and isinstance(entry.get("categories"), list):
        return entry["categories"]
    return None


def _schema_type(node: Node, key: str) -> str | None:
    """The "type" of the column's entry in the parent array's JSON attribute `key` (cxg_schema), if any."""
    parent = node.parent
    text = parent.attrs.get(key) if parent is not None else None
    try:
        schema = loads(text) if isinstance(text, str) else None
    except JSONProblem:
        return None
    entry = schema.get(node.name) if isinstance(schema, dict) else None
    return entry.get("type") if isinstance(entry, dict) and isinstance(entry.get("type"), str) else None


def _boolean_bounds(node: Node, options: Options, scope: Scope):
    if _schema_type(node, options["key"]) != "boolean":
        raise NotApplicable(f"{node.path} is not a boolean column of the array's {options['key']}")
    return {"outside": FactRequest("count_outside", (("low", 0), ("high", 1), ("limit", options.get("max_examples", 5))))}


@check(
    options={"properties": {"key": KEY, "max_examples": {"type": "integer", "minimum": 1, "maximum": 1000}}, "required": ["key"]},
    kind="array",
    dtype_kinds="iu",
    facts=_boolean_bounds,
)
def boolean_column_values(node: Node, options: Options, scope: Scope, facts) -> Iterator[Finding]:
    """Every value of a column the parent's `key` (cxg_schema) hints as "boolean" is 0 or 1.

    Memory: one block at a time; every element is scanned, shared with other rules on this column.
    Not applicable when: the column has no "boolean" entry in `key`, or is not stored as integers.
    """
    result = facts["outside"]
    if result is None or not result.count:
        return
    for o in result.found:
        yield Finding(
            f"value {o.value} at index {o.index} is neither 0 nor 1 ({result.count} in all; min {result.minimum}, "
            f"max {result.maximum})",
            index=(o.index,),
            details={"value": o.value, "count": result.count},
        )


@check(
    options={
        "properties": {"key": KEY, "type": {"type": "string", "minLength": 1}, "dtype": {"type": "string"}},
        "required": ["key", "type", "dtype"],
    },
    kind="array",
    dtype_kinds="iufcSUO",
)
def schema_hinted_dtype(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """A column the parent's `key` (cxg_schema) hints as `type` is stored with dtype `dtype` (byte order aside).

    Not applicable when: the column has no entry of that type in `key`, or is stored as booleans (kind "b":
    dtype_kind_not judges TileDB's boolean type, whatever the schema says).
    """
    if _schema_type(node, options["key"]) != options["type"]:
        raise NotApplicable(f"{node.path} is not a {options['type']} column of the array's {options['key']}")
    want = np.dtype(options["dtype"])
    if node.dtype.newbyteorder("=") != want.newbyteorder("="):
        yield Finding(
            f"is hinted {options['type']!r} in {options['key']} but stored as {node.dtype.name}, expected {want.name}",
            details={"dtype": node.dtype.name},
        )


def _codes_bounds(node: Node, options: Options, scope: Scope):
    categories = _categories(node, options["key"])
    if categories is None:
        raise NotApplicable(f"{node.path} is not a categorical column of the array's {options['key']}")
    params = (("low", 0), ("high", len(categories) - 1), ("limit", options.get("max_examples", 5)))
    return {"outside": FactRequest("count_outside", params)}


@check(
    options={"properties": {"key": KEY, "max_examples": {"type": "integer", "minimum": 1, "maximum": 1000}}, "required": ["key"]},
    kind="array",
    dtype_kinds="iu",
    facts=_codes_bounds,
)
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
        yield Finding(
            f"code {o.value} at index {o.index} is outside the {n} categories [0, {n - 1}] "
            f"({result.count} in all; min {result.minimum}, max {result.maximum})",
            index=(o.index,),
            details={"value": o.value, "count": result.count},
        )
    if result.count > len(result.found):
        yield Omitted(result.count - len(result.found))


def _cells(node: Node | None) -> Node | None:
    """The stored-cells child of a sparse TileDB array (see spec_validate.nodes.tiledb.tree), or None."""
    return node.child(CELLS) if node is not None and node.kind == "array" else None


def _cell_digests(node: Node, options: Options, scope: Scope):
    mine, other = _cells(node), _cells(scope.node(node, options["other"]))
    if mine is None:
        raise NotApplicable(f"{node.path} is not a sparse TileDB array (no stored cells)")
    if other is None:
        raise NotApplicable(f"{options['other']} is not a sparse TileDB array (no stored cells)")
    for cells in (mine, other):
        missing = [f for f in options["fields"] if f not in (cells.dtype.names or ())]
        if missing:
            raise NotApplicable(f"the cells of {cells.path.rsplit('/', 1)[0]} have no field {json.dumps(missing[0])}")
    params = (("fields", tuple(options["fields"])),)
    return {
        "mine": FactRequest("cell_digest", params, node=mine.path),
        "other": FactRequest("cell_digest", params, node=other.path),
    }


@check(
    options={"properties": {"other": PATH, "fields": NAMES}, "required": ["other", "fields"]}, kind="array", facts=_cell_digests
)
def same_cells_as(node: Node, options: Options, scope: Scope, facts) -> Iterator[Finding]:
    """The sparse array stores the same cells as the sparse array at `other`: as many, and equal in `fields` (coordinates and values), in any order.

    Each array is summarised in its own pass (a count, and an order-free hash of each cell's `fields`, values
    compared as numbers whatever their width), and the summaries are compared: no cell of one is held against
    the other. Memory: one block of one array at a time.
    Not applicable when: either node is not a sparse TileDB array, or its cells lack one of `fields`.
    """
    mine, theirs = facts["mine"], facts["other"]
    other = scope.node(node, options["other"])
    mine_count = mine.count if mine is not None else 0
    their_count = theirs.count if theirs is not None else 0
    if mine_count != their_count:
        yield Finding(
            f"stores {mine_count} cells, but {other.path} stores {their_count}: they are not the same matrix",
            details={"cells": mine_count, "other_cells": their_count},
        )
    elif mine is not None and theirs is not None and mine.sums != theirs.sums:
        fields = ", ".join(json.dumps(f) for f in options["fields"])
        yield Finding(
            f"stores {mine_count} cells, as {other.path} does, but not the same ones: their ({fields}) differ",
            details={"cells": mine_count},
        )


@check(
    options={
        "properties": {
            "prefix": {"type": "string", "minLength": 1},
            "defined": {"type": "object", "additionalProperties": NAMES},
        },
        "required": ["prefix", "defined"],
    }
)
def prefixed_names_defined(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every name at the node that starts with `prefix` (its own name, its metadata keys, its TileDB attributes) is one `defined` lists where it stands.

    `defined` maps a path from the scope root to the prefixed names that place may hold: the members of the group
    there, and the metadata keys and attributes of the node there. The node's own name is looked up under its
    parent's path. A column of a multi-attribute TileDB array (and a sparse array's cells) is judged with its
    array, from the array's schema, not again as a node of its own.
    """
    prefix, defined = options["prefix"], options["defined"]
    facts = _tiledb_facts(node) or {}
    if "attribute_of" in facts or "cells_of" in facts:
        return
    parent = node.parent
    if parent is not None and node.name.startswith(prefix) and node.name not in defined.get(scope.relative_path(parent), ()):
        yield Finding(
            f"is named {node.name!r}, with the reserved prefix {prefix!r}, but names no object of this spec here",
            details={"name": node.name, "kind": "member"},
        )
    here = defined.get(scope.relative_path(node), ())
    for key in sorted(k for k in node.attrs if k.startswith(prefix) and k not in here):
        yield Finding(
            f"has metadata {key!r}, with the reserved prefix {prefix!r}, but no field of this spec has that name here",
            details={"name": key, "kind": "metadata"},
        )
    for name in sorted(a["name"] for a in facts.get("attrs", ()) if a["name"].startswith(prefix) and a["name"] not in here):
        yield Finding(
            f"has a TileDB attribute {name!r}, with the reserved prefix {prefix!r}, but no column of this spec has that name",
            details={"name": name, "kind": "attribute"},
        )
