"""Primitives about Zarr v3 `zarr.json` documents as stored: extension points, data types, fill values, chunk grids,
chunk key encodings, codec chains and their configurations, sharding, node names and the keys beside each node."""

from __future__ import annotations

import functools
import math
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from spec_validate.checks.api import NEEDS_DEEP, Options, check
from spec_validate.checks.zarr_metadata import _json, _same_json, _short, listed_keys, unlisted_documents
from spec_validate.codecs.jsondoc import JSONProblem
from spec_validate.errors import NodeError
from spec_validate.kernels.facts import FactRequest
from spec_validate.model import Finding, NotApplicable, NotChecked, Scope
from spec_validate.nodes.base import Node
from spec_validate.nodes.zarr.v3 import (
    SEPARATOR_DEFAULTS,
    KeyForm,
    array_shape,
    extension,
    grid_not_read,
    is_int,
    key_form,
    regular_chunk_shape,
    unknown_grid,
)
from spec_validate.nodes.zarr.v3 import configuration as _config

# The core data types (data-types.rst) and their sizes in bytes; `r<N>` (raw bits) is handled apart.
CORE_DATA_TYPES = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "uint8": 1,
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "float16": 2,
    "float32": 4,
    "float64": 8,
    "complex64": 8,
    "complex128": 16,
}
RAW_BITS = re.compile(r"^r(\d+)$")
# "Registered names MUST start with one lower case letter a-z and then be followed by ..." (the spec's regex);
# URI names stay permitted for extensions that predate registration (the note beside it).
REGISTERED_NAME = re.compile(r"^[a-z][a-z0-9-_.]+$")
URI_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$")
FLOAT_NAMES = ("NaN", "Infinity", "-Infinity")
HEX_FLOAT = re.compile(r"^0x([0-9a-fA-F]+)$")
MAX_FINDINGS = 20

# Codec kinds: the core codecs of this spec, and the registered extensions zarr-python 3 writes by default
# (zstd for numbers, vlen-utf8/vlen-bytes for strings). Any other name is an extension this tool cannot classify.
ARRAY_TO_ARRAY, ARRAY_TO_BYTES, BYTES_TO_BYTES = "array -> array", "array -> bytes", "bytes -> bytes"
CODEC_KINDS = {
    "transpose": ARRAY_TO_ARRAY,
    "bytes": ARRAY_TO_BYTES,
    "sharding_indexed": ARRAY_TO_BYTES,
    "vlen-utf8": ARRAY_TO_BYTES,
    "vlen-bytes": ARRAY_TO_BYTES,
    "gzip": BYTES_TO_BYTES,
    "blosc": BYTES_TO_BYTES,
    "crc32c": BYTES_TO_BYTES,
    "zstd": BYTES_TO_BYTES,
}
# Codecs whose encoded size follows from their input's size alone (allowed as shard index codecs).
FIXED_SIZE_CODECS = frozenset({"bytes", "transpose", "crc32c"})
# Extension points for which "must_understand": false is not supported (core.rst, must_understand).
MUST_UNDERSTAND_REQUIRED = ("data type", "chunk grid", "chunk key encoding")
V2_DOCUMENTS = (".zarray", ".zgroup", ".zattrs", ".zmetadata")
METADATA_KEY = "zarr.json"


# ------------------------------------------------------------------------------------------ reading the document
def _metadata(node: Node) -> Mapping[str, Any]:
    meta = node.metadata
    if not isinstance(meta, Mapping):
        raise NotApplicable(f"{node.path} has no readable zarr.json document")
    return meta


def _grid_read(node: Node, what: str) -> None:
    """Raises NotChecked when the array's chunk grid is an extension this tool does not read: `what` needs it."""
    grid = unknown_grid(_metadata(node))
    if grid is not None:
        raise NotChecked(f"{node.path}: {grid_not_read(grid)}; {what} not checked")


def _field(node: Node, key: str) -> Any:
    meta = _metadata(node)
    if key not in meta:
        raise NotApplicable(f"{node.path} zarr.json has no {key!r}")
    return meta[key]


class Point(NamedTuple):
    """One extension definition in a document: where it is, which extension point, its stored value."""

    where: str
    kind: str  # "data type", "chunk grid", "chunk key encoding", "codec", "storage transformer"
    value: Any


def extension_points(meta: Mapping[str, Any]) -> Iterator[Point]:
    """Every extension definition of an array document, the codecs inside sharding configurations included."""
    for key, kind in (("data_type", "data type"), ("chunk_grid", "chunk grid"), ("chunk_key_encoding", "chunk key encoding")):
        if key in meta:
            yield Point(key, kind, meta[key])
    yield from _codec_points(meta.get("codecs"), "codecs")
    transformers = meta.get("storage_transformers")
    if isinstance(transformers, list):
        for i, t in enumerate(transformers):
            yield Point(f"storage_transformers[{i}]", "storage transformer", t)


def _codec_points(codecs: Any, where: str) -> Iterator[Point]:
    if not isinstance(codecs, list):
        return
    for i, codec in enumerate(codecs):
        at = f"{where}[{i}]"
        yield Point(at, "codec", codec)
        name, config, _ = extension(codec)
        if name == "sharding_indexed" and isinstance(config, Mapping):
            yield from _codec_points(config.get("codecs"), f"{at}.configuration.codecs")
            yield from _codec_points(config.get("index_codecs"), f"{at}.configuration.index_codecs")


# A document may list 10**5 codecs, and a dozen rules ask for an array's codec chains, points or codecs by name: for
# a long list each is worked out once and kept, for the few such arrays last asked about, not once per rule.
LONG_CODEC_LIST = 256
KEPT_DOCUMENTS = 8
_kept: OrderedDict[tuple[int, str], tuple[Mapping[str, Any], Any]] = OrderedDict()
_kept_lock = threading.Lock()


def _worked_out(meta: Mapping[str, Any], what: str, work: Callable[[], Any]) -> Any:
    """`work()`, kept for `meta` where its codec list is long (the key holds `meta` itself, so its id is not reused)."""
    codecs = meta.get("codecs")
    if not isinstance(codecs, list) or len(codecs) < LONG_CODEC_LIST:
        return work()
    key = (id(meta), what)
    with _kept_lock:
        found = _kept.get(key)
        if found is not None and found[0] is meta:
            _kept.move_to_end(key)
            return found[1]
    value = work()
    with _kept_lock:
        _kept[key] = (meta, value)
        while len(_kept) > KEPT_DOCUMENTS * 3:
            _kept.popitem(last=False)
    return value


def _array_points(node: Node) -> list[Point]:
    if node.kind != "array":
        raise NotApplicable(f"{node.path} is not an array")
    meta = _metadata(node)
    points = _worked_out(meta, "points", lambda: list(extension_points(meta)))
    if not points:
        raise NotApplicable(f"{node.path} zarr.json has no extension point")
    return points


class Chain(NamedTuple):
    """One codec list: the array's, or a sharding codec's inner or index codecs, with what it encodes."""

    where: str
    codecs: list[Any]
    data_type: Any  # the data type of the array it encodes ("uint64" for a shard index)
    ndim: int | None  # dimensions of the decoded representation entering the chain
    shape: tuple[int, ...] | None  # its shape, where the metadata fixes it


def codec_chains(meta: Mapping[str, Any]) -> Iterator[Chain]:
    """The array's codec list, then the inner and index codec lists of each sharding codec, depth first."""
    shape = array_shape(meta)
    yield from _chains(
        meta.get("codecs"), "codecs", meta.get("data_type"), None if shape is None else len(shape), regular_chunk_shape(meta)
    )


