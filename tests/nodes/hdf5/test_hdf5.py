"""The HDF5 backend: the node contract, links (soft, dangling, external, cycles)."""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from node_contract import ATTRS, FIXED, VLEN, M, NodeContract, X

from spec_validate.errors import NodeError
from spec_validate.nodes.open import open_store


def write_hierarchy(path):
    with h5py.File(path, "w") as f:
        for k, v in ATTRS.items():
            f.attrs[k] = v
        a = f.create_group("a")
        a.create_dataset("x", data=X, chunks=(7,))
        a.create_dataset("m", data=M, chunks=(4, 4))
        a.create_dataset("s_vlen", data=VLEN, dtype=h5py.string_dtype("utf-8"))
        a.create_dataset("s_fixed", data=np.array(FIXED, dtype="S1"))
        f.create_group("b")
    return str(path)


class TestHDF5Nodes(NodeContract):
    format = "hdf5"
    vlen_storage = ("variable", "utf-8")
    fixed_storage = ("fixed", "ascii")

    def build(self, directory):
        return write_hierarchy(directory / "store.h5")


@pytest.fixture
def linked(tmp_path):
    path = tmp_path / "links.h5"
    with h5py.File(path, "w") as f:
        g = f.create_group("g")
        g.create_dataset("data", data=np.arange(3))
        f["soft"] = h5py.SoftLink("/g")
        f["softdata"] = h5py.SoftLink("/g/data")
        f["dangling"] = h5py.SoftLink("/nowhere")
        f["ext"] = h5py.ExternalLink(str(tmp_path / "other.h5"), "/secret")
        g["loop"] = f["g"]  # a hard link: the group is its own descendant
        g.create_group("sub")["up"] = f["g"]
    with h5py.File(tmp_path / "other.h5", "w") as other:
        other.create_dataset("secret", data=np.arange(5))
    with open_store(str(path)) as tree:
        yield tree


def test_hdf5_passes_soft_link_to_a_dataset_followed_and_recorded(linked):
    node = linked.get("/softdata")
    assert node.kind == "array" and node.soft_link == "/g/data" and node.shape == (3,)


def test_hdf5_passes_soft_link_to_a_group_is_a_link_node_the_group_read_where_it_is(linked):
    node = linked.get("/soft")
    assert (node.kind, node.link_kind, node.target) == ("link", "soft", "/g")
    assert list(linked.get("/g").children()) == ["data", "loop", "sub"]


def test_hdf5_passes_every_group_entered_once_whatever_links_lead_to_it(tmp_path):
    """Two hard links and a soft link from each group to the next: walking every path would visit 3**40 nodes."""
    path = tmp_path / "dag.h5"
    with h5py.File(path, "w") as f:
        here = f
        for _ in range(40):
            below = here.create_group("a")
            here["b"] = below
            here["s"] = h5py.SoftLink(below.name)
            here = below
    with open_store(str(path)) as tree:
        paths = [n.path for n in tree.walk()]
        assert len(paths) == len(set(paths)) == 1 + 3 * 40
        kinds = {n.link_kind for n in tree.walk() if n.kind == "link"}
        assert kinds == {"alias", "soft"}


def test_hdf5_passes_dangling_soft_link_is_link_node(linked):
    node = linked.get("/dangling")
    assert (node.kind, node.link_kind, node.target) == ("link", "soft", "/nowhere")


def test_hdf5_passes_external_link_never_followed(linked):
    node = linked.get("/ext")
    assert (node.kind, node.link_kind) == ("link", "external")
    assert node.target.endswith("other.h5:/secret")
    assert node.children() == {} and dict(node.attrs) == {} and node.shape is None
    assert linked.get("/ext/secret") is None
    assert not any(n.path.startswith("/ext/") for n in linked.walk())


def test_hdf5_passes_hard_link_cycle_does_not_loop(linked):
    paths = [n.path for n in linked.walk()]
    assert "/g/loop" in paths and "/g/sub/up" in paths
    assert linked.get("/g/loop").kind == "link" and linked.get("/g/loop").link_kind == "cycle"
    assert linked.get("/g/sub/up").link_kind == "cycle"
    assert len(paths) < 20


def test_hdf5_passes_whole_file_validates_with_links(tmp_path, linked):
    from spec_validate import validate

    report = validate(linked.source)
    assert report.format == "hdf5"


