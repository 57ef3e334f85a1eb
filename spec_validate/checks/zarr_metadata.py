"""Primitives about Zarr v2 metadata documents as stored (`.zarray`, `.zgroup`) and the keys beside them."""

from __future__ import annotations

import base64
import binascii
import json
import marshal
import math
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from spec_validate.checks.api import Options, check
from spec_validate.codecs.jsondoc import JSONProblem, loads
from spec_validate.errors import NodeError
from spec_validate.excerpt import cut
from spec_validate.model import Finding, NotApplicable, NotChecked, Scope
from spec_validate.nodes.base import Node

# numpy typestr: byte order, kind letter, item size, and for datetime/timedelta a unit in brackets.
# "O" is a NumPy array-protocol kind (Python objects) that zarr writers use with an object codec.
TYPESTR = re.compile(r"^(?P<order>[<>|]?)(?P<kind>[a-zA-Z])(?P<size>\d*)(?:\[(?P<unit>[^\]]*)\])?$")
KINDS = "biufcmMSUVO"
DATETIME_UNITS = {"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic"}
FLOAT_SPECIALS = ("NaN", "Infinity", "-Infinity")


def _metadata(node: Node) -> dict[str, Any]:
    meta = node.metadata
    if not isinstance(meta, dict):
        raise NotApplicable(f"{node.path} has no readable metadata document")
    return meta


def _field(node: Node, key: str) -> Any:
    meta = _metadata(node)
    if key not in meta:
        raise NotApplicable(f"{node.path} metadata has no {key!r}")
    return meta[key]


