"""Primitives for OME-Zarr (OME-NGFF) metadata: the JSON documents under `multiscales`, `omero`, `labels`,
`image-label`, `plate` and `well`, and the hierarchy they describe (resolution levels, label images, wells, fields).

The metadata of a group is its attributes on Zarr v2 (OME-Zarr 0.4: `.zattrs`) and the `ome` member of its
attributes on Zarr v3 (0.5: `zarr.json`). Each primitive reads that document, walks to the objects its clause speaks
of (`at`: dotted keys, `[*]` for every item of a list), and names each one it finds wrong by its place in the
document (`multiscales[0].axes[2]`). A place that is absent or of the wrong JSON type is passed over: the rule about
that field reports it, once. A group without the document's top-level key is not one the clause speaks of.
"""

from __future__ import annotations

import itertools
import math
import posixpath
import re
import weakref
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple
from xml.etree import ElementTree

from spec_validate.checks.api import NEEDS_DEEP, Options, check
from spec_validate.checks.attrs import TYPES, is_type, type_name
from spec_validate.checks.schemas import KEY
from spec_validate.errors import TooLarge
from spec_validate.excerpt import cut
from spec_validate.kernels.facts import FactRequest
from spec_validate.model import Finding, NotApplicable, NotChecked, Omitted, Scope
from spec_validate.nodes.base import Node, normalize_path

AT = {"type": "string", "pattern": r"^[A-Za-z0-9_.-]+(\[\*\])?(\.[A-Za-z0-9_-]+(\[\*\])?)*$"}
MULTISCALES_AT = "multiscales[*]"

# The units the spec lists ("valid units according to UDUNITS-2"), per axis type.
SPACE_UNITS = frozenset(
    [
        "angstrom",
        "attometer",
        "centimeter",
        "decimeter",
        "exameter",
        "femtometer",
        "foot",
        "gigameter",
        "hectometer",
        "inch",
        "kilometer",
        "megameter",
        "meter",
        "micrometer",
        "mile",
        "millimeter",
        "nanometer",
        "parsec",
        "petameter",
        "picometer",
        "terameter",
        "yard",
        "yoctometer",
        "yottameter",
        "zeptometer",
        "zettameter",
    ]
)
TIME_UNITS = frozenset(
    [
        "attosecond",
        "centisecond",
        "day",
        "decisecond",
        "exasecond",
        "femtosecond",
        "gigasecond",
        "hectosecond",
        "hour",
        "kilosecond",
        "megasecond",
        "microsecond",
        "millisecond",
        "minute",
        "nanosecond",
        "petasecond",
        "picosecond",
        "second",
        "terasecond",
        "yoctosecond",
        "yottasecond",
        "zeptosecond",
        "zettasecond",
    ]
)
UNITS = {"space": SPACE_UNITS, "time": TIME_UNITS}
INTEGER_DTYPES = frozenset(["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64"])


# ------------------------------------------------------------------------------------------------ the document
def ome_document(node: Node) -> Mapping[str, Any]:
    """The node's OME-Zarr metadata: its attributes on Zarr v2, their `ome` member on Zarr v3 (0.5 and later).

    Raises NotApplicable where there is none (a v3 group without an `ome` object)."""
    attrs = node.attrs
    if node.tree.format.startswith("zarr-v3"):  # a store, or an attributes document on its own (zarr-v3-attributes)
        doc = attrs.get("ome")
        if not isinstance(doc, Mapping):
            raise NotApplicable(f"{node.path} has no OME-Zarr metadata (no 'ome' object in its attributes)")
        return doc
    return attrs


def declared_version(doc: Mapping[str, Any]) -> str | None:
    """The OME-Zarr version a metadata document declares: `version` (0.5 and later, in the `ome` object), else the
    `version` of its first multiscale image, plate, well or label image (0.4 and before); None when it declares none."""
    version = doc.get("version")
    if isinstance(version, str):
        return version
    multiscales = doc.get("multiscales")
    candidates = [multiscales[0] if isinstance(multiscales, list) and multiscales else None]
    candidates += [doc.get("plate"), doc.get("well"), doc.get("image-label")]
    for item in candidates:
        if isinstance(item, Mapping) and isinstance(item.get("version"), str):
            return item["version"]
    return None


def _steps(at: str) -> list[tuple[str, bool]]:
    return [(part[:-3], True) if part.endswith("[*]") else (part, False) for part in at.split(".")]


def walk(doc: Mapping[str, Any], at: str) -> Iterator[tuple[str, Any]]:
    """(place, value) for every object at `at` in the document; places that are absent or not of the type the path
    needs are passed over. Raises NotApplicable when the document lacks the first key (the node is not such a group)."""
    if at in doc:  # a key with a period in it (`bioformats2raw.layout`)
        yield at, doc[at]
        return
    steps = _steps(at)
    first = steps[0][0]
    if first not in doc:
        raise NotApplicable(f"no {first!r} in the OME-Zarr metadata")
    found: list[tuple[str, Any]] = [("", doc)]
    for key, every in steps:
        nxt: list[tuple[str, Any]] = []
        for place, value in found:
            if not isinstance(value, Mapping) or key not in value:
                continue
            here = f"{place}.{key}" if place else key
            item = value[key]
            if every:
                if isinstance(item, list):
                    nxt.extend((f"{here}[{i}]", v) for i, v in enumerate(item))
            else:
                nxt.append((here, item))
        found = nxt
    yield from found


def _quote(value: Any) -> str:
    return cut(repr(value), 80)


def _child(node: Node, path: Any) -> Node | None:
    """The node at `path` relative to `node` (a path from the metadata), or None."""
    if not isinstance(path, str) or not path or path.startswith("/"):
        return None
    target = normalize_path(posixpath.join(node.path, path))
    if not target.startswith("/") or ".." in target.split("/"):
        return None
    return node.tree.get(target)


def _levels(node: Node, multiscale: Mapping[str, Any]) -> list[tuple[int, Any, Node | None]]:
    """(index, path, the array it names or None) for each dataset of one multiscale image."""
    datasets = multiscale.get("datasets")
    if not isinstance(datasets, list):
        return []
    out = []
    for i, d in enumerate(datasets):
        path = d.get("path") if isinstance(d, Mapping) else None
        target = _child(node, path)
        out.append((i, path, target if target is not None and target.kind == "array" else None))
    return out


def _multiscales(node: Node) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for place, ms in walk(ome_document(node), MULTISCALES_AT):
        if isinstance(ms, Mapping):
            yield place, ms


