"""What a check primitive sees and yields: the `@check` decorator, levels, findings, scopes, not-applicable.

The one module every layer may import: primitives (`spec_validate/checks/`), the engine, the reports and the
nodes' users all meet here, so the layers read top-down with no circle (faces -> engine -> checks and
kernels -> nodes, with reports below the engine).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, NamedTuple

from spec_validate.kernels.facts import FactRequest
from spec_validate.nodes.base import Node, normalize_path

if TYPE_CHECKING:
    from spec_validate.engine.model import Pack


class Level(str, Enum):
    MUST = "MUST"
    SHOULD = "SHOULD"
    MAY = "MAY"

    @property
    def rank(self) -> int:
        return {"MUST": 3, "SHOULD": 2, "MAY": 1}[self.value]


class Status(str, Enum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_APPLICABLE = "not_applicable"
    ERROR = "error"
    # A rule that reports a fact worth knowing which is no conformance failure (a `notice:` rule, such as the
    # pickle codec the hdmf-zarr spec names as its default): its findings are shown, never fail a run.
    NOTICE = "notice"


@dataclass(frozen=True)
class Finding:
    """One thing a primitive found wrong. The engine fills in `path` when the primitive leaves it empty."""

    message: str
    path: str = ""
    index: tuple[int, ...] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    # Set by the engine, never by a primitive: the rule's `writers:` notes that fit the store (a note naming a
    # writer the store shows it was not written by is left off).
    writers: tuple[Any, ...] = ()


class Omitted(NamedTuple):
    """Yielded by a primitive after its findings: `count` more findings of the same kind that it does not list.

    A kernel that counts every offending element but keeps the first few (values_in_range) says how many it
    left out, so the report's count of findings, and its "... and N more", are exact.
    """

    count: int


class NotApplicable(Exception):
    """Raised while resolving a reference that does not exist; the clause is not applicable to this node."""


class NotChecked(NotApplicable):
    """The node is one the clause is about, but it cannot be checked safely (a codec off the allow-list, an
    object array, metadata too broken to read its data by). Unlike a plain NotApplicable, the report names
    such nodes even when the clause passes on the others: a node that was skipped is never silent."""


class Scope(NamedTuple):
    """One place a pack is applied: the scope root, and the pack's definitions of shapes and dimensions.

    Absolute paths in rules (`/obs`) are relative to the scope root, so an AnnData group inside
    a MuData file (`/mod/rna`) is checked exactly like one at the root of a file.
    `deep` is the user's --deep: primitives that read stored chunk bytes run only when it is set.
    """

    pack: Pack
    root: Node
    deep: bool = False

    def relative_path(self, node: Node) -> str:
        if self.root.path == "/":
            return node.path
        rest = node.path[len(self.root.path) :]
        return rest if rest.startswith("/") else "/" + rest if rest else "/"

    def node(self, base: Node, path: str) -> Node | None:
        """The node at `path`: relative to `base`, or absolute from the scope root."""
        if path.startswith("/"):
            target = normalize_path(posixpath.join(self.root.path, path.lstrip("/")))
        else:
            target = normalize_path(posixpath.join(base.path, path))
        return base.tree.get(target)

    def logical_shape(self, node: Node) -> tuple[int, ...] | None:
        """The shape of the element a node encodes: an array's own shape, or what the pack's `shapes` say."""
        if node.kind == "array":
            return node.shape
        how: Mapping[str, Any] | None = self.pack.shapes.get(str(node.attrs.get("encoding-type")))
        if not how:
            return None
        if "attr" in how:
            value = node.attrs.get(how["attr"])
            if isinstance(value, list) and all(_is_int(v) for v in value):
                return tuple(value)
            return None
        if "length_attr" in how:
            value = node.attrs.get(how["length_attr"])
            return (value,) if _is_int(value) else None
        name = node.attrs.get(how["child_from_attr"]) if "child_from_attr" in how else how.get("child")
        child = node.child(name) if isinstance(name, str) else None
        if child is None or child.kind != "array" or not child.shape:
            return None
        return child.shape[:1]

    def dimension(self, name: str, base: Node) -> int:
        how = self.pack.dimensions.get(name)
        if how is None:
            raise NotApplicable(f"the pack defines no dimension {name!r}")
        value = self.value(base, how, what=name)
        if not _is_int(value):
            raise NotApplicable(f"{name} is not an integer ({value!r})")
        return value

    def value(self, base: Node, ref: Any, what: str = "value") -> Any:
        """A number from a reference: a literal, `{dimension}`, or `{node, dim|length|attr[, index]}`, plus `plus`."""
        if not isinstance(ref, Mapping):
            return ref
        if "dimension" in ref:
            value: Any = self.dimension(ref["dimension"], base)
        else:
            target = self.node(base, ref.get("node", "."))
            if target is None:
                raise NotApplicable(f"{what}: no node at {ref.get('node')}")
            value = self._attr_value(target, ref, what) if "attr" in ref else self._extent(target, ref, what)
        if "plus" in ref:
            if not _is_int(value):
                raise NotApplicable(f"{what}: {value!r} is not an integer")
            value = value + ref["plus"]
        return value

    def _extent(self, target: Node, ref: Mapping, what: str) -> Any:
        """The length of `target` along `ref["dim"]` (default: its first dimension)."""
        shape = self.logical_shape(target)
        if "dim" not in ref:
            if not shape:
                raise NotApplicable(f"{what}: the length of {target.path} is unknown")
            return shape[0]
        if shape is None or len(shape) <= ref["dim"]:
            raise NotApplicable(f"{what}: {target.path} has no dimension {ref['dim']}")
        return shape[ref["dim"]]

    @staticmethod
    def _attr_value(target: Node, ref: Mapping, what: str) -> Any:
        """The attribute `ref["attr"]` of `target`, or its item `ref["index"]`."""
        if ref["attr"] not in target.attrs:
            raise NotApplicable(f"{what}: {target.path} has no attribute {ref['attr']!r}")
        value = target.attrs[ref["attr"]]
        if "index" in ref:
            if not isinstance(value, list) or len(value) <= ref["index"]:
                raise NotApplicable(f"{what}: {target.path}[{ref['attr']!r}] has no item {ref['index']}")
            value = value[ref["index"]]
        return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# ---------------------------------------------------------------- registration
Options = Mapping[str, Any]
RequestFn = Callable[..., Mapping[str, FactRequest]]


class Primitive(NamedTuple):
    name: str
    function: Callable[..., Iterator[Finding]]
    options_schema: Mapping[str, Any]
    kind: str | None  # the node kind the primitive applies to; others are not applicable
    dtype_kinds: str | None  # numpy dtype kinds it applies to, e.g. "iu"
    facts: RequestFn | None  # which array facts it needs, computed in the array's single pass
    doc: str = ""
    # True when its verdict depends only on what the node holds itself (`Node.signature`: kind, attributes,
    # stored document, dtype, shape, chunks, storage) and on its options, not on where the node is (path, name,
    # parent, children, stored keys, scope); its messages may name the node's path. With `facts`: which facts it
    # asks for, or that it does not apply, depends on no more than that and on `scope.deep` (its verdict on the
    # facts is the array's own). The engine then checks nodes of one signature once, for every verdict known
    # before a scan (thousands of dataframe columns share a handful of signatures).
    own_metadata_only: bool = False
    # True when its verdict depends only on the node's own metadata, as above, and on the keys stored below the
    # node, relative to it (`Node.stored_keys`): the chunk key clauses. Nodes of one signature that store the same
    # keys are then checked once (thousands of single-chunk dataframe columns store just "c/0" or "0").
    own_keys: bool = False
    # True when its verdict depends only on the node's name (the root having none) and on its options; its
    # messages may name the node's path. Nodes of one name are then checked once (the `codes` and `categories` of
    # every categorical column).
    own_name: bool = False

    @property
    def summary(self) -> str:
        return self.doc.strip().splitlines()[0] if self.doc.strip() else ""


REGISTRY: dict[str, Primitive] = {}


def check(
    *,
    options: Mapping[str, Any] | None = None,
    kind: str | None = None,
    dtype_kinds: str | None = None,
    facts: RequestFn | None = None,
    own_metadata_only: bool = False,
    own_keys: bool = False,
    own_name: bool = False,
) -> Callable[[Callable[..., Iterator[Finding]]], Callable[..., Iterator[Finding]]]:
    """Register a primitive under the function's name with its options schema and preconditions.

    `own_metadata_only`: the verdict depends only on the node's own metadata; `own_keys`: on that and the keys
    stored below the node; `own_name`: only on the node's name (see `Primitive`).
    """

    def register(function: Callable[..., Iterator[Finding]]) -> Callable[..., Iterator[Finding]]:
        name = function.__name__
        if name in REGISTRY:
            raise RuntimeError(f"check primitive {name!r} is registered twice")
        schema = {"type": "object", "additionalProperties": False, "properties": {}, **(options or {})}
        doc = function.__doc__ or ""
        REGISTRY[name] = Primitive(name, function, schema, kind, dtype_kinds, facts, doc, own_metadata_only, own_keys, own_name)
        return function

    return register
