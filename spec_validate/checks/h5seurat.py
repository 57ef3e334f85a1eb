"""Primitives for h5Seurat files: R matrix dimensions, attributes naming other groups' entries, string storage."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from spec_validate.checks.api import Options, check
from spec_validate.checks.schemas import KEY, NAMES, PATH, REF
from spec_validate.checks.storage import string_storage
from spec_validate.kernels.facts import FactRequest
from spec_validate.model import Finding, NotApplicable, Omitted, Scope
from spec_validate.nodes.base import Node, StringStorage

STRING_OPTIONS = {"length": {"enum": ["variable", "fixed"]}, "charset": {"enum": ["utf-8", "ascii", "utf-32"]}}


def r_dims(node: Node) -> tuple[int, int] | None:
    """The (rows, columns) of a matrix as R sees it: a dense dataset's stored shape reversed, or a sparse group's `dims`."""
    if node.kind == "array":
        if node.shape is None or len(node.shape) != 2:
            return None
        return (node.shape[1], node.shape[0])
    dims = node.attrs.get("dims")
    if isinstance(dims, list) and len(dims) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in dims):
        return (dims[0], dims[1])
    return None


@check(options={"properties": {"rows": REF, "cols": REF, "other": PATH}})
def matrix_dims_equal(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The matrix's R dimensions have `rows` rows and `cols` columns, and equal those of the matrix at `other`, where given.

    R dimensions are the stored shape reversed for a dense dataset (R writes column-major, so h5py sees
    the transpose) and the `dims` attribute for a sparse group. Not applicable when: either matrix's
    dimensions are unknown (not 2-D, or a sparse group without `dims`) or a reference is missing.
    """
    dims = r_dims(node)
    if dims is None:
        raise NotApplicable(f"the R dimensions of {node.path} are unknown")
    if "other" in options:
        other = scope.node(node, options["other"])
        if other is None:
            raise NotApplicable(f"no node at {options['other']}")
        theirs = r_dims(other)
        if theirs is None:
            raise NotApplicable(f"the R dimensions of {other.path} are unknown")
        if dims != theirs:
            yield Finding(
                f"is {dims[0]} x {dims[1]} in R order, but {other.path} is {theirs[0]} x {theirs[1]}",
                details={"dims": list(dims), "other": list(theirs)},
            )
    for axis, name in ((0, "rows"), (1, "cols")):
        if name in options:
            expected = scope.value(node, options[name])
            if dims[axis] != expected:
                yield Finding(
                    f"has {dims[axis]} {'rows' if axis == 0 else 'columns'} in R order (stored shape "
                    f"{node.shape if node.kind == 'array' else 'dims ' + str(list(dims))}), expected {expected}",
                    details={"dims": list(dims), "expected": expected},
                )


