"""The selector grammar (a rule's `applies_to`, a pack's `scope`), owned here: for each condition its name, its
schema, how a node meets it and how a scope's node index narrows the nodes that can. All conditions must hold."""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from spec_validate.errors import NodeError
from spec_validate.model import Scope
from spec_validate.nodes.base import Node

if TYPE_CHECKING:
    from spec_validate.engine.node_index import NodeIndex


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
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
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


# How a node meets each condition: one function per condition, given the condition's value (`want`).


def _kind(want: Any, node: Node, scope: Scope) -> bool:
    return node.kind in _as_list(want)


def _name(want: Any, node: Node, scope: Scope) -> bool:
    return any(fnmatch.fnmatchcase(node.name, p) for p in _as_list(want))


def _path(want: Any, node: Node, scope: Scope) -> bool:
    literals, patterns = _path_test(want)
    relative = scope.relative_path(node)
    return relative in literals or any(p.match(relative) for p in patterns)


_PATH_TESTS: dict[int, tuple[Any, tuple[frozenset[str], tuple[re.Pattern[str], ...]]]] = {}


def _path_test(want: Any) -> tuple[frozenset[str], tuple[re.Pattern[str], ...]]:
    """A path condition's literal paths as a set, and its patterns compiled: a list of nine paths is one lookup."""
    cached = _PATH_TESTS.get(id(want))
    if cached is None or cached[0] is not want:
        # The value itself is kept in the entry, so its id cannot be reused by another object meanwhile.
        values = _as_list(want)
        literals = frozenset(v for v in values if "*" not in v)
        cached = (want, (literals, tuple(_path_regex(v) for v in values if "*" in v)))
        _PATH_TESTS[id(want)] = cached
    return cached[1]


def _encoding_type(want: Any, node: Node, scope: Scope) -> bool:
    return node.attrs.get("encoding-type") in _as_list(want)


def _encoding_version(want: Any, node: Node, scope: Scope) -> bool:
    return _version_matches(node.attrs.get("encoding-version"), want)


def _attrs(want: Any, node: Node, scope: Scope) -> bool:
    attrs = node.attrs
    return all(k in attrs and attrs[k] == v for k, v in want.items())


def _has_attrs(want: Any, node: Node, scope: Scope) -> bool:
    attrs = node.attrs
    return all(k in attrs for k in _as_list(want))


def _lacks_attrs(want: Any, node: Node, scope: Scope) -> bool:
    attrs = node.attrs
    return not any(k in attrs for k in _as_list(want))


def _has_children(want: Any, node: Node, scope: Scope) -> bool:
    return all(node.child(n) is not None for n in _as_list(want))


def _storage_format(want: Any, node: Node, scope: Scope) -> bool:
    return any(fnmatch.fnmatchcase(node.tree.format, p) for p in _as_list(want))


def _root(want: Any, node: Node, scope: Scope) -> bool:
    return (node.path == scope.root.path) == bool(want)


def _parent(want: Any, node: Node, scope: Scope) -> bool:
    parent = node.parent if node.path != scope.root.path else None
    if parent is None:
        return False
    # The thousands of columns of one dataframe ask the same of one parent: it is matched once per parent selector
    # and scope root, and the answer kept on the parent (whose metadata does not change while it is read).
    memo = parent.__dict__.get("_as_parent")
    if memo is None:
        memo = parent.__dict__["_as_parent"] = {}
    key = (id(want), scope.root.path)
    found = memo.get(key)
    if found is None or found[0] is not want:
        # The selector itself is kept in the entry, so its id cannot be reused by another object meanwhile.
        found = memo[key] = (want, matches(want, parent, scope))
    return found[1]


def _any_of(want: Any, node: Node, scope: Scope) -> bool:
    return any(matches(s, node, scope) for s in want)


def _not(want: Any, node: Node, scope: Scope) -> bool:
    return not matches(want, node, scope)


# Which nodes of a scope's index can meet a condition, in tree order; None when the condition's value does not
# let an index bound them (a name glob, a path starting `/**`).