def _axes(ms: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    axes = ms.get("axes")
    if not isinstance(axes, list) or not all(isinstance(a, Mapping) for a in axes):
        return None
    return axes


def _axis_type(axis: Mapping[str, Any]) -> str | None:
    t = axis.get("type")
    return t if isinstance(t, str) else None


# ------------------------------------------------------------------------------------------------ fields
@check(
    options={
        "properties": {"at": AT, "field": KEY, "type": {"enum": TYPES}},
        "required": ["field"],
    },
    kind="group",
    own_metadata_only=True,
)
def ome_has_field(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every object at `at` in the node's OME-Zarr metadata (without `at`: the metadata itself) has the field `field`
    (of JSON type `type`, when given)."""
    field, want = options["field"], options.get("type")
    doc = ome_document(node)
    for place, value in walk(doc, options["at"]) if "at" in options else [("the OME-Zarr metadata", doc)]:
        if not isinstance(value, Mapping):
            yield Finding(f"{place} is {type_name(value)}, not an object", details={"place": place})
        elif field not in value:
            yield Finding(f"{place} has no field {field!r}", details={"place": place, "field": field})
        elif want is not None and not is_type(value[field], want):
            got = type_name(value[field])
            yield Finding(f"{place}.{field} is {got}, not {want}", details={"place": place, "type": got})


@check(
    options={
        "properties": {
            "at": AT,
            "type": {"enum": TYPES},
            "values": {"type": "array", "minItems": 1},
            "pattern": {"type": "string", "format": "regex"},
            "minimum": {"type": "number"},
            "maximum": {"type": "number"},
            "min_items": {"type": "integer", "minimum": 0},
            "max_items": {"type": "integer", "minimum": 0},
            "item_type": {"enum": TYPES},
        },
        "required": ["at"],
    },
    kind="group",
    own_metadata_only=True,
)
def ome_value(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every value at `at` (where present) is of JSON type `type`, one of `values`, matches `pattern`, and (a list)
    has `min_items` to `max_items` items, each of `item_type`; it, or each number a list holds, lies within `minimum`
    to `maximum`."""
    for place, value in walk(ome_document(node), options["at"]):
        want = options.get("type")
        if want is not None and not is_type(value, want):
            yield Finding(f"{place} is {type_name(value)} {_quote(value)}, not {want}", details={"place": place})
            continue
        if "values" in options and value not in options["values"]:
            allowed = ", ".join(map(repr, options["values"]))
            yield Finding(f"{place} is {_quote(value)}, not one of {allowed}", details={"place": place, "value": value})
        if "pattern" in options and isinstance(value, str) and not re.fullmatch(options["pattern"], value):
            yield Finding(f"{place} is {_quote(value)}, which does not match {options['pattern']}", details={"place": place})
        numbers = [v for v in (value if isinstance(value, list) else [value]) if is_type(v, "number")]
        low, high = options.get("minimum", -math.inf), options.get("maximum", math.inf)
        outside = [v for v in numbers if v < low or v > high]
        if outside:
            yield Finding(f"{place} holds {outside[0]}, outside {low} to {high}", details={"place": place, "value": outside[0]})
        if isinstance(value, list):
            if len(value) < options.get("min_items", 0) or len(value) > options.get("max_items", math.inf):
                yield Finding(
                    f"{place} has {len(value)} item(s); expected {options.get('min_items', 0)} to "
                    f"{options.get('max_items', 'any number of')}",
                    details={"place": place, "count": len(value)},
                )
            item = options.get("item_type")
            bad = [i for i, v in enumerate(value) if item is not None and not is_type(v, item)]
            if bad:
                yield Finding(f"{place}[{bad[0]}] is {type_name(value[bad[0]])}, not {item}", details={"place": place})


@check(
    options={"properties": {"at": AT, "field": KEY, "casefold": {"type": "boolean"}}, "required": ["at", "field"]},
    kind="group",
    own_metadata_only=True,
)
def ome_unique(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """In every list at `at`, no two objects have the same value of `field`; with `casefold`, no two different
    string values that are the same ignoring case (`Aa` and `aA`)."""
    field, casefold = options["field"], options.get("casefold", False)
    for place, items in walk(ome_document(node), options["at"]):
        if not isinstance(items, list):
            continue
        seen: dict[Any, tuple[int, Any]] = {}
        for i, item in enumerate(items):
            value = item.get(field) if isinstance(item, Mapping) else None
            if value is None or not isinstance(value, (str, int, float)) or (casefold and not isinstance(value, str)):
                continue
            key = value.casefold() if casefold else value
            if key not in seen:
                seen[key] = (i, value)
            elif not casefold or seen[key][1] != value:  # with casefold, an exact repeat is the uniqueness rule's
                what = "differs only in case from" if casefold else "repeats"
                yield Finding(
                    f"{place}[{i}].{field} {_quote(value)} {what} {place}[{seen[key][0]}].{field}",
                    details={"place": place, "value": value},
                )


# ------------------------------------------------------------------------------------------------ axes
@check(kind="group", own_metadata_only=True)
def ome_axes_types(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Each multiscale image's axes hold 2 or 3 of type space, at most one of type time and at most one other
    (channel, custom or none)."""
    for place, ms in _multiscales(node):
        axes = _axes(ms)
        if axes is None:
            continue
        types = [_axis_type(a) for a in axes]
        space, time = types.count("space"), types.count("time")
        other = len(types) - space - time
        if space not in (2, 3):
            yield Finding(f"{place}.axes has {space} axes of type space; expected 2 or 3", details={"place": place})
        if time > 1:
            yield Finding(f"{place}.axes has {time} axes of type time; at most one is allowed", details={"place": place})
        if other > 1:
            yield Finding(
                f"{place}.axes has {other} axes of type channel, custom or none; at most one is allowed",
                details={"place": place},
            )


def _rank(axis_type: str | None) -> int:
    return {"time": 0, "space": 2}.get(axis_type or "", 1)


@check(kind="group", own_metadata_only=True)
def ome_axes_order(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Each multiscale image's axes are ordered by type: time first (if present), then channel or custom (if
    present), then space."""
    for place, ms in _multiscales(node):
        axes = _axes(ms)
        if axes is None:
            continue
        ranks = [_rank(_axis_type(a)) for a in axes]
        for i in range(1, len(ranks)):
            if ranks[i] < ranks[i - 1]:
                order = [_axis_type(a) or "(none)" for a in axes]
                yield Finding(
                    f"{place}.axes[{i}] ({axes[i].get('name')!r}, type {order[i]}) comes after an axis of type "
                    f"{order[i - 1]}; the types are ordered {order}, expected time, then channel or custom, then space",
                    details={"place": place, "types": order},
                )
                break


@check(kind="group", own_metadata_only=True)
def ome_axes_zyx(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Where an image's three space axes are named z, y and x, they are ordered z, y, x."""
    for place, ms in _multiscales(node):
        axes = _axes(ms)
        if axes is None:
            continue
        names = [a.get("name") for a in axes if _axis_type(a) == "space"]
        if len(names) == 3 and sorted(map(str, names)) == ["x", "y", "z"] and names != ["z", "y", "x"]:
            yield Finding(f"{place}.axes orders its space axes {names}, not ['z', 'y', 'x']", details={"place": place})


@check(options={"properties": {"known": {"type": "boolean"}}}, kind="group", own_metadata_only=True)
def ome_axis_units(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every axis of type space or time has a `unit`; with `known`, every unit given to such an axis is one the
    spec lists for its type."""
    for place, ms in _multiscales(node):
        for i, axis in enumerate(_axes(ms) or ()):
            kind = _axis_type(axis)
            if kind not in UNITS:
                continue
            unit = axis.get("unit")
            if not options.get("known"):
                if unit is None:
                    yield Finding(f"{place}.axes[{i}] (type {kind}) has no unit", details={"place": place})
            elif unit is not None and unit not in UNITS[kind]:
                yield Finding(
                    f"{place}.axes[{i}] (type {kind}) has unit {_quote(unit)}, not one of the {kind} units the spec lists",
                    details={"place": place, "unit": unit},
                )


# ------------------------------------------------------------------------------------------------ transformations
def _transformation_lists(ms: Mapping[str, Any], place: str) -> Iterator[tuple[str, list[Any]]]:
    """Each list of transformations of one multiscale image: every dataset's, then the image's own."""
    for i, d in enumerate(ms.get("datasets") or ()):
        if isinstance(d, Mapping) and isinstance(d.get("coordinateTransformations"), list):
            yield f"{place}.datasets[{i}].coordinateTransformations", d["coordinateTransformations"]
    if isinstance(ms.get("coordinateTransformations"), list):
        yield f"{place}.coordinateTransformations", ms["coordinateTransformations"]


def _types(transformations: list[Any]) -> list[Any]:
    return [t.get("type") if isinstance(t, Mapping) else None for t in transformations]


@check(
    options={"properties": {"allowed": {"type": "array", "items": {"type": "string"}, "minItems": 1}}, "required": ["allowed"]},
    kind="group",
    own_metadata_only=True,
)
def ome_transformation_types(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every coordinate transformation of every multiscale image (its datasets' and its own) has a `type` among
    `allowed`."""
    allowed = options["allowed"]
    for place, ms in _multiscales(node):
        for where, transformations in _transformation_lists(ms, place):
            for i, kind in enumerate(_types(transformations)):
                if kind is not None and kind not in allowed:
                    yield Finding(
                        f"{where}[{i}] has type {_quote(kind)}, not one of {', '.join(allowed)}",
                        details={"place": where, "type": kind},
                    )


@check(kind="group", own_metadata_only=True)
def ome_one_scale(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every dataset's list of coordinate transformations holds exactly one `scale`, and an image's own list at
    most one."""
    for place, ms in _multiscales(node):
        for where, transformations in _transformation_lists(ms, place):
            count = _types(transformations).count("scale")
            own = ".datasets[" not in where  # an image's own list may leave the scale to its datasets
            if count > 1 or (count == 0 and not own):
                yield Finding(f"{where} holds {count} scale transformations; expected exactly one", details={"place": where})


@check(kind="group", own_metadata_only=True)
def ome_translation_after_scale(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every list of coordinate transformations holds at most one `translation`, listed after its `scale`."""
    for place, ms in _multiscales(node):
        for where, transformations in _transformation_lists(ms, place):
            types = _types(transformations)
            if types.count("translation") > 1:
                yield Finding(f"{where} holds {types.count('translation')} translations; at most one is allowed")
            elif "translation" in types and "scale" in types and types.index("translation") < types.index("scale"):
                yield Finding(f"{where} lists its translation before its scale", details={"place": where})


@check(kind="group", own_metadata_only=True)
def ome_transformation_lengths(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every `scale` and `translation` vector of a multiscale image has one value per axis."""
    for place, ms in _multiscales(node):
        axes = ms.get("axes")
        if not isinstance(axes, list):
            continue
        for where, transformations in _transformation_lists(ms, place):
            for i, t in enumerate(transformations):
                if not isinstance(t, Mapping) or t.get("type") not in ("scale", "translation"):
                    continue
                vector = t.get(t["type"])
                if isinstance(vector, list) and len(vector) != len(axes):
                    yield Finding(
                        f"{where}[{i}].{t['type']} has {len(vector)} values; the image has {len(axes)} axes",
                        details={"place": where, "length": len(vector), "axes": len(axes)},
                    )


# ------------------------------------------------------------------------------------------------ the hierarchy
@check(kind="group")
def ome_datasets_are_arrays(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every dataset `path` of every multiscale image names an array, relative to the image's group."""
    for place, ms in _multiscales(node):
        datasets = ms.get("datasets")
        for i, d in enumerate(datasets if isinstance(datasets, list) else ()):
            path = d.get("path") if isinstance(d, Mapping) else None
            if not isinstance(path, str):
                continue  # the rule on the `path` field reports it
            target = _child(node, path)
            if target is None:
                yield Finding(f"{place}.datasets[{i}].path {path!r} names nothing in the store", details={"place": place})
            elif target.kind != "array":
                yield Finding(
                    f"{place}.datasets[{i}].path {path!r} names a {target.kind}, not an array", details={"place": place}
                )


@check(kind="group")
def ome_axes_match_arrays(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every array a multiscale image's datasets name has as many dimensions as the image has axes."""
    for place, ms in _multiscales(node):
        axes = ms.get("axes")
        if not isinstance(axes, list):
            continue
        for i, path, array in _levels(node, ms):
            if array is not None and array.ndim is not None and array.ndim != len(axes):
                yield Finding(
                    f"{place}.datasets[{i}] ({path!r}) has {array.ndim} dimensions; the image has {len(axes)} axes",
                    details={"place": place, "ndim": array.ndim, "axes": len(axes)},
                )


@check(kind="group")
def ome_datasets_same_ndim(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The arrays of each multiscale image have one number of dimensions, at most 5."""
    for place, ms in _multiscales(node):
        levels = [(i, p, a.ndim) for i, p, a in _levels(node, ms) if a is not None and a.ndim is not None]
        for i, path, ndim in levels:
            if ndim > 5:
                yield Finding(f"{place}.datasets[{i}] ({path!r}) has {ndim} dimensions, more than 5", details={"place": place})
        if levels and any(n != levels[0][2] for _, _, n in levels):
            dims = {p: n for _, p, n in levels}
            yield Finding(f"{place}: the datasets' arrays differ in dimensionality: {dims}", details={"place": place})


@check(kind="group")
def ome_datasets_largest_first(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The arrays of each multiscale image are listed from largest to smallest: no dimension grows from one level
    to the next."""
    for place, ms in _multiscales(node):
        levels = [(i, p, a.shape) for i, p, a in _levels(node, ms) if a is not None and a.shape is not None]
        for (i, p, before), (j, q, after) in itertools.pairwise(levels):
            if len(before) == len(after) and any(b < a for b, a in zip(before, after, strict=False)):
                yield Finding(
                    f"{place}.datasets[{j}] ({q!r}, shape {list(after)}) is larger than datasets[{i}] "
                    f"({p!r}, shape {list(before)}) in some dimension",
                    details={"place": place},
                )


def _scale(transformations: Any) -> list[float] | None:
    if not isinstance(transformations, list):
        return None
    for t in transformations:
        if isinstance(t, Mapping) and t.get("type") == "scale":
            vector = t.get("scale")
            if isinstance(vector, list) and all(is_type(v, "number") for v in vector):
                return vector
    return None


@check(kind="group")
def ome_scales_match_shapes(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Each resolution level's scale, relative to the first level's, matches how much smaller its array is: along
    every axis, the level's extent times its scale is the first level's extent times its scale, to within one of the
    level's pixels (downsampling rounds)."""
    for place, ms in _multiscales(node):
        datasets = ms.get("datasets") if isinstance(ms.get("datasets"), list) else []
        levels = [
            (i, p, a.shape, _scale(datasets[i].get("coordinateTransformations")))
            for i, p, a in _levels(node, ms)
            if a is not None and a.shape is not None and isinstance(datasets[i], Mapping)
        ]
        levels = [lv for lv in levels if lv[3] is not None and len(lv[3]) == len(lv[2])]
        if not levels:
            continue
        _, p0, shape0, scale0 = levels[0]
        for i, p, shape, scale in levels[1:]:
            if len(shape) != len(shape0):
                continue
            for d, (n0, s0, n, s) in enumerate(zip(shape0, scale0, shape, scale, strict=False)):
                if s0 <= 0 or s <= 0:
                    continue
                if abs(n * s - n0 * s0) > s * (1 + 1e-6):
                    yield Finding(
                        f"{place}.datasets[{i}] ({p!r}): axis {d} has {n} pixels of scale {s}, spanning {n * s:g}; "
                        f"the first level ({p0!r}) has {n0} of scale {s0}, spanning {n0 * s0:g}",
                        details={"place": place, "axis": d},
                    )
                    break


@check(kind="group")
def ome_dimension_names(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every array a multiscale image's datasets name has `dimension_names` in its `zarr.json`, equal to the names of
    the image's axes."""
    for place, ms in _multiscales(node):
        axes = _axes(ms)
        if axes is None:
            continue
        names = [a.get("name") for a in axes]
        for i, path, array in _levels(node, ms):
            if array is None:
                continue
            stored = (array.metadata or {}).get("dimension_names")
            if stored is None:
                yield Finding(f"{place}.datasets[{i}] ({path!r}): its zarr.json has no dimension_names", details={"place": place})
            elif stored != names:
                yield Finding(
                    f"{place}.datasets[{i}] ({path!r}): dimension_names {_quote(stored)} differ from the axes' names {names}",
                    details={"place": place},
                )


@check(kind="group")
def ome_version_consistent(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The node's OME-Zarr metadata declares the version the hierarchy's root declares (where both declare one)."""
    mine = declared_version(ome_document(node))
    try:
        root = declared_version(ome_document(scope.root))
    except NotApplicable:
        root = None
    if mine is not None and root is not None and mine != root:
        yield Finding(
            f"declares version {mine!r}; the hierarchy's root {scope.root.path} declares {root!r}",
            details={"version": mine, "root_version": root},
        )


# ------------------------------------------------------------------------------------------------ labels
def _is_image(target: Node | None) -> bool:
    if target is None or target.kind != "group":
        return False
    try:
        return "multiscales" in ome_document(target)
    except NotApplicable:
        return False


@check(kind="group")
def ome_labels_are_images(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every path the `labels` list gives names a multiscale image (a group with `multiscales`) below the group."""
    doc = ome_document(node)
    if not isinstance(doc.get("labels"), list):
        raise NotApplicable("no 'labels' list (the rule on the list reports it)")
    for i, path in enumerate(doc["labels"]):
        target = _child(node, path)
        if not _is_image(target):
            what = "nothing" if target is None else ("a group without multiscales" if target.kind == "group" else "an array")
            yield Finding(f"labels[{i}] {path!r} names {what}, not a multiscale image", details={"place": f"labels[{i}]"})


def _source_image(node: Node) -> Node | None:
    doc = ome_document(node)
    label = doc.get("image-label")
    source = label.get("source") if isinstance(label, Mapping) else None
    path = source.get("image") if isinstance(source, Mapping) else None
    if not isinstance(path, str):
        path = "../../"
    target = node.tree.get(normalize_path(posixpath.join(node.path, path)))
    return target if _is_image(target) else None


@check(kind="group")
def ome_label_levels_match_image(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """A label image (a group with `image-label`) has as many resolution levels (`datasets` entries) as the image
    it labels (its `source.image`, by default `../../`)."""
    doc = ome_document(node)
    if "image-label" not in doc or "multiscales" not in doc:
        raise NotApplicable("not a label image")
    image = _source_image(node)
    if image is None:
        raise NotApplicable("the image it labels is not found")
    mine = next(iter(_multiscales(node)), None)
    theirs = next(iter(_multiscales(image)), None)
    if mine is None or theirs is None:
        raise NotApplicable("no multiscale image to compare")
    a, b = mine[1].get("datasets"), theirs[1].get("datasets")
    if not isinstance(a, list) or not isinstance(b, list):
        raise NotApplicable("no datasets list to compare")
    if len(a) != len(b):
        yield Finding(
            f"has {len(a)} resolution levels; the image it labels ({image.path}) has {len(b)}",
            details={"levels": len(a), "image_levels": len(b)},
        )


@check(kind="group")
def ome_label_arrays_integer(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every resolution level of a label image (a group with `image-label`, or one a `labels` list names) is an
    array of one of the integer data types the spec lists."""
    doc = ome_document(node)
    listed = node.parent is not None and node.parent.kind == "group" and _lists_label(node.parent, node)
    if "multiscales" not in doc or ("image-label" not in doc and not listed):
        raise NotApplicable("not a label image")
    for place, ms in _multiscales(node):
        for i, path, array in _levels(node, ms):
            if array is not None and array.dtype is not None and array.dtype.name not in INTEGER_DTYPES:
                yield Finding(
                    f"{place}.datasets[{i}] ({path!r}) has data type {array.dtype.name}, not an integer type",
                    details={"dtype": array.dtype.name},
                )


# The most distinct values of one label array collected (the distinct_values kernel's bound): past it, the values
# collected that properties do not describe are still reported, but a label image they all are is not checked.
MAX_LABEL_VALUES = 100_000
MAX_UNDESCRIBED_SHOWN = 10


def _described(doc: Mapping[str, Any]) -> set[int]:
    """The integer `label-value`s of the label image's `properties`; NotApplicable where it has no such list."""
    label = doc.get("image-label")
    properties = label.get("properties") if isinstance(label, Mapping) else None
    if "multiscales" not in doc or not isinstance(properties, list):
        raise NotApplicable("not a label image with a properties list")
    return {p["label-value"] for p in properties if isinstance(p, Mapping) and is_type(p.get("label-value"), "integer")}


def _label_levels(node: Node) -> list[tuple[str, int, Any, Node]]:
    """(place, index, path, array) for each resolution level of the label image stored as an integer array."""
    return [
        (place, i, path, array)
        for place, ms in _multiscales(node)
        for i, path, array in _levels(node, ms)
        if array is not None and array.dtype is not None and array.dtype.name in INTEGER_DTYPES
    ]


def _label_values(node: Node, options: Options, scope: Scope) -> Mapping[str, FactRequest]:
    _described(ome_document(node))
    levels = _label_levels(node)
    if not levels:
        raise NotApplicable("no resolution level is an integer array (the rules on the levels report them)")
    if not scope.deep:  # the clause concerns the label image all the same: it is not checked in this run
        raise NotChecked(NEEDS_DEEP)
    bound = (("max_distinct", options.get("max_distinct", MAX_LABEL_VALUES)),)
    return {array.path: FactRequest("distinct_values", bound, node=array.path) for _, _, _, array in levels}


@check(
    options={"properties": {"max_distinct": {"type": "integer", "minimum": 1}}},
    kind="group",
    facts=_label_values,
)
def ome_label_values_described(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """Every value each resolution level of a label image holds is one its `image-label.properties` describe (the
    `label-value` of one of them).

    Runs only with --deep: each level's array is read once, block by block, and its distinct values collected (the
    `distinct_values` kernel, shared with every other rule on the array), at most `max_distinct` (default 100,000)
    of them. One finding per level: how many values no property describes, and the smallest few. Past the bound, the
    values collected that no property describes are still reported; a level all of whose collected values are
    described is not checked (more values than were collected).
    Not applicable when: the group is not a label image with a `properties` list, or none of its levels is an
    integer array; not checked without --deep.
    """
    described = _described(ome_document(node))
    bound = options.get("max_distinct", MAX_LABEL_VALUES)
    findings, overflowed = [], []
    for place, i, path, array in _label_levels(node):
        result = facts.get(array.path)
        if result is None:
            continue
        missing = [v for v in result.values.tolist() if v not in described]
        if missing:
            shown = ", ".join(map(str, missing[:MAX_UNDESCRIBED_SHOWN]))
            count = f"at least {len(missing)}" if result.overflow else str(len(missing))
            findings.append(
                Finding(
                    f"{place}.datasets[{i}] ({path!r}) holds {count} value(s) that image-label.properties does not "
                    f"describe: {shown}{', ...' if len(missing) > MAX_UNDESCRIBED_SHOWN else ''}",
                    details={"level": path, "undescribed": missing[:MAX_UNDESCRIBED_SHOWN], "count": len(missing)},
                )
            )
        elif result.overflow:
            overflowed.append(path)
    if overflowed and not findings:  # a level failing already fails the clause; else the unchecked levels say why
        raise NotChecked(
            f"{', '.join(map(repr, overflowed))}: more than {bound} distinct values, all those collected described; "
            "the rest are not checked"
        )
    yield from findings


def _lists_label(parent: Node, node: Node) -> bool:
    try:
        labels = ome_document(parent).get("labels")
    except NotApplicable:
        return False
    return isinstance(labels, list) and any(_child(parent, p) is node for p in labels if isinstance(p, str))


# ------------------------------------------------------------------------------------------------ plates and wells
def _names(plate: Mapping[str, Any], key: str) -> list[Any]:
    items = plate.get(key)
    return [i.get("name") if isinstance(i, Mapping) else None for i in items] if isinstance(items, list) else []


@check(kind="group")
def ome_plate_wells_exist(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every well the plate lists exists: its `path` names a group below the plate's."""
    for place, well in walk(ome_document(node), "plate.wells[*]"):
        path = well.get("path") if isinstance(well, Mapping) else None
        if not isinstance(path, str):
            continue
        target = _child(node, path)
        if target is None or target.kind != "group":
            what = "nothing" if target is None else "an array"
            yield Finding(f"{place}.path {path!r} names {what}, not a well group", details={"place": place, "well": path})


@check(options={"properties": {"indices": {"type": "boolean"}}}, kind="group", own_metadata_only=True)
def ome_plate_well_paths(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every well's `path` is a row name of the plate, `/` and a column name; with `indices`, its `rowIndex` and
    `columnIndex` index that same row and column."""
    doc = ome_document(node)
    plate = doc.get("plate")
    if not isinstance(plate, Mapping):
        raise NotApplicable("no plate object")
    rows, columns = _names(plate, "rows"), _names(plate, "columns")
    for place, well in walk(doc, "plate.wells[*]"):
        if not isinstance(well, Mapping) or not isinstance(well.get("path"), str):
            continue
        parts = well["path"].split("/")
        if len(parts) != 2 or parts[0] not in rows or parts[1] not in columns:
            if options.get("indices"):
                continue  # the rule on the path reports it
            yield Finding(
                f"{place}.path {well['path']!r} is not a row name, '/' and a column name of the plate",
                details={"place": place, "well": well["path"]},
            )
            continue
        if not options.get("indices"):
            continue
        r, c = well.get("rowIndex"), well.get("columnIndex")
        if is_type(r, "integer") and (r < 0 or r >= len(rows) or rows[r] != parts[0]):
            yield Finding(f"{place}.rowIndex {r} does not index row {parts[0]!r}", details={"place": place})
        if is_type(c, "integer") and (c < 0 or c >= len(columns) or columns[c] != parts[1]):
            yield Finding(f"{place}.columnIndex {c} does not index column {parts[1]!r}", details={"place": place})


@check(kind="group")
def ome_well_images_exist(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every field of view the well lists exists and is an image: its `path` names a group with `multiscales`."""
    for place, image in walk(ome_document(node), "well.images[*]"):
        path = image.get("path") if isinstance(image, Mapping) else None
        if not isinstance(path, str):
            continue
        target = _child(node, path)
        if not _is_image(target):
            what = "nothing" if target is None else ("a group without multiscales" if target.kind == "group" else "an array")
            yield Finding(f"{place}.path {path!r} names {what}, not an image", details={"place": place, "field": path})


def _plate_of(well: Node) -> Mapping[str, Any] | None:
    """The `plate` object of the group two levels above a well group (the plate's), or None."""
    row = well.parent
    plate = row.parent if row is not None else None
    if plate is None or plate.kind != "group":
        return None
    try:
        found = ome_document(plate).get("plate")
    except NotApplicable:
        return None
    return found if isinstance(found, Mapping) else None


@check(kind="group")
def ome_well_in_plate(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The group two levels above a well group (one with `well`), the plate above its row, carries `plate` metadata."""
    if "well" not in ome_document(node):
        raise NotApplicable("no 'well' in the OME-Zarr metadata")
    if _plate_of(node) is None:
        above = node.parent.parent if node.parent is not None and node.parent.parent is not None else None
        where = above.path if above is not None else "no group (the well is not two levels below a group)"
        yield Finding(f"the group two levels above the well, {where}, has no plate metadata", details={"plate": where})


@check(kind="group", own_metadata_only=True)
def ome_plate_indices_in_range(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every well's integer `rowIndex` and `columnIndex` count from 0 into the plate's `rows` and `columns` lists:
    each is at least 0 and less than the length of its list."""
    plate = ome_document(node).get("plate")
    if not isinstance(plate, Mapping):
        raise NotApplicable("no plate object")
    sizes = {}
    for key, lst in (("rowIndex", "rows"), ("columnIndex", "columns")):
        if isinstance(plate.get(lst), list):
            sizes[key] = (lst, len(plate[lst]))
    if not sizes:
        raise NotApplicable("no rows or columns list (the rules on the lists report them)")
    for place, well in walk(ome_document(node), "plate.wells[*]"):
        for key, (lst, size) in sizes.items():
            value = well.get(key) if isinstance(well, Mapping) else None
            if is_type(value, "integer") and not 0 <= value < size:
                yield Finding(
                    f"{place}.{key} is {value}; the {size} {lst} are indexed 0 to {size - 1}",
                    details={"place": place, "index": value},
                )


@check(kind="group")
def ome_well_acquisition(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every field of view of a well names, in `acquisition`, the integer `id` of one of its plate's acquisitions:
    where the plate lists more than one, every field does; where it lists one, every field that names one.

    Not applicable when: the group is not a well, or the plate above it lists no acquisitions."""
    doc = ome_document(node)
    if "well" not in doc:
        raise NotApplicable("no 'well' in the OME-Zarr metadata")
    plate = _plate_of(node)
    acquisitions = plate.get("acquisitions") if plate is not None else None
    if not isinstance(acquisitions, list) or not acquisitions:
        raise NotApplicable("the plate above the well lists no acquisitions")
    ids = {a.get("id") for a in acquisitions if isinstance(a, Mapping) and is_type(a.get("id"), "integer")}
    for place, image in walk(doc, "well.images[*]"):
        if not isinstance(image, Mapping):
            continue
        if "acquisition" not in image:
            if len(acquisitions) > 1:
                yield Finding(
                    f"{place} has no 'acquisition'; the plate lists {len(acquisitions)} acquisitions",
                    details={"place": place},
                )
            continue
        value = image["acquisition"]
        if not is_type(value, "integer"):
            yield Finding(f"{place}.acquisition is {type_name(value)} {_quote(value)}, not an integer", details={"place": place})
        elif value not in ids:
            known = ", ".join(map(str, sorted(ids))) or "none"
            yield Finding(
                f"{place}.acquisition {value} is the id of no acquisition of the plate (ids: {known})",
                details={"place": place, "acquisition": value},
            )


def _group_has(target: Node | None, key: str) -> bool:
    if target is None or target.kind != "group":
        return False
    try:
        return key in ome_document(target)
    except NotApplicable:
        return False


@check(
    options={
        "properties": {
            "at": AT,
            "key": KEY,
            "base": {"type": "string", "pattern": r"^\.\.(/\.\.)*$"},
            "skip_absent": {"type": "boolean"},
        },
        "required": ["at", "key"],
    },
    kind="group",
)
def ome_paths_name_groups_with(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every string path at `at` names a group (relative to the node, or to `base` above it) whose OME-Zarr metadata
    holds `key`; with `skip_absent`, a path naming nothing or an array is left to the rule that asks it to exist."""
    key = options["key"]
    base = node
    if "base" in options:
        target = normalize_path(posixpath.join(node.path, options["base"]))
        base = node.tree.get(target) if target.startswith("/") else None
        if base is None:
            raise NotApplicable(f"no group at {options['base']!r} from {node.path}")
    for place, path in walk(ome_document(node), options["at"]):
        if not isinstance(path, str):
            continue
        target = _child(base, path)
        if target is None or target.kind != "group":
            if not options.get("skip_absent"):
                what = "nothing" if target is None else "an array"
                yield Finding(f"{place} {path!r} names {what}, not a group with {key!r}", details={"place": place, "path": path})
        elif not _group_has(target, key):
            yield Finding(
                f"{place} {path!r} names {target.path}, whose OME-Zarr metadata has no {key!r}",
                details={"place": place, "path": path},
            )


def _numbered(name: str) -> bool:
    return name.isdigit() and (name == "0" or not name.startswith("0"))


@check(kind="group")
def ome_series_numbered(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The images right below a bioformats2raw group (child groups with `multiscales`) are named 0, 1, 2, ... with
    no number missing.

    Not applicable when: the group is no bioformats2raw group, carries `plate`, or its `OME` group has `series`."""
    doc = ome_document(node)
    if "bioformats2raw.layout" not in doc:
        raise NotApplicable("no 'bioformats2raw.layout' in the OME-Zarr metadata")
    if "plate" in doc:
        raise NotApplicable("a plate: its images are where the plate says")
    ome = node.tree.get(normalize_path(posixpath.join(node.path, "OME")))
    if _group_has(ome, "series"):
        raise NotApplicable("the OME group lists the images in 'series'")
    images = sorted(c.name for c in node.children().values() if _is_image(c))
    wrong = [n for n in images if not _numbered(n)]
    for name in wrong:
        yield Finding(f"image {name!r} is not named by a number from 0", details={"image": name})
    numbers = sorted(int(n) for n in images if _numbered(n))
    missing = sorted(set(range(len(numbers))) - set(numbers)) if numbers else []
    if missing:
        yield Finding(
            f"the images are numbered {', '.join(map(str, numbers))}; missing {', '.join(map(str, missing[:10]))}",
            details={"missing": missing[:10]},
        )


def _groups(node: Node) -> list[Node]:
    return [c for c in node.children().values() if c.kind == "group"]


@check(options={"properties": {"names": {"enum": ["rows", "columns"]}}, "required": ["names"]}, kind="group")
def ome_plate_groups_defined(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every well group below the plate (a group with `well`, two levels down) sits in a row group named as one of
    the plate's `rows`, or (`names: columns`) is named as one of its `columns`.

    A well the store holds is in a row and a column of the physical plate, so the plate defines both."""
    plate = ome_document(node).get("plate")
    key = options["names"]
    if not isinstance(plate, Mapping) or not isinstance(plate.get(key), list):
        raise NotApplicable(f"no plate object with a {key} list (the rule on the list reports it)")
    names = set(_names(plate, key))
    for row in _groups(node):
        for well in _groups(row):
            if not _group_has(well, "well"):
                continue
            name = row.name if key == "rows" else well.name
            if name not in names:
                what = "row" if key == "rows" else "column"
                yield Finding(
                    f"well {well.path} is in {what} {name!r}, which the plate's {key} do not define",
                    details={"well": well.path, what: name},
                )


@check(options={"properties": {"level": {"enum": ["row", "well"]}}, "required": ["level"]}, kind="group")
def ome_plate_groups_hold_images(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every row group of the plate (a child group named as one of its `rows`) holds a well group holding an image;
    with `level: well`, every well group (a group in such a row named as one of the plate's `columns`) holds an
    image (a child group with `multiscales`)."""
    plate = ome_document(node).get("plate")
    if not isinstance(plate, Mapping) or not isinstance(plate.get("rows"), list) or not isinstance(plate.get("columns"), list):
        raise NotApplicable("no plate object with rows and columns lists (the rules on the lists report them)")
    rows, columns = set(_names(plate, "rows")), set(_names(plate, "columns"))
    for row in _groups(node):
        if row.name not in rows:
            continue
        wells = [w for w in _groups(row) if w.name in columns]
        holding = {w.path for w in wells if any(_is_image(f) for f in _groups(w))}
        if options["level"] == "row" and not holding:
            yield Finding(f"row group {row.path} holds no well with an image", details={"row": row.path})
        if options["level"] == "well":
            for well in wells:
                if well.path not in holding:
                    yield Finding(f"well group {well.path} holds no image", details={"well": well.path})


@check(kind="group")
def ome_label_paths_bare(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every group between the `labels` group and a label image its `labels` list names carries no attributes."""
    labels = ome_document(node).get("labels")
    if not isinstance(labels, list):
        raise NotApplicable("no 'labels' list (the rule on the list reports it)")
    seen: set[str] = set()
    for i, path in enumerate(labels):
        if not isinstance(path, str) or _child(node, path) is None:
            continue
        parts = normalize_path(path).strip("/").split("/")
        for depth in range(1, len(parts)):
            between = _child(node, "/".join(parts[:depth]))
            if between is None or between.path in seen:
                continue
            seen.add(between.path)
            if between.attrs:
                keys = ", ".join(map(repr, sorted(between.attrs)))
                yield Finding(
                    f"{between.path}, between the labels group and labels[{i}] {path!r}, carries attributes {keys}",
                    details={"group": between.path},
                )


@check(kind="group")
def ome_labels_list_all(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every label image below the `labels` group (a group with `image-label`) is one its `labels` list names."""
    labels = ome_document(node).get("labels")
    if not isinstance(labels, list):
        raise NotApplicable("no 'labels' list (the rule on the list reports it)")
    listed = {target.path for target in (_child(node, p) for p in labels) if target is not None}
    todo = _groups(node)
    while todo:
        group = todo.pop()
        if _group_has(group, "image-label") and group.path not in listed:
            yield Finding(f"label image {group.path} is not in the labels list", details={"label": group.path})
        if not _is_image(group):  # a label image's own groups are its levels', not label images
            todo.extend(_groups(group))


@check(kind="group")
def ome_plate_series_match(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """A bioformats2raw plate's `OME` group lists in `series` the path of every field of view its wells list (well
    path, `/`, field path), and no other.

    Not applicable when: the group is not both a bioformats2raw group and a plate."""
    doc = ome_document(node)
    if "bioformats2raw.layout" not in doc or not isinstance(doc.get("plate"), Mapping):
        raise NotApplicable("not a bioformats2raw plate")
    fields = []
    for _, well in walk(doc, "plate.wells[*]"):
        path = well.get("path") if isinstance(well, Mapping) else None
        group = _child(node, path)
        try:
            images = ome_document(group).get("well", {}).get("images") if _group_has(group, "well") else None
        except (NotApplicable, AttributeError):
            images = None
        for image in images if isinstance(images, list) else []:
            if isinstance(image, Mapping) and isinstance(image.get("path"), str):
                fields.append(f"{normalize_path(path).strip('/')}/{image['path']}")
    ome = node.tree.get(normalize_path(posixpath.join(node.path, "OME")))
    series = ome_document(ome).get("series") if _group_has(ome, "series") else None
    if not isinstance(series, list):
        yield Finding(f"no OME group with a series list; the plate's {len(fields)} field(s) of view are listed nowhere else")
        return
    listed = {normalize_path(s).strip("/") for s in series if isinstance(s, str)}
    missing = [f for f in fields if f not in listed]
    extra = sorted(listed - set(fields))
    if missing:
        yield Finding(f"series lacks field(s) of view {', '.join(map(repr, missing[:10]))}", details={"missing": missing[:10]})
    if extra:
        yield Finding(
            f"series lists {', '.join(map(repr, extra[:10]))}, no field of view of the plate", details={"extra": extra[:10]}
        )


# The top-level keys of OME-Zarr metadata (0.4: the attributes of a group).
OME_KEYS = ("multiscales", "omero", "labels", "image-label", "plate", "well", "bioformats2raw.layout", "series")


@check(kind="array", own_metadata_only=True)
def ome_metadata_on_groups(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The array's attributes hold no OME-Zarr metadata key (multiscales, omero, labels, image-label, plate, well,
    bioformats2raw.layout, series): that metadata belongs to groups."""
    keys = [k for k in OME_KEYS if k in node.attrs]
    if keys:
        yield Finding(f"the array carries OME-Zarr metadata {', '.join(map(repr, keys))}", details={"keys": keys})


# ------------------------------------------------------------------------------------------------ OME-XML
# bioformats2raw's `OME/METADATA.ome.xml`: read through the node layer (`read_key`, at most MAX_OME_XML_BYTES) and
# parsed by the standard library's ElementTree (`XMLPullParser`, over expat): Python 3.11's expat (2.4 and later)
# refuses entity expansion past its amplification bound, ElementTree resolves no external entity and fetches nothing,
# and nothing the document names is ever opened or run. It is parsed as a stream, each element dropped at its end,
# at most MAX_OME_XML_DEPTH levels deep, so memory is the document's bytes and one path of elements.
OME_XML = "OME/METADATA.ome.xml"
MAX_OME_XML_BYTES = 64 * 2**20
MAX_OME_XML_DEPTH = 256
XML_FEED_BYTES = 1 << 16
PIXELS_DATA = ("BinData", "TiffData", "MetadataOnly")  # what a Pixels element holds its data as
_OME_XML_SEEN: weakref.WeakKeyDictionary[Any, dict[str, OmeXml]] = weakref.WeakKeyDictionary()


class OmeImage(NamedTuple):
    """One `Image` element of the document: its ID and Name attributes and the data elements its Pixels hold."""

    id: str | None
    name: str | None
    data: tuple[str, ...]  # local names of the Pixels' BinData, TiffData and MetadataOnly children, in order


class OmeXml(NamedTuple):
    """What the rules read of an OME-XML document: its root's local name, its Image elements, whether it holds a
    BinaryOnly element; `error` says why it is no well-formed XML (then the rest is what came before the error)."""

    root: str | None
    images: tuple[OmeImage, ...]
    binary_only: bool
    error: str | None


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


class _OmeXmlReader:
    """The parse's state: the open elements (their local names), the Images read so far and the one being read."""

    def __init__(self) -> None:
        self.stack: list[ElementTree.Element] = []
        self.names: list[str] = []
        self.images: list[OmeImage] = []
        self.current: list[Any] = []  # [id, name, data] of the Image being read
        self.root: str | None = None
        self.binary_only = False

    def start(self, elem: ElementTree.Element) -> None:
        if len(self.stack) >= MAX_OME_XML_DEPTH:
            raise ValueError(f"elements nest more than {MAX_OME_XML_DEPTH} levels deep")
        local, depth = _local(elem.tag), len(self.names)
        if self.root is None:
            self.root = local
        elif depth == 1 and local == "Image":
            self.current[:] = [elem.get("ID"), elem.get("Name"), []]
        elif depth == 1 and local == "BinaryOnly":
            self.binary_only = True
        elif depth == 3 and local in PIXELS_DATA and self.names[2] == "Pixels" and self.current:
            self.current[2].append(local)
        self.stack.append(elem)
        self.names.append(local)

    def end(self, elem: ElementTree.Element) -> None:
        self.stack.pop()
        local = self.names.pop()
        if len(self.names) == 1 and local == "Image" and self.current:
            self.images.append(OmeImage(self.current[0], self.current[1], tuple(self.current[2])))
            self.current.clear()
        if self.stack:  # dropped at its end: memory holds one path of elements, not the document
            self.stack[-1].remove(elem)


def parse_ome_xml(raw: bytes) -> OmeXml:
    """The document's root, Image elements and BinaryOnly element, matched by local name (any namespace)."""
    parser = ElementTree.XMLPullParser(events=("start", "end"))
    reader, error = _OmeXmlReader(), None
    try:
        for offset in range(0, max(len(raw), 1), XML_FEED_BYTES):
            parser.feed(raw[offset : offset + XML_FEED_BYTES])
            for event, elem in parser.read_events():
                (reader.start if event == "start" else reader.end)(elem)
        parser.close()
    except (ElementTree.ParseError, ValueError) as exc:
        error = str(exc)
    if reader.root is None and error is None:
        error = "no element"
    return OmeXml(reader.root, tuple(reader.images), reader.binary_only, error)


def ome_xml(node: Node, key: str = OME_XML) -> OmeXml:
    """The OME-XML document stored at `key` below the node, parsed once per tree.

    Raises NotApplicable where none is stored ("if provided"), NotChecked where it is larger than MAX_OME_XML_BYTES
    (never read) or stored but unreadable (the node layer reports that)."""
    seen = _OME_XML_SEEN.setdefault(node.tree, {})
    where = normalize_path(posixpath.join(node.path, key))
    got = seen.get(where)
    if got is None:
        try:
            raw = node.read_key(key, MAX_OME_XML_BYTES)
        except TooLarge as exc:
            raise NotChecked(f"{exc} (this tool parses OME-XML of at most {MAX_OME_XML_BYTES} bytes)") from None
        if raw is None:
            raise NotApplicable(f"no {where} is stored")
        got = seen[where] = parse_ome_xml(bytes(raw))
    return got


def _bf2raw_top(node: Node) -> Mapping[str, Any]:
    doc = ome_document(node)
    if "bioformats2raw.layout" not in doc:
        raise NotApplicable("no 'bioformats2raw.layout' in the OME-Zarr metadata")
    return doc


def _usable(doc: OmeXml, where: str) -> OmeXml:
    if doc.error is not None:
        raise NotChecked(f"{where} is no well-formed XML ({doc.error}); what it holds cannot be told")
    return doc


def _more(findings: list[Finding], limit: int = 10) -> Iterator[Finding]:
    yield from findings[:limit]
    if len(findings) > limit:
        yield Omitted(len(findings) - limit)


@check(kind="group")
def ome_xml_present(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The bioformats2raw top-level group has `OME/METADATA.ome.xml`, a well-formed XML document whose root element is
    `OME`.

    A file that does not parse as XML (or is not rooted at `OME`) holds no OME metadata: a finding of this rule (the
    MUST rules that read it are then not checked). Not applicable when the group is no bioformats2raw group."""
    _bf2raw_top(node)
    try:
        doc = ome_xml(node)
    except NotChecked:
        raise
    except NotApplicable:
        yield Finding(f"no {OME_XML} is stored: the collection's OME metadata is missing")
        return
    if doc.error is not None:
        yield Finding(f"{OME_XML} is no well-formed XML: {doc.error}", details={"error": doc.error})
    elif doc.root != "OME":
        yield Finding(f"{OME_XML}'s root element is {doc.root!r}, not 'OME'", details={"root": doc.root})


@check(kind="group")
def ome_xml_metadata_only(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """Every `Image` of `OME/METADATA.ome.xml` holds its pixel data as `<MetadataOnly/>`: its `Pixels` have a
    MetadataOnly element and no BinData or TiffData, and the document has no BinaryOnly element.

    Not applicable when the group is no bioformats2raw group or the file is not stored; not checked when it is no
    well-formed XML (the presence rule reports that) or larger than the bound."""
    _bf2raw_top(node)
    doc = _usable(ome_xml(node), OME_XML)
    if doc.binary_only:
        yield Finding(f"{OME_XML} holds a BinaryOnly element", details={"element": "BinaryOnly"})
    found = []
    for i, image in enumerate(doc.images):
        what = f"Image {i} ({image.id})" if image.id else f"Image {i}"
        wrong = sorted(set(image.data) - {"MetadataOnly"})
        if wrong:
            found.append(Finding(f"{what}'s Pixels hold {', '.join(wrong)}", details={"image": i, "elements": wrong}))
        elif "MetadataOnly" not in image.data:
            found.append(Finding(f"{what}'s Pixels hold no MetadataOnly element", details={"image": i}))
    yield from _more(found)


def _series(node: Node) -> list[Any] | None:
    ome = node.tree.get(normalize_path(posixpath.join(node.path, "OME")))
    series = ome_document(ome).get("series") if _group_has(ome, "series") else None
    return series if isinstance(series, list) else None


@check(kind="group")
def ome_xml_series_match(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The `OME` group's `series` lists one path per `Image` of `OME/METADATA.ome.xml`, the i-th path for the i-th
    Image: as many paths as Images.

    Not applicable when the group is no bioformats2raw group, its OME group has no `series` list, or the file is not
    stored ("if provided"); not checked when it is no well-formed XML or larger than the bound."""
    _bf2raw_top(node)
    series = _series(node)
    if series is None:
        raise NotApplicable("the OME group has no 'series' list")
    doc = _usable(ome_xml(node), OME_XML)
    if len(series) != len(doc.images):
        yield Finding(
            f"series lists {len(series)} path(s); {OME_XML} has {len(doc.images)} Image element(s)",
            details={"series": len(series), "images": len(doc.images)},
        )


@check(kind="group")
def ome_xml_images_match(node: Node, options: Options, scope: Scope) -> Iterator[Finding]:
    """The images right below the bioformats2raw group (child groups with `multiscales`, numbered 0, 1, ...) are as
    many as the `Image` elements of `OME/METADATA.ome.xml`: each represents one Image, in the groups' order.

    Not applicable when the group is no bioformats2raw group, is a plate (its images are the fields of view its
    series lists), or the file is not stored; not checked when it is no well-formed XML or larger than the bound."""
    doc = _bf2raw_top(node)
    if "plate" in doc:
        raise NotApplicable("a plate: its images are where the plate says, in the order of series")
    xml = _usable(ome_xml(node), OME_XML)
    images = sorted(c.name for c in node.children().values() if _is_image(c))
    if len(images) != len(xml.images):
        shown = ", ".join(images[:10]) + (", ..." if len(images) > 10 else "")
        yield Finding(
            f"{len(images)} multiscales group(s) ({shown or 'none'}); {OME_XML} has {len(xml.images)} Image element(s)",
            details={"groups": len(images), "images": len(xml.images)},
        )