@check(options={"properties": {"key": KEY, "of": PATH}, "required": ["key", "of"]})
def attr_values_name_children(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Each string in the attribute `key` names an entry of the group at `of`.

    Not applicable when: the attribute is absent or holds no strings (attr_present / attr_type report that),
    or there is no node at `of`.
    """
    value = node.attrs.get(options["key"])
    names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    names = [n for n in names if isinstance(n, str)]
    if not names:
        raise NotApplicable(f"{node.path} has no strings in attribute {options['key']!r}")
    target = scope.node(node, options["of"])
    if target is None:
        raise NotApplicable(f"no node at {options['of']}")
    for name in names:
        if target.kind != "group" or target.child(name) is None:
            yield Finding(
                f"attribute {options['key']!r} names {name!r}, but {target.path} has no such entry",
                details={"key": options["key"], "name": name},
            )


@check(
    options={
        "properties": {"length": {"enum": ["variable", "fixed"]}, "charset": {"enum": ["utf-8", "ascii", "utf-32"]}},
        "required": ["length"],
    },
    kind="array",
    dtype_kinds="OSU",
)
def strings_stored_as(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """An array of strings stores them as `length` (variable or fixed) strings in `charset`, when given.

    As string_storage, but only for arrays whose dtype can hold strings (numpy kinds O, S, U).
    Not applicable when: the array is numeric or compound, or an object array that holds no strings (an HDF5
    object-reference dataset, which h5py reads as objects).
    """
    if node.dtype is not None and node.dtype.kind == "O" and (node.storage is None or node.storage.string is None):
        raise NotApplicable(f"{node.path} holds objects that are not strings (an HDF5 reference type)")
    yield from string_storage(node, options, scope)


@check(options={"properties": {"key": KEY, "count": {"type": "integer", "minimum": 1}}, "required": ["key"]})
def attr_strings(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The attribute `key`, when present, holds one or more strings (exactly `count`, if given); a scalar string counts as one.

    R writes a character vector of length one either as a scalar or as a one-element array; both are one value.
    Not applicable when: the attribute is absent (attr_present reports that).
    """
    key = options["key"]
    if key not in node.attrs:
        raise NotApplicable(f"{node.path} has no attribute {key!r}")
    value = node.attrs[key]
    values = [value] if isinstance(value, str) else value if isinstance(value, list) else None
    if values is None or not values or not all(isinstance(v, str) for v in values):
        yield Finding(
            f"attribute {key!r} is {type(value).__name__} {str(value)[:60]}, expected character value(s)", details={"key": key}
        )
    elif "count" in options and len(values) != options["count"]:
        yield Finding(
            f"attribute {key!r} holds {len(values)} strings, expected {options['count']}",
            details={"key": key, "count": len(values)},
        )


def _storage_problems(info: StringStorage, options: Options) -> list[str]:
    problems = []
    if info.length != options["length"]:
        problems.append(f"{info.length}-length")
    if options.get("charset") and info.charset != options["charset"]:
        problems.append(f"charset {info.charset or 'unspecified'}")
    return problems


def _wanted(options: Options) -> str:
    return " ".join(x for x in (options["length"] + "-length", options.get("charset")) if x)


def _stored_as_findings(
    items: Iterable[tuple[str, StringStorage | None]], options: Options, what: str, detail: str
) -> Iterator[Finding]:
    """A finding for each named string store (an attribute, a compound member) not stored as `options` say;
    stores that hold no strings (None) are not judged."""
    for name, info in items:
        problems = _storage_problems(info, options) if info is not None else []
        if problems:
            yield Finding(
                f"{what} {name!r} stores strings as {info.container_dtype} ({', '.join(problems)}), expected {_wanted(options)}",
                details={detail: name, "stored": info.container_dtype},
            )


@check(options={"properties": {**STRING_OPTIONS, "keys": NAMES}, "required": ["length"]})
def attr_strings_stored_as(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every string attribute of the node (those in `keys`, if given) stores `length` strings in `charset`, when given.

    The storage comes from the backend (`Node.attr_storage`); attributes that hold no strings are not judged.
    Not applicable when: no attribute (of `keys`) holds strings whose storage the backend records: the node has
    none, or the backend does not record how attributes store strings.
    """
    keys = options.get("keys") or list(node.attrs)
    stores = [(key, info) for key, info in ((key, node.attr_storage(key)) for key in keys) if info is not None]
    if not stores:
        raise NotApplicable(f"{node.path} has no string attribute whose storage is known")
    yield from _stored_as_findings(stores, options, "attribute", "key")


def member_string_storage(dtype: np.dtype) -> StringStorage | None:
    """How a compound member stores strings, from its numpy dtype as h5py describes it; None for non-strings.

    h5py marks variable-length strings as object dtype with metadata `vlen` (str: UTF-8, bytes: ASCII) and
    fixed-length ones as `S<n>` with metadata `h5py_encoding`; a fixed-length member without it has no known charset.
    """
    meta = dtype.metadata or {}
    if dtype.kind == "O":
        vlen = meta.get("vlen")
        if vlen is str:
            return StringStorage("variable", "utf-8", "vlen utf-8 string")
        if vlen is bytes:
            return StringStorage("variable", "ascii", "vlen ascii string")
        return None  # an object reference, not a string
    if dtype.kind == "S":
        charset = meta.get("h5py_encoding")
        return StringStorage("fixed", charset, f"fixed[{dtype.itemsize}] {charset or 'unspecified'} string")
    if dtype.kind == "U":
        return StringStorage("fixed", "utf-32", dtype.str)
    return None


def _members(dtype: np.dtype, prefix: str = "") -> Iterator[tuple[str, np.dtype]]:
    for name in dtype.names or ():
        member = dtype.fields[name][0]
        if member.names:
            yield from _members(member, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", member


@check(options={"properties": STRING_OPTIONS, "required": ["length"]}, kind="array", dtype_kinds="V")
def compound_strings_stored_as(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every string member of the compound array stores `length` strings in `charset`, when given.

    Members are read from the array's dtype (see `member_string_storage`); nested compounds are searched too.
    Not applicable when: the array is not compound (strings_stored_as judges plain string arrays), or has no
    string member.
    """
    members = [
        (name, info)
        for name, info in ((name, member_string_storage(member)) for name, member in _members(node.dtype))
        if info is not None
    ]
    if not members:
        raise NotApplicable(f"{node.path} has no string member")
    yield from _stored_as_findings(members, options, "member", "member")


def _string_values(value) -> list[str]:
    values = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [v for v in values if isinstance(v, str)]


# The strings of the attribute value asked about last, as a set, with the value itself (so its identity is not
# reused): the members of a group are checked one after another against their parent's list, and building the set
# once per parent, not once per member, keeps a group of n columns all listed in `logicals` linear (it was n**2:
# 20,000 columns took 12 s).
_LAST_LISTED: list[Any] = [None, frozenset()]


def _listed(value: Any) -> frozenset[str]:
    """The strings in an attribute value (`_string_values`) as a set."""
    if _LAST_LISTED[0] is not value:
        _LAST_LISTED[:] = [value, frozenset(_string_values(value))]
    return _LAST_LISTED[1]


@check(options={"properties": {"key": KEY}, "required": ["key"]})
def attr_values_name_columns(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Each string in the attribute `key` names a column: an entry of a data frame group, or a member of a compound dataset.

    Not applicable when: the attribute is absent or holds no strings (attr_strings reports that), or the node is
    a dataset that is not compound (its columns are unknown; a data frame dataset rule reports that).
    """
    names = _string_values(node.attrs.get(options["key"]))
    if not names:
        raise NotApplicable(f"{node.path} has no strings in attribute {options['key']!r}")
    if node.kind == "group":
        columns, where = set(node.children()), "entries"
    elif node.dtype is not None and node.dtype.names:
        columns, where = set(node.dtype.names), "compound members"
    else:
        raise NotApplicable(f"{node.path} is not a compound dataset, so it has no named columns")
    for name in names:
        if name not in columns:
            yield Finding(
                f"attribute {options['key']!r} names {name!r}, which is not among the data frame's {where}",
                details={"key": options["key"], "name": name},
            )


@check(options={"properties": {"key": KEY}, "required": ["key"]})
def listed_in_parent_attr(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The node's name is listed in its parent's attribute `key` (a step that selects, as `logicals` selects logical columns).

    Yields nothing: a node that is not listed makes the clause not applicable to it, so the steps after this one
    judge only listed nodes. Not applicable when: the node is not listed, or the parent has no such attribute.
    """
    parent = node.parent
    listed = _listed(parent.attrs.get(options["key"])) if parent is not None else frozenset()
    if node.name not in listed:
        raise NotApplicable(f"{node.path} is not listed in its parent's {options['key']!r}")
    return
    yield


@check(options={"properties": {"key": KEY, "pattern": {"type": "string", "minLength": 1}}, "required": ["key", "pattern"]})
def attr_strings_match(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Each string in the attribute `key` matches the regular expression `pattern` (anchored at both ends).

    Not applicable when: the attribute is absent or holds no strings (attr_present / attr_strings report that).
    """
    pattern = re.compile(options["pattern"])
    values = _string_values(node.attrs.get(options["key"]))
    if not values:
        raise NotApplicable(f"{node.path} has no strings in attribute {options['key']!r}")
    for value in values:
        if not pattern.fullmatch(value):
            yield Finding(
                f"attribute {options['key']!r} is {value!r}, which does not match {options['pattern']}",
                details={"key": options["key"], "value": value},
            )


@check(options={"properties": {"key": KEY}, "required": ["key"]})
def attr_integer_type(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The attribute `key` is stored with an integer type, not an enum (R's logical, or h5py's FALSE/TRUE boolean).

    The type is the container's (`Node.attr_type_class`): h5py reads an enum as its integers, or a FALSE/TRUE
    enum as booleans, so the value alone does not say.
    Not applicable when: the attribute is absent, or the backend does not record how attributes are stored.
    """
    key = options["key"]
    if key not in node.attrs:
        raise NotApplicable(f"{node.path} has no attribute {key!r}")
    stored = node.attr_type_class(key)
    if stored is None:
        raise NotApplicable(f"{node.path}: how attribute {key!r} is stored is not recorded")
    if stored != "integer":
        what = "an HDF5 enum (a boolean or R logical type)" if stored == "enum" else f"an HDF5 {stored}"
        yield Finding(f"attribute {key!r} is stored as {what}, expected an integer type", details={"key": key, "stored": stored})


def _enum_members(dtype: np.dtype) -> dict[str, Any] | None:
    """The members (name -> value) of an HDF5 enum type, as h5py records them on the numpy dtype; None for another type."""
    members = (dtype.metadata or {}).get("enum")
    return dict(members) if isinstance(members, dict) else None


def _enum_findings(typed: Iterable[tuple[str, np.dtype]], options: Options) -> Iterator[Finding]:
    allowed = set(options.get("except_members", ()))
    for member, dtype in typed:
        members = _enum_members(dtype)
        if members is None or set(members) <= allowed:
            continue
        shown = sorted(members, key=lambda k: members[k])[:10]  # in code order, as R numbers a factor's levels
        if member:
            yield Finding(
                f"member {member!r} has an HDF5 enum type with {len(members)} members {shown}",
                details={"member": member, "members": shown},
            )
        else:
            yield Finding(f"has an HDF5 enum type with {len(members)} members {shown}", details={"members": shown})


ENUM_OPTIONS = {"properties": {"except_members": NAMES}}


@check(options=ENUM_OPTIONS, kind="array")
def no_enum_type(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The dataset's type is not an HDF5 enum, but for an enum whose every member name is in `except_members`.

    The type is read from the dtype h5py gives (an enum is its base integer type with the members recorded beside
    it); a two-member FALSE/TRUE enum is read by h5py as a boolean and is no enum here. The members of a compound
    type are no_enum_members' to judge.
    """
    if node.dtype is not None and node.dtype.names is None:
        yield from _enum_findings([("", node.dtype)], options)


@check(options=ENUM_OPTIONS, kind="array", dtype_kinds="V")
def no_enum_members(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """No member of the compound type is an HDF5 enum, but for an enum whose every member name is in `except_members`.

    Members are read from the dtype h5py gives, nested compounds searched too (see no_enum_type).
    Not applicable when: the array is not compound.
    """
    yield from _enum_findings(_members(node.dtype), options)


def _logical_members(node: Node, options: Options) -> list[str]:
    names = _string_values(node.attrs.get(options["key"]))
    fields = node.dtype.fields if node.dtype is not None else None  # a mapping: one lookup per name
    members = [n for n in names if fields and n in fields]
    if not members:
        raise NotApplicable(f"{node.path}: {options['key']!r} names no member of the compound dataset")
    return members


def _member_bounds(node: Node, options: Options, scope: Scope):
    return {
        name: FactRequest("count_outside", (("field", name), ("high", 2), ("limit", 5), ("low", 0)))
        for name in _logical_members(node, options)
        if node.dtype.fields[name][0].kind in "iu"
    }


@check(options={"properties": {"key": KEY}, "required": ["key"]}, kind="array", dtype_kinds="V", facts=_member_bounds)
def compound_logicals_encoded(node: Node, options: Options, scope: Scope, facts) -> Iterator[Finding]:
    """Every compound member named in the attribute `key` (`logicals`) is an integer member holding only 0, 1 and 2.

    Memory: one block at a time; each named member is scanned, in the array's one pass.
    Not applicable when: the attribute names no member of the compound dataset (attr_values_name_columns reports
    names that are not members).
    """
    for name in _logical_members(node, options):
        kind = node.dtype.fields[name][0].kind
        if kind not in "iu":
            yield Finding(
                f"member {name!r} is listed in {options['key']!r} but has dtype {node.dtype.fields[name][0].str}, "
                "expected integers 0, 1, 2",
                details={"member": name},
            )
            continue
        result = facts.get(name)
        if result is None or not result.count:
            continue
        for o in result.found:
            yield Finding(
                f"member {name!r} holds {o.value} at index {o.index}, expected 0 (FALSE), 1 (TRUE) or 2 (NA) "
                f"({result.count} in all)",
                index=(o.index,),
                details={"member": name, "value": o.value},
            )
        if result.count > len(result.found):
            yield Omitted(result.count - len(result.found))


VERSION = re.compile(r"\d+([.-]\d+)+")  # as R's package_version() reads one: two or more numbers


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.split(r"[.-]", text))


@check(
    options={
        "properties": {"key": KEY, "node": PATH, "minimum": {"type": "string", "pattern": r"^\d+([.-]\d+)+$"}},
        "required": ["key", "minimum"],
    }
)
def attr_version_at_least(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The attribute `key` of the node at `node` (this node when not given) is a version number no lower than `minimum`.

    Versions compare as R's package_version() compares them: number by number, split at "." and "-".
    Not applicable when: the node or attribute is absent, or it holds no single version number (another rule reports that).
    """
    target = scope.node(node, options.get("node", "."))
    if target is None:
        raise NotApplicable(f"no node at {options.get('node')}")
    values = _string_values(target.attrs.get(options["key"]))
    if len(values) != 1 or not VERSION.fullmatch(values[0]):
        raise NotApplicable(f"{target.path} attribute {options['key']!r} holds no single version number")
    if _version(values[0]) < _version(options["minimum"]):
        yield Finding(
            f"{target.path} attribute {options['key']!r} is {values[0]}, lower than {options['minimum']}",
            details={"value": values[0], "minimum": options["minimum"]},
        )