def _narrow_name(want: Any, index: NodeIndex) -> list[Node] | None:
    names = _literals(want)
    return None if names is None else index.in_order([n for k in names for n in index.by_name.get(k, [])])


def _narrow_path(want: Any, index: NodeIndex) -> list[Node] | None:
    literal = _literals(want)
    if literal is not None:
        return index.in_order([index.by_path[p] for p in literal if p in index.by_path])
    prefixes = _glob_prefixes(want)
    return None if prefixes is None else [n for p, n in index.by_path.items() if p.startswith(prefixes)]


def _narrow_encoding_type(want: Any, index: NodeIndex) -> list[Node] | None:
    return index.in_order([n for k in _as_list(want) for n in index.by_encoding.get(k, [])])


def _narrow_parent(want: Any, index: NodeIndex) -> list[Node] | None:
    """The children of the parents the parent selector names by literal path, else by encoding-type."""
    if not isinstance(want, Mapping):
        return None
    parents = _literals(want.get("path"))
    if parents is not None:
        return index.in_order([n for p in parents for n in index.by_parent.get(p, [])])
    encodings = want.get("encoding-type")
    if encodings is None:
        return None
    return index.in_order([n for k in _as_list(encodings) for n in index.by_parent_encoding.get(k, [])])


def _narrow_kind(want: Any, index: NodeIndex) -> list[Node] | None:
    kinds = _as_list(want)
    if len(kinds) == 1:
        return index.by_kind.get(kinds[0], [])
    return index.in_order([n for k in kinds for n in index.by_kind.get(k, [])])


def _narrow_root(want: Any, index: NodeIndex) -> list[Node] | None:
    return [index.root] if want is True else None


def _narrow_any_of(want: Any, index: NodeIndex) -> list[Node] | None:
    """The union of the alternatives' candidates, when every alternative is bounded."""
    if not isinstance(want, list) or not want:
        return None
    bounds = [narrow(a, index) if isinstance(a, Mapping) else None for a in want]
    if any(b is None for b in bounds):
        return None
    return index.in_order([n for b in bounds for n in b])  # type: ignore[union-attr]


def _literals(value: Any) -> list[str] | None:
    """The condition's values when none is a pattern (a glob or a `*` path segment), else None."""
    if value is None:
        return None
    values = _as_list(value)
    if not all(isinstance(v, str) and not any(ch in v for ch in "*?[") for v in values):
        return None
    return values


def _glob_prefixes(value: Any) -> tuple[str, ...] | None:
    """For path patterns: each one's leading segments before the first `*`, as a `/`-ended prefix of every path
    it can match; None when one of them has no such prefix (`/**`) or is no string."""
    prefixes = []
    for pattern in _as_list(value):
        if not isinstance(pattern, str):
            return None
        if "*" not in pattern:
            prefixes.append(pattern)  # a literal path: every path it matches starts with it
            continue
        head = pattern.split("*", 1)[0]
        prefix = head[: head.rfind("/") + 1]
        if prefix in ("", "/"):
            return None
        prefixes.append(prefix)
    return tuple(prefixes)


class Condition(NamedTuple):
    """One condition of the grammar."""

    schema: dict[str, Any]  # its value's JSON schema, in the pack schema's `selector`
    holds: Callable[[Any, Node, Scope], bool]  # does the node meet it
    narrow: Callable[[Any, NodeIndex], list[Node] | None] | None = None  # which indexed nodes can; None: not indexed
    # Whether it holds alike for every child of one parent that has one signature (it reads nothing but what the
    # signature covers, the parent and the store): not a name, path, place or members.
    siblings_alike: bool = False


def _one_or_many(item: dict[str, Any]) -> dict[str, Any]:
    return {"oneOf": [item, {"type": "array", "items": dict(item)}]}


_SELECTOR = {"$ref": "#/$defs/selector"}

