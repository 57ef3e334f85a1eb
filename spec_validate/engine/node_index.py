"""A scope's nodes indexed by name, path, encoding-type and parent, so each selector is matched only against the
nodes it can select; the selector grammar (`selectors.candidates`) decides which index a selector is bounded by."""

from __future__ import annotations

from typing import Any

from spec_validate.model import Scope
from spec_validate.nodes.base import Node


def _encoding(node: Node) -> Any:
    """The node's encoding-type attribute; None when its attributes cannot be read (its tree reports that)."""
    try:
        return node.attrs.get("encoding-type")
    except Exception:  # noqa: BLE001 (Unreadable, or a backend's own error: matching then reports the node)
        return None


class NodeIndex:
    """A scope's nodes in tree order, indexed to narrow each selector's candidates.

    A large store (thousands of dataframe columns) would otherwise match every rule without a literal name or
    path against every node.
    """

    def __init__(self, scope: Scope, members: list[Node]) -> None:
        self.members = members
        self.root = scope.root
        self.position = {id(n): i for i, n in enumerate(members)}
        self.by_name: dict[str, list[Node]] = {}
        self.by_encoding: dict[Any, list[Node]] = {}
        self.by_path: dict[str, Node] = {}  # by path relative to the scope root
        self.by_parent: dict[str, list[Node]] = {}  # by the parent's relative path
        self.by_parent_encoding: dict[Any, list[Node]] = {}
        self.by_kind: dict[str, list[Node]] = {}
        # What each any_of alternative selects, once worked out (`selectors.select`): selectors share alternatives.
        self.selected: dict[str, list[Node]] = {}
        for node in members:
            self.by_name.setdefault(node.name, []).append(node)
            self.by_kind.setdefault(node.kind, []).append(node)
            encoding = _encoding(node)
            if isinstance(encoding, str):
                self.by_encoding.setdefault(encoding, []).append(node)
            relative = scope.relative_path(node)
            self.by_path[relative] = node
            if node is not scope.root:
                self.by_parent.setdefault(relative.rsplit("/", 1)[0] or "/", []).append(node)
                parent_encoding = _encoding(node.parent) if node.parent is not None else None
                if isinstance(parent_encoding, str):
                    self.by_parent_encoding.setdefault(parent_encoding, []).append(node)

    def in_order(self, nodes: list[Node]) -> list[Node]:
        """`nodes` without repeats, in tree order."""
        unique = {id(n): n for n in nodes}
        return sorted(unique.values(), key=lambda n: self.position[id(n)]) if len(unique) > 1 else list(unique.values())
