"""Backend-independent helpers: path normalisation, chunk-aligned row blocks, plain attribute values."""

from __future__ import annotations

import numpy as np
import pytest

from validator.kernels.block import Block, ChunkRead
from validator.nodes.base import (
    DEFAULT_BLOCK_ELEMENTS,
    Node,
    NodeError,
    normalize_path,
    plain,
    row_slices,
    rows_per_block,
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
