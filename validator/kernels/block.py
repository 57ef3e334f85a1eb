"""What a kernel sees: a block of an array's values (owned here, so kernels import nothing from the backends)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class ChunkRead(NamedTuple):
    """One stored chunk a block was read from, and whether it decoded."""

    key: str  # the chunk's key relative to the array ("0.1", "c/0/1"; HDF5: its grid index, "3" or "3.1")
    problem: str | None = None  # None: it decoded to exactly one chunk; else one line naming the array path, key and reason


class Block(NamedTuple):
    """A chunk-aligned run of rows of an array, flattened in C order.

    `start` is the flat (C-order) index of the first element of `values` in the whole array. `chunks` lists
    the stored chunks the block was read from, in chunk-grid order (chunks not stored, read as the fill value,
    are not listed). A chunk that did not decode carries its problem, and its elements in `values` are the
    fill value (or zeros, or None), not data: `problem()` says whether the values can be trusted.
    """

    start: int
    values: np.ndarray
    chunks: tuple[ChunkRead, ...] = ()

    def problem(self) -> str | None:
        """The first chunk problem (one line naming the array path and the chunk's key), or None when every chunk decoded."""
        return next((c.problem for c in self.chunks if c.problem is not None), None)