CONDITIONS: dict[str, Condition] = {
    "kind": Condition(_one_or_many({"enum": ["group", "array", "link"]}), _kind, _narrow_kind, siblings_alike=True),
    "name": Condition(_one_or_many({"type": "string"}), _name, _narrow_name),
    "path": Condition(_one_or_many({"type": "string", "pattern": "^/"}), _path, _narrow_path),
    "encoding-type": Condition(_one_or_many({"type": "string"}), _encoding_type, _narrow_encoding_type, siblings_alike=True),
    "encoding-version": Condition({"type": "string"}, _encoding_version, siblings_alike=True),
    "attrs": Condition({"type": "object"}, _attrs, siblings_alike=True),
    "has_attrs": Condition(_one_or_many({"type": "string"}), _has_attrs, siblings_alike=True),
    "lacks_attrs": Condition(_one_or_many({"type": "string"}), _lacks_attrs, siblings_alike=True),
    "has_children": Condition(_one_or_many({"type": "string"}), _has_children),
    "storage_format": Condition(_one_or_many({"type": "string"}), _storage_format, siblings_alike=True),
    # The scope root's parent has no other child in the scope: it is told apart by its parent.
    "root": Condition({"type": "boolean"}, _root, _narrow_root, siblings_alike=True),
    "parent": Condition(dict(_SELECTOR), _parent, _narrow_parent, siblings_alike=True),
    # Each alike where every alternative, or the negated selector, is (`telling_names`).
    "any_of": Condition({"type": "array", "items": dict(_SELECTOR), "minItems": 1}, _any_of, _narrow_any_of),
    "not": Condition(dict(_SELECTOR), _not),
}

SELECTOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {key: condition.schema for key, condition in CONDITIONS.items()},
}

# Conditions are tried cheapest first (the outcome is the same: all must hold).
_COST = {
    key: i
    for i, key in enumerate(
        (
            "kind",
            "root",
            "name",
            "encoding-type",
            "has_attrs",
            "lacks_attrs",
            "attrs",
            "storage_format",
            "encoding-version",
            "path",
            "has_children",
            "parent",
            "not",
            "any_of",
        )
    )
}
# Indexes are asked most selective first: a literal name or path names a few nodes, an encoding-type more, a
# kind (every array, every group) most.
_NARROWING = ("name", "path", "encoding-type", "parent", "root", "any_of", "kind")
_ORDERED: dict[int, tuple[Mapping[str, Any], tuple[tuple[Callable[[Any, Node, Scope], bool], Any], ...]]] = {}


def _conditions(selector: Mapping[str, Any]) -> tuple[tuple[Callable[[Any, Node, Scope], bool], Any], ...]:
    """The selector's conditions as (test, value), cheapest first; an unknown key raises KeyError (the pack schema
    rejects those before a selector gets here)."""
    cached = _ORDERED.get(id(selector))
    if cached is None or cached[0] is not selector:
        # The selector itself is kept in the entry, so its id cannot be reused by another object meanwhile.
        ordered = sorted(selector.items(), key=lambda kv: _COST.get(kv[0], len(_COST)))
        cached = (selector, tuple((CONDITIONS[key].holds, want) for key, want in ordered))
        _ORDERED[id(selector)] = cached
    return cached[1]


def matches(selector: Mapping[str, Any], node: Node, scope: Scope) -> bool:
    """True when every condition of `selector` holds for `node` (paths are relative to the scope root).

    A condition on metadata that cannot be read (a `.zattrs` stored but unreadable) does not hold: the tree
    reports the unreadable document itself, and no clause claims the node lacks what could not be read.
    """
    try:
        return all(holds(want, node, scope) for holds, want in _conditions(selector))
    except NodeError:
        return False


_TELLING: dict[int, tuple[Mapping[str, Any], frozenset[str] | None]] = {}


