"""The contract every backend's node tree keeps, run against the same small hierarchy per backend.

Subclasses set `format` and implement `build(directory) -> path` writing this hierarchy:

    /            attrs ATTRS
    /a           group
    /a/m         float32 (6, 4), chunks (4, 4)
    /a/s_fixed   fixed-length strings ["a", "b", "c"]
    /a/s_vlen    variable-length UTF-8 strings ["a", "bé", "c"]
    /a/x         int64 arange(50), chunks (7,)
    /b           empty group
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from spec_validate.errors import NodeError
from spec_validate.nodes.base import Node, Tree
from spec_validate.nodes.open import open_store

ATTRS = {
    "encoding-type": "anndata",
    "encoding-version": "0.1.0",
    "n": 3,
    "f": 1.5,
    "flag": True,
    "names": ["a", "b"],
    "ints": [1, 2, 3],
}
X = np.arange(50, dtype="int64")
M = np.arange(24, dtype="float32").reshape(6, 4)
VLEN = ["a", "bé", "c"]
FIXED = ["a", "b", "c"]


class NodeContract:
    format: str
    vlen_storage: tuple[str, str | None]
    fixed_storage: tuple[str, str | None]
    # The raw-storage view: the document names of a key/value backend (group, array), or None for a backend
    # that stores no such documents (HDF5, TileDB), whose nodes then say so with None and no keys.
    documents: tuple[str, str] | None = None

    def build(self, directory) -> str:
        raise NotImplementedError

    @pytest.fixture
    def store(self, tmp_path):
        with open_store(self.build(tmp_path)) as tree:
            yield tree

    def test_tree_passes_format(self, store: Tree):
        assert store.format == self.format

    @pytest.mark.parametrize(
        "path,kind,name",
        [
            pytest.param("/", "group", "/", id="root"),
            pytest.param("/a", "group", "a", id="group"),
            pytest.param("/a/x", "array", "x", id="array"),
        ],
    )
    def test_node_passes_path_kind_name(self, store: Tree, path, kind, name):
        node = store.get(path)
        assert (node.path, node.kind, node.name) == (path, kind, name)

    def test_node_passes_missing_path_is_none(self, store: Tree):
        assert store.get("/a/nope") is None and store.get("/zzz/x") is None

    def test_node_passes_attrs_are_plain_json(self, store: Tree):
        attrs = dict(store.root.attrs)
        assert attrs == ATTRS
        assert json.loads(json.dumps(attrs)) == attrs
        assert type(attrs["n"]) is int and type(attrs["flag"]) is bool and type(attrs["f"]) is float
        assert all(type(v) is str for v in attrs["names"]) and all(type(v) is int for v in attrs["ints"])

    @pytest.mark.parametrize(
        "path,shape,dtype,chunks",
        [
            pytest.param("/a/x", (50,), "int64", (7,), id="x"),
            pytest.param("/a/m", (6, 4), "float32", (4, 4), id="m"),
        ],
    )
    def test_node_passes_shape_dtype_chunks(self, store: Tree, path, shape, dtype, chunks):
        node = store.get(path)
        assert (node.shape, node.dtype, node.chunks, node.ndim) == (shape, np.dtype(dtype), chunks, len(shape))

    def test_node_passes_group_has_no_shape(self, store: Tree):
        a = store.get("/a")
        assert (a.shape, a.dtype, a.chunks, a.storage) == (None, None, None, None)

    def test_node_passes_children_sorted(self, store: Tree):
        assert list(store.root.children()) == ["a", "b"]
        assert list(store.get("/a").children()) == ["m", "s_fixed", "s_vlen", "x"]
        assert store.get("/b").children() == {} and store.get("/a/x").children() == {}

    def test_node_passes_walk_depth_first_sorted(self, store: Tree):
        assert [n.path for n in store.walk()] == ["/", "/a", "/a/m", "/a/s_fixed", "/a/s_vlen", "/a/x", "/b"]

    @pytest.mark.parametrize(
        "start,relative,expected",
        [
            pytest.param("/a/x", "../m", "/a/m", id="sibling"),
            pytest.param("/a/x", "../../b", "/b", id="uncle"),
            pytest.param("/a", "x", "/a/x", id="child"),
            pytest.param("/a/x", "/b", "/b", id="absolute"),
            pytest.param("/a/x", "../../../../a", "/a", id="never-above-root"),
        ],
    )
    def test_node_passes_resolve(self, store: Tree, start, relative, expected):
        assert store.get(start).resolve(relative).path == expected

    def test_node_passes_resolve_missing_is_none(self, store: Tree):
        assert store.get("/a/x").resolve("../nothing") is None

    def test_node_passes_parent(self, store: Tree):
        assert store.get("/a/x").parent.path == "/a" and store.root.parent is None

    @pytest.mark.parametrize(
        "max_elements", [pytest.param(1 << 22, id="default"), pytest.param(10, id="small"), pytest.param(1, id="one")]
    )
    @pytest.mark.parametrize("path,values", [pytest.param("/a/x", X, id="x"), pytest.param("/a/m", M, id="m")])
    def test_blocks_passes_cover_array_once_in_order(self, store: Tree, path, values, max_elements):
        node: Node = store.get(path)
        blocks = list(node.blocks(max_elements))
        row = int(np.prod(values.shape[1:], dtype=np.int64))
        starts = [b.start for b in blocks]
        assert starts == sorted(starts) and starts[0] == 0
        expected_start = 0
        for b in blocks:
            assert b.start == expected_start
            assert b.start % (node.chunks[0] * row) == 0, "blocks start on chunk boundaries"
            expected_start += b.values.size
        np.testing.assert_array_equal(np.concatenate([b.values for b in blocks]), values.reshape(-1))
        if max_elements <= 10:
            assert len(blocks) > 1

    def test_edge_blocks_passes_first_and_last(self, store: Tree):
        first, last = store.get("/a/x").edge_blocks(10)
        assert first.start == 0 and first.values[0] == 0
        assert last.start + last.values.size == 50 and last.values[-1] == 49
        assert last.start % 7 == 0

    def test_edge_blocks_passes_none_for_group(self, store: Tree):
        assert store.get("/a").edge_blocks() is None

    def test_blocks_fails_on_group(self, store: Tree):
        with pytest.raises(NodeError):
            list(store.get("/a").blocks())

    def test_storage_passes_vlen_strings(self, store: Tree):
        info = store.get("/a/s_vlen").storage.string
        assert (info.length, info.charset) == self.vlen_storage

    def test_storage_passes_fixed_strings(self, store: Tree):
        info = store.get("/a/s_fixed").storage.string
        assert (info.length, info.charset) == self.fixed_storage

    def test_storage_passes_numbers_are_not_strings(self, store: Tree):
        storage = store.get("/a/x").storage
        assert storage.format == self.format and storage.string is None

    def test_blocks_passes_vlen_strings_read(self, store: Tree):
        values = np.concatenate([b.values for b in store.get("/a/s_vlen").blocks()])
        assert [v.decode() if isinstance(v, bytes) else str(v) for v in values] == VLEN

    # --- the raw-storage view (Node.metadata, metadata_key, stored_keys, read_document, read_key)

    def test_raw_passes_metadata_key_names_the_stored_document(self, store: Tree):
        keys = [store.get(p).metadata_key for p in ("/", "/a", "/a/x")]
        if self.documents is None:
            assert keys == [None, None, None]
        else:
            group, array = self.documents
            assert keys == [group, f"a/{group}", f"a/x/{array}"]

    def test_raw_passes_metadata_is_the_parsed_document(self, store: Tree):
        node = store.get("/a/x")
        if self.documents is None:
            assert node.metadata is None and store.root.metadata is None
            return
        assert isinstance(node.metadata, dict) and node.metadata["shape"] == [50]
        assert json.loads(node.read_key(self.documents[1])) == node.metadata

    def test_raw_passes_stored_keys_are_relative_and_sorted(self, store: Tree):
        keys = store.get("/a").stored_keys()
        if self.documents is None:
            assert keys is None and store.get("/a").read_document(".zattrs") is None
            return
        assert keys == sorted(keys) and f"x/{self.documents[1]}" in keys
        assert not any(k.startswith("/") or k.startswith("a/") for k in keys)
        chunk = next(k for k in store.get("/a/x").stored_keys() if k != self.documents[1] and not k.endswith(".zattrs"))
        assert store.get("/a/x").read_key(chunk)  # a chunk's stored bytes, as written

    def test_raw_passes_absent_document_is_none(self, store: Tree):
        assert store.get("/a/x").read_document(".no-such-document") is None

    def test_raw_passes_not_implicit(self, store: Tree):
        assert not any(n.implicit for n in store.walk())