def test_hdf5_passes_scalar_dataset_blocks(tmp_path):
    path = tmp_path / "scalar.h5"
    with h5py.File(path, "w") as f:
        f["s"] = 5
    with open_store(str(path)) as tree:
        (block,) = tree.get("/s").blocks()
        assert block.start == 0 and block.values.tolist() == [5]


def test_hdf5_passes_contiguous_layout_has_no_chunks(tmp_path):
    path = tmp_path / "contig.h5"
    with h5py.File(path, "w") as f:
        f["c"] = np.arange(10)
    with open_store(str(path)) as tree:
        node = tree.get("/c")
        assert node.chunks is None and node.storage.layout == "contiguous"
        assert np.concatenate([b.values for b in node.blocks(3)]).tolist() == list(range(10))


def test_hdf5_passes_null_dataspace_dataset_and_attribute(tmp_path):
    path = tmp_path / "empty.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("e", data=h5py.Empty("f8"))
        f.attrs["nothing"] = h5py.Empty("f8")
    with open_store(str(path)) as tree:
        node = tree.get("/e")
        assert node.kind == "array" and node.shape is None and node.size is None
        assert tree.root.attrs["nothing"] is None
        assert node.edge_blocks() is None
        with pytest.raises(NodeError, match="null dataspace"):
            list(node.blocks())


@pytest.fixture
def string_attrs(tmp_path):
    path = tmp_path / "attrs.h5"
    with h5py.File(path, "w") as f:
        g = f.create_group("g")
        g.attrs.create("vlen_utf8", np.array(["RNA"], dtype=object), dtype=h5py.string_dtype("utf-8"))
        g.attrs.create("vlen_ascii", "x", dtype=h5py.string_dtype("ascii"))
        g.attrs.create("fixed_ascii", np.array([b"adt_"]), dtype="S4")
        g.attrs.create("fixed_utf8", "ab", dtype=h5py.string_dtype("utf-8", 2))
        g.attrs.create("number", np.array([1, 2], dtype="i4"))
        ds = g.create_dataset("d", data=np.arange(3))
        ds.attrs.create("s3class", np.array(["logical"], dtype=object), dtype=h5py.string_dtype("utf-8"))
    with open_store(str(path)) as tree:
        yield tree


@pytest.mark.parametrize(
    "name,expected",
    [
        pytest.param("vlen_utf8", ("variable", "utf-8"), id="vlen-utf8"),
        pytest.param("vlen_ascii", ("variable", "ascii"), id="vlen-ascii"),
        pytest.param("fixed_ascii", ("fixed", "ascii"), id="fixed-ascii"),
        pytest.param("fixed_utf8", ("fixed", "utf-8"), id="fixed-utf8"),
    ],
)
def test_hdf5_passes_attr_storage_of_string_attribute(string_attrs, name, expected):
    info = string_attrs.get("/g").attr_storage(name)
    assert (info.length, info.charset) == expected
    assert info.container_dtype.startswith("vlen" if expected[0] == "variable" else "fixed[")


@pytest.mark.parametrize("name", [pytest.param("number", id="numeric"), pytest.param("absent", id="absent")])
def test_hdf5_passes_attr_storage_none_without_strings(string_attrs, name):
    assert string_attrs.get("/g").attr_storage(name) is None


def test_hdf5_passes_attr_storage_on_dataset(string_attrs):
    assert string_attrs.get("/g/d").attr_storage("s3class").length == "variable"


# --- data: bounded decoding before HDF5's own filters ---------------------------------------------------------


def test_hdf5_passes_block_lists_the_chunks_it_read(tmp_path):
    path = write_hierarchy(tmp_path / "store.h5")
    with open_store(path) as tree:
        block = tree.get("/a/m").read_block((0, 6))
        assert [c.key for c in block.chunks] == ["0.0", "1.0"] and block.problem() is None
        np.testing.assert_array_equal(block.values, M.reshape(-1))
        assert tree.get("/a/s_fixed").read_block((0, 3)).chunks == ()  # contiguous: no chunks


