"""Objects opened at their addresses: the walk and a dataset's reopening never look a hard link's name up."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from spec_validate.nodes.base import walk
from spec_validate.nodes.hdf5 import address
from spec_validate.nodes.hdf5 import tree as hdf5
from spec_validate.nodes.open import open_store


def _write(path, members: int = 3, name_length: int = 8) -> str:
    with h5py.File(path, "w") as f:
        group = f.create_group("g")
        for i in range(members):
            group.create_dataset(f"{i:0{name_length}d}", data=np.arange(5) + i)
        group.create_group("sub").attrs["encoding-type"] = "dict"
        f["soft"] = h5py.SoftLink("/g/sub")
        f["ext"] = h5py.ExternalLink("elsewhere.h5", "/x")
        f["type"] = np.dtype("<i4")  # a named datatype: neither group nor dataset
    return str(path)


def _summary(path: str) -> list[tuple]:
    """Every node of the tree with its kind, attributes and (a dataset) values, read through the node layer."""
    with open_store(path) as tree:
        rows = []
        for node in walk(tree.root):
            values = node.read_block((0, node.shape[0])).values.tolist() if node.kind == "array" else None
            rows.append((node.path, node.kind, dict(node.attrs) if node.kind != "link" else None, values))
        return rows


@pytest.fixture
def name_opens(monkeypatch):
    """How often the backend opened an object by name."""
    calls = []
    by_name = hdf5.h5o.open

    def counted(*args):
        calls.append(args[1])
        return by_name(*args)

    monkeypatch.setattr(hdf5.h5o, "open", counted)
    return calls


def test_hard_links_are_opened_at_their_addresses(tmp_path, name_opens):
    path = _write(tmp_path / "f.h5")
    rows = _summary(path)
    assert [r[0] for r in rows if r[1] == "array"] == ["/g/00000000", "/g/00000001", "/g/00000002"]
    assert {r[0]: r[3] for r in rows}["/g/00000002"] == [2, 3, 4, 5, 6]  # opened again for its values: at its address
    assert name_opens == []  # the soft link too: followed to its target's address first (links)
    with open_store(path) as tree:
        assert tree.get("/type").target == "Datatype"


def test_without_the_call_the_same_tree_is_read_by_names(tmp_path, monkeypatch, name_opens):
    path = _write(tmp_path / "f.h5")
    at_addresses = _summary(path)
    monkeypatch.setattr(address, "_library", lambda: None)  # an HDF5 before 1.12: no H5Oopen_by_token
    name_opens.clear()
    assert _summary(path) == at_addresses
    assert len(name_opens) > 4


def test_an_address_without_an_object_is_none_and_leaves_no_error_behind(tmp_path):
    path = _write(tmp_path / "f.h5")
    with h5py.File(path, "r") as f:
        with pytest.raises(KeyError) as before:
            f["missing"]
        assert address.open_at(f.id, 12345) is None
        assert address.open_at(f.id, 2**70) is None
        with pytest.raises(KeyError) as after:
            f["missing"]
        assert str(after.value) == str(before.value)  # h5py's message, not one made of the failed call's stack


def test_a_group_whose_names_outgrow_the_metadata_cache_is_read_whole(tmp_path, name_opens):
    # 2,500 names of 64 characters: a local heap of about 180 KB, more than the 128 KiB cache keeps, which by name
    # would be read again for every member.
    path = _write(tmp_path / "wide.h5", members=2_500, name_length=64)
    rows = _summary(path)
    arrays = [r for r in rows if r[1] == "array"]
    assert len(arrays) == 2_500 and arrays[-1][3] == [2_499 + i for i in range(5)]
    assert name_opens == []
