"""A tiny in-memory Node/Tree for testing primitives and the engine without files.

Build one from a nested dict: a dict is a group, a numpy array is an array, and the key
"@attrs" on either holds attributes. `blocks()` is counted per array, so tests can prove
what the engine read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from validator.nodes.base import DEFAULT_BLOCK_ELEMENTS, Block, Node, Storage, StringStorage, Tree, row_slices


class Arr:
    """An array spec with attributes, chunks and storage facts."""

    def __init__(self, values: Any, attrs: Mapping[str, Any] | None = None, chunks: tuple[int, ...] | None = None,
                 storage: Storage | None = None) -> None:
        self.values = np.asarray(values)
        self.attrs = dict(attrs or {})
        self.chunks = chunks
        self.storage = storage


class MemoryNode(Node):
    def __init__(self, tree: MemoryTree, path: str, spec: Any) -> None:
        self.tree = tree
        self.path = path
        if isinstance(spec, dict):
            self.kind = "group"
            self._attrs = dict(spec.get("@attrs", {}))
            self._spec = {k: v for k, v in spec.items() if k != "@attrs"}
            self._array = None
        else:
            arr = spec if isinstance(spec, Arr) else Arr(spec)
            self.kind = "array"
            self._attrs = arr.attrs
            self._array = arr
            self._spec = {}
        self._children: dict[str, Node] | None = None

    @property
    def attrs(self) -> Mapping[str, Any]:
        return self._attrs

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

    def blocks(self, max_elements: int = DEFAULT_BLOCK_ELEMENTS) -> Iterator[Block]:
        if self._array is None:
            return super().blocks(max_elements)
        return self._blocks(max_elements)

    def _blocks(self, max_elements: int) -> Iterator[Block]:
        v = self._array.values
        self.tree.reads[self.path] = self.tree.reads.get(self.path, 0) + 1
        row = int(np.prod(v.shape[1:], dtype=np.int64)) if v.ndim > 1 else 1
        for sl in row_slices(v.shape, self.chunks, max_elements):
            self.tree.blocks_read[self.path] = self.tree.blocks_read.get(self.path, 0) + 1
            yield Block(0 if sl.start is None else sl.start * row, (v[()] if v.ndim == 0 else v[sl]).reshape(-1))

    def edge_blocks(self, max_elements: int = DEFAULT_BLOCK_ELEMENTS):
        if self._array is None or not self._array.values.size:
            return None
        self.tree.edge_reads[self.path] = self.tree.edge_reads.get(self.path, 0) + 1
        v = self._array.values
        row = int(np.prod(v.shape[1:], dtype=np.int64)) if v.ndim > 1 else 1
        slices = list(row_slices(v.shape, self.chunks, max_elements))
        first, last = slices[0], slices[-1]
        return Block(0, v[first].reshape(-1)), Block((last.start or 0) * row, v[last].reshape(-1))


class MemoryTree(Tree):
    """`reads[path]`: blocks() passes started; `blocks_read[path]`: blocks yielded; `edge_reads[path]`: edge_blocks() calls."""

    def __init__(self, spec: dict[str, Any], format: str = "memory") -> None:
        self.source = "<memory>"
        self.format = format
        self.reads: dict[str, int] = {}
        self.blocks_read: dict[str, int] = {}
        self.edge_reads: dict[str, int] = {}
        self._root = MemoryNode(self, "/", spec)

    @property
    def root(self) -> Node:
        return self._root


def tree(spec: dict[str, Any], format: str = "memory") -> MemoryTree:
    return MemoryTree(spec, format)


def pack(rules=(), *, shapes=None, dimensions=None, scope=None, formats=(), name="test"):
    from validator.engine.model import Pack

    return Pack(name=name, title="Test pack", version="0.0.1", spec_source="test.md", path="<memory>", rules=tuple(rules),
                scope=scope or {}, shapes=shapes or {}, dimensions=dimensions or {}, formats=tuple(formats))


ANNDATA_SHAPES = {"csr_matrix": {"attr": "shape"}, "dataframe": {"child_from_attr": "_index"}, "categorical": {"child": "codes"}}
ANNDATA_DIMENSIONS = {"n_obs": {"node": "/obs", "length": True}, "n_var": {"node": "/var", "length": True}}


def scope(t: MemoryTree, **kwargs):
    from validator.engine.context import Scope

    kwargs.setdefault("shapes", ANNDATA_SHAPES)
    kwargs.setdefault("dimensions", ANNDATA_DIMENSIONS)
    return Scope(pack(**kwargs), t.root)


def findings(primitive: str, node: Node, options: Mapping[str, Any] | None = None, sc=None) -> list:
    """Run one primitive on one node as the engine would (facts computed over the node's blocks)."""
    from validator.checks import registry
    from validator.engine.run import compute_facts

    p = registry.get(primitive)
    assert p is not None, primitive
    options = dict(options or {})
    sc = sc or scope(node.tree)
    if p.facts is None:
        return list(p.function(node, options, sc))
    wanted = dict(p.facts(node, options, sc))
    facts = compute_facts(node, set(wanted.values()), 7)
    return list(p.function(node, options, sc, {k: facts[r] for k, r in wanted.items()}))


def passes(argnames: str, cases: list) -> Any:
    """parametrize with the cases expecting no finding (the last value of each case is the expected count)."""
    import pytest

    return pytest.mark.parametrize(argnames, [c for c in cases if c.values[-1] == 0])


def fails(argnames: str, cases: list) -> Any:
    """parametrize with the cases expecting findings."""
    import pytest

    return pytest.mark.parametrize(argnames, [c for c in cases if c.values[-1] != 0])