def test_hdf5_passes_lzf_dataset_decoded_here(tmp_path):
    # h5py's lzf filter (anndata 0.7 wrote every chunked dataset with it): decoded by spec_validate.codecs.lzf, bounded.
    path = tmp_path / "lzf.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(100), chunks=(10,), compression="lzf")
    with open_store(str(path)) as tree:
        blocks = list(tree.get("/x").blocks())
    assert all(c.problem is None for b in blocks for c in b.chunks)
    np.testing.assert_array_equal(np.concatenate([b.values for b in blocks]), np.arange(100))


def test_hdf5_fails_corrupt_lzf_chunk_is_a_chunk_problem(tmp_path):
    path = tmp_path / "lzf.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(100), chunks=(10,), compression="lzf")
        f["x"].id.write_direct_chunk((90,), bytes([0xE0, 0xFF, 0x00]))  # a back-reference before the start
    with open_store(str(path)) as tree:
        block = tree.get("/x").read_block((0, 100))  # blocks() raises the first problem; read_block lists them
    problems = [c.problem for c in block.chunks if c.problem]
    assert len(problems) == 1 and "chunk 9 does not decode with lzf" in problems[0]
    np.testing.assert_array_equal(block.values[:90], np.arange(90))


def test_hdf5_fails_corrupt_chunk_raised_by_edge_blocks(tmp_path):
    path = tmp_path / "c.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("x", data=np.arange(100), chunks=(10,), compression="gzip")
        f["x"].id.write_direct_chunk((90,), b"not deflate")
    with open_store(str(path)) as tree:
        node = tree.get("/x")
        assert node.read_block((0, 100)).problem().startswith("/x: chunk 9 does not decode with zlib")
        with pytest.raises(NodeError, match="/x: chunk 9 does not decode with zlib"):
            node.edge_blocks(10)


def test_hdf5_passes_compact_dataset(tmp_path):
    path = tmp_path / "compact.h5"
    with h5py.File(path, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        h5py.h5d.create(f.id, b"c", h5py.h5t.STD_I32LE, h5py.h5s.create_simple((5,)), dcpl=dcpl)
        f["c"][:] = np.arange(5)
    with open_store(str(path)) as tree:
        node = tree.get("/c")
        assert node.storage.layout == "compact"
        assert np.concatenate([b.values for b in node.blocks(2)]).tolist() == list(range(5))


def test_hdf5_fails_attribute_larger_than_any_metadata_is_reported_not_read(tmp_path, monkeypatch):
    from spec_validate.nodes.hdf5 import tree as hdf5

    monkeypatch.setattr(hdf5, "MAX_ATTRIBUTE_BYTES", 1024)
    path = tmp_path / "big-attribute.h5"
    with h5py.File(path, "w", libver="latest") as f:
        f.attrs["big"] = np.zeros(1000, dtype="<f8")
        f.attrs["many"] = np.zeros(hdf5.MAX_ATTRIBUTE_ELEMENTS + 1, dtype="i1")
        f.attrs["small"] = "fine"
    with open_store(str(path)) as tree:
        attrs = tree.root.attrs
        assert attrs["small"] == "fine" and set(attrs) == {"big", "many", "small"}
        for key in ("big", "many"):
            with pytest.raises(NodeError, match=f"attribute '{key}' holds .* more than the .* read for an attribute; not read"):
                attrs[key]
        assert sorted(p.key for p in tree.problems) == ["/@big", "/@many"]


AWKWARD = Path(__file__).resolve().parents[3] / "conformance-corpus" / "anndata" / "h5ad" / "valid-awkward-array.h5ad"


def test_hdf5_fails_root_group_header_unreadable_is_one_line_not_an_internal_error(tmp_path):
    """The fuzzer: the root group's object header overwritten; h5py's KeyError once ended as `internal error`."""
    from spec_validate.errors import InputError

    path = tmp_path / "root.h5"
    shutil.copyfile(AWKWARD, path)
    with h5py.File(path, "r") as f:
        address = h5py.h5o.get_info(f["/"].id).addr
    data = bytearray(path.read_bytes())
    data[address + 16 : address + 64] = bytes(48)  # its messages, not its prefix: the file opens, the root does not
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"root\.h5: its root group cannot be opened \("):
        open_store(str(path))


