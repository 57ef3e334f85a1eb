"""What a remote Zarr store is told to expect (spec_validate.nodes.zarr.expect): how many keys its consolidated
metadata says it may hold, and which chunk folders its arrays' documents imply."""

from __future__ import annotations

import pytest

from spec_validate.nodes.zarr.expect import chunk_folders_of, keys_expected
from spec_validate.storage.remote import MOST_FLAT_LISTING_KEYS


def test_keys_expected_counts_documents_and_every_chunk_the_grids_hold_room_for():
    v2 = {".zgroup": {"zarr_format": 2}, "X/.zarray": {"shape": [10, 4], "chunks": [3, 4]}, "X/.zattrs": {}}
    assert keys_expected(v2.items(), ".zarray") == 3 + 4
    grid = {"name": "regular", "configuration": {"chunk_shape": [5, 5]}}
    v3 = {"a/zarr.json": {"node_type": "array", "shape": [10, 10], "chunk_grid": grid}, "g/zarr.json": {"node_type": "group"}}
    assert keys_expected(v3.items(), "zarr.json") == 2 + 4
    assert keys_expected({"x/.zarray": {"shape": [0], "chunks": [5]}}.items(), ".zarray") == 1  # no chunk to hold
    huge = {"x/.zarray": {"shape": [2**62, 2**62], "chunks": [1, 1]}}
    assert keys_expected(huge.items(), ".zarray") > MOST_FLAT_LISTING_KEYS  # said without multiplying it all out
    for shape, chunks in (([10], [0]), ([10.0], [5]), ([True], [1]), ([10], [5, 5]), ("10", [5])):
        assert keys_expected({"x/.zarray": {"shape": shape, "chunks": chunks}}.items(), ".zarray") is None


def _array(shape, chunks, encoding=None):
    return {
        "node_type": "array",
        "shape": shape,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": encoding or {"name": "default", "configuration": {"separator": "/"}},
    }


@pytest.mark.parametrize(
    ("document", "folders"),
    [
        (_array([10], [4]), ["a/c"]),
        (_array([10, 3], [4, 3]), ["a/c", "a/c/0", "a/c/1", "a/c/2"]),
        (_array([10_000, 3], [10, 3]), ["a/c"]),  # 1,000 rows of chunks: left to the walk
        (_array([], []), []),  # a 0-d array's one chunk key is `c`
        (_array([0, 3], [4, 3]), []),  # no element, no chunk
        (_array([10], [4], {"name": "v2", "configuration": {"separator": "."}}), []),
        (_array([10], [4], {"name": "default", "configuration": {"separator": "."}}), []),
        ({**_array([10, 3], [4, 3]), "chunk_grid": {"configuration": "broken"}}, ["a/c"]),
        ({**_array([10, 3], [4, 3]), "chunk_grid": {"configuration": {"chunk_shape": [0, 3]}}}, ["a/c"]),
        ({"node_type": "group"}, []),
        ("not a document", []),
    ],
    ids=["1d", "2d", "2d-many-rows", "0d", "empty", "v2-encoding", "dot-separator", "broken-grid", "zero-chunk", "group", "junk"],
)
def test_chunk_folders_listed_ahead_are_those_the_array_document_implies(document, folders):
    assert chunk_folders_of("a", document) == folders
