"""A tiny in-memory Node/Tree for testing primitives and the engine without files.

Build one from a nested dict: a dict is a group, a numpy array is an array, and the key
"@attrs" on either holds attributes ("@metadata" on a group, `Arr(metadata=...)` on an array, a stored
metadata document as a key/value backend gives it). Every block read is recorded per array, so tests can prove
what the engine read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from spec_validate.engine.scope import PackScope
from spec_validate.errors import NodeError
from spec_validate.kernels.block import Block
from spec_validate.model import Omitted
from spec_validate.nodes.base import (
    DEFAULT_BLOCK_ELEMENTS,
    Node,
    RowRange,
    Storage,
    StringStorage,
    Tree,
    block_row_ranges,
    row_elements,
)


class Arr:
    """An array spec with attributes, chunks and storage facts."""

    def __init__(
        self,
        values: Any,
        attrs: Mapping[str, Any] | None = None,
        chunks: tuple[int, ...] | None = None,
        storage: Storage | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        self.values = np.asarray(values)
        self.attrs = dict(attrs or {})
        self.chunks = chunks
        self.storage = storage
        self.metadata = metadata  # a stored metadata document, as a key/value backend gives it


class MemoryNode(Node):
    def __init__(self, tree: MemoryTree, path: str, spec: Any) -> None:
        self.tree = tree
        self.path = path
        if isinstance(spec, dict):
            self.kind = "group"
            self._attrs = dict(spec.get("@attrs", {}))
            self._metadata = spec.get("@metadata")
            self._spec = {k: v for k, v in spec.items() if k not in ("@attrs", "@metadata")}
            self._array = None
        else:
            arr = spec if isinstance(spec, Arr) else Arr(spec)
            self.kind = "array"
            self._attrs = arr.attrs
            self._metadata = arr.metadata
            self._array = arr
            self._spec = {}
        self._children: dict[str, Node] | None = None

    @property
    def attrs(self) -> Mapping[str, Any]:
        return self._attrs

    @property
    def metadata(self):
        return self._metadata

    @property
    def shape(self):
        return None if self._array is None else tuple(self._array.values.shape)

    @property
    def dtype(self):
        return None if self._array is None else self._array.values.dtype

    @property
    def chunks(self):
        return None if self._array is None else self._array.chunks

    @property
    def storage(self):
        if self._array is None:
            return None
        if self._array.storage is not None:
            return self._array.storage
        v = self._array.values
        string = None
        if v.dtype.kind == "U":
            string = StringStorage("fixed", "utf-32", v.dtype.str)
        elif v.dtype.kind == "O":
            string = StringStorage("variable", "utf-8", "|O")
        return Storage(format=self.tree.format, string=string)

    def children(self) -> dict[str, Node]:
        if self._children is None:
            base = self.path.rstrip("/")
            self._children = {name: MemoryNode(self.tree, f"{base}/{name}", self._spec[name]) for name in sorted(self._spec)}
        return self._children

    def block_rows(self, max_elements: int = DEFAULT_BLOCK_ELEMENTS) -> list[RowRange] | None:
        if self._array is None:
            raise NodeError(f"{self.path}: not an array")
        return block_row_ranges(self._array.values.shape, self.chunks, max_elements)

    def read_block(self, rows: RowRange) -> Block:
        v = self._array.values
        self.tree.block_reads.setdefault(self.path, []).append(rows)
        start, stop = rows
        return Block(start * row_elements(v.shape), (v[()] if v.ndim == 0 else v[start:stop]).reshape(-1))


class MemoryTree(Tree):
    """`block_reads[path]`: the row ranges read from that array, in the order read (every data read is one)."""

    def __init__(self, spec: dict[str, Any], format: str = "memory") -> None:
        self.source = "<memory>"
        self.format = format
        self.block_reads: dict[str, list[RowRange]] = {}
        self._root = MemoryNode(self, "/", spec)

    @property
    def root(self) -> Node:
        return self._root


def tree(spec: dict[str, Any], format: str = "memory") -> MemoryTree:
    return MemoryTree(spec, format)


def pack(rules=(), *, shapes=None, dimensions=None, scope=None, formats=(), name="test"):
    from spec_validate.model import Pack

    return Pack(
        name=name,
        title="Test pack",
        version="0.0.1",
        spec_source="test.md",
        path="<memory>",
        rules=tuple(rules),
        scope=scope or {},
        shapes=shapes or {},
        dimensions=dimensions or {},
        redirects={},
        formats=tuple(formats),
    )


ANNDATA_SHAPES = {"csr_matrix": {"attr": "shape"}, "dataframe": {"child_from_attr": "_index"}, "categorical": {"child": "codes"}}
ANNDATA_DIMENSIONS = {"n_obs": {"node": "/obs", "length": True}, "n_var": {"node": "/var", "length": True}}


def scope(t: MemoryTree, **kwargs):

    kwargs.setdefault("shapes", ANNDATA_SHAPES)
    kwargs.setdefault("dimensions", ANNDATA_DIMENSIONS)
    return PackScope(pack(**kwargs), t.root)


def findings(primitive: str, node: Node, options: Mapping[str, Any] | None = None, sc=None) -> list:
    """Run one primitive on one node as the engine would (facts computed over the node's blocks)."""
    from spec_validate.checks import registry
    from spec_validate.engine.run import compute_facts

    p = registry.get(primitive)
    assert p is not None, primitive
    options = dict(options or {})
    sc = sc or scope(node.tree)
    if p.facts is None:
        return [f for f in p.function(node, options, sc) if not isinstance(f, Omitted)]
    wanted = dict(p.facts(node, options, sc))
    given = {}
    for k, r in wanted.items():  # a request may name another array (FactRequest.node): its facts come from that one
        target = node if r.node is None else node.tree.get(r.node)
        given[k] = compute_facts(target, {r._replace(node=None)}, 7)[r._replace(node=None)]
    return [f for f in p.function(node, options, sc, given) if not isinstance(f, Omitted)]


def passes(argnames: str, cases: list) -> Any:
    """parametrize with the cases expecting no finding (the last value of each case is the expected count)."""
    import pytest

    return pytest.mark.parametrize(argnames, [c for c in cases if c.values[-1] == 0])


def fails(argnames: str, cases: list) -> Any:
    """parametrize with the cases expecting findings."""
    import pytest

    return pytest.mark.parametrize(argnames, [c for c in cases if c.values[-1] != 0])
