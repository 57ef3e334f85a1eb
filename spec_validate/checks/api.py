"""What a check primitive module imports: the `@check` decorator that registers a primitive by its function's name.

A primitive is one small function `(node, options, scope) -> Iterator[Finding]` whose docstring's first line says
what holds when it passes. Its module sits in this package, where `checks.registry` finds it (no list names it);
the findings, levels and exceptions it uses are `spec_validate.model`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from spec_validate.discovery import claim
from spec_validate.kernels.facts import FactRequest
from spec_validate.model import Finding

Options = Mapping[str, Any]
RequestFn = Callable[..., Mapping[str, FactRequest]]
# Why a clause on stored chunk bytes is not checked in a run without --deep (raised as NotChecked): the clause
# concerns the array all the same, so it is neither passed nor not applicable.
NEEDS_DEEP = "needs --deep"


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
        claim(REGISTRY, name, function, "check primitive", lambda p: p.function)
        schema = {"type": "object", "additionalProperties": False, "properties": {}, **(options or {})}
        doc = function.__doc__ or ""
        REGISTRY[name] = Primitive(name, function, schema, kind, dtype_kinds, facts, doc, own_metadata_only, own_keys, own_name)
        return function

    return register


def with_article(word: str) -> str:
    """`word` after the indefinite article it takes in a message ("an array", "a group")."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"
