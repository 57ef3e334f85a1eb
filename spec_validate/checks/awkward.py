"""Primitives for AnnData's awkward arrays: the buffers an awkward form names are stored beside it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from spec_validate.checks.api import Options, check, with_article
from spec_validate.checks.schemas import KEY
from spec_validate.codecs.jsondoc import JSONProblem, loads
from spec_validate.model import Finding, NotApplicable, Scope
from spec_validate.nodes.base import Node

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
# Awkward 1 spelled the index width into class names (ListOffsetArray64, IndexedOptionArray32, UnionArray8_64).
_WIDTH = re.compile(r"(?:U?\d+|8_?\d*)$")


def _roles(cls: Any) -> tuple[str, ...] | None:
    """The buffer roles of a form class (awkward 1 width suffixes included); None for a class awkward does not define."""
    if not isinstance(cls, str):
        return None
    return BUFFER_ROLES.get(cls, BUFFER_ROLES.get(_WIDTH.sub("", cls)))


def form_buffers(form: Any, where: str = "form") -> Iterator[tuple[str, str | None, str | None]]:
    """(location, buffer key, problem) for every buffer a form names, depth first; problem is set where the form is
    not one ak.from_buffers can read (an unknown class, a node needing buffers without a form_key)."""
    if isinstance(form, str):  # a bare primitive ("int64"): a NumpyArray with no form_key, so its buffer has no name
        yield where, None, f"is the bare primitive {form!r}, a NumpyArray without a form_key, so its buffer has no name"
        return
    if not isinstance(form, dict):
        yield where, None, f"is {json.dumps(form)[:60]}, expected a form object"
        return
    cls = form.get("class")
    roles = _roles(cls)
    if roles is None:
        yield where, None, f"has class {cls!r}, which awkward does not define"
        return
    key = form.get("form_key")
    if roles and not isinstance(key, str):
        yield where, None, f"is a {cls} without a form_key, so its buffers have no names"
    elif roles:
        for role in roles:
            yield where, f"{key}-{role}", None
    if form.get("content") is not None:
        yield from form_buffers(form["content"], f"{where}.content")
    contents = form.get("contents")
    if isinstance(contents, dict):  # awkward 1's RecordArray: contents keyed by field name
        for name, content in contents.items():
            yield from form_buffers(content, f"{where}.contents[{json.dumps(name)}]")
    elif isinstance(contents, list):
        for i, content in enumerate(contents):
            yield from form_buffers(content, f"{where}.contents[{i}]")


@check(options={"properties": {"key": KEY}, "required": ["key"]}, kind="group")
def awkward_buffers_present(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every buffer the awkward form in attribute `key` names (`<form_key>-<role>`, as ak.to_buffers writes them) is a one-dimensional array of the group.

    Each node class reads its own buffers (NumpyArray `data`, ListOffsetArray `offsets`, ListArray `starts` and
    `stops`, the masked arrays `mask`, the indexed ones `index`, UnionArray `tags` and `index`; awkward 1's
    width-suffixed class names alike), which `ak.from_buffers` looks up under those names. A form node of a class
    awkward does not define, or one that needs buffers but has no form_key, is a finding as well.
    Not applicable when: the attribute is absent, or is not JSON text holding an object (the rule on the form
    reports that).
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
            what = "no entry" if child is None else with_article(child.kind)
            yield Finding(
                f"the form names buffer {buffer!r} ({where}), but the group has {what} {buffer!r}",
                path=f"{node.path.rstrip('/')}/{buffer}",
                details={"buffer": buffer, "where": where},
            )
        elif child.shape is None or len(child.shape) != 1:
            yield Finding(
                f"buffer {buffer!r} ({where}) is an array of shape {child.shape}, expected a one-dimensional array",
                path=child.path,
                details={"buffer": buffer, "where": where},
            )
