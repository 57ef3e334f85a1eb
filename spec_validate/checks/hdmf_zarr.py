"""Primitives for hdmf-zarr stores: links and object references kept in JSON attributes, cached specifications."""

from __future__ import annotations

import posixpath
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from spec_validate.checks.api import Options, check
from spec_validate.checks.schemas import KEY, NAMES
from spec_validate.codecs.jsondoc import JSONProblem, loads
from spec_validate.excerpt import json_excerpt
from spec_validate.kernels.facts import FactRequest
from spec_validate.kernels.reference_objects import is_reference
from spec_validate.kernels.references import SELF_SOURCES
from spec_validate.model import Finding, NotApplicable, NotChecked, Omitted, Scope
from spec_validate.nodes.base import Node

# Findings listed per dataset by the element-by-element reference primitives: the first ones locate the problem,
# and the rest are counted (`Omitted`), so the report gives the exact number.
MAX_ELEMENT_FINDINGS = 20
# Codecs whose elements are text (strings, or JSON text).
TEXT_CODECS = {"vlen-utf8", "vlen-bytes", "json2", "json"}
# Object codecs whose elements may be dicts and lists (reference objects). Pickle is read as data, never unpickled
# (`codecs.pickled`): a chunk whose pickle calls anything but numpy's array reconstruction is not read.
OBJECT_VALUE_CODECS = {"json2", "json", "pickle"}
# Object codecs whose elements are strings (or bytes) only, never dicts.
STRING_CODECS = {"vlen-utf8", "vlen-bytes"}


def _codec_ids(node: Node) -> list[str]:
    meta = node.metadata or {}
    ids: list[str] = []
    filters = meta.get("filters")
    for f in filters if isinstance(filters, list) else []:
        if isinstance(f, dict) and isinstance(f.get("id"), str):
            ids.append(f["id"])
    comp = meta.get("compressor")
    if isinstance(comp, dict) and isinstance(comp.get("id"), str):
        ids.append(comp["id"])
    return ids


# zarr_dtype values that mark object references (the dtype mappings table: "ref", "reference", "object"; "region").
REFERENCE_DTYPES = ("object", "ref", "reference", "region")


def _target(node: Node, path: str) -> Node | None:
    """The node at an hdmf-zarr path, which names it from the store root whether or not it starts with "/":
    hdmf-zarr opens the source store's root group and looks the path up there (ZarrIO.resolve_ref)."""
    target = posixpath.normpath(posixpath.join("/", path))
    if target.startswith("//"):
        target = target[1:]
    return node.tree.get(target)


def _reference_fields(zarr_dtype: Any) -> list[tuple[int, str]]:
    """(position, name) of each field of a compound zarr_dtype ([{name, dtype}]) whose dtype marks references."""
    if not isinstance(zarr_dtype, list):
        return []
    return [
        (i, f.get("name", str(i))) for i, f in enumerate(zarr_dtype) if isinstance(f, dict) and f.get("dtype") in REFERENCE_DTYPES
    ]


def _references(node: Node) -> Iterator[tuple[str, Any]]:
    """(attribute key, value) for every attribute stored as an object reference (a dict with zarr_dtype)."""
    for key, value in node.attrs.items():
        if isinstance(value, dict) and "zarr_dtype" in value:
            yield key, value


