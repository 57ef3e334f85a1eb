"""Looking up array kernels by name: `@kernel` registers one beside its code; the modules are found, not listed.

A kernel is a summarize (one block -> a partial result) + associative combine (two partials -> one) pair, so an
array's blocks can be summarised in any order, on any worker, and folded in block order. Primitives ask for a
kernel by its name (`kernels.facts.FactRequest.kernel`); the engine's scan looks it up here. The modules of this
package are imported on the first lookup (importing one runs its `@kernel`), so a new kernel module needs no
entry anywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from spec_validate.discovery import PackageModules, claim

_PACKAGE = "spec_validate.kernels"


class Kernel(NamedTuple):
    name: str
    summarize: Callable[..., Any]  # (block, **params) -> partial
    combine: Callable[..., Any]  # (left, right, **params) -> partial: associative
    # It reads the block's chunk records (`Block.chunks`), so it gets blocks whose chunks did not all decode; every
    # other kernel is given the block's problem instead, as those values are not the array's.
    reads_chunks: bool = False
    # It reads the shard indexes of the block (`Block.shards`, Zarr v3 sharding), which are read only when asked for.
    reads_shard_indexes: bool = False
    # It reads the block's values. One that reads only the chunk records (reads_values False) also gets a block whose
    # values are not the array's though its chunks decoded (`Block.values_problem`: a fill value no value of the
    # dtype where chunks are not stored, an unknown chunk layout), or though a chunk is whole but not read
    # (`ChunkRead.unread`: its pickle calls a class); a kernel reading chunks and values does not.
    reads_values: bool = True


KERNELS: dict[str, Kernel] = {}
_MODULES = PackageModules(_PACKAGE, skip=("registry",))


def kernel(
    name: str,
    *,
    summarize: Callable[..., Any],
    reads_chunks: bool = False,
    reads_shard_indexes: bool = False,
    reads_values: bool = True,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the kernel `name`: the decorated function is its combine, `summarize` its per-block step."""

    def register(combine: Callable[..., Any]) -> Callable[..., Any]:
        claim(KERNELS, name, combine, "kernel", lambda k: k.combine)
        KERNELS[name] = Kernel(name, summarize, combine, reads_chunks, reads_shard_indexes, reads_values)
        return combine

    return register


def get(name: str) -> Kernel:
    """The kernel registered as `name`; KeyError names an unknown one."""
    if name not in KERNELS:
        _MODULES.load()
    try:
        return KERNELS[name]
    except KeyError:
        raise KeyError(f"no kernel named {name!r}") from None


def all_kernels() -> dict[str, Kernel]:
    """Every kernel, by name."""
    _MODULES.load()
    return dict(sorted(KERNELS.items()))
