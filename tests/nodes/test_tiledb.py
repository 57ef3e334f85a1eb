"""The TileDB backend: the node contract, schema facts as storage, metadata as attrs, and the missing extra."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from contract import ATTRS, FIXED, VLEN, M, NodeContract, X

from validator.errors import InputError
from validator.nodes.detect import open_store

tiledb = pytest.importorskip("tiledb")

# TileDB metadata holds numbers, strings and numeric vectors, but no list of strings, and tiledb-py
# reads a Python bool back as an integer.
TILEDB_ATTRS = {k: v for k, v in ATTRS.items() if k not in ("names", "flag")}


def _array(uri, shape, tiles, attr, data, sparse=False):
    dims = [
        tiledb.Dim(name=f"d{i}", domain=(0, n - 1), tile=t, dtype=np.uint32)
        for i, (n, t) in enumerate(zip(shape, tiles, strict=True))
    ]
    schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=[attr], sparse=sparse)
    tiledb.Array.create(str(uri), schema)
    with tiledb.open(str(uri), mode="w") as array:
        if sparse:
            array[np.arange(shape[0], dtype=np.uint32)] = data
        else:
            array[:] = data


def write_hierarchy(path):
    tiledb.group_create(str(path))
    with tiledb.Group(str(path), mode="w") as root:
        for key, value in TILEDB_ATTRS.items():
            root.meta[key] = np.array(value, dtype=np.int64) if isinstance(value, list) else value
    tiledb.group_create(str(path / "a"))
    tiledb.group_create(str(path / "b"))
    _array(path / "a" / "x", (50,), (7,), tiledb.Attr("", dtype=X.dtype), X)
    _array(path / "a" / "m", (6, 4), (4, 4), tiledb.Attr("", dtype=M.dtype), M)
    _array(path / "a" / "s_vlen", (3,), (3,), tiledb.Attr("", dtype=str, var=True), np.array(VLEN, dtype=object))
    _array(path / "a" / "s_fixed", (3,), (3,), tiledb.Attr("", dtype="S1"), np.array(FIXED, dtype="S1"))
    return str(path)


class TestTileDBNodes(NodeContract):
    format = "tiledb"
    vlen_storage = ("variable", "utf-8")
    fixed_storage = ("fixed", "ascii")

    def build(self, directory):
        return write_hierarchy(directory / "store.cxg")

    def test_node_passes_attrs_are_plain_json(self, store):
        attrs = dict(store.root.attrs)
        assert attrs == TILEDB_ATTRS
        assert json.loads(json.dumps(attrs)) == attrs
        assert type(attrs["n"]) is int and type(attrs["f"]) is float
        assert all(type(v) is int for v in attrs["ints"])


def test_storage_passes_schema_facts(tmp_path):
    path = write_hierarchy(tmp_path / "s.cxg")
    with open_store(path) as tree:
        extra = tree.get("/a/m").storage.extra
    assert extra == {
        "sparse": False,
        "dims": [
            {"name": "d0", "dtype": "<u4", "domain": [0, 5], "tile": 4},
            {"name": "d1", "dtype": "<u4", "domain": [0, 3], "tile": 4},
        ],
        "attrs": [{"name": "", "dtype": "<f4"}],
    }


def test_attrs_passes_json_strings_stay_strings(tmp_path):
    tiledb.group_create(str(tmp_path / "g"))
    uri = tmp_path / "g" / "obs"
    _array(uri, (3,), (3,), tiledb.Attr("", dtype=np.float32), np.zeros(3, "float32"))
    with tiledb.open(str(uri), mode="w") as array:
        array.meta["cxg_schema"] = '{"index": "name_0"}'
    with open_store(str(tmp_path / "g")) as tree:
        assert tree.get("/obs").attrs == {"cxg_schema": '{"index": "name_0"}'}


def test_blocks_passes_sparse_cells_in_row_order(tmp_path):
    tiledb.group_create(str(tmp_path / "g"))
    values = np.arange(10, dtype=np.float32)
    _array(tmp_path / "g" / "Xr", (10,), (4,), tiledb.Attr("", dtype=np.float32), values, sparse=True)
    with open_store(str(tmp_path / "g")) as tree:
        node = tree.get("/Xr")
        assert node.shape == (10,) and node.chunks == (4,) and node.storage.extra["sparse"] is True
        np.testing.assert_array_equal(np.concatenate([b.values for b in node.blocks(4)]), values)


def test_open_store_fails_without_tiledb(tmp_path, monkeypatch):
    path = write_hierarchy(tmp_path / "s.cxg")
    monkeypatch.setitem(sys.modules, "tiledb", None)
    with pytest.raises(InputError, match=r"install spec-validate\[tiledb\]"):
        open_store(path)


def test_open_store_fails_on_cxg_folder_without_tiledb_objects(tmp_path):
    (tmp_path / "empty.cxg").mkdir()
    with pytest.raises(InputError, match="no TileDB group or array"):
        open_store(str(tmp_path / "empty.cxg"))
