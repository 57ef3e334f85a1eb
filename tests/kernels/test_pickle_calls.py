"""pickle_calls: the globals the pickled chunks call, from the chunk records; the chunks not read counted exactly."""

from __future__ import annotations

import numpy as np
import pytest
from splitting import FOLDS

from spec_validate.kernels import chunk_decoding, pickle_calls
from spec_validate.kernels.block import Block, ChunkRead

REFERENCE = "hdmf_zarr.utils.ZarrReference"


def _read(i: int) -> ChunkRead:
    """Chunk i: every third calls ZarrReference, chunk 4 os.system, chunk 8 a persistent id, the rest decode."""
    calls = {4: "os.system", 8: None}.get(i, REFERENCE) if i % 3 == 0 or i in (4, 8) else False
    if calls is False:
        return ChunkRead(str(i))
    return ChunkRead(str(i), unread=f"/x: chunk {i}: not decoded: its pickle calls {calls}", calls=calls)


def _blocks(per_block: int) -> list[Block]:
    reads = [_read(i) for i in range(30)]
    return [Block(i, np.zeros(1), tuple(reads[i : i + per_block])) for i in range(0, 30, per_block)]


@pytest.mark.parametrize("fold", FOLDS)
@pytest.mark.parametrize("per_block", [1, 4, 30])
def test_pickle_calls_passes_same_answer_at_every_block_size_and_grouping(per_block, fold):
    got = fold(pickle_calls, _blocks(per_block), limit=20)
    assert got.unread == 12
    assert [(c.name, c.first) for c in got.called] == [(REFERENCE, "0"), ("os.system", "4"), ("", "8")]
    assert got.called[0].reason == f"/x: chunk 0: not decoded: its pickle calls {REFERENCE}"


@pytest.mark.parametrize("fold", FOLDS)
def test_pickle_calls_passes_keeps_the_first_globals_up_to_the_limit(fold):
    got = fold(pickle_calls, _blocks(4), limit=2)
    assert got.unread == 12 and [c.name for c in got.called] == [REFERENCE, "os.system"]


def test_pickle_calls_passes_nothing_where_every_chunk_decoded():
    got = pickle_calls.summarize(Block(0, np.zeros(2), (ChunkRead("0"), ChunkRead("1", "/x: chunk 1 does not decode"))))
    assert got == pickle_calls.PickleCallsPartial(0, ())


@pytest.mark.parametrize("fold", FOLDS)
def test_chunk_problems_passes_counts_chunks_not_read_apart_from_those_that_do_not_decode(fold):
    got = fold(chunk_decoding, _blocks(4), limit=4)
    assert (got.read, got.bad, got.found) == (30, 0, ())
    assert got.unread == 12 and got.first_unread == f"/x: chunk 0: not decoded: its pickle calls {REFERENCE}"


def test_block_problem_passes_names_a_chunk_not_read_after_any_damage():
    unread = ChunkRead("0", unread="/x: chunk 0: not decoded: its pickle calls os.system", calls="os.system")
    block = Block(0, np.zeros(2), (unread, ChunkRead("1", "/x: chunk 1 does not decode")))
    assert (block.damage(), block.unread()) == ("/x: chunk 1 does not decode", unread.unread)
    assert block.problem() == "/x: chunk 1 does not decode"
    assert Block(0, np.zeros(1), (unread,)).problem() == unread.unread
