"""Zarr chunk decoding (--deep): each stored chunk decodes, through allow-listed codecs, to one chunk."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from spec_validate.checks.api import NEEDS_DEEP, Options, check
from spec_validate.checks.zarr_metadata import chunk_grid
from spec_validate.kernels.facts import FactRequest
from spec_validate.model import Finding, NotChecked, Omitted, Scope
from spec_validate.nodes.base import Node

MAX_CHUNK_FINDINGS = 20


def _chunk_problems(node: Node, options: Options, scope: Scope) -> Mapping[str, FactRequest]:
    if node.dtype is None:
        raise NotChecked(f"{node.path} has an unusable dtype; not decoded")
    chunk_grid(node)  # unusable shape, chunks or separator: other rules report them
    if not scope.deep:  # the clause concerns the array all the same: it is not checked in this run
        raise NotChecked(NEEDS_DEEP)
    return {"chunks": FactRequest("chunk_problems", (("limit", MAX_CHUNK_FINDINGS),))}


@check(kind="array", facts=_chunk_problems, own_metadata_only=True)
def chunks_decode_to_chunk_size(node: Node, options: Options, scope: Scope, facts: Mapping[str, Any]) -> Iterator[Finding]:
    """Every stored chunk decodes, by its codecs in reverse order, to exactly one chunk's bytes.

    One chunk's bytes are the product of the chunk shape times the dtype's item size (edge chunks too: every
    chunk has the same shape); for variable-length strings, one chunk's number of elements. Runs only with
    --deep: the engine's scan reads and decodes every stored chunk inside the grid once (shared with every
    other rule on the array), through the one bounded codec module, and records each chunk that does not
    decode. Only allow-listed codecs are run; codecs off the list are never run, and such an array is listed as
    not checked. Pickle is read as data, never unpickled: a malformed pickle is a chunk that does not decode, and
    one that calls anything but numpy's array reconstruction is whole but not read, which leaves the array not
    checked unless another chunk fails. Keys outside the chunk grid are left to chunk_keys_valid. At most 20
    failing chunks are named; the rest are counted (`Omitted`), so the report gives the exact number.
    Memory: a few blocks, each chunk's decoding bounded by its declared size.
    Not applicable when: the shape, chunks or separator are unusable (other rules report them); not checked
    without --deep, or when the dtype is unusable.
    """
    result = facts["chunks"]
    if result is None:  # no chunk is stored: every element is the fill value, and nothing needs decoding
        return
    if result.unread and not result.bad:  # whole chunks not read: whether they decode to one chunk is not known
        raise NotChecked(result.first_unread or f"{node.path}: {result.unread} chunks not read")
    prefix = f"{node.path}: "  # the scan's problems name the array; the finding is on it already
    for problem in result.found:
        message = problem.problem.removeprefix(prefix)
        yield Finding(message, details={"key": problem.key, "error": message})
    if result.bad > len(result.found):  # counted by the scan, not listed: the report gives the exact count
        yield Omitted(result.bad - len(result.found))