def _self_named_symbol_table(path, group: str) -> None:
    """The symbol table B-tree of `group` (one leaf) made a level 1 node naming itself as its first child."""
    with h5py.File(path, "r") as f:
        header = h5py.h5g.get_objinfo(f[group].id).objno[0]
    data = bytearray(path.read_bytes())
    at = header + 16  # a version 1 header's messages: type, size, flags, three reserved bytes, then the message
    while int.from_bytes(data[at : at + 2], "little") != 0x0011:
        at += 8 + int.from_bytes(data[at + 2 : at + 4], "little")
    tree = int.from_bytes(data[at + 8 : at + 16], "little")
    assert data[tree : tree + 4] == b"TREE" and data[tree + 5] == 0
    data[tree + 5] = 1
    data[tree + 32 : tree + 40] = tree.to_bytes(8, "little")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("group", ["/", "/g"])
def test_hdf5_fails_symbol_table_naming_itself_is_reported_never_walked(tmp_path, group):
    """Such a B-tree made the HDF5 library recurse until the process died (exit 139): listing the group, or opening
    the root, which asked h5o.get_info for its address (it sizes the group's metadata by walking that tree)."""
    path = tmp_path / "cycle.h5"
    with h5py.File(path, "w") as f:
        f.create_group("g").create_dataset("x", data=np.arange(3))
        f.create_dataset("y", data=np.arange(3))
    _self_named_symbol_table(path, group)
    from spec_validate.nodes.base import Unreadable

    with open_store(str(path)) as tree:
        paths = [n.path for n in tree.walk()]
        ((problem,),) = [[p for p in tree.problems if p.path == group]]
        assert tree.get(group).members_unread.endswith(problem.message)
        with pytest.raises(Unreadable):  # a member may exist: its absence is not claimed
            tree.get(group).child("x")
    assert "B-tree is damaged" in problem.message and "named twice" in problem.message
    assert paths == (["/"] if group == "/" else ["/", "/g", "/y"])


def test_hdf5_passes_member_name_not_utf8_is_read_under_an_escaped_name(tmp_path):
    """h5py names such a link with bytes, which do not sort among text names nor make a path: shown escaped."""
    path = tmp_path / "names.h5"
    with h5py.File(path, "w") as f:
        f.create_group("ok")
        f.create_dataset(b"bad\xff", data=np.arange(3))
    with open_store(str(path)) as tree:
        assert [n.path for n in tree.walk()] == ["/", "/bad\\xff", "/ok"] and not tree.problems
        assert tree.get("/bad\\xff").shape == (3,)


def test_hdf5_contiguous_plan_from_the_walk_is_the_plan_of_the_opened_dataset(tmp_path):
    # A plain contiguous dataset's read plan is made from what the walk read (no second open): it must be the plan
    # direct makes from the opened dataset, fill value and unallocated data included.
    from spec_validate.nodes.hdf5 import direct

    path = tmp_path / "contiguous.h5"
    with h5py.File(path, "w") as f:
        f["plain"] = np.arange(10, dtype="<i4")
        f["big-endian"] = np.arange(4, dtype=">f8")
        f["bool"] = np.array([True, False, True])
        f.create_dataset("filled", data=np.ones((3, 2), dtype="u2"), fillvalue=7)
        f.create_dataset("never-written", shape=(5,), dtype="f4", fillvalue=np.nan)
        f.create_dataset("strings", data=np.array(["a", "bc"], dtype=h5py.string_dtype()))
    with open_store(str(path)) as tree:
        quick = {}
        for name in ("plain", "big-endian", "bool", "filled", "never-written"):
            node = tree.get(f"/{name}")
            assert node._contiguous is not None, name
            plan = node.plan
            opened = direct.plan(node.object_id(), tree.raw_size(), node.path, tree.address_size())
            for field, got, want in zip(plan._fields, plan, opened, strict=True):
                if field == "fill":
                    assert type(got) is type(want) and np.asarray(got).tobytes() == np.asarray(want).tobytes()
                else:
                    assert got == want, (name, field)
            quick[name] = plan
        assert quick["never-written"].contiguous_offset is None and quick["never-written"].rows_stored == []
        assert tree.get("/strings")._contiguous is None  # variable-length: planned from the opened dataset
        assert len(tree.types) == 6  # one entry per HDF5 type of this file (six here), held by its tree alone
    with open_store(str(path)) as again:
        assert again.types == {}
        assert tree.get("/never-written").read_block((0, 5)).values.tobytes() == np.full(5, np.nan, "f4").tobytes()


