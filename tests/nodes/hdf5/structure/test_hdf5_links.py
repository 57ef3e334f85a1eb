"""Soft links followed a link at a time (`links`): the same object the library's own resolution reaches, each
object on the way opened at its address or by one name in a checked group; a path that leaves the file, or passes a
group whose members cannot be read, is reported and never handed to the library."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from spec_validate.nodes.base import Unreadable
from spec_validate.nodes.hdf5 import address as address
from spec_validate.nodes.hdf5.structure import links
from spec_validate.nodes.open import open_store


def _write(path: Path) -> Path:
    with h5py.File(path, "w") as f:
        f["a/b/data"] = np.arange(4)
        f["a/b/data"].attrs["encoding-type"] = "array"
        f["links/absolute"] = h5py.SoftLink("/a/b/data")
        f["links/relative"] = h5py.SoftLink("../a/b/data")  # HDF5 has no `..`: a name that is not there
        f["links/to_b"] = h5py.SoftLink("/a/b")
        f["links/through_soft"] = h5py.SoftLink("/links/to_b/data")
        f["links/dotted"] = h5py.SoftLink("/a//./b/data")
        f["a/near"] = h5py.SoftLink("b/data")  # relative to the link's group
        f["links/loop_1"] = h5py.SoftLink("/links/loop_2")
        f["links/loop_2"] = h5py.SoftLink("/links/loop_1")
        f["links/through_dataset"] = h5py.SoftLink("/a/b/data/x")
        f["links/outside"] = h5py.ExternalLink("outside.h5", "/")
        f["links/through_external"] = h5py.SoftLink("/links/outside/x")
    with h5py.File(path.parent / "outside.h5", "w") as f:  # there to be opened: it must not be
        f["x"] = np.arange(99)
    return path


def _library_resolves(f: h5py.File, path: str) -> bool:
    try:
        return f.get(path) is not None
    except RuntimeError:  # too many soft links on the way
        return False


def test_soft_links_reach_what_the_library_reaches(tmp_path):
    path = _write(tmp_path / "links.h5")
    with open_store(str(path)) as tree:
        for link in ("/links/absolute", "/links/through_soft", "/links/dotted", "/a/near"):
            node = tree.get(link)
            assert node.kind == "array" and node.soft_link is not None, link
            assert node.read_block((0, 4)).values.tolist() == [0, 1, 2, 3]
            assert dict(node.attrs) == {"encoding-type": "array"}
        assert tree.get("/links/to_b").kind == "link"  # a soft link to a group: read at the path it names
        with h5py.File(path, "r", locking=False) as f:  # the library agrees on what does not resolve
            for link in ("relative", "loop_1", "through_dataset"):
                assert not _library_resolves(f, f"links/{link}")
                assert tree.get(f"/links/{link}").link_kind == "soft"
        reported = {p.key for p in tree.problems}
        assert not reported & {"/links/relative", "/links/loop_1", "/links/loop_2", "/links/through_dataset"}  # dangling


def test_a_soft_link_through_an_external_link_is_reported_and_never_followed(tmp_path):
    path = _write(tmp_path / "links.h5")
    with h5py.File(path, "r") as f:
        assert f["links/through_external"][...].size == 99  # the library's own resolution leaves the file
    with open_store(str(path)) as tree:
        node = tree.get("/links/through_external")
        assert node.kind == "link" and node.link_kind == "soft"
        messages = {p.key: p.message for p in tree.problems}
        assert "an external link ('outside'), outside the file; not followed" in messages["/links/through_external"]


def test_a_soft_link_through_an_unreadable_group_is_unread(tmp_path, monkeypatch):
    path = _write(tmp_path / "links.h5")
    with open_store(str(path)) as tree:
        a = tree.get("/a")._address
        monkeypatch.setattr(type(tree), "group_problem_at", lambda self, address: "damaged" if address == a else None)
        with pytest.raises(Unreadable, match="through a group whose members cannot be read"):
            tree.get("/links/absolute")


def test_without_opening_at_addresses_each_hop_is_one_name_in_a_checked_group(tmp_path, monkeypatch):
    path = _write(tmp_path / "links.h5")
    monkeypatch.setattr(address, "_library", lambda: None)  # an HDF5 before 1.12
    with open_store(str(path)) as tree:
        assert tree.get("/links/through_soft").read_block((0, 4)).values.tolist() == [0, 1, 2, 3]
        assert tree.get("/links/through_external").kind == "link"


def test_the_soft_links_followed_in_one_path_are_bounded_as_the_library_bounds_them():
    assert links.MOST_SOFT_LINKS == 16
