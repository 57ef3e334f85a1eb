"""reference_elements: hdmf-zarr object references stored as array elements, classified in one pass.

Each element should be a reference object (a dict) with a string value for each required key. The kernel
keeps, with exact counts, the first malformed elements, the first that name another store, and each
distinct path named within this store with the index of its first occurrence, so the primitive can look
the paths up in the tree afterwards. Distinct paths are bounded: past `max_targets` they are counted only.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import numpy as np

from validator.kernels.block import Block

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


def _short(value: Any, limit: int = 80) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _classify(value: Any, required: tuple[str, ...]) -> str | None:
    if not isinstance(value, dict):
        return f"is {_short(value)}, expected a reference object"
    missing = [k for k in required if not isinstance(value.get(k), str)]
    return f"has no string {', '.join(missing)}" if missing else None


def summarize(
    block: Block, required: tuple[str, ...] = ("source", "path"), limit: int = 20, max_targets: int = 10_000
) -> ReferencesPartial:
    """Malformed, foreign and in-store references of one block."""
    if block.uniform:  # one value repeated: classified once, counted for every element
        one = summarize(Block(block.start, block.values[:1]), required, limit, max_targets)
        n = block.values.size
        spread = lambda found: tuple(e._replace(index=block.start + i) for e in found for i in range(min(n, limit)))  # noqa: E731
        return ReferencesPartial(
            one.malformed * n,
            spread(one.malformed_found),
            one.foreign * n,
            spread(one.foreign_found),
            one.targets,
            one.targets_dropped,
        )
    malformed: list[Element] = []
    foreign: list[Element] = []
    n_malformed = n_foreign = dropped = 0
    targets: dict[str, int] = {}
    for offset, value in enumerate(block.values.reshape(-1)):
        index = block.start + offset
        value = value.item() if isinstance(value, np.generic) else value
        problem = _classify(value, required)
        if problem is not None:
            n_malformed += 1
            if len(malformed) < limit:
                malformed.append(Element(index, _short(value), problem=problem))
            continue
        source, path = value.get("source"), value.get("path")
        if not (isinstance(source, str) and isinstance(path, str)):
            continue  # only possible when `required` leaves them out: nothing to follow
        if source not in SELF_SOURCES:
            n_foreign += 1
            if len(foreign) < limit:
                foreign.append(Element(index, _short(value), source=source, path=path))
        elif path not in targets:
            if len(targets) < max_targets:
                targets[path] = index
            else:
                dropped += 1
    return ReferencesPartial(n_malformed, tuple(malformed), n_foreign, tuple(foreign), tuple(targets.items()), dropped)


def combine(
    left: ReferencesPartial,
    right: ReferencesPartial,
    required: tuple[str, ...] = ("source", "path"),
    limit: int = 20,
    max_targets: int = 10_000,
) -> ReferencesPartial:
    """Both spans as one: the left span's elements come first, so first occurrences stay first."""
    targets = dict(left.targets)
    dropped = left.targets_dropped + right.targets_dropped
    for path, index in right.targets:
        if path in targets:
            continue
        if len(targets) < max_targets:
            targets[path] = index
        else:
            dropped += 1
    return ReferencesPartial(
        left.malformed + right.malformed,
        (left.malformed_found + right.malformed_found)[:limit],
        left.foreign + right.foreign,
        (left.foreign_found + right.foreign_found)[:limit],
        tuple(targets.items()),
        dropped,
    )
