"""Helpers for kernel tests: split one array into blocks and fold partials in several groupings."""

from __future__ import annotations

import numpy as np
import pytest

from spec_validate.kernels.block import Block

CHUNK = 13


def split(a: np.ndarray, size: int) -> list[Block]:
    return [Block(s, a[s : s + size]) for s in range(0, a.size, size)]


def fold_left(kernel, blocks, **params):
    parts = [kernel.summarize(b, **params) for b in blocks if b.values.size]
    out = parts[0]
    for p in parts[1:]:
        out = kernel.combine(out, p, **params)
    return out


def fold_right(kernel, blocks, **params):
    parts = [kernel.summarize(b, **params) for b in blocks if b.values.size]
    out = parts[-1]
    for p in reversed(parts[:-1]):
        out = kernel.combine(p, out, **params)
    return out


def fold_tree(kernel, blocks, **params):
    parts = [kernel.summarize(b, **params) for b in blocks if b.values.size]

    def go(lo, hi):
        if hi - lo == 1:
            return parts[lo]
        mid = (lo + hi) // 2
        return kernel.combine(go(lo, mid), go(mid, hi), **params)

    return go(0, len(parts))


FOLDS = [pytest.param(fold_left, id="left"), pytest.param(fold_right, id="right"), pytest.param(fold_tree, id="tree")]


def block_sizes(n: int):
    return [
        pytest.param(1, id="size-1"),
        pytest.param(7, id="size-7"),
        pytest.param(CHUNK, id="chunk"),
        pytest.param(n, id="whole"),
    ]