def telling_names(selector: Mapping[str, Any]) -> frozenset[str] | None:
    """The names that tell apart, for `selector`, the children of one parent that share a signature: every other
    such child is selected or not alike (`Condition.siblings_alike`; a literal name or path is told by the name it
    ends in; a path pattern ending in `/**`, below a literal folder, by the parent alone). None where more than a
    name tells them apart (a glob on names, another path pattern, the node's members)."""
    cached = _TELLING.get(id(selector))
    if cached is None or cached[0] is not selector:
        # The selector itself is kept in the entry, so its id cannot be reused by another object meanwhile.
        cached = _TELLING[id(selector)] = (selector, _telling(selector))
    return cached[1]


def _telling(selector: Mapping[str, Any]) -> frozenset[str] | None:
    found: set[str] = set()
    for key, want in selector.items():
        if key in ("any_of", "not"):
            parts = want if key == "any_of" else [want]
            if not isinstance(parts, list) or not all(isinstance(p, Mapping) for p in parts):
                return None
            for part in parts:
                names = telling_names(part)
                if names is None:
                    return None
                found |= names
        elif key == "name":
            names = _literals(want)
            if names is None:
                return None
            found.update(names)
        elif key == "path":
            names = _path_names(want)
            if names is None:
                return None
            found |= names
        else:
            condition = CONDITIONS.get(key)
            if condition is None or not condition.siblings_alike:
                return None
    return frozenset(found)


def _path_names(want: Any) -> frozenset[str] | None:
    """The last names of a path condition's literal paths, where its patterns, if any, each end in `/**` below a
    literal folder (what they match below a parent depends on the parent alone); None for any other pattern."""
    names = set()
    for path in _as_list(want):
        if not isinstance(path, str):
            return None
        if path.endswith("/**") and not any(ch in path[:-3] for ch in "*?["):
            continue
        if any(ch in path for ch in "*?["):
            return None
        names.add(path.rsplit("/", 1)[-1])
    return frozenset(names)


def matching(selector: Mapping[str, Any], nodes: list[Node], match: Callable[[Mapping[str, Any], Node], bool]) -> list[Node]:
    """The nodes of `nodes` that `selector` selects, in their order, `match` deciding: once for each parent,
    signature and telling name (`telling_names`) where only those tell them apart (a wide dataframe's thousands
    of columns share a handful of signatures), else once per node."""
    telling = telling_names(selector) if len(nodes) > 1 else None
    if telling is None:
        return [n for n in nodes if match(selector, n)]
    decided: dict[tuple[int, Any, str | None], bool] = {}
    out = []
    for node in nodes:
        signature = node.signature
        if signature is None:
            chosen = match(selector, node)
        else:
            name = node.name if telling and node.name in telling else None
            key = (id(node.parent), signature, name)  # every parent lives as long as its tree: its id is not reused
            chosen = decided.get(key)  # type: ignore[assignment]
            if chosen is None:
                chosen = decided[key] = match(selector, node)
        if chosen:
            out.append(node)
    return out


def decided_by_kind(selector: Mapping[str, Any]) -> bool:
    """True when `selector` says nothing but the node's kind (`kind: array`, or any_of such selectors): the index's
    nodes of those kinds are exactly the nodes it selects."""
    if len(selector) != 1:  # one condition: the index narrows by it alone
        return False
    if "kind" in selector:
        return True
    want = selector.get("any_of")
    return isinstance(want, list) and bool(want) and all(isinstance(a, Mapping) and decided_by_kind(a) for a in want)


def candidates(selector: Mapping[str, Any], index: NodeIndex) -> list[Node]:
    """A superset of the nodes `selector` can match in the index, in tree order (matching still decides)."""
    narrowed = narrow(selector, index)
    return index.members if narrowed is None else narrowed


def narrow(selector: Mapping[str, Any], index: NodeIndex) -> list[Node] | None:
    """The nodes of `index` that can match `selector`, in tree order: a superset of those that do, bounded by one
    indexed condition (a selector is a conjunction, so any one bounds it); None when no condition is indexed."""
    for key in _NARROWING:
        want = selector.get(key)
        if want is not None:
            found = CONDITIONS[key].narrow(want, index)  # type: ignore[misc]
            if found is not None:
                return found
    return None