def _json(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


KEYS_OPTION = {"properties": {"keys": {"type": "array", "items": {"type": "string"}, "minItems": 1}}, "required": ["keys"]}


@check(options=KEYS_OPTION, own_metadata_only=True)
def metadata_keys_present(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The node's stored metadata document is a JSON object containing every key in `keys`.

    Fails once, without naming keys, when the document is missing or is not a JSON object.
    Not applicable when: the node is an implicit group (group_document_present reports it).
    """
    if node.implicit:
        raise NotApplicable(f"{node.path} is an implicit group with no metadata document")
    meta = node.metadata
    if not isinstance(meta, dict):
        yield Finding("metadata document is missing or not a JSON object, expected an object", details={"key": None})
        return
    for key in options["keys"]:
        if key not in meta:
            yield Finding(f"metadata lacks {key!r}, expected it present", details={"key": key})


@check(options=KEYS_OPTION, own_metadata_only=True)
def metadata_keys_allowed(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The node's stored metadata document has no key outside `keys`.

    Not applicable when: the document is missing or not a JSON object.
    """
    meta = _metadata(node)
    for key in meta:
        if key not in options["keys"]:
            yield Finding(f"metadata has key {key!r}, expected only {sorted(options['keys'])}", details={"key": key})


@check(options={"properties": {"key": {"type": "string"}, "value": {}}, "required": ["key", "value"]}, own_metadata_only=True)
def metadata_equals(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The metadata field `key` is exactly `value` (same JSON type; true is not 1).

    Not applicable when: the field is absent (the keys rule reports it).
    """
    value, want = _field(node, options["key"]), options["value"]
    if type(value) is not type(want) or value != want:
        yield Finding(f"{options['key']} is {_json(value)}, expected {_json(want)}", details={"value": value})


@check(
    options={
        "properties": {"key": {"type": "string"}, "values": {"type": "array", "minItems": 1}},
        "required": ["key", "values"],
    },
    own_metadata_only=True,
)
def metadata_one_of(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The metadata field `key`, when present, is one of `values`.

    Not applicable when: the field is absent.
    """
    value = _field(node, options["key"])
    if not any(type(value) is type(v) and value == v for v in options["values"]):
        yield Finding(f"{options['key']} is {_json(value)}, expected one of {_json(options['values'])}", details={"value": value})


@check(
    options={
        "properties": {
            "key": {"type": "string"},
            "minimum": {"type": "integer"},
            "same_length_as": {"type": "string"},
        },
        "required": ["key"],
    },
    own_metadata_only=True,
)
def metadata_int_list(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The metadata field `key` is a list of integers, each at least `minimum`, as long as the list `same_length_as`.

    Not applicable when: the field is absent.
    """
    key, value = options["key"], _field(node, options["key"])
    if not isinstance(value, list):
        yield Finding(f"{key} is {_json(value)}, expected a list of integers", details={"value": value})
        return
    for i, item in enumerate(value):
        if not _is_int(item):
            yield Finding(f"{key}[{i}] is {_json(item)}, expected an integer", details={"value": item})
        elif "minimum" in options and item < options["minimum"]:
            yield Finding(f"{key}[{i}] is {item}, expected at least {options['minimum']}", details={"value": item})
    other = options.get("same_length_as")
    meta = _metadata(node)
    if other and isinstance(meta.get(other), list) and len(meta[other]) != len(value):
        yield Finding(
            f"{key} has {len(value)} entries, expected {len(meta[other])} as {other} has",
            details={"value": len(value), "expected": len(meta[other])},
        )


@check(
    options={"properties": {"key": {"type": "string"}, "list": {"type": "boolean"}}, "required": ["key", "list"]},
    own_metadata_only=True,
)
def metadata_codec(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The metadata field `key` is null, or a codec object with a string "id" (a list of them when `list`).

    Not applicable when: the field is absent.
    """
    key, value = options["key"], _field(node, options["key"])
    if value is None:
        return
    if options["list"]:
        if not isinstance(value, list):
            yield Finding(f"{key} is {_json(value)}, expected null or a list of codec objects", details={"value": value})
            return
        items = [(f"{key}[{i}]", v) for i, v in enumerate(value)]
    else:
        items = [(key, value)]
    for where, item in items:
        if not isinstance(item, dict):
            yield Finding(f'{where} is {_json(item)}, expected an object with an "id"', details={"value": item})
        elif not isinstance(item.get("id"), str):
            yield Finding(f"{where} has id {_json(item.get('id'))}, expected a string codec id", details={"value": item})


# ------------------------------------------------------------------------------------------ dtype
def _walk_dtype(spec: Any, where: str = "dtype") -> Iterator[tuple[str, Any, str | None]]:
    """(location, part, problem) for every simple typestr in a dtype; problem is set for structural errors."""
    if isinstance(spec, str):
        yield where, spec, None
        return
    if not isinstance(spec, list) or not spec:
        yield where, spec, f"is {_json(spec)}, expected a typestr or a non-empty list of fields"
        return
    # Counted once (list.count per name made a dtype of 200,000 fields take hours).
    named = Counter(f[0] for f in spec if isinstance(f, list) and f and isinstance(f[0], str))
    for name in sorted(n for n, times in named.items() if times > 1):
        yield where, spec, f"names the field {name!r} {named[name]} times, expected each field name once"
    for i, field in enumerate(spec):
        at = f"{where}[{i}]"
        if not isinstance(field, list) or len(field) not in (2, 3) or not isinstance(field[0], str):
            yield at, field, f"is {_json(field)}, expected [fieldname, datatype] or [fieldname, datatype, shape]"
            continue
        if len(field) == 3 and not (isinstance(field[2], list) and all(_is_int(n) and n >= 0 for n in field[2])):
            yield at, field, f"has shape {_json(field[2])}, expected a list of non-negative integers"
        yield from _walk_dtype(field[1], f"{at}[1]")


@check(kind="array", own_metadata_only=True)
def dtype_encoding(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The dtype is a typestr with a known kind letter and a byte size, or a list of [name, type(, shape)] fields.

    "|O" (objects, item size implied) is NumPy's own typestr for object arrays. No field name repeats within a
    structured type. Byte order, a byte count the kind has (no "<f3", "<i3" or "|b2") and datetime units are left to
    dtype_byte_order, dtype_item_size and dtype_datetime_units.
    Not applicable when: the dtype field is absent.
    """
    for where, part, problem in _walk_dtype(_field(node, "dtype")):
        if problem:
            yield Finding(f"{where} {problem}", details={"value": part})
            continue
        m = TYPESTR.match(part)
        if not m or m["kind"] not in KINDS:
            yield Finding(
                f"{where} is {part!r}, expected a typestr such as '<f8' with a kind among {KINDS!r}", details={"value": part}
            )
        elif (not m["size"] and m["kind"] != "O") or (m["size"] == "0" and m["kind"] not in "SUV"):
            yield Finding(f"{where} is {part!r}, expected a byte size after the kind letter", details={"value": part})
        elif m["unit"] is not None and m["kind"] not in "mM":
            yield Finding(f"{where} is {part!r}, expected a unit only on datetime or timedelta types", details={"value": part})


@check(kind="array", own_metadata_only=True)
def dtype_byte_order(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every typestr in the dtype starts with a byte order: "<", ">" or "|".

    Not applicable when: the dtype field is absent or holds no typestr (dtype_encoding reports that).
    """
    typestrs = [
        (where, part) for where, part, problem in _walk_dtype(_field(node, "dtype")) if not problem and isinstance(part, str)
    ]
    if not typestrs:
        raise NotApplicable(f"{node.path} dtype holds no typestr")
    for where, part in typestrs:
        if part[:1] not in ("<", ">", "|"):
            yield Finding(f"{where} is {part!r}, expected it to start with '<', '>' or '|'", details={"value": part})


# Kinds whose byte order is irrelevant whatever their size: booleans, byte strings, void and objects.
ORDERLESS_KINDS = "bSVO"


def _typestrs(node: Node) -> list[tuple[str, str, re.Match]]:
    """(location, typestr, match) for every well-formed simple typestr of the dtype (dtype_encoding reports the rest)."""
    out = []
    for where, part, problem in _walk_dtype(_field(node, "dtype")):
        m = TYPESTR.match(part) if not problem and isinstance(part, str) else None
        if m and m["kind"] in KINDS:
            out.append((where, part, m))
    return out


@check(kind="array", own_metadata_only=True)
def dtype_byte_order_relevant(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every typestr whose byte order matters says "<" or ">": "|" (not relevant) only on one-byte numbers, booleans, byte strings, void and objects.

    A number of more than one byte, and unicode (four bytes a character), has a byte order a reader must know.
    Not applicable when: the dtype holds no typestr whose byte order matters.
    """
    relevant = [
        (where, part, m)
        for where, part, m in _typestrs(node)
        if m["kind"] not in ORDERLESS_KINDS and (m["kind"] == "U" or (m["size"] or "0") not in ("0", "1"))
    ]
    if not relevant:
        raise NotApplicable(f"{node.path} dtype has no typestr whose byte order matters")
    for where, part, m in relevant:
        if m["order"] == "|":
            yield Finding(
                f"{where} is {part!r}: '|' says the byte order is not relevant, but a {m['kind']}{m['size']} "
                f"has one; expected '<' or '>'",
                details={"value": part},
            )


# The byte counts NumPy defines for each kind of fixed size (the strings S, U and void V take any count).
ITEM_SIZES = {"b": (1,), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8), "f": (2, 4, 8, 16), "c": (8, 16, 32), "m": (8,), "M": (8,)}


@check(kind="array", own_metadata_only=True)
def dtype_item_size(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every typestr's byte count is one its kind has: b 1; i and u 1, 2, 4 or 8; f 2, 4, 8 or 16; c 8, 16 or 32; m and M 8.

    Byte strings (S), unicode (U) and void (V) take any count; a missing count is dtype_encoding's to report.
    Not applicable when: the dtype holds no typestr of a kind with fixed sizes and a count.
    """
    sized = [(where, part, m) for where, part, m in _typestrs(node) if m["kind"] in ITEM_SIZES and m["size"]]
    if not sized:
        raise NotApplicable(f"{node.path} dtype has no typestr of a fixed-size kind with a byte count")
    for where, part, m in sized:
        if int(m["size"]) not in ITEM_SIZES[m["kind"]]:
            sizes = ", ".join(map(str, ITEM_SIZES[m["kind"]]))
            yield Finding(
                f"{where} is {part!r}: kind {m['kind']!r} has no {m['size']}-byte type, expected {sizes}", details={"value": part}
            )


@check(kind="array", own_metadata_only=True)
def dtype_datetime_units(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every datetime64 ("M") or timedelta64 ("m") typestr in the dtype ends with a NumPy unit in brackets.

    Not applicable when: the dtype field is absent or holds no datetime64 or timedelta64 typestr.
    """
    matches = (
        (where, part, TYPESTR.match(part) if not problem and isinstance(part, str) else None)
        for where, part, problem in _walk_dtype(_field(node, "dtype"))
    )
    times = [(where, part, m) for where, part, m in matches if m and m["kind"] in "mM"]
    if not times:
        raise NotApplicable(f"{node.path} dtype has no datetime64 or timedelta64 typestr")
    for where, part, m in times:
        unit = m["unit"]
        base = re.sub(r"^\d+", "", unit or "")
        if unit is None or base not in DATETIME_UNITS:
            yield Finding(f"{where} is {part!r}, expected a unit in brackets such as '<M8[ns]'", details={"value": part})


# ------------------------------------------------------------------------------------------ fill_value
def _simple_kind(node: Node) -> str | None:
    dtype = _metadata(node).get("dtype")
    if isinstance(dtype, list):
        return "structured"
    m = TYPESTR.match(dtype) if isinstance(dtype, str) else None
    return m["kind"] if m else None


@check(kind="array", own_metadata_only=True)
def fill_value_float_encoding(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """A floating-point array's fill_value is null, a finite JSON number, or one of "NaN", "Infinity", "-Infinity".

    A bare JSON `NaN`/`Infinity` literal (not JSON) fails. Not applicable when: the dtype is not a simple
    float, or fill_value is absent.
    """
    if _simple_kind(node) != "f":
        raise NotApplicable(f"{node.path} is not a simple floating-point array")
    value = _field(node, "fill_value")
    if value is None or (value in FLOAT_SPECIALS and isinstance(value, str)):
        return
    if isinstance(value, float) and not math.isfinite(value):
        yield Finding(
            f'fill_value is the bare literal {value!r}, expected the string "NaN", "Infinity" or "-Infinity"',
            details={"value": str(value)},
        )
    elif not (isinstance(value, (int, float)) and not isinstance(value, bool)):
        yield Finding(
            f'fill_value is {_json(value)}, expected a number, null, "NaN", "Infinity" or "-Infinity"', details={"value": value}
        )


@check(kind="array", own_metadata_only=True)
def fill_value_base64(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """A byte-string ("S") or structured array's fill_value is null or an ASCII string in standard Base64.

    Not applicable when: the dtype is neither, or fill_value is absent.
    """
    if _simple_kind(node) not in ("S", "structured"):
        raise NotApplicable(f"{node.path} is neither a byte-string nor a structured array")
    value = _field(node, "fill_value")
    if value is None:
        return
    dtype = _metadata(node).get("dtype")
    if not isinstance(value, str):
        yield Finding(f"fill_value is {_json(value)}, expected null or a Base64 string", details={"value": value, "dtype": dtype})
        return
    try:
        base64.b64decode(value.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error, ValueError):
        yield Finding(f"fill_value is {value!r}, expected standard Base64", details={"value": value, "dtype": dtype})


INT64 = (-(2**63), 2**63 - 1)
FILL_TYPES = {
    "b": "a boolean",
    "i": "an integer in the type's range",
    "u": "a non-negative integer in the type's range",
    "U": "a string",
    "c": 'a list [real, imaginary], each a number or "NaN", "Infinity" or "-Infinity"',
    "m": "an integer (the int64 count of the unit; NaT is -9223372036854775808)",
    "M": "an integer (the int64 count of the unit; NaT is -9223372036854775808)",
    "V": "a Base64 string",
}


def _float_json(value: Any) -> bool:
    """A float as the fill value table encodes it: a finite JSON number, or "NaN", "Infinity", "-Infinity"."""
    if isinstance(value, str):
        return value in FLOAT_SPECIALS
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_base64(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        base64.b64decode(value.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error, ValueError):
        return False
    return True


def _int_range(kind: str, size: int | None) -> tuple[int, int]:
    """The values an integer type of `size` bytes holds (int64's when the size is not one NumPy has)."""
    bits = 8 * size if size in (1, 2, 4, 8) else 64
    return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if kind == "i" else (0, 2**bits - 1)


def _fill_ok(kind: str, value: Any, size: int | None = None) -> bool:
    if kind == "b":
        return isinstance(value, bool)
    if kind in "iu":
        low, high = _int_range(kind, size)
        return _is_int(value) and low <= value <= high
    if kind == "U":
        return isinstance(value, str)
    if kind == "c":
        return isinstance(value, list) and len(value) == 2 and all(_float_json(v) for v in value)
    if kind in "mM":
        return _is_int(value) and INT64[0] <= value <= INT64[1]
    return _is_base64(value)  # "V"


@check(kind="array", own_metadata_only=True)
def fill_value_matches_dtype(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """fill_value is null or a JSON value of the dtype's kind, encoded as zarr writers do where JSON has no such scalar.

    boolean for "b"; integer for "i" and "u" within the type's range (0 to 255 for "|u1"); string for "U"; for complex ("c") a list
    [real, imaginary], each part a number or "NaN"/"Infinity"/"-Infinity" (a bare NaN literal fails); for
    datetime64/timedelta64 ("M"/"m") an int64 integer; for void ("V") a Base64 string.
    Not applicable when: the dtype is a float, byte string or structured type (their own clauses check
    them), an object ("O") type (the spec defines no fill value encoding for it), or fill_value is absent.
    """
    kind = _simple_kind(node)
    if kind == "O":
        raise NotApplicable(f'{node.path} is an object ("O") array: the spec defines no fill value encoding for it')
    if kind not in FILL_TYPES:
        raise NotApplicable(f"{node.path} dtype kind {kind!r} has no simple fill value check")
    value = _field(node, "fill_value")
    if value is None:
        return
    m = TYPESTR.match(_metadata(node).get("dtype"))
    size = int(m["size"]) if m and m["size"] else None
    if not _fill_ok(kind, value, size):
        detail = FILL_TYPES[kind]
        if kind in "iu" and _is_int(value):
            low, high = _int_range(kind, size)
            detail = f"an integer in [{low}, {high}] (dtype {m.string})"
        yield Finding(
            f"fill_value is {_json(value)}, expected null or {detail} for dtype kind {kind!r}",
            details={
                "value": value if not isinstance(value, float) or math.isfinite(value) else str(value),
                "dtype": _metadata(node).get("dtype"),
            },
        )


# ------------------------------------------------------------------------------------------ hierarchy
@check(own_metadata_only=True)
def attrs_document_object(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The node's `.zattrs`, read raw, is absent or a JSON object (UTF-8, strict JSON, an object at the top).

    The document is read here as stored, not through node.attrs, which treats a bad one as empty. Strict JSON
    has no bare NaN, Infinity or -Infinity token (Python's parser takes them; a browser's JSON.parse does not).
    Not applicable in a Zarr v3 store, whose nodes keep their attributes in zarr.json (a `.zattrs` there is no
    document of the node's, nor part of what its signature covers).
    """
    if node.tree.format == "zarr-v3":
        raise NotApplicable(f"{node.path}: a Zarr v3 node keeps its attributes in zarr.json, not in .zattrs")
    stored = _stored_object(node, ".zattrs")
    if stored is not None and stored[2] is not None:
        yield Finding(stored[2], details={"key": stored[0]})


@check(options={"properties": {"name": {"type": "string", "minLength": 1}}, "required": ["name"]})
def document_strict_json(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The node's stored document `name` (`.zgroup`), when stored, parses as strict JSON: no bare NaN, Infinity or -Infinity token.

    Not applicable when: the node stores no such document. Whether it is an object, and its keys, are other
    steps' and rules' to judge.
    """
    prefix = node.path.strip("/")
    key = f"{prefix}/{options['name']}" if prefix else options["name"]
    try:
        raw = node.read_document(options["name"])
    except NodeError as exc:
        yield Finding(f"{key} cannot be read ({exc})", details={"key": key})
        return
    if raw is None:
        raise NotApplicable(f"{node.path} stores no {options['name']}")
    try:
        loads(raw, parse_constant=_no_constant)
    except JSONProblem as exc:
        yield Finding(f"{key} is {exc}", details={"key": key})


@check(options={"properties": {"below": {"enum": ["array", "group"]}}, "required": ["below"]}, kind="group")
def group_document_present(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The group is explicit (a `.zgroup` is stored at its path), or no `below` (array or group) lies under it.

    A directory with no `.zgroup` that leads to a `.zarray` (below: array) or a `.zgroup` (below: group)
    is an implicit ancestor and fails.
    """
    if not node.implicit:
        return
    prefix = node.path.strip("/")
    document = ".zarray" if options["below"] == "array" else ".zgroup"
    keys = node.stored_keys() or ()
    under = [f"{prefix}/{k}" if prefix else k for k in keys if k.rsplit("/", 1)[-1] == document]
    if under:
        key = f"{prefix}/.zgroup" if prefix else ".zgroup"
        yield Finding(
            f"no {key} is stored, expected a group document at every ancestor of {under[0]} "
            f"({len(under)} {options['below']} document(s) below)",
            details={"key": key, "below": under[0], "groups_stored": _groups_stored(node.tree.root)},
        )


def _groups_stored(root: Node) -> bool | None:
    """Whether the store holds any `.zgroup` (a writer of arrays only, tensorstore, stores none); None when its keys
    are not known."""
    try:
        keys = root.stored_keys()
    except NodeError:
        return None
    return None if keys is None else any(k.rsplit("/", 1)[-1] == ".zgroup" for k in keys)


def chunk_grid(node: Node) -> tuple[list[int], str]:
    """The array's chunk grid (chunks per dimension) and dimension separator, from its stored metadata.

    Raises NotApplicable when shape, chunks or the separator are unusable (other rules report them).
    """
    meta = _metadata(node)
    shape, chunks, sep = meta.get("shape"), meta.get("chunks"), meta.get("dimension_separator", ".")
    if not (
        isinstance(shape, list)
        and isinstance(chunks, list)
        and len(shape) == len(chunks)
        and all(_is_int(s) and s >= 0 for s in shape)
        and all(_is_int(c) and c > 0 for c in chunks)
        and sep in (".", "/")
    ):
        raise NotApplicable(f"{node.path} has unusable shape, chunks or dimension_separator")
    return [-(-s // c) for s, c in zip(shape, chunks, strict=False)], sep


def _chunk_indices(rel: str, ndim: int, sep: str, padded: bool = False) -> tuple[int, ...] | None:
    """The grid indices `rel` names as a chunk key with separator `sep` and `ndim` indices ("0" for a 0-d array);
    None when it is none. Indices with leading zeros count only when `padded`."""
    if ndim == 0:
        return () if rel == "0" else None
    if sep == "." and "/" in rel:
        return None
    parts = rel.split(sep)
    if len(parts) != ndim or not all(
        p.isascii() and p.isdigit() and (padded or p == "0" or not p.startswith("0")) for p in parts
    ):
        return None
    return tuple(int(p) for p in parts)


# Why a clause on the keys stored is not checked: said the same way by every such clause.
NOT_LISTED = "the store was not listed (its server lists no folders, or --no-list)"


def listed_keys(node: Node) -> list[str]:
    """Every key stored below the node, relative to it (`Node.stored_keys`).

    Raises NotChecked where the store was not listed (a remote store read from its consolidated metadata alone):
    the keys are then unknown, and a clause on them is not checked rather than passed.
    """
    if not node.keys_listed:
        raise NotChecked(f"{node.path}: {NOT_LISTED}, so the keys stored below it are unknown")
    return node.stored_keys() or []


def classified_keys(node: Node, grid: list[int], sep: str) -> Iterator[tuple[str, str, str]]:
    """(store key, key relative to the array, kind) for every key beside the metadata documents.

    kind is "chunk" (a chunk key inside the grid), "outside-grid" (a chunk key its separator forms, for an index
    outside the grid), "misplaced" (a key of one index per dimension with the other separator, or with leading
    zeros: chunk data a reader that follows the metadata does not find), or "other" (any other key: an editor's
    backup, `.DS_Store`, netcdf-c's `.nczarray`, a key with another number of indices).
    """
    prefix = node.path.strip("/")
    other = "/" if sep == "." else "."
    for rel in listed_keys(node):
        key = f"{prefix}/{rel}" if prefix else rel
        if rel in (".zarray", ".zattrs"):
            continue
        index = _chunk_indices(rel, len(grid), sep)
        if index is not None:
            yield key, rel, "chunk" if all(i < g for i, g in zip(index, grid, strict=True)) else "outside-grid"
        elif any(_chunk_indices(rel, len(grid), s, padded=True) is not None for s in (sep, other)):
            yield key, rel, "misplaced"
        else:
            yield key, rel, "other"


@check(kind="array", own_keys=True)
def chunk_keys_valid(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """No chunk is stored under a key with the other dimension separator ("0/0" where the metadata says "." or says nothing), or with leading zeros.

    A reader forms chunk keys with dimension_separator ("." when absent), one index per dimension, no leading
    zeros, so chunk data stored under another such key is never found: the reader sees the fill value instead.
    Whether the index lies in the grid does not matter (the data is lost either way). One finding per such key.
    Not applicable when: shape, chunks or the separator are unusable (other rules report them); not checked
    when the store was not listed.
    """
    grid, sep = chunk_grid(node)
    declared = "dimension_separator" in _metadata(node)
    said = f"dimension_separator is {sep!r}{'' if declared else ' (absent, so the default)'}"
    for _, rel, kind in classified_keys(node, grid, sep):
        if kind != "misplaced":
            continue
        index = next(i for i in (_chunk_indices(rel, len(grid), s, padded=True) for s in ("/", ".")) if i is not None)
        expected = sep.join(str(i) for i in index)
        yield Finding(
            f"stores chunk {rel!r}, but {said}: a reader looks for {expected!r} and reads the fill value there",
            details={"key": rel, "declared": declared, "separator": "/" if "/" in rel else "."},
        )


@check(kind="array", own_keys=True)
def chunks_inside_grid(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every chunk key stored under the array names a chunk inside the grid (each index below ceil(shape / chunks)).

    One finding per key. Not applicable when: shape, chunks or the separator are unusable (other rules report
    them); not checked when the store was not listed. Keys that are no chunk key are only_chunk_keys'.
    """
    grid, sep = chunk_grid(node)
    for _, rel, kind in classified_keys(node, grid, sep):
        if kind == "outside-grid":
            yield Finding(f"stores chunk {rel!r}, outside the grid {grid}: no reader reads it", details={"key": rel})


@check(kind="array", own_keys=True)
def only_chunk_keys(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every key stored under the array is `.zarray`, `.zattrs`, or a chunk key (for either separator, one index per dimension).

    Other keys (an editor's backup, `.DS_Store`, netcdf-c's `.nczarray` and `.nczattrs`, a key with another
    number of indices) are never read. Chunks stored with the other separator are chunk_keys_valid's to report,
    chunks outside the grid chunks_inside_grid's. One finding per key.
    Not applicable when: shape, chunks or the separator are unusable (other rules report them); not checked
    when the store was not listed.
    """
    grid, sep = chunk_grid(node)
    for _, rel, kind in classified_keys(node, grid, sep):
        if kind == "other":
            yield Finding(
                f"stores key {rel!r}, which is not a chunk key like {sep.join(['0'] * max(len(grid), 1))!r} "
                f"(dimension_separator {sep!r}): no reader reads it",
                details={"key": rel},
            )


# The keys a Zarr v2 group holds itself: its documents. .zmetadata at any group (writers consolidate each image of
# a plate, and a reader opening that group reads it); a .zarray beside a .zgroup is a node of two kinds, which the
# tree reports, not counted here.
V2_GROUP_OWN_KEYS = frozenset({".zgroup", ".zattrs", ".zarray", ".zmetadata"})


@check(kind="group", own_keys=True)
def group_keys_known_v2(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every key stored below the Zarr v2 group is one of its documents or lies under one of its child nodes.

    Any other key (a `.DS_Store`, a README, netcdf-c's `.nczgroup`, a folder of files that is no node) is never
    read by a Zarr v2 reader. Keys of a child node are that node's to report (`only_chunk_keys` for an array, this
    check for a group). Not checked when the store was not listed.
    """
    children = set(node.children())
    for key in listed_keys(node):
        first = key.split("/", 1)[0]
        if first in children or key in V2_GROUP_OWN_KEYS:
            continue
        yield Finding(
            f"stores key {key!r}, which belongs to no node of the hierarchy: a Zarr v2 reader never reads it",
            details={"key": key},
        )


def _raw_keys(node: Node) -> list[str]:
    """The store's keys as stored (`Node.stored_raw_keys`), at its root. Raises NotChecked at the root of a store that
    was not listed, NotApplicable elsewhere and for backends whose keys cannot be listed as stored."""
    keys = node.stored_raw_keys()
    if keys is not None:
        return keys
    if node.path == "/" and not node.keys_listed:
        raise NotChecked(f"{node.path}: {NOT_LISTED}: its keys are unknown")
    raise NotApplicable(f"{node.path}: the store's keys, as stored, cannot be listed here")


@check()
def keys_normalized(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every key of the store, as stored, is a normalized logical path: no backslash, no leading, trailing or doubled "/", no "." or ".." segment.

    Keys are read as the store holds them (a zip entry's name, a file's path), including those the tree does
    not read. One finding per key.
    Not applicable when: the node is not the store root, or the backend cannot list its keys as stored; not
    checked when the store was not listed.
    """
    keys = _raw_keys(node)
    if not _any_unnormalized(keys):
        return  # the usual store: every key looked at once, not one at a time
    for key in keys:
        problems = []
        if "\\" in key:
            problems.append("a backslash")
        if key.startswith("/"):
            problems.append("a leading '/'")
        if key.endswith("/"):
            problems.append("a trailing '/'")
        if "//" in key:
            problems.append("an empty segment ('//')")
        if any(part in (".", "..") for part in key.replace("\\", "/").split("/")):
            problems.append("a '.' or '..' segment")
        if problems:
            yield Finding(
                f"stores key {key!r}, which has {' and '.join(problems)}: logical paths are normalized", details={"key": key}
            )


def _any_unnormalized(keys: list[str]) -> bool:
    """Whether some key may not be normalized, from all of them joined by newlines (each wrapped in "/" for its
    segments): a pattern holding no newline lies within one key, so nothing found means no key is at fault (a key
    holding a newline may be a false alarm: each key is then looked at alone)."""
    joined = "\n".join(keys)
    if "\\" in joined or "//" in joined or joined.startswith("/") or joined.endswith("/"):
        return True
    if "\n/" in joined or "/\n" in joined:
        return True
    wrapped = "/" + "/\n/".join(keys) + "/"
    return "/./" in wrapped or "/../" in wrapped


@check()
def keys_ascii(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every key of the store, as stored, is an ASCII string.

    Not applicable when: the node is not the store root, or the backend cannot list its keys as stored; not
    checked when the store was not listed.
    """
    keys = _raw_keys(node)
    for key in keys:
        if not key.isascii():
            first = next(c for c in key if not c.isascii())
            yield Finding(f"stores key {key!r}, which is not ASCII ({first!r}, U+{ord(first):04X})", details={"key": key})


# ------------------------------------------------------------------------------------------ consolidated metadata
CONSOLIDATED_KEY = ".zmetadata"


def _canonical(doc: Any) -> str:
    # One spelling per JSON value: key order ignored; 1 and 1.0, true and 1 kept apart; NaN equals NaN.
    return json.dumps(doc, sort_keys=True, allow_nan=True)


def _same_json(a: Any, b: Any) -> bool:
    """Whether two parsed JSON values are the same value (`_canonical`). Equal marshal bytes settle it at once: for
    parsed JSON they are equal only for the same values of the same types (true and 1, 1 and 1.0, 0.0 and -0.0 kept
    apart) in the same key order, the usual case of a copy made by the writer of the original; marshal writes them
    in a third of the time `repr` takes (format 2: no back-references, whose bytes would depend on shared objects)."""
    if a is b:
        return True
    try:
        if marshal.dumps(a, 2) == marshal.dumps(b, 2):
            return True
    except ValueError:  # nested past marshal's depth: the canonical spelling decides
        pass
    return _canonical(a) == _canonical(b)


def _stored_documents(node: Node) -> dict[str, Any]:
    """Key relative to the group -> the parsed document, for every .zarray/.zgroup/.zattrs at or below it.

    A document that is not JSON is kept as the sentinel string "<not JSON>", so it differs from any copy. One that
    cannot be read (a remote read that timed out) is left out: what it holds is unknown, and the comparison is not
    made for it (`_unread_document`).
    """
    out: dict[str, Any] = {}
    for rel in node.stored_keys() or ():
        if rel.rsplit("/", 1)[-1] not in (".zarray", ".zgroup", ".zattrs"):
            continue
        try:
            doc = node.read_json(rel)  # parsed once by the tree, for every rule
            if doc is None and node.read_key(rel) is None:
                continue  # named by consolidated metadata (a store read without listing), not stored
            out[rel] = doc
        except JSONProblem:
            out[rel] = "<not JSON>"
        except NodeError:
            continue
    return out


def _differences(expected: Any, found: Any) -> list[tuple[str | None, str, str]]:
    """(field, expected, found) where two documents differ; field None when they are not both objects."""
    if not (isinstance(expected, dict) and isinstance(found, dict)):
        return [(None, _short(expected), _short(found))]
    out = []
    for field in sorted(set(expected) | set(found)):
        if field in expected and field in found and _same_json(expected[field], found[field]):
            continue
        out.append(
            (
                field,
                _short(expected[field]) if field in expected else "(absent)",
                _short(found[field]) if field in found else "(absent)",
            )
        )
    return out


def _short(value: Any, limit: int = 60) -> str:
    text = _json(value)
    return cut(text, limit)


def _without_nested_marker(key: str, copy: Any, stored: Any) -> Any:
    """The copy of a `.zgroup` without zarr-python 3's "consolidated_metadata" marker, when the stored one lacks it.

    zarr-python 3 (zarr_format=2) adds {"kind": "inline", "metadata": {}, ...} to the entry of every nested
    group; its reader rebuilds the nesting from the flat keys and zarr-python 2's ignores the key, so it
    misstates nothing and is not staleness.
    """
    if (
        key.rsplit("/", 1)[-1] == ".zgroup"
        and isinstance(copy, dict)
        and "consolidated_metadata" in copy
        and not (isinstance(stored, dict) and "consolidated_metadata" in stored)
    ):
        return {k: v for k, v in copy.items() if k != "consolidated_metadata"}
    return copy


@check(kind="group")
def consolidated_metadata_matches(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The group's `.zmetadata`, when stored, is {"zarr_consolidated_format": 1, "metadata": {...}} whose entries equal the stored documents.

    Every `.zarray`, `.zgroup` and `.zattrs` stored at or below the group appears under its key relative to
    the group, equal as JSON to the stored document, and no entry names a document that is not stored. A
    `.zattrs` of `{}` counts as equal to an absent one (absent attributes are empty), and zarr-python 3's
    "consolidated_metadata" marker in a nested `.zgroup` entry is not a difference. One finding per
    differing key, with the expected (stored) and found (consolidated) fields.
    Not applicable when: the group stores no `.zmetadata`; not checked when the store was not listed and every
    document it names equals its entry (a document it leaves out cannot be found).
    """
    stored = _stored_object(node, CONSOLIDATED_KEY)
    if stored is None:
        raise NotApplicable(f"{node.path} stores no {CONSOLIDATED_KEY}")
    key, doc, problem = stored
    if problem is not None:
        yield Finding(problem, details={"key": key})
        return
    version = doc.get("zarr_consolidated_format")
    if not (_is_int(version) and version == 1):
        yield Finding(
            f"{key} has zarr_consolidated_format {_short(version) if 'zarr_consolidated_format' in doc else '(absent)'}, "
            "expected 1",
            details={"key": key, "field": "zarr_consolidated_format"},
        )
    entries = doc.get("metadata")
    if not isinstance(entries, dict):
        yield Finding(
            f"{key} has metadata {_short(entries) if 'metadata' in doc else '(absent)'}, expected an object "
            "mapping document keys to documents",
            details={"key": key, "field": "metadata"},
        )
        return
    yield from _entry_differences(node, key, entries)


def _entry_differences(node: Node, key: str, entries: dict[Any, Any]) -> Iterator[Finding]:
    """`consolidated_metadata_matches` once its `.zmetadata` (at `key`) is sound: a finding per entry that differs
    from the document stored under its key; NotChecked where none differs but some could not be compared."""
    stored = _stored_documents(node)
    entries = {k: v for k, v in entries.items() if isinstance(k, str)}
    for k in [k for k in entries if k.endswith(".zgroup")]:  # the only entries zarr-python 3 marks
        entries[k] = _without_nested_marker(k, entries[k], stored.get(k))
    differing = 0
    unread: list[str] = []
    if not (stored.keys() == entries.keys() and _all_same(stored, entries)):
        for rel in sorted(set(stored) | set(entries)):
            if rel in entries and rel not in stored and _unread_document(node, rel):
                unread.append(rel)  # stored, but not as a readable file (a FIFO, no permission): not compared
                continue
            finding = _entry_difference(rel, stored, entries, key)
            if finding is not None:
                differing += 1
                yield finding
    if not differing and unread:
        raise NotChecked(f"{node.path}: its {key} names {len(unread)} document(s) stored but unreadable ({unread[0]}, ...)")
    if not differing and not node.keys_listed:
        raise NotChecked(unlisted_documents(node, len(stored)))


def _all_same(stored: dict[str, Any], entries: dict[str, Any]) -> bool:
    """Whether every entry is the same JSON value as the stored document of its key (both hold the same keys), by
    one marshalling of each side in the entries' order (`_same_json`'s first test, for all at once): the usual
    store, whose consolidated metadata is a copy. False where anything differs, to be found entry by entry."""
    try:
        return marshal.dumps({key: stored[key] for key in entries}, 2) == marshal.dumps(entries, 2)
    except ValueError:  # nested past marshal's depth
        return False


def _entry_difference(rel: str, stored: dict[str, Any], entries: dict[str, Any], key: str) -> Finding | None:
    """How the consolidated metadata's entry `rel` differs from the stored document; None where it does not."""
    in_store, in_copy = rel in stored, rel in entries
    if rel.rsplit("/", 1)[-1] == ".zattrs" and in_store != in_copy and stored.get(rel, {}) == {} == entries.get(rel, {}):
        return None  # an empty attribute document and an absent one say the same
    if in_store and in_copy and _same_json(stored[rel], entries[rel]):
        return None
    diffs: list[tuple[str | None, str, str]] = []
    if not in_copy:
        message = f"{rel} is stored but missing from {key}: a reader of the consolidated metadata does not see it"
    elif not in_store:
        message = f"{key} has an entry {rel!r}, but the store has no such document"
    else:
        diffs = _differences(stored[rel], entries[rel])
        message = f"{key} entry {rel!r} differs from the stored document: " + "; ".join(
            f"{field + ': ' if field else ''}expected {want}, found {got}" for field, want, got in diffs
        )
    return Finding(
        message,
        details={"key": rel, "in_store": in_store, "in_consolidated": in_copy, "fields": [f for f, _, _ in diffs if f]},
    )


def _unread_document(node: Node, rel: str) -> bool:
    """Whether the document `rel` (relative to `node`) is stored but cannot be read (its listing left it out)."""
    try:
        node.read_key(rel)
    except NodeError:
        return True
    return False


def unlisted_documents(node: Node, compared: int) -> str:
    """Why a comparison of consolidated metadata with the stored documents is not complete in a store not listed."""
    return (
        f"{node.path}: the {compared} stored documents its consolidated metadata names equal their entries, but "
        f"{NOT_LISTED}: a document it leaves out cannot be found"
    )


def _no_constant(token: str) -> Any:
    raise ValueError(f"bare {token} is not JSON (RFC 8259 has no NaN or Infinity; JSON.parse rejects it)")


def _strict_json(node: Node, name: str, raw: bytes) -> Any:
    """The stored document `name` (whose bytes are `raw`) parsed as strict JSON: JSONProblem for a bare NaN or
    Infinity token too. Text holding neither word parses as the tree parses it, once for every reader (a
    4,000-column store's 6,700 `.zattrs` are not parsed twice); the parsed value is shared: never modify it."""
    if b"NaN" not in raw and b"Infinity" not in raw:
        try:
            return node.read_json(name)
        except NodeError:
            pass  # parsed here instead, from the bytes already read
    return loads(raw, parse_constant=_no_constant)


def _stored_object(node: Node, name: str) -> tuple[str, Any, str | None] | None:
    """The node's stored document `name` as (key, parsed value, problem); None when the store has no such key.

    `problem` says why the document is not a JSON object (unparseable as strict JSON, with no bare NaN or
    Infinity token, or another JSON type).
    """
    prefix = node.path.strip("/")
    key = f"{prefix}/{name}" if prefix else name
    try:
        raw = node.read_document(name)
    except NodeError as exc:
        return key, None, f"{key} cannot be read ({exc})"
    if raw is None:
        return None
    try:
        doc = _strict_json(node, name, raw)
    except JSONProblem as exc:
        return key, None, f"{key} is {exc}, expected a JSON object"
    if not isinstance(doc, dict):
        return key, doc, f"{key} is a JSON {type(doc).__name__}, expected a JSON object"
    return key, doc, None
