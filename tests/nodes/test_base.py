"""Backend-independent helpers: path normalisation, chunk-aligned row blocks, plain attribute values."""

from __future__ import annotations

import numpy as np
import pytest

from validator.nodes.base import normalize_path, plain, row_slices, rows_per_block


@pytest.mark.parametrize("path,expected", [
    pytest.param("/a/./b/../c", "/a/c", id="dots"),
    pytest.param("/../../x", "/x", id="never-above-root"),
    pytest.param("a//b/", "/a/b", id="empty-segments"),
    pytest.param("/", "/", id="root"),
])
def test_normalize_path_passes(path, expected):
    assert normalize_path(path) == expected


@pytest.mark.parametrize("shape,chunks,max_elements,expected", [
    pytest.param((100,), (7,), 10, 7, id="one-chunk-when-budget-smaller-than-two"),
    pytest.param((100,), (7,), 30, 28, id="whole-chunks-within-budget"),
    pytest.param((100,), (7,), 1, 7, id="never-less-than-a-chunk"),
    pytest.param((100,), None, 30, 30, id="contiguous"),
    pytest.param((10, 4), (3, 4), 12, 3, id="rows-of-2d"),
    pytest.param((), None, 10, 1, id="scalar"),
])
def test_rows_per_block_passes(shape, chunks, max_elements, expected):
    assert rows_per_block(shape, chunks, max_elements) == expected


@pytest.mark.parametrize("shape,chunks,max_elements", [
    pytest.param((50,), (7,), 10, id="1d"), pytest.param((6, 4), (4, 4), 1, id="2d"), pytest.param((0,), (5,), 10, id="empty"),
])
def test_row_slices_passes_cover_rows_once_chunk_aligned(shape, chunks, max_elements):
    slices = list(row_slices(shape, chunks, max_elements))
    covered = [i for s in slices for i in range(s.start, s.stop)]
    assert covered == list(range(shape[0]))
    assert all(s.start % chunks[0] == 0 for s in slices)


@pytest.mark.parametrize("value,expected", [
    pytest.param(np.int64(3), 3, id="numpy-int"),
    pytest.param(np.bool_(True), True, id="numpy-bool"),
    pytest.param(np.array([1, 2]), [1, 2], id="numeric-array"),
    pytest.param(np.array(["a", "b"], dtype=object), ["a", "b"], id="object-array"),
    pytest.param(np.array([b"a", b"b"]), ["a", "b"], id="bytes-array"),
    pytest.param(b"caf\xc3\xa9", "café", id="utf8-bytes"),
    pytest.param(np.bytes_(b"x"), "x", id="numpy-bytes"),
    pytest.param({"k": np.float32(1.5)}, {"k": 1.5}, id="dict"),
    pytest.param(np.array("s", dtype=object), "s", id="0d-object"),
])
def test_plain_passes(value, expected):
    got = plain(value)
    assert got == expected and type(got) is type(expected)
