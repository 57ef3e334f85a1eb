"""The grammar of a reader rule's `when`: conditions registered by name with `@fact_condition`, each holding of a
store's facts (`facts.StoreFacts`). Several conditions in one mapping must all hold, as in a selector.

A condition answers True, False or None (undecided: a clause it names was not evaluated in this run), and the
combinators follow three-valued logic, so a fact that could not be decided makes a prediction unknown, never
"opens".
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from spec_validate.discovery import claim
from spec_validate.engine.readers.facts import StoreFacts
from spec_validate.engine.selectors import matches
from spec_validate.errors import NodeError

Holds = Callable[[Any, StoreFacts], "bool | None"]


class FactCondition(NamedTuple):
    name: str
    schema: dict[str, Any]  # its value's JSON schema, in readers.schema.json's `when`
    holds: Holds
    doc: str


CONDITIONS: dict[str, FactCondition] = {}

_WHEN = {"$ref": "#/$defs/when"}
_SELECTOR = {"$ref": "#/$defs/selector"}


def fact_condition(name: str, schema: Mapping[str, Any]) -> Callable[[Holds], Holds]:
    """Register a condition of `when` under `name`, with its value's JSON schema; the function is returned unchanged."""

    def register(function: Holds) -> Holds:
        claim(CONDITIONS, name, function, "fact condition", lambda c: c.holds)
        CONDITIONS[name] = FactCondition(name, dict(schema), function, (function.__doc__ or "").strip())
        return function

    return register


def when_schema() -> dict[str, Any]:
    """The schema of a `when` mapping: one or more registered conditions, all of which must hold."""
    return {
        "type": "object",
        "additionalProperties": False,
        "minProperties": 1,
        "properties": {name: c.schema for name, c in CONDITIONS.items()},
    }


def holds(when: Mapping[str, Any], facts: StoreFacts) -> bool | None:
    """Whether every condition of `when` holds of the store: True, False, or None when one is undecided and none
    is false."""
    return _all(CONDITIONS[name].holds(want, facts) for name, want in when.items())


def _all(values: Any) -> bool | None:
    undecided = False
    for value in values:
        if value is False:
            return False
        undecided = undecided or value is None
    return None if undecided else True


def _any(values: Any) -> bool | None:
    undecided = False
    for value in values:
        if value is True:
            return True
        undecided = undecided or value is None
    return None if undecided else False


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _one_or_many(item: dict[str, Any]) -> dict[str, Any]:
    return {"oneOf": [item, {"type": "array", "items": dict(item), "minItems": 1}]}


def _glob_matches(patterns: Any, values: frozenset[str]) -> bool:
    return any(fnmatch.fnmatchcase(v, p) for p in _as_list(patterns) for v in values)


@fact_condition("node", _SELECTOR)
def node(want: Any, facts: StoreFacts) -> bool | None:
    """Some node of the store matches the selector (the selector grammar of the rule packs, paths from the root)."""
    return any(matches(want, n, facts.scope) for n in facts.nodes)


@fact_condition("failed", {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1})
def failed(want: Any, facts: StoreFacts) -> bool | None:
    """One of these clauses (rule ids, or `<pack>.legacy`) failed in this validation; undecided when none failed and
    one was not evaluated (not selected, or its pack does not apply)."""
    return _reported(want, facts.failed, facts)


@fact_condition("noticed", {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1})
def noticed(want: Any, facts: StoreFacts) -> bool | None:
    """One of these notice rules (`notice:` in their pack) reported findings in this validation: a fact of the store,
    never a conformance failure (so never in `failed`, nor in the measured vocabulary); undecided when none did and
    one was not evaluated (not selected, its pack does not apply, or a node it selected was not checked)."""
    return _reported(want, facts.noticed, facts)


def _reported(rules: Any, reported: Any, facts: StoreFacts) -> bool | None:
    """True when one of `rules` is among `reported`; False when none is and every one was evaluated; else undecided."""
    if any(rule in reported for rule in rules):
        return True
    return False if all(rule in facts.evaluated for rule in rules) else None


