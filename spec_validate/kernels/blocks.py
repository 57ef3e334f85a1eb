"""Run a map + combine kernel over blocks: serially or on a thread pool, with the same answer."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor
from functools import reduce
from typing import Any, Protocol

from spec_validate.kernels.block import Block


class Kernel(Protocol):
    def summarize(self, block: Block, **params: Any) -> Any: ...
    def combine(self, left: Any, right: Any, **params: Any) -> Any: ...


def non_empty(blocks: Iterable[Block]) -> Iterator[Block]:
    """Blocks with at least one element (kernels never see empty blocks)."""
    return (b for b in blocks if b.size)


def reduce_serial(kernel: Kernel, blocks: Iterable[Block], **params: Any) -> Any:
    """summarize each block in order and fold with combine; None for an empty array."""
    result = None
    for block in non_empty(blocks):
        partial = kernel.summarize(block, **params)
        result = partial if result is None else kernel.combine(result, partial, **params)
    return result


def reduce_pool(kernel: Kernel, blocks: Iterable[Block], executor: Executor, **params: Any) -> Any:
    """As reduce_serial, with summarize run on an executor; combine stays in block order."""
    futures = [executor.submit(kernel.summarize, b, **params) for b in non_empty(blocks)]
    partials = [f.result() for f in futures]
    return fold(kernel, partials, **params)


def fold(kernel: Kernel, partials: list[Any], **params: Any) -> Any:
    """Combine partials left to right (combine is associative, so any grouping gives the same)."""
    combine: Callable[[Any, Any], Any] = lambda a, b: kernel.combine(a, b, **params)  # noqa: E731
    return reduce(combine, partials) if partials else None
