"""What a kernel sees: a block of an array's values (owned here, so kernels import nothing from the backends)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class ChunkRead(NamedTuple):
    """One stored chunk read for a block: its key (relative to the array) and why it did not decode, if it did not."""

    key: str
    problem: str | None = None  # None: it decoded to exactly one chunk's bytes (or elements)


class ShardIndex(NamedTuple):
    """The index of one stored shard (Zarr v3 `sharding_indexed`), as stored: read for a block, checked by a kernel.

    `pairs` is None when the index could not be read (the shard is shorter than it, or a checksum fails: `problem`
    says which). Inner chunks must lie in the shard's bytes [`data_start`, `data_stop`), the part outside the index.
    """

    key: str  # the shard's key, relative to the array
    size: int  # the shard's stored bytes
    pairs: np.ndarray | None  # (inner chunks, 2) uint64: offset, nbytes per inner chunk, C order of the inner grid
    problem: str | None
    data_start: int
    data_stop: int
    per_shard: tuple[int, ...]  # inner chunks along each dimension (to name an inner chunk by its grid index)


class Block(NamedTuple):
    """A chunk-aligned run of rows of an array, flattened in C order.

    `start` is the flat (C-order) index of the first element of `values` in the whole array. `chunks` lists
    the stored chunks read for the block, in key order (backends that read chunks themselves fill it in);
    a chunk that did not decode is listed with its problem, and its elements in `values` are not its own.
    `shards` lists the shard indexes read for the block (Zarr v3 sharding), when a kernel asked for them.
    """

    start: int
    values: np.ndarray
    chunks: tuple[ChunkRead, ...] = ()
    shards: tuple[ShardIndex, ...] = ()

    def problem(self) -> str | None:
        """The first chunk of this block that did not decode, in one line; None when every chunk did."""
        bad = [c for c in self.chunks if c.problem is not None]
        if not bad:
            return None
        more = f" (and {len(bad) - 1} more chunks of this block)" if len(bad) > 1 else ""
        return f"chunk {bad[0].key} {bad[0].problem}{more}"