@fact_condition("storage_format", _one_or_many({"type": "string"}))
def storage_format(want: Any, facts: StoreFacts) -> bool | None:
    """The store's container format (`hdf5`, `zarr-v2`, `zarr-v3`, `tiledb`; globs) is one of these."""
    return _glob_matches(want, frozenset({facts.storage}))


@fact_condition("codec", _one_or_many({"type": "string"}))
def codec(want: Any, facts: StoreFacts) -> bool | None:
    """Some array is stored through one of these codecs or filters (ids as the store names them; globs)."""
    return _glob_matches(want, facts.codecs)


@fact_condition("dtype", _one_or_many({"type": "string"}))
def dtype(want: Any, facts: StoreFacts) -> bool | None:
    """Some array has one of these numpy dtypes, by name or by type string (`float16`, `<U*`, `|O`; globs)."""
    return _glob_matches(want, facts.dtypes)


@fact_condition(
    "ndim",
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["select", "ndim"],
        "properties": {"select": _SELECTOR, "ndim": _one_or_many({"type": "integer", "minimum": 0})},
    },
)
def ndim(want: Any, facts: StoreFacts) -> bool | None:
    """Some array the selector `select` matches has one of these numbers of dimensions (`ndim`)."""
    wanted = set(_as_list(want["ndim"]))
    return any(n.kind == "array" and matches(want["select"], n, facts.scope) and _ndim(n) in wanted for n in facts.nodes)


def _ndim(node: Any) -> int | None:
    try:
        return node.ndim
    except Exception:  # noqa: BLE001 (metadata that cannot be read: the validation reports it)
        return None


@fact_condition(
    "names_absent_member",
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["select", "attr"],
        "properties": {"select": _SELECTOR, "attr": {"type": "string", "minLength": 1}},
    },
)
def names_absent_member(want: Any, facts: StoreFacts) -> bool | None:
    """Some group the selector `select` matches has an attribute `attr` (a name, or a list of names) naming a
    member the group does not hold (a dataframe's `_index` or `column-order`)."""
    for n in facts.nodes:
        if n.kind != "group" or not matches(want["select"], n, facts.scope):
            continue
        try:
            names = n.attrs.get(want["attr"])
            if any(isinstance(name, str) and n.child(name) is None for name in _as_list(names if names is not None else [])):
                return True
        except Exception:  # noqa: BLE001 (metadata that cannot be read: the validation reports it)
            continue
    return False


