"""What a primitive asks the engine to compute over an array: a kernel name and its parameters."""

from __future__ import annotations

from typing import Any, NamedTuple


class FactRequest(NamedTuple):
    """A request for one kernel's result on one array; equal requests are computed once.

    `kernel` is the name the kernel is registered under (`kernels.registry.kernel`), `params` its keyword arguments.

    `edges_only` kernels need only the first and last blocks, so an array that only they
    ask about is not read in full. `node` names another array (its absolute path in the tree) whose
    facts a primitive compares with those of its own node (Xc against Xr); None is the node itself.
    Each array is still read once, for every request on it. `field` is set by the engine alone: the kernel reads
    that field of the array's records instead of the records (a node whose values are one field of another array's,
    computed in that array's pass; see `Node.values_in`).
    """

    kernel: str
    params: tuple[tuple[str, Any], ...] = ()
    edges_only: bool = False
    node: str | None = None
    field: str | None = None

    def param(self, name: str, default: Any = None) -> Any:
        return dict(self.params).get(name, default)
