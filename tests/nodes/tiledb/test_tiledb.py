"""The TileDB backend: the node contract, schema facts as storage, metadata as attrs, and the missing extra."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from node_contract import ATTRS, FIXED, VLEN, M, NodeContract, X

from spec_validate.errors import InputError
from spec_validate.nodes.open import open_store

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


def _sparse_cells(uri, rows, per_row, capacity):
    """A sparse array of rows x per_row cells (value "" float32, column "var" uint32), `capacity` cells a tile."""
    dim = tiledb.Dim(name="obs", domain=(0, rows - 1), tile=min(rows, 256), dtype=np.uint32)
    attrs = [tiledb.Attr("", dtype=np.float32), tiledb.Attr("var", dtype=np.uint32)]
    schema = tiledb.ArraySchema(domain=tiledb.Domain(dim), attrs=attrs, sparse=True, allows_duplicates=True, capacity=capacity)
    tiledb.Array.create(str(uri), schema)
    coords = np.repeat(np.arange(rows, dtype=np.uint32), per_row)
    values = np.arange(coords.size, dtype=np.float32)
    with tiledb.open(str(uri), mode="w") as array:
        array[coords] = {"": values, "var": np.tile(np.arange(per_row, dtype=np.uint32), rows)}
    return values


@pytest.fixture
def budgets(monkeypatch):
    """Set the library's read budget and result buffer for one test (contexts made afresh), its reads made in this
    process (the reader process would not see the change)."""
    from spec_validate.nodes.tiledb import library
    from spec_validate.nodes.tiledb import tree as backend

    def set_budgets(read_budget: int, result_buffer: int) -> None:
        monkeypatch.setattr(backend, "ISOLATE", False)
        monkeypatch.setattr(library, "READ_BUDGET", read_budget)
        monkeypatch.setattr(library, "RESULT_BUFFER", result_buffer)
        monkeypatch.setattr(library, "_contexts", {})

    return set_budgets


def test_blocks_passes_sparse_cells_a_buffer_at_a_time(tmp_path, budgets):
    # One row block holds all 20,000 cells; the result buffers hold 1,024 cells of a field. A query run to completion
    # grew its buffers to hold every cell at once (a 5e7-value CXG: 2.8 GB).
    budgets(64 * 2**20, 4096)
    tiledb.group_create(str(tmp_path / "g"))
    values = _sparse_cells(tmp_path / "g" / "Xr", rows=200, per_row=100, capacity=2_000)
    with open_store(str(tmp_path / "g")) as tree:
        blocks = list(tree.get("/Xr").blocks())
        cells = list(tree.get("/Xr/__cells").blocks())
    assert len(blocks) >= 20 and max(b.values.size for b in blocks) <= 1024
    assert [b.start for b in blocks] == list(np.cumsum([0] + [b.values.size for b in blocks[:-1]]))
    np.testing.assert_array_equal(np.sort(np.concatenate([b.values for b in blocks])), values)
    assert len(cells) >= 20 and sum(b.values.size for b in cells) == values.size
    np.testing.assert_array_equal(np.sort(np.concatenate([b.values[""] for b in cells])), values)


def test_blocks_passes_tiles_larger_than_the_starting_budget(tmp_path, budgets, monkeypatch):
    # Tiles of 100,000 cells (400 KB a field) under a starting budget of 64 KiB, the sizing from the schema left
    # out: TileDB refuses the first query, and the array is reopened under four times the budget until it fits.
    from spec_validate.nodes.tiledb import library
    from spec_validate.nodes.tiledb import tree as backend

    budgets(2**16, 2**16)
    monkeypatch.setattr(backend, "budget_for", lambda tiles: library.READ_BUDGET)
    tiledb.group_create(str(tmp_path / "g"))
    values = _sparse_cells(tmp_path / "g" / "Xr", rows=100, per_row=1_000, capacity=100_000)
    dense = np.arange(512 * 256, dtype=np.float64).reshape(512, 256)
    _array(tmp_path / "g" / "X", dense.shape, dense.shape, tiledb.Attr("", dtype=np.float64), dense)
    with open_store(str(tmp_path / "g")) as tree:
        got = np.concatenate([b.values for b in tree.get("/Xr").blocks()])
        got_dense = np.concatenate([b.values for b in tree.get("/X").blocks()])
        assert not tree.problems
    assert max(budget for budget, _ in library._contexts) >= 2**20  # reopened under larger budgets
    np.testing.assert_array_equal(np.sort(got), values)
    np.testing.assert_array_equal(got_dense, dense.reshape(-1))


def test_blocks_fails_past_the_most_budget_allowed(tmp_path, budgets, monkeypatch):
    # A tile no budget allowed can hold (a data limit caps it): the rows cannot be read, one line, reported.
    from spec_validate.nodes.tiledb import library

    budgets(2**16, 2**16)
    monkeypatch.setattr(library, "read_budgets", lambda: (2**16, 2**18))
    tiledb.group_create(str(tmp_path / "g"))
    _sparse_cells(tmp_path / "g" / "Xr", rows=100, per_row=1_000, capacity=100_000)
    with open_store(str(tmp_path / "g")) as tree:
        with pytest.raises(Exception, match=r"/Xr: rows 0\.\.100 cannot be read \(.*budget"):
            list(tree.get("/Xr").blocks())
        assert [(p.key, p.message.split(" (")[0]) for p in tree.problems] == [("/Xr", "rows 0..100 cannot be read")]


def test_budget_for_passes_room_for_four_tiles_of_a_field():
    from spec_validate.nodes.tiledb import library as backend

    schema = tiledb.ArraySchema(
        domain=tiledb.Domain(tiledb.Dim(name="obs", domain=(0, 299), tile=256, dtype=np.uint32)),
        attrs=[tiledb.Attr("", dtype=np.float32), tiledb.Attr("var", dtype=np.uint32)],
        sparse=True,
        capacity=1_024_000,  # the CXG converter's
    )
    assert backend.tile_bytes(schema) == 4 * 1_024_000
    assert backend.budget_for(backend.tile_bytes(schema)) == backend.READ_BUDGET
    assert backend.budget_for(80 * 2**20) == 512 * 2**20  # four 80 MiB tiles, to the next power of two
    assert backend.budget_for(2**40) == backend.MAX_READ_BUDGET


def test_tiledb_fails_group_folder_that_cannot_be_listed_leaves_its_members_unknown(tmp_path, monkeypatch):
    """A group whose folder cannot be listed: the members its group file names are read, others are unknown (so no
    member is claimed missing), and it is reported once."""
    import errno
    import os

    from spec_validate.nodes.base import Unreadable
    from spec_validate.nodes.tiledb import tree as backend

    path = write_hierarchy(tmp_path / "store.cxg")
    real = os.listdir

    def listdir(folder):
        if str(folder).rstrip("/").endswith("store.cxg"):
            raise PermissionError(errno.EACCES, "Permission denied", str(folder))
        return real(folder)

    monkeypatch.setattr(backend.os, "listdir", listdir)
    with open_store(str(path)) as tree:
        root = tree.root
        assert root.children() == {}  # its group file names no member: its folder is all there is
        assert root.members_unread == "/: its folder cannot be listed (Permission denied)"
        with pytest.raises(Unreadable):
            root.child("nowhere")
        assert [p.message for p in tree.problems if p.key == "/"] == ["its folder cannot be listed (Permission denied)"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_tiledb_fails_a_fifo_in_place_of_an_old_layout_group_marker_is_reported(tmp_path):
    # An old-layout group's marker is never read by TileDB here, but a FIFO in its place is no group: said, not skipped.
    from spec_validate import validate

    store = tmp_path / "fifo.cxg"
    shutil.copytree(Path(__file__).resolve().parents[3] / "conformance-corpus/cxg/cxg-0.3.0/valid-properties-null.cxg", store)
    (store / "__tiledb_group.tdb").unlink()
    os.mkfifo(store / "__tiledb_group.tdb")
    report = validate(store)
    assert [p.message for p in report.problems] == [
        "__tiledb_group.tdb is not a regular file (a FIFO, socket or device); the group is not opened"
    ]
    assert report.fails_at("must")