@fact_condition(
    "metadata",
    {
        "type": "object",
        "additionalProperties": False,
        "minProperties": 1,
        "properties": {
            "select": _SELECTOR,
            "member": {
                "oneOf": [
                    {"type": "string", "minLength": 1},
                    {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
                ]
            },
            "value": _one_or_many({"type": "string"}),
            "absent": {"type": "boolean"},
            "chunks_missing": {"type": "boolean"},
        },
    },
)
def metadata(want: Any, facts: StoreFacts) -> bool | None:
    """Some node (of those the selector `select` matches, when given) has a stored metadata document (`.zarray`,
    `.zgroup`, `zarr.json`) with the member `member` (a dotted path, `chunk_grid.name`, or a list of keys where one holds a dot:
    `[attributes, ome, bioformats2raw.layout]`; without it, any document),
    whose value, when `value` is given, matches one of these globs (a value that is not a string is compared as its
    JSON text). With `absent: true`, the document (a JSON object) lacks the member instead. With `chunks_missing:
    true`, the node is also a Zarr v2 array that stores fewer chunks than its grid has (undecided where the store
    was not listed)."""
    member = want.get("member", [])
    path = member.split(".") if isinstance(member, str) else member
    undecided = False
    for n in facts.nodes:
        if "select" in want and not matches(want["select"], n, facts.scope):
            continue
        try:
            found: Any = n.metadata
        except Exception:  # noqa: BLE001 (metadata that cannot be read: the validation reports it)
            continue
        if found is None:
            continue
        if not _member_matches(want, found, path):
            continue
        if want.get("chunks_missing"):
            missing = _chunks_missing(n)
            undecided = undecided or missing is None
            if not missing:
                continue
        return True
    return None if undecided else False


def _member_matches(want: Mapping[str, Any], document: Any, path: list[str]) -> bool:
    """Whether the metadata `document` has the member at `path` (lacks it, with `absent`) with a value `value` matches."""
    found = document
    for key in path:
        found = found.get(key, _MISSING) if isinstance(found, Mapping) else _MISSING
    if want.get("absent"):
        return found is _MISSING
    if found is _MISSING:
        return False
    if "value" not in want:
        return True
    text = found if isinstance(found, str) else json.dumps(found, sort_keys=True)
    return _glob_matches(want["value"], frozenset({text}))


def _chunks_missing(node: Any) -> bool | None:
    """Whether the Zarr v2 array `node` stores fewer chunks than its grid has: False where it is none (or its shape,
    chunks or separator are unusable), None where the store was not listed (its keys are unknown)."""
    from spec_validate.checks.zarr_metadata import chunk_grid, classified_keys
    from spec_validate.model import NotApplicable, NotChecked

    if node.kind != "array":
        return False
    try:
        grid, sep = chunk_grid(node)
        stored = sum(1 for _, _, kind in classified_keys(node, grid, sep) if kind == "chunk")
    except (NotChecked, NodeError):
        return None
    except NotApplicable:
        return False
    total = 1
    for extent in grid:
        total *= extent
    return stored < total


_MISSING = object()


_JSON_TYPES = ("object", "array", "string", "number", "boolean", "null", "not-json")


@fact_condition(
    "document",
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "json"],
        "properties": {
            "select": _SELECTOR,
            "name": {"type": "string", "minLength": 1},
            "json": _one_or_many({"enum": list(_JSON_TYPES)}),
        },
    },
)
def document(want: Any, facts: StoreFacts) -> bool | None:
    """Some node (of those the selector `select` matches, when given) stores the document `name` beside it (`.zattrs`,
    `.zgroup`, `.zarray`, `zarr.json`: a key of the node itself), and its JSON value is of one of the types `json`:
    `object`, `array`, `string`, `number`, `boolean`, `null`, or `not-json` (stored, but no JSON: the parser the tree
    reads documents with, which reads a bare NaN or Infinity, refuses it). Undecided where the key is stored but
    cannot be read."""
    wanted = set(_as_list(want["json"]))
    undecided = False
    for n in facts.nodes:
        if "select" in want and not matches(want["select"], n, facts.scope):
            continue
        try:
            raw = n.read_key(want["name"])
        except NodeError:
            undecided = True
            continue
        if raw is None:
            continue
        if _json_type(raw) in wanted:
            return True
    return None if undecided else False


def _json_type(raw: bytes) -> str:
    from spec_validate.codecs.jsondoc import JSONProblem, loads

    try:
        value = loads(raw)
    except JSONProblem:
        return "not-json"
    return _value_type(value)