def test_hdf5_file_is_read_with_a_small_metadata_cache(tmp_path):
    # Each object header is read once by the walk, each chunk index once by a scan: the library keeps at most
    # METADATA_CACHE_BYTES of them, as stored (decoded, about ten times that; its default grows to 32 MB).
    from spec_validate.nodes.hdf5 import tree as hdf5

    path = tmp_path / "small.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(3)
    with open_store(str(path)) as tree:
        config = tree.file_id.get_mdc_config()
        assert config.max_size == config.initial_size == hdf5.METADATA_CACHE_BYTES
        assert tree.get("/x").read_block((0, 3)).values.tolist() == [0, 1, 2]


def test_hdf5_fails_member_whose_header_cannot_be_read_is_unknown_not_a_link_of_the_wrong_kind(tmp_path):
    """A dataset whose object header is damaged is a link node of unknown kind: asked for by name it is unreadable
    (a clause does not claim 'a link, expected an array'), and no clause's verdict rests on it."""
    from spec_validate import validate
    from spec_validate.model import Status
    from spec_validate.nodes.base import Unreadable

    path = tmp_path / "broken.h5ad"
    shutil.copyfile(Path(__file__).resolve().parents[3] / "conformance-corpus/anndata/h5ad/valid-every-element.h5ad", path)
    with h5py.File(path, "r") as f:
        header = h5py.h5g.get_objinfo(f["X/indices"].id).objno[0]
    data = bytearray(path.read_bytes())
    data[header : header + 16] = bytes(16)
    path.write_bytes(bytes(data))
    with open_store(str(path)) as tree:
        assert tree.get("/X").children()["indices"].unread is not None
        with pytest.raises(Unreadable, match="cannot be opened"):
            tree.get("/X/indices")
    report = validate(path)
    assert not [r.rule.id for r in report.results if r.status is Status.FAILED]
    assert "anndata.csr_matrix.arrays-present" in {r.rule.id for r in report.results if r.unchecked}


def test_attributes_are_listed_by_the_library_only_where_the_header_cannot_list_them(tmp_path, monkeypatch):
    from spec_validate.nodes.hdf5 import tree as hdf5

    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f["bare"] = np.arange(3)
        f["noted"] = np.arange(3)
        f["noted"].attrs["encoding-type"] = "array"
        dense = f.create_group("dense", track_order=True)  # past eight attributes: dense storage
        for i in range(12):
            dense.attrs[f"a{i:02d}"] = i
    listed = []
    names = hdf5._attribute_names
    monkeypatch.setattr(hdf5, "_attribute_names", lambda oid, plist: listed.append(oid) or names(oid, plist))
    with open_store(str(path)) as tree:
        assert dict(tree.get("/bare").attrs) == {}
        assert dict(tree.get("/noted").attrs) == {"encoding-type": "array"}
        assert dict(tree.get("/dense").attrs) == {f"a{i:02d}": i for i in range(12)}
    # /dense alone: the root and /bare store none, as their headers (read here) say, and /noted's header lists its one
    assert len(listed) == 1


@pytest.mark.parametrize("libver", ["earliest", "latest"])
@pytest.mark.parametrize("track_order", [False, True])
def test_attributes_listed_from_the_header_are_those_the_library_lists_in_its_order(tmp_path, libver, track_order):
    """Compact attributes are listed from the object's header messages, by name as the library lists them; where the
    header keeps an attribute info message (version 2 headers, creation order tracked) the library lists them."""
    from spec_validate.nodes.hdf5 import tree as hdf5

    path = tmp_path / "f.h5"
    names = ["zeta", "Alpha", "encoding-type", "b", "ünï", "a" * 200, "_index"]
    with h5py.File(path, "w", libver=libver, track_order=track_order) as f:
        g = f.create_group("g", track_order=track_order)
        d = f.create_dataset("d", data=np.arange(3), track_order=track_order)
        for obj in (g, d):
            for i, name in enumerate(names):
                obj.attrs[name] = "x" * i if i % 2 else np.arange(i)
    with h5py.File(path, "r") as f:
        expected = {key: list(f[key].attrs) for key in ("g", "d")}
    with open_store(str(path)) as tree:
        for key in ("g", "d"):
            node = tree.get(f"/{key}")
            assert list(node.attrs) == expected[key]
            listed = hdf5.global_heap.attribute_listing(tree._header_messages(node._address) or [])
            assert (listed is not None) == (libver == "earliest" and not track_order)


