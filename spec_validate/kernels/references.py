"""reference_elements: hdmf-zarr object references stored as array elements, classified in one pass.

Each element should be a reference object (a dict) with a string value for each required key. The kernel
keeps, with exact counts, the first malformed elements, the first that name another store, and each
distinct path named within this store with the index of its first occurrence, so the primitive can look
the paths up in the tree afterwards. Distinct paths are bounded: past `max_targets` they are counted only.

A compound dataset (`fields` given) holds a row per element, `width` values in zarr_dtype order (a list, or
an object keyed by field name), and the reference objects are the values at the `fields` positions: each of
them is classified as an element would be, and a row of another shape is malformed.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from spec_validate.excerpt import json_excerpt
from spec_validate.kernels.block import Block
from spec_validate.kernels.registry import kernel

# Sources that name the store itself; any other source is another store.
SELF_SOURCES = (".", "", "./")


class Element(NamedTuple):
    index: int
    text: str  # the element, shortened, for a message
    problem: str | None = None  # malformed elements: what is wrong
    source: str | None = None  # elements naming another store: its source and path
    path: str | None = None


class ReferencesPartial(NamedTuple):
    malformed: int
    malformed_found: tuple[Element, ...]
    foreign: int
    foreign_found: tuple[Element, ...]
    targets: tuple[tuple[str, int], ...]  # (path within this store, first index), in order of first occurrence
    targets_dropped: int  # elements whose distinct path did not fit in max_targets
    target_fields: tuple[str | None, ...] = ()  # per target, the compound field of its first occurrence (None: no fields)


def _classify(value: Any, required: tuple[str, ...]) -> str | None:
    if not isinstance(value, dict):
        return f"is {json_excerpt(value)}, expected a reference object"
    missing = [k for k in required if not isinstance(value.get(k), str)]
    return f"has no string {', '.join(missing)}" if missing else None


def _values(value: Any, fields: tuple[tuple[int, str], ...], width: int) -> tuple[list[tuple[Any, str | None]], str | None]:
    """The (reference value, field name) pairs one element holds, or a problem when a compound row is malformed."""
    if not fields:
        return [(value, None)], None
    row = list(value.values()) if isinstance(value, dict) else value
    if isinstance(row, np.void):
        row = row.tolist()
    if not isinstance(row, (list, tuple)) or len(row) != width:
        return [], f"is {json_excerpt(value)}, expected a row of {width} fields"
    return [(row[i], name) for i, name in fields], None


def summarize(
    block: Block,
    required: tuple[str, ...] = ("source", "path"),
    limit: int = 20,
    max_targets: int = 10_000,
    fields: tuple[tuple[int, str], ...] = (),
    width: int = 0,
) -> ReferencesPartial:
    """Malformed, foreign and in-store references of one block (of the reference fields of each row, for `fields`)."""
    if block.uniform:  # one value repeated (rows where nothing is stored): classified once, counted for each
        one = _elements(Block(block.start, block.values[:1]), required, limit, max_targets, fields, width)
        return _repeated(one, block.start, block.size, limit)
    return _elements(block, required, limit, max_targets, fields, width)


def _elements(
    block: Block,
    required: tuple[str, ...],
    limit: int,
    max_targets: int,
    fields: tuple[tuple[int, str], ...],
    width: int,
) -> ReferencesPartial:
    """`summarize`, element by element."""
    malformed: list[Element] = []
    foreign: list[Element] = []
    n_malformed = n_foreign = dropped = 0
    targets: dict[str, tuple[int, str | None]] = {}
    for offset, element in enumerate(block.values.reshape(-1)):
        index = block.start + offset
        element = element.item() if isinstance(element, np.generic) and not isinstance(element, np.void) else element
        values, row_problem = _values(element, fields, width)
        if row_problem is not None:
            n_malformed += 1
            if len(malformed) < limit:
                malformed.append(Element(index, json_excerpt(element), problem=row_problem))
            continue
        for value, field in values:
            value = value.item() if isinstance(value, np.generic) else value
            problem = _classify(value, required)
            if problem is not None:
                n_malformed += 1
                if len(malformed) < limit:
                    where = f"field {field!r} " if field is not None else ""
                    malformed.append(Element(index, json_excerpt(value), problem=where + problem))
                continue
            source, path = value.get("source"), value.get("path")
            if not (isinstance(source, str) and isinstance(path, str)):
                continue  # only possible when `required` leaves them out: nothing to follow
            if source not in SELF_SOURCES:
                n_foreign += 1
                if len(foreign) < limit:
                    foreign.append(Element(index, json_excerpt(value), source=source, path=path))
            elif path not in targets:
                if len(targets) < max_targets:
                    targets[path] = (index, field)
                else:
                    dropped += 1
    return ReferencesPartial(
        n_malformed,
        tuple(malformed),
        n_foreign,
        tuple(foreign),
        tuple((p, i) for p, (i, _) in targets.items()),
        dropped,
        tuple(f for _, f in targets.values()),
    )


def _repeated(one: ReferencesPartial, start: int, n: int, limit: int) -> ReferencesPartial:
    """The summary of `n` elements equal to the one summarised in `one`."""
    return one._replace(
        malformed=one.malformed * n,
        malformed_found=_spread(one.malformed_found, start, n, limit),
        foreign=one.foreign * n,
        foreign_found=_spread(one.foreign_found, start, n, limit),
    )


def _spread(found: tuple[Element, ...], start: int, n: int, limit: int) -> tuple[Element, ...]:
    """The elements found in the first of `n` equal elements, repeated for the others up to `limit` in all."""
    out: list[Element] = []
    for i in range(min(n, limit) if found else 0):
        out.extend(e._replace(index=start + i) for e in found)
    return tuple(out[:limit])


@kernel("reference_elements", summarize=summarize)
def combine(
    left: ReferencesPartial,
    right: ReferencesPartial,
    required: tuple[str, ...] = ("source", "path"),
    limit: int = 20,
    max_targets: int = 10_000,
    fields: tuple[tuple[int, str], ...] = (),
    width: int = 0,
) -> ReferencesPartial:
    """Both spans as one: the left span's elements come first, so first occurrences stay first."""
    targets = {path: (index, field) for (path, index), field in zip(left.targets, _fields_of(left), strict=True)}
    dropped = left.targets_dropped + right.targets_dropped
    for (path, index), field in zip(right.targets, _fields_of(right), strict=True):
        if path in targets:
            continue
        if len(targets) < max_targets:
            targets[path] = (index, field)
        else:
            dropped += 1
    return ReferencesPartial(
        left.malformed + right.malformed,
        (left.malformed_found + right.malformed_found)[:limit],
        left.foreign + right.foreign,
        (left.foreign_found + right.foreign_found)[:limit],
        tuple((p, i) for p, (i, _) in targets.items()),
        dropped,
        tuple(f for _, f in targets.values()),
    )


def _fields_of(partial: ReferencesPartial) -> tuple[str | None, ...]:
    return partial.target_fields or (None,) * len(partial.targets)
