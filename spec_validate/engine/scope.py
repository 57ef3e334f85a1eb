"""Where a pack is applied: the scope root and what the pack defines there (shapes, dimensions)."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any, NamedTuple

from spec_validate.model import NotApplicable, Pack
from spec_validate.nodes.base import Node, normalize_path

# How many levels of elements stored as groups a shape is looked for through: one (a dataframe's index group).
MOST_NESTED_SHAPES = 1


class PackScope(NamedTuple):
    """One place a pack is applied: the scope root, and the pack's definitions of shapes and dimensions (the
    implementation of `spec_validate.model.Scope`, the face primitives see).

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

    def logical_shape(self, node: Node, depth: int = 0) -> tuple[int, ...] | None:
        """The shape of the element a node encodes: an array's own shape, or what the pack's `shapes` say.

        A child that `shapes` names may itself be an element stored as a group (anndata with pandas 3 writes a
        dataframe's index as a nullable-string-array group): its length is then that element's, one level down at
        most, as a group linked into itself has no end.
        """
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
        if child is None or (child.kind != "array" and depth >= MOST_NESTED_SHAPES):
            return None
        shape = self.logical_shape(child, depth + 1)
        return shape[:1] if shape else None

    def dimension(self, name: str, base: Node) -> int:
        how = self.pack.dimensions.get(name)
        if how is None:
            raise NotApplicable(f"the pack defines no dimension {name!r}")
        value = self.value(base, how, what=name)
        if not _is_int(value):
            raise NotApplicable(f"{name} is not an integer ({value!r})")
        return value

    def value(self, base: Node, ref: Any, what: str = "value") -> Any:
        """A number from a reference: a literal, `{dimension}`, or `{node, dim|length|attr[, index]}`, plus `plus`.

        `{name}` in `node` is `base`'s own name (`../__categories/{name}`: the table anndata 0.7 keeps a column's
        categories in); `attr` may list names, the first one the node has being read.
        """
        if not isinstance(ref, Mapping):
            return ref
        if "dimension" in ref:
            value: Any = self.dimension(ref["dimension"], base)
        else:
            path = ref.get("node", ".")
            if "{name}" in path:
                if base.name in ("", ".", ".."):  # a name that would move the path rather than name a node
                    raise NotApplicable(f"{what}: {base.path} has no name to look {path} up by")
                path = path.replace("{name}", base.name)
            target = self.node(base, path)
            if target is None:
                raise NotApplicable(f"{what}: no node at {path}")
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
        """The attribute `ref["attr"]` of `target` (of a list of names, the first it has), or its item `ref["index"]`."""
        names = ref["attr"] if isinstance(ref["attr"], list) else [ref["attr"]]
        name = next((n for n in names if n in target.attrs), None)
        if name is None:
            raise NotApplicable(f"{what}: {target.path} has no attribute {' or '.join(map(repr, names))}")
        value = target.attrs[name]
        if "index" in ref:
            if not isinstance(value, list) or len(value) <= ref["index"]:
                raise NotApplicable(f"{what}: {target.path}[{name!r}] has no item {ref['index']}")
            value = value[ref["index"]]
        return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
