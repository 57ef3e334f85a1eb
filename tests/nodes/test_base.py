"""Backend-independent helpers: path normalisation, chunk-aligned row blocks, plain attribute values."""

from __future__ import annotations

import numpy as np
import pytest

from spec_validate.errors import NodeError
from spec_validate.kernels.block import Block, ChunkRead
from spec_validate.nodes.base import (
    DEFAULT_BLOCK_ELEMENTS,
    Node,
    RowRanges,
    block_row_ranges,
    normalize_path,
    plain,
    plan_rows,
    row_slices,
    rows_per_block,
    uniform_block,
)


@pytest.mark.parametrize(
    "path,expected",
    [
        pytest.param("/a/./b/../c", "/a/c", id="dots"),
        pytest.param("/../../x", "/x", id="never-above-root"),
        pytest.param("a//b/", "/a/b", id="empty-segments"),
        pytest.param("/", "/", id="root"),
    ],
)
def test_normalize_path_passes(path, expected):
    assert normalize_path(path) == expected


@pytest.mark.parametrize(
    "shape,chunks,max_elements,expected",
    [
        pytest.param((100,), (7,), 10, 7, id="one-chunk-when-budget-smaller-than-two"),
        pytest.param((100,), (7,), 30, 28, id="whole-chunks-within-budget"),
        pytest.param((100,), (7,), 1, 7, id="never-less-than-a-chunk"),
        pytest.param((100,), None, 30, 30, id="contiguous"),
        pytest.param((10, 4), (3, 4), 12, 3, id="rows-of-2d"),
        pytest.param((), None, 10, 1, id="scalar"),
    ],
)
def test_rows_per_block_passes(shape, chunks, max_elements, expected):
    assert rows_per_block(shape, chunks, max_elements) == expected


@pytest.mark.parametrize(
    "shape,chunks,max_elements",
    [
        pytest.param((50,), (7,), 10, id="1d"),
        pytest.param((6, 4), (4, 4), 1, id="2d"),
        pytest.param((0,), (5,), 10, id="empty"),
    ],
)
def test_row_slices_passes_cover_rows_once_chunk_aligned(shape, chunks, max_elements):
    slices = list(row_slices(shape, chunks, max_elements))
    covered = [i for s in slices for i in range(s.start, s.stop)]
    assert covered == list(range(shape[0]))
    assert all(s.start % chunks[0] == 0 for s in slices)


@pytest.mark.parametrize(
    "value,expected",
    [
        pytest.param(np.int64(3), 3, id="numpy-int"),
        pytest.param(np.bool_(True), True, id="numpy-bool"),
        pytest.param(np.array([1, 2]), [1, 2], id="numeric-array"),
        pytest.param(np.array(["a", "b"], dtype=object), ["a", "b"], id="object-array"),
        pytest.param(np.array([b"a", b"b"]), ["a", "b"], id="bytes-array"),
        pytest.param(b"caf\xc3\xa9", "café", id="utf8-bytes"),
        pytest.param(np.bytes_(b"x"), "x", id="numpy-bytes"),
        pytest.param({"k": np.float32(1.5)}, {"k": 1.5}, id="dict"),
        pytest.param(np.array("s", dtype=object), "s", id="0d-object"),
    ],
)
def test_plain_passes(value, expected):
    got = plain(value)
    assert got == expected and type(got) is type(expected)


# --- blocks carry the chunks they were read from ------------------------------------------------------------


