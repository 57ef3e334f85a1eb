"""What a store shows the reader rules: its nodes, codecs, dtypes and storage format, and the clauses its validation
failed; and its vocabulary, the facts a measured case must have had for a prediction to say "opens".

Only the node layer is read (metadata, never array data), as checks read it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from spec_validate.errors import NodeError
from spec_validate.nodes.base import Node, Tree

# The kinds of vocabulary a measured format records (measured.yaml: `vocabulary.<format>.<kind>`).
ENCODINGS = "encodings"
CODECS = "codecs"
STORAGE = "storage"
FAILED = "failed"  # clause ids (and legacy verdicts) the validation failed: a way of not conforming is a fact too
VOCABULARY_KINDS = (ENCODINGS, CODECS, STORAGE, FAILED)


class WholeTree:
    """The whole store as the selector grammar's scope: a reader opens the file, not one pack's part of it."""

    def __init__(self, root: Node) -> None:
        self.root = root

    def relative_path(self, node: Node) -> str:
        return node.path


@dataclass
class StoreFacts:
    """What one store shows: its nodes in tree order, the codecs and dtypes its arrays use, its storage format, and
    the clause ids its validation evaluated and failed (legacy verdicts counting as failed clauses), and the notice
    rules that reported findings (`noticed`: facts, never failures, and no part of the vocabulary)."""

    storage: str
    scope: WholeTree
    nodes: list[Node]
    codecs: frozenset[str]
    dtypes: frozenset[str]
    failed: frozenset[str] = frozenset()
    evaluated: frozenset[str] = frozenset()
    vocabulary: dict[str, frozenset[str]] = field(default_factory=dict)
    noticed: frozenset[str] = frozenset()


def store_facts(tree: Tree, failed: Iterable[str] = (), evaluated: Iterable[str] = (), noticed: Iterable[str] = ()) -> StoreFacts:
    """The facts of `tree`, walked once; nodes whose metadata cannot be read add nothing (the validation reports
    them)."""
    failed = frozenset(failed)
    nodes = list(tree.walk())
    codecs: set[str] = set()
    dtypes: set[str] = set()
    encodings: set[str] = set()
    for node in nodes:
        encoding = _attr(node, "encoding-type")
        if isinstance(encoding, str):
            version = _attr(node, "encoding-version")
            encodings.add(encoding_word(encoding, version if isinstance(version, str) else None))
        if node.kind != "array":
            continue
        try:
            storage = node.storage
            dtype = node.dtype
        except NodeError:
            continue
        if storage is not None:
            codecs.update(c for c in storage.codecs if c)
        if dtype is not None:
            dtypes.update((dtype.name, dtype.str))
    vocabulary = {
        ENCODINGS: frozenset(encodings),
        CODECS: frozenset(codecs),
        STORAGE: frozenset({tree.format}),
        FAILED: frozenset(failed),
    }
    return StoreFacts(
        tree.format,
        WholeTree(tree.root),
        nodes,
        frozenset(codecs),
        frozenset(dtypes),
        failed,
        frozenset(evaluated),
        vocabulary,
        frozenset(noticed),
    )


def encoding_word(encoding_type: str, encoding_version: str | None) -> str:
    """An encoding-type and encoding-version pair as measured.yaml records it: `csr_matrix 0.1.0` (the type alone
    where no version is written)."""
    return f"{encoding_type} {encoding_version}" if encoding_version else encoding_type


def unseen(facts: StoreFacts, seen: dict[str, Any] | None) -> list[str]:
    """The store's vocabulary that no measured case of its format had, in words (`codec zstd`); everything when the
    format was never measured (`seen` None)."""
    out = []
    for kind in VOCABULARY_KINDS:
        known = set((seen or {}).get(kind, ()))
        for word in sorted(facts.vocabulary.get(kind, ())):
            if word not in known:
                out.append(f"{_SINGULAR[kind]} {word}")
    return out


_SINGULAR = {ENCODINGS: "encoding", CODECS: "codec", STORAGE: "storage", FAILED: "a failure of"}


def _attr(node: Node, key: str) -> Any:
    try:
        return node.attrs.get(key)
    except Exception:  # noqa: BLE001 (Unreadable, or a backend's own error: the validation reports the node)
        return None
