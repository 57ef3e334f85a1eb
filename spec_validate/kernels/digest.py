"""cell_digest: how many records a block holds and an order-free hash of them, so two arrays that store the same
records in different orders (CXG Xr by row, Xc by column) give the same digest, each from its own pass."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from spec_validate.kernels.block import Block
from spec_validate.kernels.registry import kernel

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_SEEDS = (np.uint64(0x243F6A8885A308D3), np.uint64(0x13198A2E03707344))


class Digest(NamedTuple):
    count: int  # records summarised
    sums: tuple[int, int]  # two independent 64-bit sums of the records' hashes, modulo 2**64


_SHIFTS = (np.uint64(30), np.uint64(27), np.uint64(31))
# Records hashed a piece at a time: the hash and its scratch stay in the core's cache through the dozens of passes
# over them (a block at once streamed each pass through memory: 2.7x slower).
PIECE = 1 << 15


def _mix_into(z: np.ndarray, scratch: np.ndarray) -> None:
    """splitmix64's finaliser, elementwise on uint64 (wrapping arithmetic), in place; `scratch` is as long as `z`."""
    np.add(z, _GOLDEN, out=z)
    for shift, multiplier in zip(_SHIFTS, (_M1, _M2, None), strict=True):
        np.right_shift(z, shift, out=scratch)
        np.bitwise_xor(z, scratch, out=z)
        if multiplier is not None:
            np.multiply(z, multiplier, out=z)


def _bits(column: np.ndarray) -> np.ndarray:
    """A column as uint64 words that equal when the values are equal, whatever the width they are stored in.

    Integers and booleans widen to int64, floats to float64 (so 0.5 stored as float32 and as float64 agree;
    every NaN is one NaN, and -0.0 is 0.0). Other kinds are hashed from their text.
    """
    if column.dtype.kind in "biu":
        return column.astype(np.int64).view(np.uint64)
    if column.dtype.kind == "f":
        wide = column.astype(np.float64) + 0.0  # -0.0 + 0.0 is 0.0
        wide[np.isnan(wide)] = np.nan
        return wide.view(np.uint64)
    # blake2b, not hash(): Python's string hash changes per process, and Dask workers are other processes. Imported
    # here: hashlib loads OpenSSL (10 ms), and only CXG checks with text fields come this way.
    import hashlib

    return np.array(
        [int.from_bytes(hashlib.blake2b(str(v).encode("utf-8"), digest_size=8).digest(), "little") for v in column.tolist()],
        dtype=np.uint64,
    )


def summarize(block: Block, fields: tuple[str, ...] = ()) -> Digest:
    """The number of records of one block and the two sums of their hashes (a record is its `fields`, in order;
    with no fields, the element itself)."""
    if block.uniform:  # n equal records: n times one record's hash, modulo 2**64
        one = summarize(Block(block.start, block.values[:1]), fields)
        n, mask = block.size, (1 << 64) - 1
        return Digest(n, ((one.sums[0] * n) & mask, (one.sums[1] * n) & mask))
    a = block.values
    columns = [np.asarray(a[name]).reshape(-1) for name in fields] if fields else [a.reshape(-1)]
    n = len(columns[0])
    hashes, scratch = np.empty(min(n, PIECE), dtype=np.uint64), np.empty(min(n, PIECE), dtype=np.uint64)
    sums = [0, 0]
    with np.errstate(over="ignore"):
        for lo in range(0, n, PIECE):
            words = [_bits(column[lo : lo + PIECE]) for column in columns]
            h, spare = hashes[: len(words[0])], scratch[: len(words[0])]
            for i, seed in enumerate(_SEEDS):
                h.fill(seed)
                for word in words:
                    np.bitwise_xor(h, word, out=h)
                    _mix_into(h, spare)
                sums[i] += int(h.sum(dtype=np.uint64))
    mask = (1 << 64) - 1
    return Digest(int(a.shape[0]), (sums[0] & mask, sums[1] & mask))


@kernel("cell_digest", summarize=summarize)
def combine(left: Digest, right: Digest, fields: tuple[str, ...] = ()) -> Digest:
    """Both spans as one: counts add, sums add modulo 2**64 (order-free, so any grouping gives the same digest)."""
    mask = (1 << 64) - 1
    return Digest(left.count + right.count, ((left.sums[0] + right.sums[0]) & mask, (left.sums[1] + right.sums[1]) & mask))
