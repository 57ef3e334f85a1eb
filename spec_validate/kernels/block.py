"""What a kernel sees: a block of an array's values (owned here, so kernels import nothing from the backends)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class ChunkRead(NamedTuple):
    """One stored chunk a block was read from, and whether it decoded.

    A chunk may also be whole yet not read: its pickle calls something that is never rebuilt here (a class such as
    hdmf_zarr.utils.ZarrReference). It is not damaged (`problem` None); `unread` says why its elements are not the
    array's, and `calls` names the global its pickle calls, where it names one.
    """

    key: str  # the chunk's key relative to the array ("0.1", "c/0/1"; HDF5: its grid index, "3" or "3.1")
    problem: str | None = None  # None: it decoded to exactly one chunk; else one line naming the array path, key and reason
    unread: str | None = None  # one line naming the array path and key: why its elements are not read (not damaged)
    calls: str | None = None  # the global its pickle calls ("hdmf_zarr.utils.ZarrReference"); None: none is named


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
    the stored chunks the block was read from, in chunk-grid order (chunks not stored, read as the fill value,
    are not listed). A chunk that did not decode carries its problem, and its elements in `values` are the
    fill value (or zeros, or None), not data; so are those of a chunk that is whole but not read (`ChunkRead.unread`,
    a pickle calling a class): `problem()` says whether the values can be trusted. `values_problem`
    says why values are not the array's although every stored chunk decoded: chunks not stored whose fill value is
    no value of the dtype (their elements are a zero stand-in), or a chunk layout this tool does not know; the chunk
    records (`chunks`, `shards`) are exact all the same. A `uniform`
    block is the fill value of rows where nothing is stored. `shards` lists the shard indexes read for the block
    (Zarr v3 sharding), when a kernel asked for them. `count`, set only on a uniform block, is how many elements
    it stands for: `values` then holds the one value once.
    """

    start: int
    values: np.ndarray
    chunks: tuple[ChunkRead, ...] = ()
    shards: tuple[ShardIndex, ...] = ()
    count: int | None = None
    values_problem: str | None = None

    @property
    def uniform(self) -> bool:
        """True when every element is the first one, held once (rows where no chunk is stored).

        Such a block may stand for more elements than memory, or a numpy view, could hold (a declared 2**80 with
        nothing written is one block): kernels summarise it from `values[0]` and `size`, never by touching each
        element. A broadcast view (one value, stride 0) is a uniform block too.
        """
        if self.count is not None:
            return True
        v = self.values
        return v.ndim == 1 and v.size > 1 and v.strides == (0,)

    @property
    def size(self) -> int:
        """How many elements the block holds (a uniform block: how many it stands for; any Python int)."""
        return self.values.size if self.count is None else self.count

    def problem(self) -> str | None:
        """Why the values are not the array's, in one line naming the array path: the first chunk problem, else
        `values_problem`, else the first chunk not read (`unread`); None when every chunk decoded and the values are
        the array's."""
        return self.damage() or self.unread()

    def damage(self) -> str | None:
        """The first chunk problem, else `values_problem`: what is wrong with the stored array, not merely unread."""
        return next((c.problem for c in self.chunks if c.problem is not None), self.values_problem)

    def unread(self) -> str | None:
        """Why the first chunk that is whole but not read (a pickle calling a class) is not read; None if none is."""
        return next((c.unread for c in self.chunks if c.unread is not None), None)