def test_hdf5_passes_a_node_of_many_attributes_is_checked_alone_not_read_whole(tmp_path, monkeypatch):
    # Its signature would read every value: in an object header each attribute opened costs the library a scan of
    # the header, so 100,000 of them took minutes. Only the values rules ask for are read.
    from spec_validate import validate
    from spec_validate.nodes.hdf5 import tree as hdf5_tree

    path = tmp_path / "many.h5ad"
    shutil.copyfile(Path(__file__).resolve().parents[3] / "conformance-corpus/anndata/h5ad/valid-every-element.h5ad", path)
    with h5py.File(path, "a") as f:
        for i in range(hdf5_tree.MAX_SIGNATURE_ATTRIBUTES + 1):
            f["uns"].attrs[f"a{i:04d}"] = i
    read: list[bytes] = []
    original = hdf5_tree._read_attribute
    monkeypatch.setattr(hdf5_tree, "_read_attribute", lambda oid, name, *a: read.append(name) or original(oid, name, *a))
    assert not validate(path).fails_at("must")
    assert len([n for n in read if n.startswith(b"a0")]) < 10
    with open_store(str(path)) as tree:
        assert tree.get("/uns").signature is None and tree.get("/obs").signature is not None


@pytest.mark.parametrize("userblock", [0, 512])
def test_datasets_whose_headers_say_the_same_take_the_facts_the_library_gave_the_first(tmp_path, monkeypatch, userblock):
    """A wide dataframe's columns share their type, shape, layout, filters and fill value: the library is asked once
    for each kind, and every dataset's facts, its data's offset included, are those it would give for each alone."""
    from spec_validate.nodes.hdf5 import tree as hdf5

    path = tmp_path / "f.h5"
    with h5py.File(path, "w", userblock_size=userblock) as f:
        for copy in ("a", "b"):
            f[f"int-{copy}"] = np.arange(10)
            f[f"float-{copy}"] = np.linspace(0, 1, 7, dtype="f4")
            f.create_dataset(f"unwritten-{copy}", shape=(5,), dtype="f8")
            f.create_dataset(f"filled-{copy}", shape=(5,), dtype="i2", fillvalue=7)
            f.create_dataset(f"gzip-{copy}", data=np.arange(100), chunks=(10,), compression="gzip", shuffle=True)
            compact = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            compact.set_layout(h5py.h5d.COMPACT)
            f.create_dataset(f"compact-{copy}", data=np.arange(4), dtype="u1", dcpl=compact)
            f[f"strings-{copy}"] = np.array(["x", "yy"], dtype=h5py.string_dtype())
            f[f"fixed-{copy}"] = np.array([b"ab", b"c"], dtype="S2")
            f[f"bool-{copy}"] = np.array([True, False])
            f[f"scalar-{copy}"] = 3.5

    def facts(kept: int) -> dict[str, tuple]:
        monkeypatch.setattr(hdf5, "MOST_KEPT_FACTS", kept)
        with open_store(str(path)) as tree:
            nodes = {name: tree.get(f"/{name}") for name in tree.root.children()}
            return {
                name: (n.shape, n.dtype, n.chunks, n._layout, n._stored_as, n._stored_type, n._contiguous)
                for name, n in nodes.items()
            }

    asked = []
    dataset_facts = hdf5._dataset_facts
    monkeypatch.setattr(hdf5, "_dataset_facts", lambda *args: asked.append(1) or dataset_facts(*args))
    shared = facts(hdf5.MOST_KEPT_FACTS)
    assert len(asked) == 10  # once for each kind: its "b" copy took the facts of its "a"
    alone = facts(0)
    assert shared == alone
    with h5py.File(path, "r") as f:
        for name, (shape, dtype, *_rest, contiguous) in shared.items():
            assert shape == f[name].shape and dtype == f[name].dtype
            if contiguous is not None and contiguous[1] is not None:
                assert contiguous[1] == f[name].id.get_offset()