class BlocksNode(Node):
    """An array whose blocks are given: 10 rows, blocks of 5."""

    kind = "array"
    path = "/x"

    def __init__(self, blocks):
        self._blocks = blocks

    @property
    def attrs(self):
        return {}

    @property
    def shape(self):
        return (10,)

    def block_rows(self, max_elements=DEFAULT_BLOCK_ELEMENTS):
        return [(0, 5), (5, 10)]

    def read_block(self, rows):
        return self._blocks[rows[0] // 5]


GOOD = Block(0, np.arange(5), (ChunkRead("0", None),))
BAD = Block(
    5,
    np.zeros(5),
    (
        ChunkRead("1", None),
        ChunkRead("2", "/x: chunk 2 decodes to more than 40 bytes, expected 40"),
        ChunkRead("3", "/x: chunk 3 is truncated"),
    ),
)


def test_block_passes_chunks_default_to_none_read():
    block = Block(0, np.arange(3))
    assert block.chunks == () and block.problem() is None


def test_block_passes_problem_is_the_first_chunk_problem():
    assert GOOD.problem() is None
    assert BAD.problem() == "/x: chunk 2 decodes to more than 40 bytes, expected 40"


def test_blocks_fails_block_with_a_chunk_problem_raises_it():
    node = BlocksNode([GOOD, BAD])
    assert node.read_block((5, 10)) is BAD  # read_block reports; it does not raise
    with pytest.raises(NodeError, match=r"^/x: chunk 2 decodes to more than 40 bytes, expected 40$"):
        list(node.blocks())
    with pytest.raises(NodeError, match="chunk 2"):
        node.edge_blocks()


def test_blocks_passes_blocks_without_problems():
    node = BlocksNode([GOOD, Block(5, np.arange(5, 10), (ChunkRead("1", None),))])
    assert [b.start for b in node.blocks()] == [0, 5]
    first, last = node.edge_blocks()
    assert first is GOOD and last.start == 5


# ---------------------------------------------------------------- block plans bounded by what is stored


def test_row_ranges_passes_dense_ranges_as_row_slices_give_them_never_listed():
    ranges = block_row_ranges((10,), (3,), 6)
    assert list(ranges) == [(0, 6), (6, 10)] and ranges[-1] == (6, 10) and len(ranges) == 2
    huge = block_row_ranges((2**62,), (1,), 1 << 22)
    assert len(huge) == 2**40 and huge[2**40 - 1] == (2**62 - (1 << 22), 2**62)  # computed, not stored


def test_row_ranges_passes_runs_without_stored_blocks_are_one_range_each():
    # 10 blocks of 4 rows; blocks 2 and 3 hold stored chunks
    assert list(RowRanges(40, 4, [2, 3])) == [(0, 8), (8, 12), (12, 16), (16, 40)]
    assert list(RowRanges(40, 4, [])) == [(0, 40)]
    assert list(RowRanges(40, 4, [0, 9])) == [(0, 4), (4, 36), (36, 40)]


def test_row_ranges_passes_sparse_ranges_found_by_position_as_iteration_gives_them():
    ranges = RowRanges(40, 4, [0, 2, 3, 7])
    want = [(0, 4), (4, 8), (8, 12), (12, 16), (16, 28), (28, 32), (32, 40)]
    assert [ranges[i] for i in range(len(ranges))] == list(ranges) == want
    assert ranges[-1] == (32, 40) and ranges[-7] == (0, 4) and ranges[1:3] == [(4, 8), (8, 12)]
    with pytest.raises(IndexError):
        ranges[7]


def test_row_ranges_passes_a_run_of_any_length_is_one_range():
    """One range per stored block and per run between them, never one per declared row or per numpy view's worth."""
    ranges = RowRanges(2**80, 2**20, [5])
    assert list(ranges) == [(0, 5 * 2**20), (5 * 2**20, 6 * 2**20), (6 * 2**20, 2**80)]
    assert len(RowRanges(2**62, 1, [])) == 1 and RowRanges(2**62, 1, [])[0] == (0, 2**62)


def test_plan_rows_passes_small_arrays_are_never_listed():
    def never() -> list[int]:
        raise AssertionError("listed")

    assert list(plan_rows((100,), (10,), 50, 8, never)) == [(0, 50), (50, 100)]


@pytest.mark.parametrize(
    "shape,chunks",
    [((2**62,), (2**20,)), ((2**80,), (2**20,)), ((2**80,), (1,)), ((2**62, 2**62), (1, 2**20))],
    ids=["2**62", "2**80", "2**80-chunks-of-1", "2**62x2**62"],
)
def test_plan_rows_passes_a_declared_huge_shape_with_nothing_stored_is_one_uniform_run(shape, chunks):
    plan = plan_rows(shape, chunks, 1 << 22, 8, lambda: [])
    assert list(plan) == [(0, shape[0])]


def test_plan_rows_passes_unknown_listing_reads_every_block():
    assert len(plan_rows((2**40,), (1,), 1 << 20, 1, lambda: None)) == 2**20


def test_uniform_block_passes_one_value_held_once_for_any_count():
    for count in (2**50, 2**124):  # past 2**63 bytes, more than any numpy view may stand for
        block = uniform_block(5, 7, np.dtype("<i8"), count)
        assert block.uniform and block.size == count and block.values[0] == 7 and block.start == 5
    assert not Block(0, np.arange(3)).uniform and not uniform_block(0, 7, np.dtype("<i8"), 1).uniform
    assert uniform_block(0, 7, np.dtype("<i8"), 1).size == 1 and uniform_block(0, 7, np.dtype("<i8"), 0).size == 0
    assert uniform_block(0, b"x", np.dtype("S1000"), 2**60).size == 2**60  # a wide dtype: no view to size


def test_node_member_of_a_group_whose_members_could_not_be_listed_is_unknown_not_absent():
    from memory_tree import tree

    from spec_validate.nodes.base import Unreadable

    t = tree({"g": {"a": np.arange(2)}})
    assert t.get("/g").child("x") is None and t.get("/g/x") is None
    t.get("/g").members_unread = "/g: its members cannot be listed"
    assert t.get("/g").child("a") is not None and t.get("/g/a") is not None  # those listed are still there
    for ask in (lambda: t.get("/g").child("x"), lambda: t.get("/g/x"), lambda: t.get("/g/x/y")):
        with pytest.raises(Unreadable, match="cannot be listed"):
            ask()
