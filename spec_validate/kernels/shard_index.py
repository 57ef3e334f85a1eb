"""shard_index_problems: what is wrong with the stored shard indexes of a sharded Zarr v3 array, shard by shard.

Reads `block.shards` (the indexes read for the block), never the values: the scan reads only the index bytes of
each shard when no other kernel needs the array's values. Four kinds of problem, each counted exactly and the first
`limit` of each kept in block order: an index that is not there or fails its checksum ("decodes"), an inner chunk
outside the shard's chunk bytes ("ranges"), a pair with one but not both of offset and nbytes 2**64-1
("empty-pairs"), and inner chunks whose bytes overlap ("no-overlap").
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from spec_validate.kernels.block import Block, ShardIndex
from spec_validate.kernels.registry import kernel

EMPTY = np.uint64(2**64 - 1)
CHECKS = ("decodes", "ranges", "empty-pairs", "no-overlap")
PER_SHARD = 3  # problems of one kind named per shard (all are counted)


class ShardProblem(NamedTuple):
    check: str  # one of CHECKS
    key: str  # the shard's key, relative to the array
    message: str
    inner: tuple[int, ...] | None  # the inner chunk's grid index in the shard, when the problem is one chunk's


class ShardPartial(NamedTuple):
    read: int  # shards whose index was read
    counts: dict[str, int]  # problems of each kind: every one counted, not only the ones kept
    found: tuple[ShardProblem, ...]  # the first `limit` problems of each kind, in block order


def _inner(shard: ShardIndex, i: int) -> tuple[int, ...]:
    return tuple(int(x) for x in np.unravel_index(i, shard.per_shard)) if shard.per_shard else ()


def problems(shard: ShardIndex) -> tuple[dict[str, int], list[ShardProblem]]:
    """Every problem of one shard's index, counted per kind, with the first few of each kind."""
    if shard.pairs is None:
        return {"decodes": 1}, [ShardProblem("decodes", shard.key, shard.problem or "its index does not decode", None)]
    counts: dict[str, int] = {}
    found: list[ShardProblem] = []

    def note(check: str, where: np.ndarray, describe) -> None:
        if where.size:
            counts[check] = counts.get(check, 0) + int(where.size)
            found.extend(ShardProblem(check, shard.key, describe(int(i)), _inner(shard, int(i))) for i in where[:PER_SHARD])

    offset, nbytes = shard.pairs[:, 0], shard.pairs[:, 1]
    empty_offset, empty_nbytes = offset == EMPTY, nbytes == EMPTY
    note(
        "empty-pairs",
        np.flatnonzero(empty_offset != empty_nbytes),
        lambda i: (
            f"inner chunk {list(_inner(shard, i))} has offset {int(offset[i])} and nbytes {int(nbytes[i])}: "
            "an empty inner chunk sets both to 2**64-1, a stored one neither"
        ),
    )
    stored = ~(empty_offset | empty_nbytes)
    start, stop = np.uint64(shard.data_start), np.uint64(shard.data_stop)
    # offset + nbytes may not fit in 64 bits: compared without adding them.
    outside = stored & ((offset < start) | (offset > stop) | (nbytes > stop - np.minimum(offset, stop)))
    note(
        "ranges",
        np.flatnonzero(outside),
        lambda i: (
            f"inner chunk {list(_inner(shard, i))} at bytes [{int(offset[i])}, {int(offset[i]) + int(nbytes[i])}) "
            f"lies outside the shard's chunk bytes [{shard.data_start}, {shard.data_stop})"
        ),
    )
    inside = np.flatnonzero(stored & ~outside & (nbytes > 0))
    if inside.size > 1:
        order = inside[np.argsort(offset[inside], kind="stable")]
        ends = offset[order] + nbytes[order]
        reach = np.maximum.accumulate(ends)
        overlapping = np.flatnonzero(offset[order][1:] < reach[:-1]) + 1
        note(
            "no-overlap",
            order[overlapping],
            lambda i: (
                f"inner chunk {list(_inner(shard, i))} at bytes [{int(offset[i])}, {int(offset[i]) + int(nbytes[i])}) "
                "overlaps another inner chunk's bytes"
            ),
        )
    return counts, found


def _merge(counts: list[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in counts:
        for k, v in c.items():
            out[k] = out.get(k, 0) + v
    return out


def _first(found: tuple[ShardProblem, ...] | list[ShardProblem], limit: int) -> tuple[ShardProblem, ...]:
    kept: dict[str, int] = {}
    out = []
    for p in found:
        if kept.get(p.check, 0) < limit:
            kept[p.check] = kept.get(p.check, 0) + 1
            out.append(p)
    return tuple(out)


def summarize(block: Block, limit: int = 20) -> ShardPartial:
    """The problems of the shard indexes read for one block."""
    counts, found = [], []
    for shard in block.shards:
        c, f = problems(shard)
        counts.append(c)
        found.extend(f)
    return ShardPartial(len(block.shards), _merge(counts), _first(found, limit))


@kernel("shard_index_problems", summarize=summarize, reads_chunks=True, reads_shard_indexes=True, reads_values=False)
def combine(left: ShardPartial, right: ShardPartial, limit: int = 20) -> ShardPartial:
    """Both spans as one; problems stay in block order because left precedes right."""
    return ShardPartial(left.read + right.read, _merge([left.counts, right.counts]), _first(left.found + right.found, limit))
