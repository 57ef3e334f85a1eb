"""chunk_problems: the stored chunks that did not decode, from the chunk reads each block records.

A chunk that is whole but not read (its pickle calls a class, which is never rebuilt: `ChunkRead.unread`) is no
chunk that fails to decode: it is counted apart (`unread`), with the first one's reason, since whether it decodes
to one chunk is not known.
"""

from __future__ import annotations

from typing import NamedTuple

from spec_validate.kernels.block import Block
from spec_validate.kernels.registry import kernel


class ChunkProblem(NamedTuple):
    key: str
    problem: str


class ChunkPartial(NamedTuple):
    read: int  # stored chunks read
    bad: int  # of those, chunks that did not decode: every one counted, not only the ones kept
    found: tuple[ChunkProblem, ...]  # the first `limit` of them, in block order
    unread: int = 0  # of those, chunks whole but not read (a pickle calling a class): every one counted
    first_unread: str | None = None  # the first one's reason, in block order (one line naming the array and key)


def summarize(block: Block, limit: int = 20) -> ChunkPartial:
    """The chunks of one block that did not decode, and those not read."""
    bad = [ChunkProblem(c.key, c.problem) for c in block.chunks if c.problem is not None]
    unread = [c.unread for c in block.chunks if c.unread is not None]
    return ChunkPartial(len(block.chunks), len(bad), tuple(bad[:limit]), len(unread), unread[0] if unread else None)


@kernel("chunk_problems", summarize=summarize, reads_chunks=True, reads_values=False)
def combine(left: ChunkPartial, right: ChunkPartial, limit: int = 20) -> ChunkPartial:
    """Both spans as one; problems stay in block order because left precedes right."""
    return ChunkPartial(
        left.read + right.read,
        left.bad + right.bad,
        (left.found + right.found)[:limit],
        left.unread + right.unread,
        left.first_unread if left.first_unread is not None else right.first_unread,
    )