def _chains(codecs: Any, where: str, data_type: Any, ndim: int | None, shape: tuple[int, ...] | None) -> Iterator[Chain]:
    if not isinstance(codecs, list):
        return
    yield Chain(where, codecs, data_type, ndim, shape)
    current = shape
    for i, codec in enumerate(codecs):
        name, config, _ = extension(codec)
        config = config if isinstance(config, Mapping) else {}
        if name == "transpose":
            order = config.get("order")
            current = tuple(current[o] for o in order) if current is not None and _is_permutation(order, len(current)) else None
        elif name == "sharding_indexed":
            inner = config.get("chunk_shape")
            inner_ok = isinstance(inner, list) and all(is_int(c) and c > 0 for c in inner)
            per_shard = None
            if (
                inner_ok
                and current is not None
                and len(inner) == len(current)
                and all(s % c == 0 for s, c in zip(current, inner, strict=False))
            ):
                per_shard = tuple(s // c for s, c in zip(current, inner, strict=False))
            at = f"{where}[{i}].configuration"
            yield from _chains(config.get("codecs"), f"{at}.codecs", data_type, ndim, tuple(inner) if inner_ok else None)
            yield from _chains(
                config.get("index_codecs"),
                f"{at}.index_codecs",
                "uint64",
                None if ndim is None else ndim + 1,
                None if per_shard is None else per_shard + (2,),
            )


def _is_permutation(order: Any, n: int) -> bool:
    # `type(o) is int`: is_int at a third of its cost (no bool is an int here either); a chain may hold 10**5 of these.
    return isinstance(order, list) and len(order) == n and all(type(o) is int for o in order) and sorted(order) == list(range(n))


def _codec_kind(codec: Any) -> str | None:
    name = extension(codec)[0]
    return CODEC_KINDS.get(name) if isinstance(name, str) else None


def _array_chains(node: Node) -> list[Chain]:
    if node.kind != "array":
        raise NotApplicable(f"{node.path} is not an array")
    meta = _metadata(node)
    chains = _worked_out(meta, "chains", lambda: list(codec_chains(meta)))
    if not chains:
        raise NotApplicable(f"{node.path} zarr.json has no list of codecs")
    return chains


def _codecs_by_name(chains: list[Chain]) -> dict[Any, list[tuple[str, Any, Chain, int]]]:
    by_name: dict[Any, list[tuple[str, Any, Chain, int]]] = {}
    for chain in chains:
        for i, codec in enumerate(chain.codecs):
            name = extension(codec)[0]
            if isinstance(name, str):
                by_name.setdefault(name, []).append((f"{chain.where}[{i}]", codec, chain, i))
    return by_name


def _named_codecs(node: Node, name: str) -> list[tuple[str, Any, Chain, int]]:
    """(where, stored codec, its chain, its position) for every codec called `name`; NotApplicable when none."""
    chains = _array_chains(node)
    found = _worked_out(_metadata(node), "by name", lambda: _codecs_by_name(chains)).get(name, [])
    if not found:
        raise NotApplicable(f"{node.path} has no {name} codec")
    return found


def _limited(findings: list[Finding], what: str) -> Iterator[Finding]:
    yield from findings[:MAX_FINDINGS]
    if len(findings) > MAX_FINDINGS:
        yield Finding(f"... and {len(findings) - MAX_FINDINGS} more {what}", details={"more": len(findings) - MAX_FINDINGS})


# ------------------------------------------------------------------------------------------ extension definitions
@check(
    options={"properties": {"key": {"type": "string"}, "list": {"type": "boolean"}}, "required": ["key", "list"]},
    kind="array",
    own_metadata_only=True,
)
def extension_definition(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The field `key` is an extension definition, a short-hand name (a string) or an object; with `list`, a JSON array of them.

    What the object holds is left to the extension rules. Not applicable when: the field is absent (the keys rule
    reports a required one).
    """
    key, value = options["key"], _field(node, options["key"])
    if options["list"]:
        if not isinstance(value, list):
            yield Finding(f"{key} is {_short(value)}, expected a JSON array of extension definitions", details={"value": value})
            return
        items = [(f"{key}[{i}]", v) for i, v in enumerate(value)]
    else:
        items = [(key, value)]
    for where, item in items:
        if not isinstance(item, (str, Mapping)):
            yield Finding(
                f'{where} is {_short(item)}, expected a name (string) or an object with a "name"',
                details={"where": where, "value": item},
            )


@check(kind="array", own_metadata_only=True)
def extension_names_are_strings(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every extension object (data type, chunk grid, chunk key encoding, codecs at any depth, storage transformers) has a string "name".

    Not applicable when: the document holds no extension object.
    """
    objects = [p for p in _array_points(node) if isinstance(p.value, Mapping)]
    if not objects:
        raise NotApplicable(f"{node.path} has no extension written as an object")
    for p in objects:
        name = p.value.get("name")
        if not isinstance(name, str):
            got = 'has no "name"' if "name" not in p.value else f"has name {_short(name)}"
            yield Finding(f"{p.where} ({p.kind}) {got}, expected a string", details={"where": p.where, "value": name})


@check(kind="array", own_metadata_only=True)
def extension_names_conform(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every extension name matches ^[a-z][a-z0-9-_.]+$ (a registered name), or is a URI (the form names had before registration).

    Names of either form count: short-hand strings and the "name" of objects. Not applicable when: no extension
    has a string name (extension_names_are_strings reports objects without one).
    """
    named = [(p, extension(p.value)[0]) for p in _array_points(node)]
    named = [(p, n) for p, n in named if isinstance(n, str)]
    if not named:
        raise NotApplicable(f"{node.path} has no extension name")
    for p, name in named:
        if not (REGISTERED_NAME.match(name) or URI_NAME.match(name)):
            yield Finding(
                f"{p.where} ({p.kind}) is named {name!r}, expected a lower-case letter followed by lower-case "
                "letters, digits, '-', '_' or '.' (or a URI)",
                details={"where": p.where, "value": name},
            )


@check(kind="array", own_metadata_only=True)
def extension_configurations_are_objects(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every extension object's "configuration", where present, is a JSON object.

    Not applicable when: no extension object has a configuration.
    """
    configured = [p for p in _array_points(node) if isinstance(p.value, Mapping) and "configuration" in p.value]
    if not configured:
        raise NotApplicable(f"{node.path} has no extension with a configuration")
    for p in configured:
        config = p.value["configuration"]
        if not isinstance(config, Mapping):
            yield Finding(
                f"{p.where} ({p.kind}) has configuration {_short(config)}, expected a JSON object",
                details={"where": p.where, "value": config},
            )


@check(kind="array", own_metadata_only=True)
def extension_must_understand_boolean(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every extension object's "must_understand", where present, is a JSON boolean.

    Not applicable when: no extension object sets must_understand.
    """
    marked = [p for p in _array_points(node) if isinstance(p.value, Mapping) and "must_understand" in p.value]
    if not marked:
        raise NotApplicable(f"{node.path} has no extension setting must_understand")
    for p in marked:
        value = p.value["must_understand"]
        if not isinstance(value, bool):
            yield Finding(
                f"{p.where} ({p.kind}) has must_understand {_short(value)}, expected true or false",
                details={"where": p.where, "value": value},
            )


@check(kind="array", own_metadata_only=True)
def extension_must_understand_allowed(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The data type, chunk grid and chunk key encoding do not set "must_understand": false.

    Not applicable when: none of the three is written as an object.
    """
    objects = [p for p in _array_points(node) if p.kind in MUST_UNDERSTAND_REQUIRED and isinstance(p.value, Mapping)]
    if not objects:
        raise NotApplicable(f"{node.path} writes no data type, chunk grid or chunk key encoding as an object")
    for p in objects:
        if p.value.get("must_understand") is False:
            yield Finding(
                f"{p.where} ({p.kind}) sets must_understand false, which a {p.kind} may not", details={"where": p.where}
            )


ARRAY_FIELDS = (
    "zarr_format",
    "node_type",
    "shape",
    "data_type",
    "chunk_grid",
    "chunk_key_encoding",
    "fill_value",
    "codecs",
    "attributes",
    "storage_transformers",
    "dimension_names",
)
GROUP_FIELDS = ("zarr_format", "node_type", "attributes", "consolidated_metadata")


@check(own_metadata_only=True)
def metadata_fields_understood(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every field of the document that the spec does not define for its node type is an object with "must_understand": false.

    Array fields: zarr_format, node_type, shape, data_type, chunk_grid, chunk_key_encoding, fill_value, codecs,
    attributes, storage_transformers, dimension_names; group fields: zarr_format, node_type, attributes,
    consolidated_metadata. A reader that does not know another field must refuse the node unless the field says it
    may be ignored. Not applicable when: the document is missing or not an object.
    """
    known = ARRAY_FIELDS if node.kind == "array" else GROUP_FIELDS
    for key, value in _metadata(node).items():
        if key in known:
            continue
        if not (isinstance(value, Mapping) and value.get("must_understand") is False):
            yield Finding(
                f"has field {key!r}, which the spec does not define for a {node.kind} and which is not an object "
                'with "must_understand": false: a reader that does not know it must refuse the node',
                details={"key": key},
            )


# ------------------------------------------------------------------------------------------ data types and fill values
def _data_type_name(node: Node) -> Any:
    return extension(_field(node, "data_type"))[0]


@check(kind="array", own_metadata_only=True)
def data_type_core_as_string(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """A core data type (bool, int8 ... complex128, r<N>) is written as its identifier string, not as an object.

    Not applicable when: the data type is not a core one.
    """
    value = _field(node, "data_type")
    name = extension(value)[0]
    if not (name in CORE_DATA_TYPES or (isinstance(name, str) and RAW_BITS.match(name))):
        raise NotApplicable(f"{node.path} data type {_short(value)} is not a core data type")
    if not isinstance(value, str):
        yield Finding(f"data_type is {_short(value)}, expected the identifier string {name!r}", details={"value": value})


@check(kind="array", own_metadata_only=True)
def raw_bits_multiple_of_8(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """A raw-bits data type r<N> has N a positive multiple of 8.

    Not applicable when: the data type is not named r followed by digits.
    """
    name = _data_type_name(node)
    m = RAW_BITS.match(name) if isinstance(name, str) else None
    if m is None:
        raise NotApplicable(f"{node.path} data type is not a raw-bits type r<N>")
    bits = int(m[1])
    if bits == 0 or bits % 8:
        yield Finding(f"data_type {name!r} has {bits} bits, expected a positive multiple of 8", details={"value": name})


def _float_ok(value: Any, size: int) -> str | None:
    """Why `value` is not a permitted fill value for a float of `size` bytes; None when it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return f'{_short(value)} is not a number or one of "NaN", "Infinity", "-Infinity", "0x..."'
    if isinstance(value, float) and not math.isfinite(value):
        return f'is the bare literal {value!r}, which is not JSON: write the string "{"NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")}"'
    if isinstance(value, str):
        if value in FLOAT_NAMES:
            return None
        m = HEX_FLOAT.match(value)
        if m is None:
            return f'{value!r} is not "NaN", "Infinity", "-Infinity" or a hexadecimal byte representation "0x..."'
        if int(m[1], 16) >> (8 * size):
            return f"{value!r} does not fit in {size} bytes"
    return None


FAMILIES = {
    "boolean": ("bool",),
    "integer": ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    "float": ("float16", "float32", "float64"),
    "complex": ("complex64", "complex128"),
    "raw": (),
}


@check(
    options={"properties": {"family": {"enum": sorted(FAMILIES)}}, "required": ["family"]}, kind="array", own_metadata_only=True
)
def fill_value_permitted(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """fill_value is a permitted value for the array's core data type of family `family`.

    boolean: true or false. integer: a JSON number with no fraction or exponent, within the type's range. float: a
    number, "NaN", "Infinity", "-Infinity" or "0x" and the bytes as an unsigned integer that fits the type (a bare
    NaN literal is not JSON and fails). complex: [real, imaginary], each as for a float of half the size. raw
    (r<N>): an array of N/8 integers in [0, 255], one per byte of the element. null fails for every family.
    Not applicable when: the data type is of another family, an extension type (its own spec defines its fill
    values), or fill_value is absent.
    """
    family = options["family"]
    name = _data_type_name(node)
    raw = RAW_BITS.match(name) if isinstance(name, str) else None
    if not (name in FAMILIES[family] or (family == "raw" and raw)):
        raise NotApplicable(f"{node.path} data type {_short(name)} is not of the {family} family")
    value = _field(node, "fill_value")
    problem = None
    if family == "boolean":
        problem = None if isinstance(value, bool) else f"{_short(value)} is not true or false"
    elif family == "integer":
        bits = 8 * CORE_DATA_TYPES[name]
        low, high = (0, 2**bits - 1) if name.startswith("u") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        if not is_int(value):
            problem = f"{_short(value)} is not a JSON number without fraction or exponent"
        elif not low <= value <= high:
            problem = f"{value} is outside {name}'s range [{low}, {high}]"
    elif family == "float":
        problem = _float_ok(value, CORE_DATA_TYPES[name])
    elif family == "complex":
        if not (isinstance(value, list) and len(value) == 2):
            problem = f"{_short(value)} is not a two-element array [real, imaginary]"
        else:
            parts = [_float_ok(v, CORE_DATA_TYPES[name] // 2) for v in value]
            problem = next((f"{('real', 'imaginary')[i]} part {p}" for i, p in enumerate(parts) if p), None)
    else:
        size = int(raw[1]) // 8
        if not (isinstance(value, list) and all(is_int(v) and 0 <= v <= 255 for v in value)):
            problem = f"{_short(value)} is not an array of integers in [0, 255]"
        elif len(value) != size:
            problem = f"has {len(value)} bytes, expected {size} for {name}"
    if problem:
        shown = value if not isinstance(value, float) or math.isfinite(value) else str(value)
        yield Finding(f"fill_value {problem}", details={"value": shown, "data_type": name})


# ------------------------------------------------------------------------------------------ chunk grid
def _regular_grid(node: Node) -> Any:
    grid = _field(node, "chunk_grid")
    if extension(grid)[0] != "regular":
        raise NotApplicable(f"{node.path} chunk grid is not the regular grid")
    return grid


@check(kind="array", own_metadata_only=True)
def regular_grid_object(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """A regular chunk grid is written as an object with the members "name" and "configuration".

    Not applicable when: the chunk grid is not named "regular".
    """
    grid = _regular_grid(node)
    if not isinstance(grid, Mapping):
        yield Finding(
            f'chunk_grid is the short-hand name {grid!r}, expected an object with "name" and "configuration"',
            details={"value": grid},
        )
    elif "configuration" not in grid:
        yield Finding('chunk_grid has no "configuration", expected one holding "chunk_shape"', details={"value": grid})


@check(kind="array", own_metadata_only=True)
def regular_grid_configuration(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """A regular chunk grid's configuration is an object with the member "chunk_shape".

    Not applicable when: the grid is not regular, or has no configuration object (other rules report that).
    """
    grid = _regular_grid(node)
    config = extension(grid)[1]
    if not isinstance(config, Mapping):
        raise NotApplicable(f"{node.path} regular chunk grid has no configuration object")
    if "chunk_shape" not in config:
        yield Finding('chunk_grid.configuration has no "chunk_shape"', details={"value": dict(config)})


@check(kind="array", own_metadata_only=True)
def regular_grid_chunk_shape(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """A regular grid's chunk_shape is an array of integers, one per dimension of the array's shape.

    Not applicable when: the grid is not regular or has no chunk_shape.
    """
    chunks = _config(_regular_grid(node)).get("chunk_shape", ...)
    if chunks is ...:
        raise NotApplicable(f"{node.path} regular chunk grid has no chunk_shape")
    if not (isinstance(chunks, list) and all(is_int(c) for c in chunks)):
        yield Finding(f"chunk_shape is {_short(chunks)}, expected an array of integers", details={"value": chunks})
        return
    shape = _metadata(node).get("shape")
    if isinstance(shape, list) and len(shape) != len(chunks):
        yield Finding(
            f"chunk_shape has {len(chunks)} lengths, expected {len(shape)} as shape has",
            details={"value": chunks, "expected": len(shape)},
        )


@check(kind="array", own_metadata_only=True)
def regular_grid_chunks_positive(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every integer of a regular grid's chunk_shape is greater than zero.

    Not applicable when: the grid is not regular or its chunk_shape holds no integer.
    """
    chunks = _config(_regular_grid(node)).get("chunk_shape")
    ints = [(i, c) for i, c in enumerate(chunks) if is_int(c)] if isinstance(chunks, list) else []
    if not ints:
        raise NotApplicable(f"{node.path} regular chunk grid has no integer chunk lengths")
    for i, c in ints:
        if c <= 0:
            yield Finding(f"chunk_shape[{i}] is {c}, expected greater than zero", details={"value": c})


# ------------------------------------------------------------------------------------------ chunk key encoding and keys
@check(
    options={"properties": {"encoding": {"enum": sorted(SEPARATOR_DEFAULTS)}}, "required": ["encoding"]},
    kind="array",
    own_metadata_only=True,
)
def chunk_key_separator(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The chunk key encoding `encoding`'s configuration holds no member but "separator", and that is "/" or ".".

    Not applicable when: the array uses another chunk key encoding, or its configuration is not an object.
    """
    value = _field(node, "chunk_key_encoding")
    if extension(value)[0] != options["encoding"]:
        raise NotApplicable(f"{node.path} does not use the {options['encoding']} chunk key encoding")
    config = extension(value)[1]
    if config is None:
        return  # no configuration: the separator defaults
    if not isinstance(config, Mapping):
        raise NotApplicable(f"{node.path} chunk_key_encoding.configuration is not an object")
    for key in config:
        if key != "separator":
            yield Finding(
                f'chunk_key_encoding.configuration has member {key!r}, expected only "separator"', details={"value": key}
            )
    if "separator" in config and config["separator"] not in ("/", "."):
        yield Finding(
            f'chunk_key_encoding separator is {_short(config["separator"])}, expected "/" or "."',
            details={"value": config["separator"]},
        )


# The chunk key forms a Zarr v3 array may use (the default and v2 encodings, each with "/" or "."), with what a
# finding calls them. A key one of them forms for the array's number of dimensions, but the array's own encoding
# does not, is chunk data stored where no reader looks.
CHUNK_KEY_FORMS = (
    ('the default encoding with "/"', KeyForm("c/", "/", "c", None)),
    ('the default encoding with "."', KeyForm("c.", ".", "c", None)),
    ('the v2 encoding with "."', KeyForm("", ".", "0", None)),
    ('the v2 encoding with "/"', KeyForm("", "/", "0", None)),
)


def chunk_form_of(key: str, ndim: int) -> str | None:
    """Which chunk key form makes `key` a key of a chunk of `ndim` indices, zero-padded indices included; None when none.

    A zero-padded index ("c/01/0") is counted: its digits name a grid cell as any index does, and no encoding forms
    it, so it is chunk data a reader does not find (the same harm as another separator), not a stray file.
    """
    for name, form in CHUNK_KEY_FORMS:
        if ndim == 0:
            if key == form.scalar:
                return name
            continue
        if key.startswith(form.prefix):
            parts = key[len(form.prefix) :].split(form.separator)
            if len(parts) == ndim and all(p.isascii() and p.isdigit() for p in parts):
                return name
    return None


def _key_plan(node: Node) -> tuple[KeyForm, int, list[str]]:
    meta = _metadata(node)
    shape = array_shape(meta)
    form = key_form(meta)
    if shape is None or form is None:
        raise NotApplicable(f"{node.path} has an unusable shape or a chunk key encoding other than default and v2")
    if meta.get("storage_transformers"):
        raise NotChecked(f"{node.path} has storage transformers, which may store chunks under other keys; keys not checked")
    keys = [k for k in listed_keys(node) if k != METADATA_KEY and not k.startswith("__")]
    return form, len(shape), keys


@check(kind="array", own_keys=True)
def chunk_keys_encoded(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """No chunk of the array is stored under a key that another chunk key form makes and its own encoding does not.

    The forms: the default encoding ("c" then the indices, each after the separator; "c" for a 0-d array) and the
    v2 encoding (the indices joined by the separator; "0" for a 0-d array), each with "/" or ".", with one index
    per dimension of the array; an index with leading zeros counts as an index. So "0.0" or "c.0.0" under the
    default encoding with "/", or "0/0" under the v2 encoding with ".", fail: a reader forms another key for that
    chunk and reads the fill value instead. Other keys (documents of other formats, an editor's backup, keys with
    another number of indices) are array_keys_known's; whether an index lies inside the grid is
    chunk_keys_in_grid's. At most 20 keys are named, then a count.
    Not applicable when: the shape or the chunk key encoding is unusable or not default/v2 (other rules report
    those); not checked when the array has storage transformers, or the store was not listed.
    """
    form, ndim, keys = _key_plan(node)
    bad = []
    for key in keys:
        if form.parse(key, ndim) is not None:
            continue
        other = chunk_form_of(key, ndim)
        if other is not None:
            bad.append(
                Finding(
                    f"stores chunk key {key!r} in {other}, which its own chunk key encoding does not form (keys like "
                    f"{form.example(ndim)!r}): a reader reads the fill value where this chunk's data is",
                    details={"key": key, "form": other},
                )
            )
    yield from _limited(bad, "chunks stored under keys their encoding does not form")


@check(kind="array", own_keys=True)
def array_keys_known(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every key stored under the array is zarr.json, under a "__" prefix (extension data), or a chunk key of some chunk key form.

    Chunk key forms as chunk_keys_encoded reads them (which reports chunks in a form the array's encoding does
    not make). Any other key (a Zarr v2 .zarray or .zattrs beside zarr.json, n5's attributes.json, .DS_Store, a
    key with another number of indices than the array's dimensions) is never read by a Zarr v3 reader. At most 20
    keys are named, then a count.
    Not applicable when: the shape or the chunk key encoding is unusable or not default/v2; not checked when the
    array has storage transformers, or the store was not listed.
    """
    form, ndim, keys = _key_plan(node)
    bad = [
        Finding(
            f"stores key {key!r}, which is no chunk key of the array (keys like {form.example(ndim)!r}): a Zarr v3 "
            "reader never reads it",
            details={"key": key},
        )
        for key in keys
        if form.parse(key, ndim) is None and chunk_form_of(key, ndim) is None
    ]
    yield from _limited(bad, "keys that no reader reads")


@check(kind="array", own_keys=True)
def chunk_keys_in_grid(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every chunk key stored under the array names a chunk inside the grid (each index below ceil(shape / chunk_shape)).

    Not applicable when: the regular grid is unusable (the grid rules report it), or the key encoding is unusable;
    not checked when the chunk grid is an extension this tool does not read (not "regular"), the array has storage
    transformers, or the store was not listed. Keys that are no chunk key at all are chunk_keys_encoded's.
    """
    form, ndim, keys = _key_plan(node)
    if form.grid is None:
        _grid_read(node, "chunk keys against the grid")
        raise NotApplicable(f"{node.path} has no usable regular chunk grid")
    bad = []
    for key in keys:
        index = form.parse(key, ndim)
        if index is not None and any(i >= g for i, g in zip(index, form.grid, strict=False)):
            bad.append(
                Finding(
                    f"stores chunk {key!r} at grid index {list(index)}, outside the grid {list(form.grid)}",
                    details={"key": key, "index": list(index)},
                )
            )
    yield from _limited(bad, "chunks outside the grid")


# ------------------------------------------------------------------------------------------ codec chains
@check(kind="array", own_metadata_only=True)
def codecs_contain_array_to_bytes(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The array's codecs list is not empty and contains an array -> bytes codec (bytes, sharding_indexed, vlen-utf8, vlen-bytes).

    Not applicable when: codecs is absent or not a list (other rules report that); not checked when the list holds
    extension codecs this tool cannot classify and none it knows to be array -> bytes.
    """
    codecs = _field(node, "codecs")
    if not isinstance(codecs, list):
        raise NotApplicable(f"{node.path} codecs is not a list")
    if not codecs:
        yield Finding("codecs is an empty list, expected at least an array -> bytes codec", details={"value": []})
        return
    kinds = [_codec_kind(c) for c in codecs]
    if ARRAY_TO_BYTES in kinds:
        return
    if None in kinds:
        unknown = [extension(c)[0] for c, k in zip(codecs, kinds, strict=False) if k is None]
        raise NotChecked(f"{node.path}: codecs {_short(unknown)} are extensions of unknown kind; no known array -> bytes codec")
    yield Finding(
        f"codecs {_short([extension(c)[0] for c in codecs])} hold no array -> bytes codec",
        details={"value": [extension(c)[0] for c in codecs]},
    )


@check(kind="array", own_metadata_only=True)
def codec_chains_ordered(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every codec list (the array's, and a sharding codec's inner and index codecs) is array -> array codecs, exactly one array -> bytes codec, then bytes -> bytes codecs.

    A list without any array -> bytes codec is left to the rules that require one. Not checked when every list
    holds an extension codec whose kind this tool does not know (others are checked). Not applicable when: the
    array has no list of codecs.
    """
    checked = 0
    unknown: list[str] = []
    for chain in _array_chains(node):
        kinds = [_codec_kind(c) for c in chain.codecs]
        if None in kinds:
            unknown += [str(extension(c)[0]) for c, k in zip(chain.codecs, kinds, strict=False) if k is None]
            continue
        checked += 1
        middle = [i for i, k in enumerate(kinds) if k == ARRAY_TO_BYTES]
        if not middle:
            continue
        names = [extension(c)[0] for c in chain.codecs]
        if len(middle) > 1:
            yield Finding(
                f"{chain.where} {_short(names)} has {len(middle)} array -> bytes codecs, expected exactly one",
                details={"where": chain.where, "value": names},
            )
            continue
        before = [n for n, k in zip(names[: middle[0]], kinds, strict=False) if k != ARRAY_TO_ARRAY]
        after = [n for n, k in zip(names[middle[0] + 1 :], kinds[middle[0] + 1 :], strict=False) if k != BYTES_TO_BYTES]
        if before or after:
            yield Finding(
                f"{chain.where} {_short(names)} is out of order: expected array -> array codecs, then "
                f"{names[middle[0]]}, then bytes -> bytes codecs",
                details={"where": chain.where, "value": names},
            )
    if not checked:
        raise NotChecked(f"{node.path}: codecs {_short(sorted(set(unknown)))} are extensions of unknown kind; order not checked")


CODEC_MEMBER_OPTIONS = {
    "properties": {
        "codec": {"type": "string"},
        "member": {"type": "string"},
        "required": {"type": "boolean"},
        "unless": {
            "type": "object",
            "additionalProperties": False,
            "required": ["member", "equals"],
            "properties": {"member": {"type": "string"}, "equals": {}},
        },
        "type": {"enum": ["integer", "string"]},
        "minimum": {"type": "integer"},
        "maximum": {"type": "integer"},
        "values": {"type": "array", "minItems": 1},
    },
    "required": ["codec", "member"],
}


@check(options=CODEC_MEMBER_OPTIONS, kind="array", own_metadata_only=True)
def codec_member(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every `codec` codec's configuration member `member` is present when `required` (unless `unless` holds), and where present is of `type`, within [`minimum`, `maximum`], one of `values`.

    Every codec of that name counts, inside sharding configurations too; a short-hand name has no members.
    Not applicable when: the array has no such codec, or (without `required`) none of them sets the member.
    """
    name, member = options["codec"], options["member"]
    judged = 0
    for where, codec, _, _ in _named_codecs(node, name):
        config = _config(codec)
        unless = options.get("unless")
        exempt = unless is not None and config.get(unless["member"]) == unless["equals"]
        if member not in config:
            if options.get("required") and not exempt:
                judged += 1
                yield Finding(
                    f"{where} ({name}) has no configuration member {member!r}, expected one",
                    details={"where": where, "member": member, "value": None},
                )
            continue
        judged += 1
        value = config[member]
        problem = _member_problem(value, options)
        if problem:
            yield Finding(
                f"{where} ({name}) {member} is {_short(value)}, expected {problem}",
                details={"where": where, "member": member, "value": value},
            )
    if not judged:
        raise NotApplicable(f"{node.path}: no {name} codec sets {member!r}")


def _member_problem(value: Any, options: Options) -> str | None:
    kind = options.get("type")
    if kind == "integer" and not is_int(value):
        return "an integer"
    if kind == "string" and not isinstance(value, str):
        return "a string"
    if "values" in options and not any(type(value) is type(v) and value == v for v in options["values"]):
        return "one of " + ", ".join(_json(v) for v in options["values"])
    if is_int(value) and "minimum" in options and value < options["minimum"]:
        return f"at least {options['minimum']}"
    if is_int(value) and "maximum" in options and value > options["maximum"]:
        return f"at most {options['maximum']}"
    return None


@check(kind="array", own_metadata_only=True)
def bytes_endian_present(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every bytes codec that encodes a multi-byte core data type (int16 ... complex128, and a shard index's uint64) sets "endian".

    Not applicable when: no bytes codec encodes a multi-byte core data type (single-byte types need no endian;
    extension data types are their own spec's).
    """
    judged = 0
    for where, codec, chain, _ in _named_codecs(node, "bytes"):
        name = extension(chain.data_type)[0]
        if CORE_DATA_TYPES.get(name, 1) == 1:
            continue
        judged += 1
        if "endian" not in _config(codec):
            yield Finding(
                f'{where} (bytes) encodes {name} without "endian", expected "little" or "big"',
                details={"where": where, "data_type": name},
            )
    if not judged:
        raise NotApplicable(f"{node.path}: no bytes codec encodes a multi-byte core data type")


@check(kind="array", own_metadata_only=True)
def transpose_order_permutation(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every transpose codec's "order" is an array of integers permuting 0 .. n-1, n the dimensions of the array it receives.

    n is the array's number of dimensions (one more inside a shard's index codecs, whose array has a last
    dimension of 2). Not applicable when: the array has no transpose codec, or its number of dimensions is unknown.
    """
    judged = 0
    for where, codec, chain, _ in _named_codecs(node, "transpose"):
        if chain.ndim is None:
            continue
        judged += 1
        order = _config(codec).get("order", ...)
        if order is ...:
            yield Finding(
                f'{where} (transpose) has no "order", expected a permutation of 0..{chain.ndim - 1}',
                details={"where": where, "value": None},
            )
        elif not _is_permutation(order, chain.ndim):
            yield Finding(
                f"{where} (transpose) order is {_short(order)}, expected a permutation of 0..{chain.ndim - 1}",
                details={"where": where, "value": order},
            )
    if not judged:
        raise NotApplicable(f"{node.path}: no transpose codec of an array with a known number of dimensions")


# ------------------------------------------------------------------------------------------ sharding
def _shard_shapes(node: Node) -> list[tuple[str, Any, tuple[int, ...] | None]]:
    """(where, sharding codec, the shard shape it receives) for every sharding_indexed codec."""
    out = []
    for where, codec, chain, i in _named_codecs(node, "sharding_indexed"):
        current = chain.shape
        for earlier in chain.codecs[:i]:
            if extension(earlier)[0] == "transpose" and current is not None:
                order = _config(earlier).get("order")
                current = tuple(current[o] for o in order) if _is_permutation(order, len(current)) else None
        out.append((where, codec, current))
    return out


@check(kind="array", own_metadata_only=True)
def sharding_chunk_shape(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every sharding codec's "chunk_shape" is an array of positive integers, one per dimension of the shard, each dividing the shard's length.

    The shard shape is the chunk grid's chunk shape (after any transpose before the codec; for sharding nested
    in sharding, the outer inner chunk shape). Not applicable when: the array has no sharding codec, or no shard
    shape is known (an unusable grid is reported by the grid rules); not checked when the chunk grid is an
    extension this tool does not read (the shard shape is then unknown).
    """
    judged = 0
    for where, codec, shard in _shard_shapes(node):
        inner = _config(codec).get("chunk_shape", ...)
        if inner is ...:
            judged += 1
            yield Finding(f'{where} (sharding_indexed) has no "chunk_shape"', details={"where": where, "value": None})
            continue
        if not (isinstance(inner, list) and all(is_int(c) and c > 0 for c in inner)):
            judged += 1
            yield Finding(
                f"{where} chunk_shape is {_short(inner)}, expected an array of positive integers",
                details={"where": where, "value": inner},
            )
            continue
        if shard is None:
            continue
        judged += 1
        if len(inner) != len(shard):
            yield Finding(
                f"{where} chunk_shape {inner} has {len(inner)} lengths, the shard shape {list(shard)} {len(shard)}",
                details={"where": where, "value": inner, "shard_shape": list(shard)},
            )
        elif any(s % c for s, c in zip(shard, inner, strict=False)):
            yield Finding(
                f"{where} chunk_shape {inner} does not evenly divide the shard shape {list(shard)}",
                details={"where": where, "value": inner, "shard_shape": list(shard)},
            )
    if not judged:
        _grid_read(node, "the sharding chunk_shape against the shard shape")
        raise NotApplicable(f"{node.path}: no sharding codec with a known shard shape")


@check(
    options={"properties": {"member": {"enum": ["codecs", "index_codecs"]}}, "required": ["member"]},
    kind="array",
    own_metadata_only=True,
)
def sharding_codec_list(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every sharding codec's `member` is present, a JSON array of codecs, with exactly one array -> bytes codec.

    Not applicable when: the array has no sharding codec; not checked when a list holds extension codecs of unknown
    kind and no known array -> bytes codec.
    """
    member = options["member"]
    judged = 0
    for where, codec, _, _ in _named_codecs(node, "sharding_indexed"):
        codecs = _config(codec).get(member, ...)
        if codecs is ...:
            judged += 1
            yield Finding(
                f"{where} (sharding_indexed) has no {member!r}, expected a list of codecs",
                details={"where": where, "value": None},
            )
            continue
        if not isinstance(codecs, list) or not all(isinstance(c, (str, Mapping)) for c in codecs):
            judged += 1
            yield Finding(
                f"{where} {member} is {_short(codecs)}, expected a JSON array of codecs (names or objects)",
                details={"where": where, "value": codecs},
            )
            continue
        kinds = [_codec_kind(c) for c in codecs]
        count = kinds.count(ARRAY_TO_BYTES)
        if count == 0 and None in kinds:
            continue
        judged += 1
        if count != 1:
            names = [extension(c)[0] for c in codecs]
            yield Finding(
                f"{where} {member} {_short(names)} has {count} array -> bytes codecs, expected exactly one",
                details={"where": where, "value": names},
            )
    if not judged:
        raise NotChecked(f"{node.path}: sharding {member} hold extension codecs of unknown kind")


SHARDING_MEMBERS = ("chunk_shape", "codecs", "index_codecs", "index_location")


@check(kind="array", own_metadata_only=True)
def sharding_configuration_members(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every sharding codec's configuration holds only chunk_shape, codecs, index_codecs and index_location.

    A member naming how shards were written (an order, a strategy) is a write-time setting, not metadata.
    Not applicable when: the array has no sharding codec.
    """
    for where, codec, _, _ in _named_codecs(node, "sharding_indexed"):
        for key in _config(codec):
            if key not in SHARDING_MEMBERS:
                yield Finding(
                    f"{where} (sharding_indexed) configuration has member {key!r}, expected only {', '.join(SHARDING_MEMBERS)}",
                    details={"where": where, "member": key},
                )


@check(
    options={
        "properties": {"members": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}}},
        "required": ["members"],
    },
    kind="array",
    own_metadata_only=True,
)
def codec_configuration_declared(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every codec named in `members` (codec name -> the configuration parameters its spec declares) has no other configuration member.

    Every codec of those names counts, inside sharding configurations too (inner and index codecs); a short-hand
    name or a codec without configuration has none. Not applicable when: the array has no codec named in `members`.
    """
    declared = options["members"]
    named = [p for p in _array_points(node) if p.kind == "codec" and extension(p.value)[0] in declared]
    if not named:
        raise NotApplicable(f"{node.path} has no codec of {', '.join(sorted(declared))}")
    for p in named:
        name = extension(p.value)[0]
        for key in _config(p.value):
            if key not in declared[name]:
                allowed = ", ".join(declared[name]) or "none"
                yield Finding(
                    f"{p.where} ({name}) configuration has member {key!r}, which the {name} codec does not declare "
                    f"(its parameters: {allowed}): a reader must refuse the array",
                    details={"where": p.where, "codec": name, "member": key},
                )


def _index_codecs(node: Node) -> list[tuple[str, list[Any]]]:
    found = [
        (f"{where}.configuration.index_codecs", _config(codec).get("index_codecs"))
        for where, codec, _, _ in _named_codecs(node, "sharding_indexed")
    ]
    found = [(w, c) for w, c in found if isinstance(c, list)]
    if not found:
        raise NotApplicable(f"{node.path}: no sharding codec has a list of index_codecs")
    return found


@check(kind="array", own_metadata_only=True)
def sharding_index_codecs_fixed_size(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every sharding codec's index_codecs hold only codecs whose output size follows from the input's (bytes, transpose, crc32c).

    Compressors (gzip, blosc, zstd) and other variable-sized codecs fail. Not checked when the list holds an
    extension codec of unknown kind (and no known variable-sized one). Not applicable when: no sharding codec has
    index_codecs.
    """
    judged = 0
    for where, codecs in _index_codecs(node):
        names = [extension(c)[0] for c in codecs]
        variable = [n for n in names if n in CODEC_KINDS and n not in FIXED_SIZE_CODECS]
        if variable:
            judged += 1
            yield Finding(
                f"{where} {_short(names)} use {_short(variable)}, whose encoded size varies",
                details={"where": where, "value": names},
            )
        elif all(n in FIXED_SIZE_CODECS for n in names):
            judged += 1
    if not judged:
        raise NotChecked(f"{node.path}: index_codecs hold extension codecs of unknown kind")


@check(kind="array", own_metadata_only=True)
def sharding_index_codecs_recommended(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every sharding codec's index_codecs are a little-endian bytes codec followed by crc32c.

    Not applicable when: no sharding codec has a list of index_codecs.
    """
    for where, codecs in _index_codecs(node):
        names = [extension(c)[0] for c in codecs]
        little = len(codecs) == 2 and _config(codecs[0]).get("endian") == "little"
        if names != ["bytes", "crc32c"] or not little:
            yield Finding(
                f'{where} are {_short(codecs)}, recommended: bytes with endian "little", then crc32c',
                details={"where": where, "value": names},
            )


# ------------------------------------------------------------------------------------------ optional members
@check(kind="array", own_metadata_only=True)
def dimension_names_valid(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """dimension_names, where present, is an array of strings or nulls, as long as shape.

    Not applicable when: dimension_names is absent.
    """
    names = _field(node, "dimension_names")
    if not isinstance(names, list):
        yield Finding(f"dimension_names is {_short(names)}, expected an array of strings or nulls", details={"value": names})
        return
    for i, name in enumerate(names):
        if not (name is None or isinstance(name, str)):
            yield Finding(f"dimension_names[{i}] is {_short(name)}, expected a string or null", details={"value": name})
    shape = _metadata(node).get("shape")
    if isinstance(shape, list) and len(shape) != len(names):
        yield Finding(
            f"dimension_names has {len(names)} entries, expected {len(shape)} as shape has",
            details={"value": names, "expected": len(shape)},
        )


@check(kind="array", own_metadata_only=True)
def dimension_names_distinct(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """No two dimensions share a non-empty name (null and "" may repeat).

    Not applicable when: dimension_names is absent or not an array.
    """
    names = _field(node, "dimension_names")
    if not isinstance(names, list):
        raise NotApplicable(f"{node.path} dimension_names is not an array")
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if isinstance(name, str) and name:
            if name in seen:
                yield Finding(f"dimensions {seen[name]} and {i} are both named {name!r}", details={"value": name})
            else:
                seen[name] = i


@check(own_metadata_only=True)
def attributes_object(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The document's "attributes", where present, is a JSON object.

    Not applicable when: attributes is absent (a node may have none).
    """
    attrs = _field(node, "attributes")
    if not isinstance(attrs, Mapping):
        yield Finding(f"attributes is {_short(attrs)}, expected a JSON object", details={"value": attrs})


# ------------------------------------------------------------------------------------------ consolidated metadata
@check(kind="group", own_metadata_only=True)
def consolidated_marker(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The group's "consolidated_metadata", where present, is an object with "must_understand": false, "kind": "inline" and an object "metadata".

    Not applicable when: the group has no consolidated_metadata.
    """
    value = _field(node, "consolidated_metadata")
    if not isinstance(value, Mapping):
        yield Finding(f"consolidated_metadata is {_short(value)}, expected a JSON object", details={"value": value})
        return
    expected = {"must_understand": False, "kind": "inline"}
    for key, want in expected.items():
        got = value.get(key, ...)
        if got is ... or type(got) is not type(want) or got != want:
            yield Finding(
                f"consolidated_metadata.{key} is {'absent' if got is ... else _short(got)}, expected {_json(want)}",
                details={"field": key, "value": None if got is ... else got},
            )
    if not isinstance(value.get("metadata"), Mapping):
        got = value.get("metadata", ...)
        yield Finding(
            f"consolidated_metadata.metadata is {'absent' if got is ... else _short(got)}, expected an object "
            "mapping node paths to their metadata documents",
            details={"field": "metadata", "value": None},
        )


def _stored_documents(node: Node) -> dict[str, Any]:
    """Path relative to the group -> the parsed zarr.json of every node below it ("<not JSON>" when unreadable)."""
    out: dict[str, Any] = {}
    for rel in node.stored_keys() or ():
        if rel == METADATA_KEY or rel.rsplit("/", 1)[-1] != METADATA_KEY:
            continue
        try:
            doc = node.read_json(rel)  # parsed once by the tree, for every rule
            if doc is None and node.read_key(rel) is None:
                continue  # named by consolidated metadata (a store read without listing), not stored
            out[rel[: -len(METADATA_KEY) - 1]] = doc
        except (JSONProblem, NodeError):
            out[rel[: -len(METADATA_KEY) - 1]] = "<not JSON>"
    return out


def _without_marker(copy: Any, stored: Any) -> Any:
    """The copy of a group document without its "consolidated_metadata", where the stored one has none.

    zarr-python 3 writes an empty marker into the entry of every nested group; its reader rebuilds the nesting
    from the flat paths, so the marker misstates nothing.
    """
    if (
        isinstance(copy, Mapping)
        and "consolidated_metadata" in copy
        and not (isinstance(stored, Mapping) and "consolidated_metadata" in stored)
    ):
        return {k: v for k, v in copy.items() if k != "consolidated_metadata"}
    return copy


@check(kind="group")
def consolidated_entries_match(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every node below the group has an entry in its consolidated_metadata.metadata equal to its stored zarr.json, and every entry names a stored node.

    Entries are keyed by path relative to the group ("sub/x"). A nested group's entry may carry an empty
    consolidated_metadata marker its stored document lacks (zarr-python 3 writes one). One finding per differing
    path, at most 20, then a count. Not applicable when: the group has no consolidated_metadata with an object
    "metadata" (consolidated_marker reports a malformed one); not checked when the store was not listed and every
    node it names equals its entry (a node it leaves out cannot be found).
    """
    value = _field(node, "consolidated_metadata")
    entries = value.get("metadata") if isinstance(value, Mapping) else None
    if not isinstance(entries, Mapping):
        raise NotApplicable(f"{node.path} consolidated_metadata has no metadata object")
    stored = _stored_documents(node)
    copies = {k: _without_marker(v, stored.get(k)) for k, v in entries.items()}
    bad = []
    for rel in sorted(set(stored) | set(copies)):
        if rel in stored and rel in copies and _same_json(stored[rel], copies[rel]):
            continue
        if rel not in copies:
            message = f"{rel}/zarr.json is stored but has no entry in consolidated_metadata: a reader of it does not see the node"
        elif rel not in stored:
            message = f"consolidated_metadata has an entry {rel!r}, but no {rel}/zarr.json is stored"
        else:
            fields = (
                sorted(k for k in set(stored[rel]) | set(copies[rel]) if not _same_json(stored[rel].get(k), copies[rel].get(k)))
                if isinstance(stored[rel], Mapping) and isinstance(copies[rel], Mapping)
                else []
            )
            message = f"consolidated_metadata entry {rel!r} differs from {rel}/zarr.json" + (
                f" in {', '.join(fields)}" if fields else ""
            )
        bad.append(Finding(message, details={"key": rel, "in_store": rel in stored, "in_consolidated": rel in copies}))
    if not bad and not node.keys_listed:
        raise NotChecked(unlisted_documents(node, len(stored)))
    yield from _limited(bad, "paths whose consolidated entry differs")


# ------------------------------------------------------------------------------------------ hierarchy
# A rule's pattern compiled once: the name clauses run on every distinct node name (`re.search` looks each up again).
_pattern = functools.cache(re.compile)


@check(
    options={
        "properties": {"forbid": {"type": "string"}, "require": {"type": "string"}, "means": {"type": "string"}},
        "required": ["means"],
    },
    own_name=True,
)
def node_name_pattern(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The node's name does not match the regular expression `forbid` and does match `require` (`means` says what they mean).

    The root has no name: not applicable to it.
    """
    if node.path == "/":
        raise NotApplicable("the root node has no name")
    name = node.name
    forbidden = "forbid" in options and _pattern(options["forbid"]).search(name)
    if forbidden or ("require" in options and not _pattern(options["require"]).search(name)):
        yield Finding(f"is named {name!r}: {options['means']}", details={"name": name})


@check(own_name=True)
def node_name_nfkc(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """A node name with non-ASCII characters is case-folded and NFKC-normalized (it equals NFKC_Casefold of itself).

    Not applicable when: the node is the root, or its name is ASCII.
    """
    if node.path == "/" or node.name.isascii():
        raise NotApplicable(f"{node.path} has no non-ASCII name")
    name = node.name
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    if folded != name:
        yield Finding(
            f"is named {name!r}, which case-folded and NFKC-normalized is {folded!r}", details={"name": name, "expected": folded}
        )


@check(kind="group")
def group_metadata_stored(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The group has its own zarr.json (it is not an implicit group that exists only because nodes lie below it)."""
    if not node.implicit:
        return
    below = [k for k in node.stored_keys() or () if k.rsplit("/", 1)[-1] == METADATA_KEY]
    prefix = node.path.strip("/")
    key = f"{prefix}/{METADATA_KEY}" if prefix else METADATA_KEY
    first = f"{prefix}/{below[0]}" if below and prefix else (below[0] if below else "?")
    yield Finding(
        f"no {key} is stored, expected a group metadata document above {first} ({len(below)} zarr.json document(s) below)",
        details={"key": key, "below": first, "groups_stored": _groups_stored(node.tree.root)},
    )


def _groups_stored(root: Node) -> bool | None:
    """Whether any group of the store has its own zarr.json (a writer of arrays only, tensorstore, stores none); None
    when that cannot be read. Stops at the first such group."""
    stack = [root]
    try:
        while stack:
            group = stack.pop()
            if not group.implicit:
                return True
            stack.extend(c for c in group.children().values() if c.kind == "group")
    except NodeError:
        return None
    return False


@check(kind="group")
def v2_documents_absent(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """No Zarr v2 metadata document (.zarray, .zgroup, .zattrs, .zmetadata) is stored beside the group's zarr.json.

    A store holding both formats at one node is read as two different hierarchies by v2 and v3 readers. Arrays
    are not asked: a v2 document under an array is a key no v3 reader reads (array_keys_known).
    """
    prefix = node.path.strip("/")
    for name in V2_DOCUMENTS:
        try:
            found = node.read_document(name) is not None
        except NodeError:
            found = True  # stored, though unreadable
        if found:
            key = f"{prefix}/{name}" if prefix else name
            yield Finding(
                f"stores the Zarr v2 document {key} beside its zarr.json: v2 readers see another hierarchy", details={"key": key}
            )


def _chunk_key_readings(rest: str) -> Iterator[tuple[str, int]]:
    """(form, dimensions) for each chunk key form that makes `rest` a chunk key ("0" is a 0-d and a 1-d v2 key)."""
    for name, form in CHUNK_KEY_FORMS:
        if rest == form.scalar:
            yield name, 0
        if rest.startswith(form.prefix):
            parts = rest[len(form.prefix) :].split(form.separator)
            if all(p.isascii() and p.isdigit() for p in parts):
                yield name, len(parts)


def _keys_beside_nodes(node: Node) -> tuple[dict[str, tuple[str, int, list[str]]], list[str]]:
    """The keys below a group that lie under none of its child nodes, split into lost arrays and the rest.

    A lost array is a folder (relative to the group) all of whose keys read as chunk keys of one form with one
    number of dimensions, and with no zarr.json anywhere below it (else the tree reads a node there): folder ->
    (form, dimensions, its keys). The rest are every other key beside the group's zarr.json and its child nodes,
    except Zarr v2 documents at the group (v2_documents_absent's) and "__" names (reserved for extensions).
    Raises NotApplicable for a node read as a group only because its zarr.json is no JSON object: what it is, and
    so which keys it may hold, is unknown (the tree reports the document).
    """
    if node.metadata is None and not node.implicit:
        raise NotApplicable(f"{node.path} has no readable zarr.json: what its keys are is unknown")
    children = set(node.children())
    loose = []
    for key in listed_keys(node):
        first = key.split("/", 1)[0]
        if key == METADATA_KEY or first in children or first.startswith("__") or key in V2_DOCUMENTS:
            continue
        loose.append(key)
    readings: dict[tuple[str, str, int], list[str]] = {}
    for key in loose:
        segments = key.split("/")
        for i in range(1, len(segments)):
            folder = "/".join(segments[:i])
            for form, ndim in _chunk_key_readings("/".join(segments[i:])):
                readings.setdefault((folder, form, ndim), []).append(key)
    lost: dict[str, tuple[str, int, list[str]]] = {}
    for (folder, form, ndim), keys in sorted(readings.items(), key=lambda item: (item[0][0].count("/"), item[0])):
        if folder in lost or any(folder.startswith(f"{above}/") for above in lost):
            continue
        below = [k for k in loose if k.startswith(f"{folder}/")]
        if len(set(keys)) == len(below):
            lost[folder] = (form, ndim, below)
    taken = {k for _, _, keys in lost.values() for k in keys}
    return lost, [k for k in loose if k not in taken]


def _full_key(node: Node, rel: str) -> str:
    prefix = node.path.strip("/")
    return f"{prefix}/{rel}" if prefix else rel


@check(kind="group")
def array_documents_stored(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """No folder below the group holds chunk keys without a zarr.json: every array the store holds has its metadata document.

    A folder (under none of the group's child nodes) all of whose keys read as chunk keys of one chunk key form
    (the default or v2 encoding, "/" or ".") with one number of dimensions, and with no zarr.json below it, is an
    array whose document is missing: no reader sees a node there. One finding per such folder, at most 20, then a
    count. Not applicable when: the group's own zarr.json is stored but no JSON object; not checked when the store
    was not listed.
    """
    lost, _ = _keys_beside_nodes(node)
    bad = [
        Finding(
            f"stores {len(keys)} chunk key(s) under {_full_key(node, folder)}/ ({form}, {ndim} dimension(s), such as "
            f"{_full_key(node, keys[0])!r}) but no {_full_key(node, folder)}/zarr.json: an array whose metadata document "
            "is missing, which no reader sees",
            details={"key": _full_key(node, folder), "form": form, "ndim": ndim, "keys": len(keys)},
        )
        for folder, (form, ndim, keys) in lost.items()
    ]
    yield from _limited(bad, "folders of chunks without a zarr.json")


@check(kind="group")
def group_keys_known(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every key stored below the group is its zarr.json, lies under one of its child nodes, or is one this pack reports elsewhere.

    Reported elsewhere: Zarr v2 documents at the group (v2_documents_absent), the chunks of a folder without a
    zarr.json (array_documents_stored), and "__" names (reserved for extensions: left alone). Any other key (a
    .DS_Store, n5's attributes.json, a folder of files that is no node) is never read by a Zarr v3 reader. At most
    20 keys are named, then a count. Not applicable when: the group's own zarr.json is stored but no JSON object;
    not checked when the store was not listed.
    """
    _, rest = _keys_beside_nodes(node)
    bad = [
        Finding(
            f"stores key {_full_key(node, key)!r}, which belongs to no node of the hierarchy: a Zarr v3 reader never reads it",
            details={"key": _full_key(node, key)},
        )
        for key in rest
    ]
    yield from _limited(bad, "keys that no reader reads")


# ------------------------------------------------------------------------------------------ shard indexes (a scan)
SHARD_CHECKS = ("decodes", "ranges", "empty-pairs", "no-overlap")


def _shard_facts(node: Node, options: Options, scope: Scope) -> Mapping[str, FactRequest]:
    from spec_validate.nodes.zarr.v3 import shard_layout

    meta = _metadata(node)
    codecs = meta.get("codecs")
    if node.kind != "array" or not isinstance(codecs, list) or "sharding_indexed" not in [extension(c)[0] for c in codecs]:
        raise NotApplicable(f"{node.path} is not a sharded array")
    layout = shard_layout(meta)
    if isinstance(layout, str):
        raise NotChecked(f"{node.path}: shard indexes not read: {layout}")
    return {"shards": FactRequest("shard_index_problems", (("limit", MAX_FINDINGS),))}


@check(
    options={"properties": {"check": {"enum": list(SHARD_CHECKS)}}, "required": ["check"]},
    kind="array",
    facts=_shard_facts,
    own_metadata_only=True,
)
def shard_indexes_valid(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """Every stored shard's index, read from its start or end as index_location says, passes `check`.

    decodes: the index is there (the shard holds at least its bytes) and its index codecs decode it (the crc32c
    checksum matches). ranges: every (offset, nbytes) pair of an inner chunk lies inside the shard and outside the
    index. empty-pairs: offset and nbytes are both 2**64-1 (an empty inner chunk) or neither is. no-overlap: no two
    inner chunks' byte ranges overlap. Memory: one shard index at a time; every shard of the array is read once,
    only its index bytes, in the array's scan (threads or Dask tasks).
    Not applicable when: the array is not sharded by its array -> bytes codec; not checked when its sharding
    configuration or index codecs are ones this tool does not read (codecs after sharding_indexed, index codecs
    other than bytes then crc32c). Index codecs absent (zarr3.sharding.index-codecs reports it) are read as
    zarr-python 3 and zarrs read them: a little-endian bytes codec then crc32c.
    """
    result = facts["shards"]
    if result is None:
        return  # no shard is stored: every element is the fill value
    found = [p for p in result.found if p.check == options["check"]]
    for p in found:
        yield Finding(f"shard {p.key}: {p.message}", details={"key": p.key, "inner": list(p.inner) if p.inner else None})
    more = result.counts.get(options["check"], 0) - len(found)
    if more > 0:
        yield Finding(f"... and {more} more such problems in the array's shards", details={"more": more})


# ------------------------------------------------------------------------------------------ chunk decoding (--deep)
def _chunk_problems(node: Node, options: Options, scope: Scope) -> Mapping[str, FactRequest]:
    meta = _metadata(node)
    if node.kind == "array" and array_shape(meta) is not None and key_form(meta) is not None:
        _grid_read(node, "chunks")
    if node.kind != "array" or array_shape(meta) is None or regular_chunk_shape(meta) is None or key_form(meta) is None:
        raise NotApplicable(f"{node.path} has an unusable shape, chunk grid or chunk key encoding (other rules report them)")
    if node.dtype is None:
        raise NotChecked(f"{node.path}: data type {_short(meta.get('data_type'))} is not one this tool decodes")
    if not scope.deep:  # the clause concerns the array all the same: it is not checked in this run
        raise NotChecked(NEEDS_DEEP)
    return {"chunks": FactRequest("chunk_problems", (("limit", MAX_FINDINGS),))}


@check(kind="array", facts=_chunk_problems, own_metadata_only=True)
def chunks_decode(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """Every stored chunk decodes through the array's codecs, in reverse order, to exactly one chunk (a shard: each stored inner chunk to one inner chunk).

    Runs only with --deep: the scan reads and decodes every stored chunk once, through the one bounded codec module
    (spec_validate/codecs/decode.py: allow-listed codecs only, every step bounded by the size the metadata fixes,
    checksums verified), and records each chunk that does not decode; in a shard, the first inner chunk that does
    not decode names the shard. At most 20 chunks are named, then the exact count of the rest.
    Memory: a few blocks, each chunk's decoding bounded by its declared size.
    Not applicable when: the shape, regular grid or key encoding is unusable (other rules report them); not checked
    without --deep, or when the chunk grid is an extension this tool does not read, or a codec or the data type is
    not one the codec module decodes.
    """
    result = facts["chunks"]
    if result is None:  # no chunk is stored: every element is the fill value
        return
    if result.unread and not result.bad:  # whole chunks not read: whether they decode to one chunk is not known
        raise NotChecked(result.first_unread or f"{node.path}: {result.unread} chunks not read")
    prefix = f"{node.path}: "
    for problem in result.found:
        message = problem.problem.removeprefix(prefix)
        yield Finding(message, details={"key": problem.key, "error": message})
    if result.bad > len(result.found):
        more = result.bad - len(result.found)
        yield Finding(
            f"... and {more} more of {result.read} stored chunks do not decode to one chunk", details={"key": None, "more": more}
        )
