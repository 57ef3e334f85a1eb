"""Selector matching: does a rule's `applies_to` select this node? All conditions must hold."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from validator.engine.context import Scope
from validator.nodes.base import Node

SELECTOR_KEYS = (
    "kind", "name", "path", "encoding-type", "encoding-version", "attrs", "has_attrs", "lacks_attrs",
    "has_children", "storage_format", "root", "parent", "any_of", "not",
)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


@lru_cache(maxsize=512)
def _path_regex(pattern: str) -> re.Pattern[str]:
    # `*` is one path segment, `**` any number of segments (at least one).
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".+")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]+")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def path_matches(path: str, pattern: str) -> bool:
    return bool(_path_regex(pattern).match(path))


def _version_matches(value: Any, spec: str) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return Version(value) in SpecifierSet(spec)
    except (InvalidVersion, InvalidSpecifier):
        return False


def matches(selector: Mapping[str, Any], node: Node, scope: Scope) -> bool:
    """True when every condition of `selector` holds for `node` (paths are relative to the scope root)."""
    for key, want in selector.items():
        if not _condition(key, want, node, scope):
            return False
    return True


def _condition(key: str, want: Any, node: Node, scope: Scope) -> bool:
    attrs = node.attrs
    if key == "kind":
        return node.kind in _as_list(want)
    if key == "name":
        return any(fnmatch.fnmatchcase(node.name, p) for p in _as_list(want))
    if key == "path":
        rel = scope.relative_path(node)
        return any(path_matches(rel, p) for p in _as_list(want))
    if key == "encoding-type":
        return attrs.get("encoding-type") in _as_list(want)
    if key == "encoding-version":
        return _version_matches(attrs.get("encoding-version"), want)
    if key == "attrs":
        return all(k in attrs and attrs[k] == v for k, v in want.items())
    if key == "has_attrs":
        return all(k in attrs for k in _as_list(want))
    if key == "lacks_attrs":
        return not any(k in attrs for k in _as_list(want))
    if key == "has_children":
        return all(node.child(n) is not None for n in _as_list(want))
    if key == "storage_format":
        return any(fnmatch.fnmatchcase(node.tree.format, p) for p in _as_list(want))
    if key == "root":
        return (node.path == scope.root.path) == bool(want)
    if key == "parent":
        parent = node.parent if node.path != scope.root.path else None
        return parent is not None and matches(want, parent, scope)
    if key == "any_of":
        return any(matches(s, node, scope) for s in want)
    if key == "not":
        return not matches(want, node, scope)
    raise KeyError(key)  # the pack schema rejects unknown keys before we get here


SELECTOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "kind": {"oneOf": [{"enum": ["group", "array", "link"]}, {"type": "array", "items": {"enum": ["group", "array", "link"]}}]},
        "name": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "path": {"oneOf": [{"type": "string", "pattern": "^/"}, {"type": "array", "items": {"type": "string", "pattern": "^/"}}]},
        "encoding-type": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "encoding-version": {"type": "string"},
        "attrs": {"type": "object"},
        "has_attrs": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "lacks_attrs": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "has_children": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "storage_format": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "root": {"type": "boolean"},
        "parent": {"$ref": "#/$defs/selector"},
        "any_of": {"type": "array", "items": {"$ref": "#/$defs/selector"}, "minItems": 1},
        "not": {"$ref": "#/$defs/selector"},
    },
}


def describe(selector: Mapping[str, Any]) -> str:
    """The selector in words, for --explain."""
    parts = []
    for key, want in selector.items():
        if key in ("parent", "not"):
            parts.append(f"{'whose parent is' if key == 'parent' else 'not'} ({describe(want)})")
        elif key == "any_of":
            parts.append("any of: " + " | ".join(f"({describe(s)})" for s in want))
        else:
            parts.append(f"{key} {'/'.join(map(str, _as_list(want))) if not isinstance(want, dict) else want}")
    return ", ".join(parts) or "every node"
