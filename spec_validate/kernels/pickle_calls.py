"""pickle_calls: the globals an array's pickled chunks call, from the chunk records each block keeps.

A chunk whose pickle calls something numpy's object-array pickle does not (a class such as
hdmf_zarr.utils.ZarrReference) is never unpickled: the chunk reader records it as whole but not read
(`ChunkRead.unread`), with the global its pickle calls (`ChunkRead.calls`, the first one the stream calls). The
kernel counts every such chunk and keeps the distinct globals, the first `limit` of them in block order, each with
the first chunk calling it. It reads no value, so it sees blocks whose values are not the array's.
"""

from __future__ import annotations

from typing import NamedTuple

from spec_validate.kernels.block import Block
from spec_validate.kernels.registry import kernel


class Called(NamedTuple):
    name: str  # the global ("hdmf_zarr.utils.ZarrReference"); "" where the pickle names none (a persistent id, ...)
    first: str  # the key of the first chunk calling it, in block order
    reason: str  # that chunk's reason, one line naming the array and key


class PickleCallsPartial(NamedTuple):
    unread: int  # chunks not read because their pickle calls something: every one counted
    called: tuple[Called, ...]  # the distinct globals, the first `limit` in block order


def summarize(block: Block, limit: int = 20) -> PickleCallsPartial:
    """The globals the pickles of one block's chunks call."""
    unread = [c for c in block.chunks if c.unread is not None]
    found = PickleCallsPartial(len(unread), ())
    return combine(found, PickleCallsPartial(0, tuple(Called(c.calls or "", c.key, c.unread or "") for c in unread)), limit)


@kernel("pickle_calls", summarize=summarize, reads_chunks=True, reads_values=False)
def combine(left: PickleCallsPartial, right: PickleCallsPartial, limit: int = 20) -> PickleCallsPartial:
    """Both spans as one: a global both call is kept where the left span first called it."""
    called = list(left.called)
    names = {c.name for c in called}
    for c in right.called:
        if len(called) >= limit:
            break
        if c.name not in names:
            names.add(c.name)
            called.append(c)
    return PickleCallsPartial(left.unread + right.unread, tuple(called))