def select(
    selector: Mapping[str, Any],
    index: NodeIndex,
    scope: Scope,
    match: Callable[[Mapping[str, Any], Node], bool],
    memo: dict[str, list[Node]] | None = None,
) -> list[Node]:
    """The nodes of `index` that `selector` selects, in tree order; `match(selector, node)` decides each node the
    index alone cannot (the engine's `safe_match`, which reports a node it cannot read).

    Only the nodes that can meet a condition are matched (`narrow`), and none where the index decides alone: a
    kind, the scope root, literal paths, the children of literal paths, and a condition on the store's format,
    which holds for every node or none. `any_of` selects the union of what its alternatives select, each node
    matched only against the alternatives whose candidates it is among (the thousands of entries of `uns` are
    not tried against the alternatives for the root, its fixed members and their children first). `memo`, when
    given, keeps what each alternative selects, for the other selectors that share it (AnnData's "element" and
    "in uns" selectors share their alternative for the entries of dicts in `uns`).
    """
    if "storage_format" in selector:
        if not _storage_format(selector["storage_format"], index.root, scope):
            return []
        selector = _without(selector, "storage_format")
    if not selector:
        return list(index.members)
    if len(selector) == 1:
        ((key, want),) = selector.items()
        if key == "any_of" and isinstance(want, list) and want and all(isinstance(a, Mapping) for a in want):
            return index.in_order([n for alternative in want for n in _alternative(alternative, index, scope, match, memo)])
        decided = _decided(key, want, index)
        if decided is not None:
            return decided
    if "any_of" in selector and len(selector) > 1:
        rest = _without(selector, "any_of")
        if narrow(rest, index) is None:
            # The alternatives bound the nodes better than anything else does: select by them, then match the rest.
            return matching(rest, select(_without(selector, *rest), index, scope, match, memo), match)
    return matching(selector, candidates(selector, index), match)


def _alternative(
    selector: Mapping[str, Any],
    index: NodeIndex,
    scope: Scope,
    match: Callable[[Mapping[str, Any], Node], bool],
    memo: dict[str, list[Node]] | None,
) -> list[Node]:
    """What one alternative of an any_of selects, from `memo` when another selector has worked it out."""
    if memo is None:
        return select(selector, index, scope, match)
    key = selector_key(selector)
    found = memo.get(key)
    if found is None:
        found = memo[key] = select(selector, index, scope, match, memo)
    return found


def selector_key(selector: Mapping[str, Any]) -> str:
    """One text for equal selectors, whatever their key order (selections are kept by it)."""
    return json.dumps(selector, sort_keys=True, default=repr)


_PARTS: dict[tuple[int, tuple[str, ...]], tuple[Mapping[str, Any], Mapping[str, Any]]] = {}


def _without(selector: Mapping[str, Any], *keys: str) -> Mapping[str, Any]:
    """The selector without the conditions `keys`: one object per selector and keys, so the conditions of each
    part are ordered once (`_conditions` keeps them by the selector's identity), not once per run."""
    cached = _PARTS.get((id(selector), keys))
    if cached is None or cached[0] is not selector:
        # The selector itself is kept in the entry, so its id cannot be reused by another object meanwhile.
        cached = (selector, {k: v for k, v in selector.items() if k not in keys})
        _PARTS[(id(selector), keys)] = cached
    return cached[1]


def _decided(key: str, want: Any, index: NodeIndex) -> list[Node] | None:
    """The nodes that meet the one condition `key: want`, when the index holds exactly those; else None."""
    if key == "kind" or (key == "root" and want is True):
        return CONDITIONS[key].narrow(want, index)  # type: ignore[misc]
    if key == "root" and want is False:
        return [n for n in index.members if n is not index.root]
    if key == "path" and _literals(want) is not None:
        return _narrow_path(want, index)
    if key == "parent" and isinstance(want, Mapping) and set(want) == {"path"} and _literals(want["path"]) is not None:
        return _narrow_parent(want, index)
    return None


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
