"""Selector matching: does a rule's `applies_to` select this node? All conditions must hold."""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from validator.primitive_api import Scope
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
    return isinstance(value, str) and _version_in(value, spec)


_RELEASE = re.compile(r"\d+(?:\.\d+)*\Z")
_SIMPLE_CLAUSE = re.compile(r"\s*(==|!=|>=|<=|>|<)\s*(\d+(?:\.\d+)*)\s*\Z")
_COMPARE = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, "<": lambda a, b: a < b,
}


@lru_cache(maxsize=4096)
def _version_in(value: str, spec: str) -> bool:
    """PEP 440: is `value` in the specifier set `spec`?

    Plain release numbers against plain comparisons ("0.2.0" against ">=0.1.0,<0.3") are compared here,
    release segments padded with zeros as PEP 440 says; every other form (pre-, post- and dev-releases,
    local versions, wildcards, `~=`, `===`) goes to `packaging`, whose import costs more than a small run.
    """
    clauses = [_SIMPLE_CLAUSE.match(c) for c in spec.split(",")] if spec.strip() else []
    if _RELEASE.match(value) and clauses and all(clauses):
        have = _release(value)
        return all(_COMPARE[m.group(1)](*_padded(have, _release(m.group(2)))) for m in clauses if m is not None)
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return Version(value) in SpecifierSet(spec)
    except (InvalidVersion, InvalidSpecifier):
        return False


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _padded(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    width = max(len(a), len(b))
    return a + (0,) * (width - len(a)), b + (0,) * (width - len(b))


# Conditions are tried cheapest first (the outcome is the same: all must hold).
_COST = {key: i for i, key in enumerate((
    "kind", "root", "name", "encoding-type", "has_attrs", "lacks_attrs", "attrs", "storage_format",
    "encoding-version", "path", "has_children", "parent", "not", "any_of",
))}
_ORDERED: dict[int, tuple[Mapping[str, Any], tuple[tuple[str, Any], ...]]] = {}


def _conditions(selector: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    cached = _ORDERED.get(id(selector))
    if cached is None or cached[0] is not selector:
        # The selector itself is kept in the entry, so its id cannot be reused by another object meanwhile.
        cached = (selector, tuple(sorted(selector.items(), key=lambda kv: _COST.get(kv[0], len(_COST)))))
        _ORDERED[id(selector)] = cached
    return cached[1]


def matches(selector: Mapping[str, Any], node: Node, scope: Scope) -> bool:
    """True when every condition of `selector` holds for `node` (paths are relative to the scope root)."""
    for key, want in _conditions(selector):
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
        elif key == "root":
            parts.append("the scope root" if want else "not the scope root")
        elif key == "attrs":
            parts.append(", ".join(f"attribute {k} = {json.dumps(v)}" for k, v in want.items()))
        else:
            parts.append(f"{key} {_either(_as_list(want))}")
    return ", ".join(parts) or "every node"


def _either(values: list[Any]) -> str:
    """`/obs`, `/obs or /var`, `/obs, /var or /X`: a selector's alternatives in words."""
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
