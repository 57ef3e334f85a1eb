"""Primitives for AnnData elements beyond the generic ones: the buffers of an awkward array."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from validator.checks.schemas import KEY
from validator.nodes.base import Node
from validator.primitive_api import Finding, NotApplicable, Options, Scope, check

# The buffers `ak.to_buffers` writes for each node class of a form (awkward 2), named `<form_key>-<role>`.
# Awkward 1 spelled index widths into class names (ListOffsetArray64, IndexedOptionArray32): the prefix counts.
BUFFERS = {
    "NumpyArray": ("data",),
    "ListOffsetArray": ("offsets",),
    "ListArray": ("starts", "stops"),
    "IndexedArray": ("index",),
    "IndexedOptionArray": ("index",),
    "ByteMaskedArray": ("mask",),
    "BitMaskedArray": ("mask",),
    "UnionArray": ("tags", "index"),
    "RegularArray": (),
    "UnmaskedArray": (),
    "RecordArray": (),
    "EmptyArray": (),
}
_WIDTH = re.compile(r"(?:U?\d+|8_?\d*)$")


def _form_nodes(form: Any) -> Iterator[dict]:
    """Every node of a form (a JSON object with "class"), depth first."""
    if isinstance(form, str):  # a bare primitive form, such as "int64": a NumpyArray without a form key
        return
    if not isinstance(form, dict):
        return
    yield form
    content = form.get("content")
    if content is not None:
        yield from _form_nodes(content)
    contents = form.get("contents")
    if isinstance(contents, dict):
        contents = list(contents.values())
    for c in contents if isinstance(contents, list) else ():
        yield from _form_nodes(c)


def form_buffers(form: Any) -> list[tuple[str, str]]:
    """(buffer name, form class) for every buffer the form says `ak.from_buffers` will read."""
    out = []
    for node in _form_nodes(form):
        cls = node.get("class")
        key = node.get("form_key")
        if not isinstance(cls, str) or not isinstance(key, str):
            continue
        roles = BUFFERS.get(cls, BUFFERS.get(_WIDTH.sub("", cls), ()))
        out.extend((f"{key}-{role}", cls) for role in roles)
    return out


@check(options={"properties": {"key": KEY}, "required": ["key"]}, kind="group")
def awkward_buffers_present(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every buffer the awkward form in attribute `key` names (`<form_key>-<role>`) is a one-dimensional array of the group.

    The form is the JSON `ak.to_buffers` wrote; each node class reads its own buffers (NumpyArray `data`,
    ListOffsetArray `offsets`, ListArray `starts`/`stops`, the masked arrays `mask`, the indexed ones `index`,
    UnionArray `tags`/`index`), which `ak.from_buffers` looks up under those names.
    Not applicable when: the attribute is absent or not JSON text holding an object (the form rule reports that).
    """
    text = node.attrs.get(options["key"])
    try:
        form = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        form = None
    if not isinstance(form, dict):
        raise NotApplicable(f"{node.path} has no JSON form in attribute {options['key']!r}")
    for name, cls in form_buffers(form):
        child = node.child(name)
        if child is None:
            yield Finding(f"has no buffer {name!r}, which the form's {cls} reads", path=f"{node.path.rstrip('/')}/{name}",
                          details={"buffer": name, "class": cls})
        elif child.kind != "array" or child.shape is None or len(child.shape) != 1:
            what = f"a {child.kind}" if child.kind != "array" else f"an array of shape {child.shape}"
            yield Finding(f"buffer {name!r} is {what}, expected a one-dimensional array", path=child.path,
                          details={"buffer": name})
