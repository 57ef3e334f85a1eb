"""chunk_problems: the stored chunks that did not decode, from the chunk reads each block records."""

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


def summarize(block: Block, limit: int = 20) -> ChunkPartial:
    """The chunks of one block that did not decode."""
    bad = [ChunkProblem(c.key, c.problem) for c in block.chunks if c.problem is not None]
    return ChunkPartial(len(block.chunks), len(bad), tuple(bad[:limit]))


@kernel("chunk_problems", summarize=summarize, reads_chunks=True, reads_values=False)
def combine(left: ChunkPartial, right: ChunkPartial, limit: int = 20) -> ChunkPartial:
    """Both spans as one; problems stay in block order because left precedes right."""
    return ChunkPartial(left.read + right.read, left.bad + right.bad, (left.found + right.found)[:limit])