@check(options={"properties": {"key": KEY}, "required": ["key"]})
def reserved_attr_absent(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The node carries no attribute named `key`."""
    key = options["key"]
    if key in node.attrs:
        yield Finding(
            f"carries attribute {key!r} ({json_excerpt(node.attrs[key])}), expected it only on the root group",
            details={"key": key, "value": node.attrs[key]},
        )


@check(options={"properties": {"key": KEY}, "required": ["key"]})
def attr_path_is_group(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The attribute `key` is a string naming a group that exists in the store.

    Not applicable when: the attribute is absent.
    """
    key = options["key"]
    if key not in node.attrs:
        raise NotApplicable(f"{node.path} has no {key!r}")
    value = node.attrs[key]
    if not isinstance(value, str) or not value.strip("/"):
        yield Finding(f"attribute {key!r} is {json_excerpt(value)}, expected the path of a group", details={"value": value})
        return
    target = _target(node, value)
    if target is None:
        # A store read without listing is seen as its consolidated metadata describes it (a reader of that
        # metadata finds no such node either, but the store may hold one written after it was consolidated).
        where = "the store" if node.keys_listed else "the store's consolidated metadata (the store was not listed)"
        yield Finding(f"attribute {key!r} is {value!r}, which names no node in {where}", details={"value": value})
    elif target.kind != "group":
        yield Finding(f"attribute {key!r} is {value!r}, which is an {target.kind}, expected a group", details={"value": value})


LINK_KEYS = {"name": "string", "source": "string", "path": "string"}


@check(options={"properties": {"key": KEY, "required": NAMES}, "required": ["key", "required"]})
def attr_link_list(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The attribute `key` is a JSON list of objects, each with a string value for every key in `required`.

    `object_id` and `source_object_id`, when present, are strings or null.
    Not applicable when: the attribute is absent.
    """
    key = options["key"]
    if key not in node.attrs:
        raise NotApplicable(f"{node.path} has no {key!r}")
    links = node.attrs[key]
    if not isinstance(links, list):
        yield Finding(f"attribute {key!r} is {json_excerpt(links)}, expected a list of link objects", details={"value": links})
        return
    for i, link in enumerate(links):
        if not isinstance(link, dict):
            yield Finding(f"{key}[{i}] is {json_excerpt(link)}, expected an object", details={"index": i})
            continue
        for k in options["required"]:
            if not isinstance(link.get(k), str):
                yield Finding(
                    f"{key}[{i}] has {k} {json_excerpt(link.get(k))}, expected a string", details={"index": i, "field": k}
                )
        for k in ("object_id", "source_object_id"):
            if k in link and not (link[k] is None or isinstance(link[k], str)):
                yield Finding(f"{key}[{i}] has {k} {json_excerpt(link[k])}, expected a string", details={"index": i, "field": k})


@check(options={"properties": {"required": NAMES, "zarr_dtypes": NAMES}, "required": ["required", "zarr_dtypes"]})
def attr_references_valid(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every attribute holding a dict with `zarr_dtype` has a zarr_dtype among `zarr_dtypes` and a `value` object with string `required` keys.

    Not applicable when: no attribute of the node is such a dict.
    """
    refs = list(_references(node))
    if not refs:
        raise NotApplicable(f"{node.path} has no reference attributes")
    for key, ref in refs:
        if ref["zarr_dtype"] not in options["zarr_dtypes"]:
            yield Finding(
                f"attribute {key!r} has zarr_dtype {json_excerpt(ref['zarr_dtype'])}, expected one of {options['zarr_dtypes']}",
                details={"key": key},
            )
            continue
        value = ref.get("value")
        if not isinstance(value, dict):
            yield Finding(f"attribute {key!r} has value {json_excerpt(value)}, expected a reference object", details={"key": key})
            continue
        for k in options["required"]:
            if not isinstance(value.get(k), str):
                yield Finding(
                    f"attribute {key!r} reference has {k} {json_excerpt(value.get(k))}, expected a string",
                    details={"key": key, "field": k},
                )


@check(options={"properties": {"of": {"enum": ["zarr_link", "attributes"]}}, "required": ["of"]})
def reference_targets_exist(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every link (`of: zarr_link`) or attribute reference (`of: attributes`) into this store names an existing node.

    A source other than "." (or empty) is another store: it is never opened, and its targets are not checked
    here (references_in_store reports each such link as not followed).
    Not applicable when: the node has no well-formed link or reference with a string source and path, or
    every one of them names another store (none is resolved here).
    """
    items = _link_items(node, options["of"])
    if not items:
        raise NotApplicable(f"{node.path} has no link or reference to resolve")
    local = [(where, ref) for where, ref in items if ref["source"] in SELF_SOURCES]
    if not local:
        raise NotApplicable(f"{node.path} has no link or reference into this store; those into other stores are not followed")
    for where, ref in local:
        target = _target(node, ref["path"])
        if target is None:
            yield Finding(
                f"{where} points at {ref['path']!r}, which is not a node in this store",
                details={"target": ref["path"], "source": ref["source"]},
            )


def _link_items(node: Node, of: str) -> list[tuple[str, dict[str, Any]]]:
    """(where, reference object) for each well-formed link (`zarr_link`) or attribute reference of the node."""
    if of == "zarr_link":
        links = node.attrs.get("zarr_link")
        items = [(f"zarr_link[{i}]", link) for i, link in enumerate(links)] if isinstance(links, list) else []
    else:
        items = [(f"attribute {k!r}", r.get("value")) for k, r in _references(node)]
    return [
        (w, r) for w, r in items if isinstance(r, dict) and isinstance(r.get("source"), str) and isinstance(r.get("path"), str)
    ]


@check(options={"properties": {"of": {"enum": ["zarr_link", "attributes"]}}, "required": ["of"]})
def references_in_store(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every link (`of: zarr_link`) or attribute reference (`of: attributes`) has source "." (this store).

    A source naming another store is reported, one finding per link, as not followed: the other store is
    never opened and its target never checked, so the link is not silently taken as valid.
    Not applicable when: the node has no well-formed link or reference with a string source and path.
    """
    items = _link_items(node, options["of"])
    if not items:
        raise NotApplicable(f"{node.path} has no link or reference")
    for where, ref in items:
        if ref["source"] not in SELF_SOURCES:
            name = f" ({ref['name']})" if isinstance(ref.get("name"), str) else ""
            yield Finding(
                f"{where}{name} names another store {ref['source']!r} (path {ref['path']!r}): not followed, "
                "its target is not checked",
                details={"source": ref["source"], "target": ref["path"]},
            )


def spec_cache(scope: Scope) -> Node:
    """The group where the specifications are cached: the one the scope root's `.specloc` names, else /specifications.

    Raises NotApplicable when `.specloc` names no group (hdmf-zarr.specloc.group reports it) or, without
    `.specloc`, the store has no /specifications.
    """
    root = scope.root
    value = root.attrs.get(".specloc", None)
    if value is None:
        cache = scope.node(root, "/specifications")
    else:
        cache = _target(root, value) if isinstance(value, str) and value.strip("/") else None
    if cache is None or cache.kind != "group":
        where = f".specloc {json_excerpt(value)}" if value is not None else "/specifications (no .specloc)"
        raise NotApplicable(f"{where} names no group of the store: no cached specifications to check")
    return cache


@check(options={"properties": {"depth": {"type": "integer", "minimum": 1}}, "required": ["depth"]})
def below_specloc(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The node lies exactly `depth` levels below the specification cache: the group the root's `.specloc` names.

    A selecting step: it never fails. depth 2 is <namespace>/<version>, depth 3 a cached source file. The
    cache is the group `.specloc` names wherever it is, and /specifications (the spec's default) only when
    the root has no `.specloc`.
    Not applicable when: the node lies elsewhere, or there is no cache group (see spec_cache).
    """
    cache = spec_cache(scope)
    base = cache.path.rstrip("/")
    rest = node.path[len(base) + 1 :] if node.path.startswith(base + "/") else None
    if rest is None or len(rest.split("/")) != options["depth"]:
        raise NotApplicable(f"not {options['depth']} levels below the specification cache {cache.path}")
    yield from ()


@check(options={"properties": {"keys": NAMES}, "required": ["keys"]})
def any_attr_string(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """At least one attribute among `keys` is present, and each of them present is a string."""
    present = [k for k in options["keys"] if k in node.attrs]
    if not present:
        yield Finding(
            f"has none of the attributes {', '.join(map(repr, options['keys']))}", details={"keys": list(options["keys"])}
        )
    for k in present:
        if not isinstance(node.attrs[k], str):
            yield Finding(f"attribute {k!r} is {json_excerpt(node.attrs[k])}, expected a string", details={"key": k})


# hdmf-zarr's marker of a scalar dataset (stored as a one-element array), which its reader reads back.
SCALAR_MARKER = "scalar"
# A NumPy typestr ("<f8", "|b1", "<M8[ns]"): hdmf-zarr stores dtype.str as zarr_dtype on data written chunk by chunk.
TYPESTR = re.compile(r"[<>|=]?[?bBiufcmMOSUV][0-9]*(\[[A-Za-z0-9]+\])?")


def _spelling(value: Any, table: Sequence[str]) -> str:
    """What a zarr_dtype value (or a compound field's dtype) is: "table", "writer" or "none".

    "table": a value of the dtype mappings table. "writer": a spelling hdmf-zarr writes for what the table does not
    list, and reads back: its scalar marker, a NumPy type name (dtype.type.__name__: "bytes", "uint64", "bool_") or a
    NumPy typestr. "none": anything else ("int128", a number), which names no type.
    """
    if not isinstance(value, str):
        return "none"
    if value in table:
        return "table"
    if value == SCALAR_MARKER or value in np.sctypeDict or TYPESTR.fullmatch(value):
        return "writer"
    return "none"


def _zarr_dtype_spellings(node: Node, table: Sequence[str]) -> Iterator[tuple[str, Any, str]]:
    """(where, value, what) for zarr_dtype, or for each field of a compound zarr_dtype (a list of {name, dtype}).

    `what` is a `_spelling`, or "malformed" for a compound field that is not {name, dtype} (`value` is then the
    field), or "nested" for a field dtype that is an object (a reference dtype) or a list (a nested compound type).
    """
    value = node.attrs["zarr_dtype"]
    if not (isinstance(value, list) and value):
        yield "zarr_dtype", value, _spelling(value, table)
        return
    for i, field in enumerate(value):
        where = f"zarr_dtype[{i}]"
        if not (isinstance(field, dict) and isinstance(field.get("name"), str) and "dtype" in field):
            yield where, field, "malformed"
        elif isinstance(field["dtype"], (list, dict)):
            yield where, field["dtype"], "nested"
        else:
            yield where, field["dtype"], _spelling(field["dtype"], table)


@check(options={"properties": {"values": NAMES}, "required": ["values"]}, kind="array")
def zarr_dtype_mapped(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The attribute zarr_dtype, or each field dtype of a compound one ([{name, dtype}]), is one of `values`, where it names a type at all.

    A compound field's dtype may also be an object (a reference dtype) or a list (a nested compound type). Reported
    here: each value outside `values` that still names a type hdmf-zarr writes and reads back (its scalar marker
    "scalar", a NumPy type name such as "bytes", a typestr such as "<f8"). A value that names no type ("int128", a
    number) and a compound field that is not {name, dtype} are zarr_dtype_names_type's to report.
    Not applicable when: the attribute is absent.
    """
    if "zarr_dtype" not in node.attrs:
        raise NotApplicable(f"{node.path} has no zarr_dtype")
    for where, value, what in _zarr_dtype_spellings(node, options["values"]):
        if what == "writer":
            yield Finding(
                f"{where} is {json_excerpt(value)}, which the dtype mappings table does not list", details={"value": value}
            )


@check(options={"properties": {"values": NAMES}, "required": ["values"]}, kind="array")
def zarr_dtype_names_type(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The attribute zarr_dtype names a type: one of `values`, or a spelling hdmf-zarr writes and reads back.

    Those spellings are its scalar marker "scalar", NumPy type names ("bytes", "uint64") and NumPy typestrs
    ("<f8"). A compound zarr_dtype is a non-empty list of {name, dtype} whose dtypes name a type, or are an
    object (a reference dtype) or a list (a nested compound type).
    Not applicable when: the attribute is absent.
    """
    if "zarr_dtype" not in node.attrs:
        raise NotApplicable(f"{node.path} has no zarr_dtype")
    for where, value, what in _zarr_dtype_spellings(node, options["values"]):
        if what == "malformed":
            yield Finding(
                f"{where} is {json_excerpt(value)}, expected a compound field {{name, dtype}}",
                details={"where": where, "value": json_excerpt(value)},
            )
        elif what == "none":
            shown = value if isinstance(value, (str, int, float, bool)) else json_excerpt(value)
            yield Finding(
                f"{where} is {json_excerpt(value)}, which names no type: the dtype mappings table does not list it, "
                'and it is no spelling hdmf-zarr writes ("scalar", a NumPy type name or typestr)',
                details={"where": where, "value": shown},
            )


@check(options={"properties": {"id": KEY}, "required": ["id"]}, kind="array")
def codec_absent(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """No filter and no compressor of the array's stored metadata has codec id `id`.

    Reads only the raw `.zarray`; the data is never decoded.
    Not applicable when: the array has no readable metadata document, or it has neither `filters` nor
    `compressor` (its codecs are unknown; the zarr pack reports the missing fields).
    """
    meta = node.metadata
    if not isinstance(meta, dict):
        raise NotApplicable(f"{node.path} has no readable metadata document")
    if "filters" not in meta and "compressor" not in meta:
        raise NotApplicable(f"{node.path} metadata has neither 'filters' nor 'compressor'")
    if options["id"] in _codec_ids(node):
        details = {"codec": options["id"]}
        if "zarr_dtype" in node.attrs:  # what the dataset holds (hdmf-zarr's "object" for references)
            details["zarr_dtype"] = node.attrs["zarr_dtype"]
        yield Finding(
            f"is stored with the {options['id']!r} codec (filters/compressor in .zarray); its data is never decoded",
            details=details,
        )


# Top-level modules every Python has: its standard library, and the Python 2 names pickle maps onto it (protocols
# 0-2 write `__builtin__` and `copy_reg`).
STANDARD_MODULES = frozenset(sys.stdlib_module_names) | {"__builtin__", "copy_reg", "exceptions"}


def _pickle_calls(node: Node, options: Options, scope: Scope) -> Mapping[str, FactRequest]:
    if "pickle" not in _codec_ids(node):
        raise NotApplicable(f"{node.path} is not stored with the pickle codec")
    _json_coded(node)
    return {"calls": FactRequest("pickle_calls", (("limit", MAX_ELEMENT_FINDINGS),))}


def _provided(name: str, modules: Sequence[str]) -> bool:
    """The global `name` (module.attribute) comes from the standard library or one of `modules` (top-level names)."""
    top = name.split(".", 1)[0]
    return bool(name) and (top in STANDARD_MODULES or top in modules)


@check(options={"properties": {"modules": NAMES}, "required": ["modules"]}, kind="array", facts=_pickle_calls)
def pickle_calls_within(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """Every global the array's pickled chunks call comes from the Python standard library or one of `modules`.

    The engine's scan reads each pickled chunk as data, never unpickling it (`codecs.pickled`): a chunk whose
    pickle calls anything but numpy's object-array reconstruction is not read, and its record names the first
    global the stream calls (hdmf_zarr.utils.ZarrReference, as hdmf-zarr writes its references). One finding per
    array names the globals from other modules (and a pickle that names none: a persistent id or extension code,
    which only its writer's unpickler resolves): unpickling such a chunk imports a module a Python with only the
    standard library and `modules` lacks. The scan is shared with the reference clauses on the array. Memory: a
    few blocks, and at most 20 distinct globals.
    Not applicable when: the array is not stored with the pickle codec; not checked when it is not "|O" stored
    with safe compressors (its data is not read), or when its chunks call only globals within these modules: the
    rest of such a pickle is not read, so what else it calls is unknown.
    """
    result = facts["calls"]
    if result is None:  # no chunk is stored: nothing is unpickled
        return
    outside = [c for c in result.called if not _provided(c.name, options["modules"])]
    if not outside:
        if result.called:
            raise NotChecked(f"{result.called[0].reason}; what else its pickle calls is not read")
        return
    named = [c.name or "a persistent id or extension code" for c in outside]
    needs = sorted({c.name.split(".", 1)[0] for c in outside if c.name})
    shown = ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "")
    lacks = f"module {', '.join(needs)}" if needs else "its writer's unpickler"
    chunks = f"{result.unread} chunk{'' if result.unread == 1 else 's'} not read"
    yield Finding(
        f"its pickled chunks call {shown} (first in chunk {outside[0].first}; {chunks}): "
        f"unpickling them needs {lacks}, which a reader with only the standard library and {', '.join(options['modules'])} lacks",
        details={"calls": named, "modules": needs, "chunks": result.unread, "first": outside[0].first},
    )


def _is_scalar(node: Node) -> bool:
    """0-d, or hdmf-zarr's scalar: a one-element 1-d array marked with zarr_dtype "scalar"."""
    return node.shape == () or (node.shape == (1,) and node.attrs.get("zarr_dtype") == "scalar")


@check(kind="array")
def scalar_string_storage(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The array is a scalar of variable-length strings: dtype "|O" with a vlen-utf8, vlen-bytes or JSON codec.

    A scalar is 0-d, or (hdmf-zarr's way) a one-element 1-d array whose zarr_dtype attribute is "scalar".
    Reads only the raw `.zarray` and `.zattrs`.
    Not applicable when: the array has no readable metadata document, or it has no shape or dtype (the zarr
    pack reports those).
    """
    meta = node.metadata
    if not isinstance(meta, dict):
        raise NotApplicable(f"{node.path} has no readable metadata document")
    absent = [k for k in ("shape", "dtype") if k not in meta]
    if absent:
        raise NotApplicable(f"{node.path} metadata has no {absent[0]!r}")
    codecs = _codec_ids(node)
    if not _is_scalar(node):
        yield Finding(
            f'has shape {json_excerpt(meta.get("shape"))}, expected a scalar (shape [], or [1] with zarr_dtype "scalar")',
            details={"shape": meta.get("shape")},
        )
    if meta.get("dtype") != "|O" or not set(codecs) & TEXT_CODECS:
        yield Finding(
            f'has dtype {json_excerpt(meta.get("dtype"))} with codecs {codecs}, expected "|O" with a variable-length string codec',
            details={"dtype": meta.get("dtype")},
        )


# Codecs an element of an object dataset may pass through: text codecs, pickle read as data, and compressors that
# run no stored code. The scan decodes them with the one codec module; anything else is never decoded.
SAFE_CHUNK_CODECS = TEXT_CODECS | OBJECT_VALUE_CODECS | {"zlib", "gzip", "bz2", "lzma", "blosc", "zstd", "lz4"}


def _scalar_json(node: Node, options: Options, scope: Scope) -> Mapping[str, FactRequest]:
    codecs = set(_codec_ids(node))
    meta = node.metadata
    if (
        not isinstance(meta, dict)
        or not _is_scalar(node)
        or meta.get("dtype") != "|O"
        or not codecs & TEXT_CODECS
        or not codecs <= SAFE_CHUNK_CODECS
    ):
        raise NotChecked(f"{node.path} is not a scalar string stored with safe codecs; its data is not read")
    return {"invalid": FactRequest("invalid_json", (("limit", 1),))}


@check(kind="array", facts=_scalar_json)
def scalar_json_parses(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """The scalar's one string parses as JSON.

    The engine's scan reads the scalar's one chunk and decodes it with its text codec (json2, vlen-utf8,
    vlen-bytes) and a plain compressor; any other codec, pickle above all, is never run.
    Memory: one chunk of one element.
    Not applicable when: the array is not a scalar "|O" string array stored only with such codecs (it is
    then listed as not checked).
    """
    result = facts["invalid"]
    if result is None:
        raise NotChecked(f"{node.path} holds no element to parse")
    for bad in result.found:
        yield Finding(bad.reason, details={"value": bad.preview})


def _reference_elements(node: Node, options: Options, scope: Scope) -> Mapping[str, FactRequest]:
    _json_coded(node)
    required = tuple(options.get("required", ("source", "path")))
    params = (("required", required), ("limit", MAX_ELEMENT_FINDINGS), ("max_targets", MAX_TARGETS))
    return {"references": FactRequest("reference_elements", params)}


# Distinct in-store paths remembered per dataset; past this the rest are counted and listed as not checked.
MAX_TARGETS = 10_000


@check(options={"properties": {"required": NAMES}, "required": ["required"]}, kind="array", facts=_reference_elements)
def dataset_references_valid(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """Every element is a reference object with string `required` keys, and one with source "." names a node of the store.

    The engine's scan reads the dataset once, decoding only through JSON codecs, pickle read as data (never
    unpickled: a chunk whose pickle calls anything but numpy's array reconstruction, hdmf_zarr's ZarrReference
    class among them, leaves the dataset not checked) and plain compressors (shared with
    dataset_references_in_store). Chunks that are not stored read as the fill value, which is an element like any
    other. Each distinct path is looked up once. Memory: a few blocks, and at most 10,000 distinct paths.
    Not applicable when: the array is not "|O" stored with a JSON or pickle codec and safe compressors; such an
    array is listed as not checked.
    """
    result = facts["references"]
    if result is None:
        raise NotChecked(f"{node.path} holds no element")
    found = [(e.index, f"element [{e.index}] {e.problem}", e.text) for e in result.malformed_found]
    missing = [
        (index, f"element [{index}] points at {path!r}, which is not a node in this store", path)
        for path, index in result.targets
        if _target(node, path) is None
    ]
    for index, message, text in sorted(found + missing)[:MAX_ELEMENT_FINDINGS]:
        yield Finding(message, index=_unravel(index, node.shape), details={"element": text})
    total = result.malformed + len(missing)
    if total > MAX_ELEMENT_FINDINGS:
        yield Omitted(total - MAX_ELEMENT_FINDINGS)
    if result.targets_dropped:
        raise NotChecked(f"{node.path}: more than {MAX_TARGETS} distinct paths; only the first {MAX_TARGETS} were looked up")


@check(kind="array", facts=_reference_elements)
def dataset_references_in_store(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """Every reference object stored as an element of the dataset has source "." (this store).

    An element naming another store is reported, one finding per element, as not followed: the other store
    is never opened and its target never checked. Elements that are no reference object or have no string
    source and path are dataset_references_valid's to report. The scan that reads them is shared with it.
    Not applicable when: as for dataset_references_valid (the data is read the same way).
    """
    result = facts["references"]
    if result is None:
        raise NotChecked(f"{node.path} holds no element")
    for e in result.foreign_found:
        yield Finding(
            f"element [{e.index}] names another store {e.source!r} (path {e.path!r}): not followed, its target is not checked",
            index=_unravel(e.index, node.shape),
            details={"source": e.source, "target": e.path},
        )
    if result.foreign > len(result.foreign_found):
        yield Omitted(result.foreign - len(result.foreign_found))


def _json_coded(node: Node) -> None:
    """Raises NotChecked unless the array is "|O" stored with a JSON or pickle codec and safe compressors (how it is read)."""
    meta = node.metadata
    codecs = set(_codec_ids(node))
    if (
        not isinstance(meta, dict)
        or meta.get("dtype") != "|O"
        or not codecs & OBJECT_VALUE_CODECS
        or not codecs <= SAFE_CHUNK_CODECS
    ):
        raise NotChecked(f"{node.path} is not an object array stored with a JSON or pickle codec; its data is not read")


def _stored_dtype(node: Node) -> Any:
    return node.metadata.get("dtype") if isinstance(node.metadata, dict) else None


def _compound_references(node: Node, options: Options, scope: Scope) -> Mapping[str, FactRequest]:
    fields = _reference_fields(node.attrs.get("zarr_dtype"))
    if not fields:
        raise NotApplicable(f"{node.path} zarr_dtype marks no reference field")
    if _stored_dtype(node) != "|O":
        return {}  # the stored dtype alone fails the clause: nothing to read
    _json_coded(node)
    params = (
        ("required", tuple(options["required"])),
        ("limit", MAX_ELEMENT_FINDINGS),
        ("max_targets", MAX_TARGETS),
        ("fields", tuple(fields)),
        ("width", len(node.attrs["zarr_dtype"])),
    )
    return {"references": FactRequest("reference_elements", params)}


@check(options={"properties": {"required": NAMES}, "required": ["required"]}, kind="array", facts=_compound_references)
def compound_references_valid(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """In a compound dataset whose zarr_dtype marks reference fields, each element's reference fields are reference objects with string `required` keys, and one with source "." names a node of the store.

    hdmf-zarr stores such a dataset as an object array (dtype "|O") of rows, one value per field in zarr_dtype
    order, with ZarrReference dicts in the reference fields. The engine's scan reads the rows once, as for
    dataset_references_valid (JSON codecs, pickle read as data, plain compressors), and each distinct
    path is looked up once. A dataset stored with another dtype cannot hold reference objects and fails from its
    metadata alone. Memory: a few blocks, and at most 10,000 distinct paths.
    Not applicable when: zarr_dtype marks no reference field; the array is not JSON- or pickle-coded (listed as not
    checked).
    """
    fields = _reference_fields(node.attrs.get("zarr_dtype"))
    if "references" not in facts:
        dtype = _stored_dtype(node)
        yield Finding(
            f"zarr_dtype marks reference fields ({', '.join(n for _, n in fields)}), but the stored dtype is "
            f"{json_excerpt(dtype)}, which cannot hold reference objects",
            details={"dtype": dtype},
        )
        return
    result = facts["references"]
    if result is None:
        raise NotChecked(f"{node.path} holds no element")
    found = [(e.index, f"element [{e.index}] {e.problem}", {"element": e.text}) for e in result.malformed_found]
    fields_of = result.target_fields or (None,) * len(result.targets)
    missing = [
        (
            index,
            f"element [{index}] field {field!r} points at {path!r}, which is not a node in this store",
            {"field": field, "target": path},
        )
        for (path, index), field in zip(result.targets, fields_of, strict=True)
        if _target(node, path) is None
    ]
    for index, message, details in sorted(found + missing, key=lambda item: (item[0], item[1]))[:MAX_ELEMENT_FINDINGS]:
        yield Finding(message, index=_unravel(index, node.shape), details=details)
    total = result.malformed + len(missing)
    if total > MAX_ELEMENT_FINDINGS:
        yield Omitted(total - MAX_ELEMENT_FINDINGS)
    if result.targets_dropped:
        raise NotChecked(f"{node.path}: more than {MAX_TARGETS} distinct paths; only the first {MAX_TARGETS} were looked up")


def _marks_references(zarr_dtype: Any) -> bool:
    return zarr_dtype in REFERENCE_DTYPES if isinstance(zarr_dtype, str) else bool(_reference_fields(zarr_dtype))


def _unmarked_objects(node: Node, options: Options, scope: Scope) -> Mapping[str, FactRequest]:
    dtype = _stored_dtype(node)
    if dtype is None:
        raise NotApplicable(f"{node.path} has no readable dtype in its metadata document")
    if _marks_references(node.attrs.get("zarr_dtype")) or dtype != "|O":
        return {}  # judged from the metadata alone: a marked dataset's dtype, or a dtype that holds no reference object
    codecs = set(_codec_ids(node))
    if codecs & STRING_CODECS and not codecs & OBJECT_VALUE_CODECS:
        return {}  # a variable-length string or bytes codec decodes to strings only: no element is a reference object
    _json_coded(node)
    return {"holders": FactRequest("reference_objects", (("limit", MAX_ELEMENT_FINDINGS),))}


@check(kind="array", facts=_unmarked_objects)
def dataset_references_marked(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """A dataset holds reference objects exactly when its zarr_dtype marks references, and one that does is stored as objects ("|O").

    zarr_dtype "object", "ref", "reference" or "region" (or a compound zarr_dtype with such a field) on a dataset
    whose stored dtype is not "|O" contradicts it: such a dtype cannot hold reference objects. An object array
    stored with a JSON codec whose zarr_dtype marks no references (or that has none) is read by the engine's scan,
    and each element that is a reference object ({source, path}, alone or in a row) is a reference a reader
    will not resolve. An object array of variable-length strings (vlen-utf8, vlen-bytes) holds none and passes
    unread. Pickle is read as data, never unpickled (one calling anything but numpy's array reconstruction is not
    read). Memory: a few blocks.
    Not applicable when: the metadata has no dtype; an object array is neither JSON-, pickle- nor string-coded
    (listed as not checked).
    """
    zarr_dtype = node.attrs.get("zarr_dtype")
    dtype = _stored_dtype(node)
    if _marks_references(zarr_dtype):
        if dtype != "|O":
            yield Finding(
                f"zarr_dtype {json_excerpt(zarr_dtype)} marks references, but the stored dtype is {json_excerpt(dtype)}, "
                "which cannot hold reference objects",
                details={"dtype": dtype, "zarr_dtype": json_excerpt(zarr_dtype)},
            )
        return
    result = facts.get("holders")
    if result is None:  # a dtype that cannot hold reference objects holds none; or no element is stored
        return
    said = f"zarr_dtype is {json_excerpt(zarr_dtype)}" if zarr_dtype is not None else "there is no zarr_dtype"
    for holder in result.found:
        yield Finding(
            f"element [{holder.index}] holds a reference object ({holder.text}), but {said}: a reader does not resolve it",
            index=_unravel(holder.index, node.shape),
            details={"zarr_dtype": json_excerpt(zarr_dtype)},
        )
    if result.count > len(result.found):
        yield Omitted(result.count - len(result.found))


def _unmarked_reference(value: Any) -> str | None:
    """How an attribute value holds a reference object without the zarr_dtype that marks it, or None if it does not.

    hdmf-zarr resolves an attribute only when it is a dict with a `zarr_dtype`; any other dict is read as it is.
    """
    if not isinstance(value, (dict, list)):
        return None
    if isinstance(value, dict):
        if "zarr_dtype" in value:
            return None  # marked: hdmf-zarr.reference.attribute-keys judges the rest
        if is_reference(value):
            return "a reference object"
        inner = value.get("value")
        if is_reference(inner) or (isinstance(inner, list) and any(is_reference(v) for v in inner)):
            return "a {value: reference} wrapper"
        return None
    if any(is_reference(v) or _unmarked_reference(v) for v in value if isinstance(v, dict)):
        return "reference objects in a list"
    return None


@check()
def attr_references_marked(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every attribute holding a reference object ({source, path}) stores it as {"zarr_dtype": ..., "value": reference}.

    Unmarked, and read by a reader as the dict it is rather than the object it names: a bare reference object, a
    list of them, and hdmf-zarr's wrapper {"value": reference} without its zarr_dtype. `zarr_link` (links, which
    the link rules judge) is not looked at. A node with no reference object in its attributes passes (nothing is
    unmarked).
    """
    for key, value in node.attrs.items():
        if key == "zarr_link":  # links, not references: the link rules judge them
            continue
        how = _unmarked_reference(value)
        if how is not None:
            yield Finding(
                f"attribute {key!r} holds {how} ({json_excerpt(value)}) without zarr_dtype: a reader does not resolve it",
                details={"key": key},
            )


def _unravel(flat: int, shape: tuple[int, ...] | None) -> tuple[int, ...]:
    """A flat C-order index as one index per dimension."""
    if not shape:
        return (flat,)
    out = []
    for n in reversed(shape):
        flat, i = divmod(flat, n) if n else (flat, 0)
        out.append(i)
    return tuple(reversed(out))


SOURCE_EXTENSIONS = (".yaml", ".yml", ".json")


def _scalar_text(node: Node, options: Options, scope: Scope) -> Mapping[str, FactRequest]:
    _scalar_json(node, options, scope)  # the same preconditions: a scalar string stored with safe codecs
    return {"value": FactRequest("first_last", edges_only=True)}


def _namespace_document(node: Node, facts: Mapping[str, Any]) -> list[Any]:
    """The "namespaces" list of the cached namespace document the node holds (read by the `_scalar_text` fact).

    Raises NotApplicable when the node holds no string, or its text is not JSON (hdmf-zarr.specifications.json
    reports that) or not a namespace document.
    """
    ends = facts["value"]
    value = ends.first if ends is not None else None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        raise NotApplicable(f"{node.path} holds no string")
    try:
        doc = loads(value)
    except JSONProblem:
        raise NotApplicable(f"{node.path} is not JSON") from None
    namespaces = doc.get("namespaces") if isinstance(doc, dict) else None
    if not isinstance(namespaces, list):
        raise NotApplicable(f'{node.path} is not a namespace document (no "namespaces" list)')
    return namespaces


@check(kind="array", facts=_scalar_text)
def namespace_sources_present(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """Every source file the cached namespace lists ("schema": [{"source": ...}]) is stored beside it, named without its extension.

    "nwb.ecephys.yaml" is stored as "nwb.ecephys"; a name without .yaml/.yml/.json is stored as it is. Entries that
    include another namespace ({"namespace": ...}) name no file. The namespace's one element is read by the
    engine's scan (shared with scalar_json_parses), through text codecs and plain compressors only.
    Not applicable when: the array is not a scalar string stored with text codecs, or its text is not a JSON namespace
    document with a "namespaces" list (hdmf-zarr.specifications.json reports text that is not JSON).
    """
    namespaces = _namespace_document(node, facts)
    parent = node.parent
    for i, ns in enumerate(namespaces):
        for j, entry in enumerate((ns.get("schema") or []) if isinstance(ns, dict) else []):
            source = entry.get("source") if isinstance(entry, dict) else None
            if not isinstance(source, str):
                continue
            stored = next((source[: -len(ext)] for ext in SOURCE_EXTENSIONS if source.endswith(ext)), source)
            child = parent.child(stored) if parent is not None else None
            if child is None or child.kind != "array":
                yield Finding(
                    f"namespaces[{i}].schema[{j}] lists source {source!r}, but {stored!r} is not stored beside the namespace",
                    path=f"{parent.path.rstrip('/') if parent else ''}/{stored}",
                    details={"source": source},
                )


# The version group hdmf-zarr caches a namespace without a version under (ZarrIO.__cache_spec).
UNVERSIONED = "unversioned"


@check(kind="array", facts=_scalar_text)
def namespace_stored_under_name(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """Every namespace the cached namespace document defines is stored under its name and version: the document is <name>/<version>/namespace.

    The version group of a namespace without a version is "unversioned", as hdmf-zarr names it; a version that is
    a JSON number is compared as its text. The document's one element is read by the engine's scan (shared with
    scalar_json_parses), through text codecs and plain compressors only.
    Not applicable when: the array is not a scalar string stored with text codecs, or its text is not a JSON
    namespace document with a "namespaces" list (hdmf-zarr.specifications.json reports text that is not JSON).
    """
    namespaces = _namespace_document(node, facts)
    version_group = node.parent
    name_group = version_group.parent if version_group is not None else None
    if version_group is None or name_group is None:
        raise NotApplicable(f"{node.path} lies less than two groups deep")
    for i, ns in enumerate(namespaces):
        if not isinstance(ns, dict):
            continue
        name = ns.get("name")
        version = ns.get("version")
        expected = UNVERSIONED if version is None else str(version)
        if name != name_group.name:
            yield Finding(
                f"namespaces[{i}] is named {json_excerpt(name)} but stored under the group {json_excerpt(name_group.name)}: "
                f"a reader looks for it under {json_excerpt(name)}",
                path=name_group.path,
                details={"field": "name", "stored": name_group.name, "document": json_excerpt(name)},
            )
        if expected != version_group.name:
            said = "has no version" if version is None else f"has version {json_excerpt(version)}"
            yield Finding(
                f"namespaces[{i}] {said} but is stored under the version group {json_excerpt(version_group.name)}, "
                f"expected {json_excerpt(expected)}",
                path=version_group.path,
                details={"field": "version", "stored": version_group.name, "document": expected},
            )


# The storage type of each row of the dtype mappings table, as NumPy kinds: a kind and item size ("f4"), or a kind
# alone ("O") for the variable-length rows, which zarr stores as objects.
@check(
    options={
        "properties": {
            "storage": {
                "type": "object",
                "additionalProperties": {
                    "type": "array",
                    "items": {"type": "string", "pattern": "^[biufcOSUV][0-9]*$"},
                    "minItems": 1,
                },
            }
        },
        "required": ["storage"],
    },
    kind="array",
)
def zarr_dtype_storage(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The Zarr dtype is the storage type `storage` gives for the dataset's zarr_dtype ("int32": "i4"; "text": "O").

    Not applicable when: zarr_dtype is absent, compound, or not in `storage` (hdmf-zarr.zarr_dtype.mapped reports a
    value the table does not list), or the dtype is unknown.
    """
    value = node.attrs.get("zarr_dtype")
    allowed = options["storage"].get(value) if isinstance(value, str) else None
    if allowed is None:
        raise NotApplicable(f"{node.path} has no zarr_dtype with a storage type in the table")
    dtype = node.dtype
    if dtype is None:
        raise NotApplicable(f"{node.path} has no readable dtype")
    if dtype.kind not in allowed and f"{dtype.kind}{dtype.itemsize}" not in allowed:
        yield Finding(
            f"zarr_dtype is {value!r}, stored as {dtype.str}; the table's storage type is {' or '.join(allowed)}",
            details={"zarr_dtype": value, "dtype": dtype.str},
        )