@fact_condition(
    "fill_value",
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["dtype_kind"],
        "minProperties": 2,
        "properties": {
            "select": _SELECTOR,
            "dtype_kind": _one_or_many({"type": "string", "pattern": "^[biufcmMOSUV]$"}),
            "json": _one_or_many({"enum": [t for t in _JSON_TYPES if t != "not-json"]}),
            "outside_range": {"const": True},
        },
    },
)
def fill_value(want: Any, facts: StoreFacts) -> bool | None:
    """Some array (of those the selector `select` matches, when given) whose data type is of one of the NumPy kinds
    `dtype_kind` (`i`, `u`, `c`, `V`, ...) stores in its metadata document a `fill_value` whose JSON type is one of
    `json` (`number`, `string`, `array`, `object`, `boolean`, `null`); with `outside_range: true`, an integer outside
    the range of its integer data type (kinds `i`, `u`). The fill value as stored, never converted; arrays whose
    metadata or data type cannot be read add nothing (the validation reports them)."""
    kinds = set(_as_list(want["dtype_kind"]))
    types = set(_as_list(want.get("json", [])))
    for n in facts.nodes:
        if n.kind != "array" or ("select" in want and not matches(want["select"], n, facts.scope)):
            continue
        try:
            document, dtype = n.metadata, n.dtype
        except Exception:  # noqa: BLE001 (metadata or a data type that cannot be read: the validation reports it)
            continue
        if not isinstance(document, Mapping) or "fill_value" not in document or dtype is None or dtype.kind not in kinds:
            continue
        value = document["fill_value"]
        if types and _value_type(value) not in types:
            continue
        if want.get("outside_range") and not _outside_range(value, dtype):
            continue
        return True
    return False


def _value_type(value: Any) -> str:
    """A parsed JSON value's type, as findings name types but with JSON's one number type."""
    from spec_validate.checks.attrs import type_name

    name = type_name(value)
    return "number" if name == "integer" else name


def _outside_range(value: Any, dtype: Any) -> bool:
    """Whether `value` is a JSON integer outside the range of the integer data type `dtype` (False for any other)."""
    import numpy as np

    if dtype.kind not in "iu" or isinstance(value, bool) or not isinstance(value, int):
        return False
    info = np.iinfo(dtype)
    return not info.min <= value <= info.max


@fact_condition("raw_key", _one_or_many({"type": "string", "minLength": 1}))
def raw_key(want: Any, facts: StoreFacts) -> bool | None:
    """The store holds a key, as stored (unnormalised: a `..` segment, a leading `/`, `a//b`, a backslash kept),
    matching one of these globs (`*` crosses `/`: `*/../*`); false for a container without keys (HDF5)."""
    try:
        keys = facts.scope.root.stored_raw_keys()
    except NodeError:
        return None
    return bool(keys) and _glob_matches(want, frozenset(keys))


@fact_condition(
    "stored_key",
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["select", "key"],
        "properties": {
            "select": _SELECTOR,
            "key": _one_or_many({"type": "string", "minLength": 1}),
            "absent": {"type": "boolean"},
        },
    },
)
def stored_key(want: Any, facts: StoreFacts) -> bool | None:
    """Some node the selector `select` matches stores below it a key matching one of the globs `key`, relative to the
    node, as the node layer lists them (`.zarray` is the node's own, `*/.zarray` any below it); with `absent: true`,
    some such node stores none. False for a container without keys; undecided where a node's keys are not all known
    (a folder that could not be listed, a store not listed)."""
    undecided = False
    for n in facts.nodes:
        if not matches(want["select"], n, facts.scope):
            continue
        try:
            keys = n.stored_keys() if n.keys_listed else None
        except NodeError:
            keys = None
        if keys is None:
            undecided = undecided or n.keys_listed is False
            continue
        found = _glob_matches(want["key"], frozenset(keys))
        if found != bool(want.get("absent")):
            return True
    return None if undecided else False


@fact_condition("all_of", {"type": "array", "items": _WHEN, "minItems": 1})
def all_of(want: Any, facts: StoreFacts) -> bool | None:
    """Every one of these facts holds."""
    return _all(holds(w, facts) for w in want)


@fact_condition("any_of", {"type": "array", "items": _WHEN, "minItems": 1})
def any_of(want: Any, facts: StoreFacts) -> bool | None:
    """At least one of these facts holds."""
    return _any(holds(w, facts) for w in want)


@fact_condition("not", _WHEN)
def not_(want: Any, facts: StoreFacts) -> bool | None:
    """The fact does not hold."""
    value = holds(want, facts)
    return None if value is None else not value
