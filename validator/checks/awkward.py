"""Primitives for AnnData's awkward arrays: the buffers an awkward form names are stored beside it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from validator.checks.schemas import KEY
from validator.nodes.base import Node
from validator.nodes.jsondoc import JSONProblem, loads
from validator.primitive_api import Finding, NotApplicable, Options, Scope, check

# The buffers ak.to_buffers writes for a node of each form class, named "<form_key>-<role>" (awkward 2).
BUFFER_ROLES = {
    "NumpyArray": ("data",),
    "ListOffsetArray": ("offsets",),
    "ListArray": ("starts", "stops"),
    "IndexedArray": ("index",),
    "IndexedOptionArray": ("index",),
    "ByteMaskedArray": ("mask",),
    "BitMaskedArray": ("mask",),
    "UnionArray": ("tags", "index"),
    "RegularArray": (),
    "RecordArray": (),
    "UnmaskedArray": (),
    "EmptyArray": (),
}


def form_buffers(form: Any, where: str = "form") -> Iterator[tuple[str, str | None, str | None]]:
    """(location, buffer key, problem) for every buffer a form names, depth first; problem is set where the form is
    not one ak.from_buffers can read (an unknown class, a node needing buffers without a form_key)."""
    if not isinstance(form, dict):
        yield where, None, f"is {json.dumps(form)[:60]}, expected a form object"
        return
    cls = form.get("class")
    if cls not in BUFFER_ROLES:
        yield where, None, f"has class {cls!r}, which awkward does not define"
        return
    roles = BUFFER_ROLES[cls]
    key = form.get("form_key")
    if roles and not isinstance(key, str):
        yield where, None, f"is a {cls} without a form_key, so its buffers have no names"
    elif roles:
        for role in roles:
            yield where, f"{key}-{role}", None
    if isinstance(form.get("content"), dict):
        yield from form_buffers(form["content"], f"{where}.content")
    for i, content in enumerate(form.get("contents") or []):
        yield from form_buffers(content, f"{where}.contents[{i}]")


@check(options={"properties": {"key": KEY}, "required": ["key"]}, kind="group")
def awkward_buffers_present(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every buffer the awkward form in attribute `key` names (`<form_key>-<role>`, as ak.to_buffers writes them) is an array of the group.

    Not applicable when: the attribute is absent, or is not a JSON object (the rule on the form reports that).
    """
    text = node.attrs.get(options["key"])
    if not isinstance(text, str):
        raise NotApplicable(f"{node.path} has no form string in {options['key']!r}")
    try:
        form = loads(text)
    except JSONProblem:
        raise NotApplicable(f"{node.path}[{options['key']!r}] is not JSON") from None
    if not isinstance(form, dict):
        raise NotApplicable(f"{node.path}[{options['key']!r}] is not a JSON object")
    for where, buffer, problem in form_buffers(form):
        if problem:
            yield Finding(f"{where} {problem}", details={"where": where})
            continue
        child = node.child(buffer)
        if child is None or child.kind != "array":
            what = "no entry" if child is None else f"a {child.kind}"
            yield Finding(
                f"the form names buffer {buffer!r} ({where}), but the group has {what} {buffer!r}",
                path=f"{node.path.rstrip('/')}/{buffer}",
                details={"buffer": buffer},
            )
