"""The Zarr backend (v2 and v3): the node contract, broken metadata, symlinks, pickle, zip stores."""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import zarr
from node_contract import ATTRS, FIXED, VLEN, M, NodeContract, X

from spec_validate.errors import NodeError
from spec_validate.nodes.open import open_store

CORPUS_ZARR = Path(__file__).resolve().parents[3] / "conformance-corpus" / "anndata" / "zarr-v2" / "valid-every-element.zarr"


def write_hierarchy(path, zarr_format):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = zarr.open_group(str(path), mode="w", zarr_format=zarr_format)
        root.attrs.update(ATTRS)
        a = root.create_group("a")
        a.create_array("x", shape=X.shape, chunks=(7,), dtype=X.dtype)[:] = X
        a.create_array("m", shape=M.shape, chunks=(4, 4), dtype=M.dtype)[:] = M
        a.create_array("s_vlen", shape=(3,), chunks=(3,), dtype=str)[:] = np.array(VLEN, dtype=object)
        a.create_array("s_fixed", shape=(3,), chunks=(3,), dtype="<U1")[:] = np.array(FIXED)
        root.create_group("b")
    return str(path)


class TestZarrV2Nodes(NodeContract):
    format = "zarr-v2"
    documents = (".zgroup", ".zarray")
    vlen_storage = ("variable", "utf-8")
    fixed_storage = ("fixed", "utf-32")

    def build(self, directory):
        return write_hierarchy(directory / "store.zarr", 2)


class TestZarrV3Nodes(NodeContract):
    format = "zarr-v3"
    documents = ("zarr.json", "zarr.json")
    vlen_storage = ("variable", "utf-8")
    fixed_storage = ("fixed", "utf-32")

    def build(self, directory):
        return write_hierarchy(directory / "store.zarr", 3)


class TestZarrZipNodes(NodeContract):
    format = "zarr-v2"
    documents = (".zgroup", ".zarray")
    vlen_storage = ("variable", "utf-8")
    fixed_storage = ("fixed", "utf-32")

    def build(self, directory):
        src = write_hierarchy(directory / "store.zarr", 2)
        target = directory / "store.zarr.zip"
        with zipfile.ZipFile(target, "w") as zf:
            for dirpath, _, files in os.walk(src):
                for name in files:
                    full = os.path.join(dirpath, name)
                    zf.write(full, os.path.relpath(full, src))
        return str(target)


@pytest.fixture
def v2(tmp_path):
    return write_hierarchy(tmp_path / "s.zarr", 2)


@pytest.mark.parametrize(
    "key,content,expected",
    [
        pytest.param("a/x/.zarray", b"{not json", "a/x/.zarray: not valid JSON", id="zarray-broken-json"),
        pytest.param("a/x/.zarray", b"[1, 2]", "a/x/.zarray: not a JSON object but list", id="zarray-json-list"),
        pytest.param("a/.zattrs", b"{oops", "a/.zattrs: not valid JSON", id="zattrs-broken-json"),
        pytest.param("a/x/.zarray", b"\xff\xfe", "a/x/.zarray: not UTF-8", id="zarray-not-utf8"),
        pytest.param("a/.zgroup", b"[1]", "a/.zgroup: not a JSON object but list", id="zgroup-json-list"),
        pytest.param("a/.zgroup", b"{", "a/.zgroup: not valid JSON", id="zgroup-broken-json"),
        pytest.param("a/.zattrs", b"[]", "a/.zattrs: not a JSON object but list", id="zattrs-json-list"),
    ],
)
def test_zarr_fails_broken_metadata_reported_as_problem(v2, key, content, expected):
    with open(os.path.join(v2, key), "wb") as fh:
        fh.write(content)
    with open_store(v2) as tree:
        paths = [n.path for n in tree.walk()]  # no crash walking the whole tree
        assert "/a/x" in paths
        node = tree.get("/a/x")
        _ = (node.attrs, node.shape, node.dtype, node.chunks, node.storage)
        try:
            tree.get("/a").attrs  # noqa: B018
        except NodeError:  # attributes that do not parse are unknown, not empty: reading them raises
            assert key == "a/.zattrs" and content != b"[]"
        assert any(str(p).startswith(expected) for p in tree.problems), tree.problems


def test_zarr_fails_broken_zarray_array_cannot_be_read(v2):
    with open(os.path.join(v2, "a/x/.zarray"), "w") as fh:
        fh.write("[]")
    with open_store(v2) as tree:
        node = tree.get("/a/x")
        assert node.kind == "array" and node.shape is None
        with pytest.raises(NodeError):
            list(node.blocks())


def test_zarr_passes_symlink_outside_store_never_read(tmp_path, v2, monkeypatch):
    secret_dir = tmp_path / "outside"
    secret_dir.mkdir()
    (secret_dir / ".zattrs").write_text(json.dumps({"secret": True}))
    (secret_dir / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
    os.symlink(secret_dir, os.path.join(v2, "escape"))
    target = os.path.join(v2, "b", ".zattrs")
    if os.path.exists(target):
        os.remove(target)
    os.symlink(secret_dir / ".zattrs", target)
    read = []
    real_open = open

    def spy(file, *args, **kwargs):
        read.append(os.path.realpath(file) if isinstance(file, (str, bytes, os.PathLike)) else file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", spy)
    with open_store(v2) as tree:
        assert "escape" not in tree.root.children()
        with pytest.raises(NodeError, match=r"b/\.zattrs is stored but cannot be read"):
            tree.get("/b").attrs  # noqa: B018 (unknown, not empty: the link is never followed)
        list(tree.walk())
    assert not any(isinstance(p, str) and p.startswith(str(secret_dir)) for p in read)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda key, outside: os.symlink(outside, key), id="symlink-out-of-the-store"),
        pytest.param(lambda key, outside: os.mkdir(key), id="directory-in-its-place"),
        pytest.param(lambda key, outside: os.mkfifo(key), id="fifo-in-its-place"),
        pytest.param(lambda key, outside: os.symlink(key + ".gone", key), id="dangling-symlink"),
    ],
)
@pytest.mark.parametrize("listed_first", [False, True], ids=["read-first", "folder-listed-first"])
def test_zarr_fails_unreadable_zattrs_is_unreadable_not_empty(tmp_path, v2, make, listed_first):
    # Stored but unreadable attributes are unknown: reading them raises, and the tree reports the key once, so
    # no clause says an attribute "is missing" (we run as root here, so permissions cannot make a file unreadable).
    # The same when the folder was listed first: a document absent from a listing is known absent without a
    # lookup, but one the listing left out (unsafe or unreadable) is still stored.
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"encoding-type": "dataframe"}))
    key = os.path.join(v2, "a", ".zattrs")
    if os.path.lexists(key):
        os.remove(key)
    make(key, outside)
    with open_store(v2) as tree:
        if listed_first:
            tree.list_dir("a")
        for _ in range(2):
            with pytest.raises(NodeError, match="cannot be read"):
                tree.get("/a").attrs  # noqa: B018
        assert [p.key for p in tree.problems] == ["a/.zattrs"]
        if not listed_first:  # else the listing reported it first, saying why it left it out
            assert "cannot be read" in tree.problems[0].message


def test_zarr_passes_symlinked_file_inside_store_is_followed(v2):
    os.rename(os.path.join(v2, "a", "x", ".zarray"), os.path.join(v2, "a", "x", "real.json"))
    os.symlink("real.json", os.path.join(v2, "a", "x", ".zarray"))
    with open_store(v2) as tree:
        assert tree.get("/a/x").shape == (50,)


def test_zarr_fails_symlinked_directory_is_reported_never_entered(v2):
    """A symlinked directory could lead back to an ancestor (a walk without end) or show one folder twice."""
    os.symlink(os.path.join(v2, "a"), os.path.join(v2, "alias"))
    os.symlink("..", os.path.join(v2, "a", "loop"))
    with open_store(v2) as tree:
        assert not any(n.path.startswith(("/alias", "/a/loop")) for n in tree.walk())
        assert {p.key for p in tree.problems} == {"alias", "a/loop"}
        assert all(p.message == "a symlink to a directory; not followed" for p in tree.problems)


class Boom:
    """Unpickling this creates the file named by `marker`: proof that pickle ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def write_pickle_array(path, marker):
    """A v2 AnnData-like store with two pickle-codec arrays whose chunks, unpickled, would create `marker`.

    `/obj` is an object array; `/X/indptr` claims an integer dtype, so value rules (indptr-monotonic) want to read it.
    """
    import numcodecs

    assert numcodecs.Pickle  # the codec exists: only our refusal keeps it from running
    payload = pickle.dumps(np.array([Boom(str(marker))], dtype=object), protocol=5)

    def array(rel, dtype, attrs):
        os.makedirs(path / rel)
        meta = {
            "zarr_format": 2,
            "shape": [1],
            "chunks": [1],
            "dtype": dtype,
            "compressor": None,
            "fill_value": None,
            "order": "C",
            "filters": [{"id": "pickle", "protocol": 5}],
        }
        (path / rel / ".zarray").write_text(json.dumps(meta))
        (path / rel / ".zattrs").write_text(json.dumps(attrs))
        (path / rel / "0").write_bytes(payload)

    os.makedirs(path / "X")
    (path / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
    (path / ".zattrs").write_text(json.dumps({"encoding-type": "anndata", "encoding-version": "0.1.0"}))
    (path / "X" / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
    (path / "X" / ".zattrs").write_text(json.dumps({"encoding-type": "csr_matrix", "encoding-version": "0.1.0", "shape": [0, 0]}))
    array("obj", "|O", {"encoding-type": "string-array", "encoding-version": "0.2.0"})
    array("X/indptr", "<i8", {})


def test_zarr_fails_pickle_codec_refused(tmp_path):
    marker = tmp_path / "PWNED"
    write_pickle_array(tmp_path / "p.zarr", marker)
    with open_store(str(tmp_path / "p.zarr")) as tree:
        for path in ("/obj", "/X/indptr"):
            node = tree.get(path)
            assert node.storage.codecs == ("pickle",)
            with pytest.raises(NodeError, match="pickle"):
                list(node.blocks())
            with pytest.raises(NodeError, match="pickle"):
                node.edge_blocks()
    assert not marker.exists()


def test_zarr_v3_passes_sharded_array_storage_names_the_inner_codecs(tmp_path):
    # anndata 0.13 shards every Zarr v3 array: the elements are encoded by the sharding codec's inner codecs, so those
    # are the array's codecs (a vlen-bytes array stores strings; zstd is its compressor), never its index codecs.
    from zarr.core.dtype import VariableLengthBytes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        root = zarr.open_group(str(tmp_path / "s.zarr"), mode="w", zarr_format=3)
        zstd = zarr.codecs.ZstdCodec()
        root.create_array("f", shape=(4,), chunks=(2,), shards=(4,), dtype="f8", compressors=zstd)[:] = np.arange(4.0)
        raw = root.create_array("b", shape=(2,), chunks=(1,), shards=(2,), dtype=VariableLengthBytes(), compressors=zstd)
        raw[:] = np.array([b"a", b"bb"], dtype=object)
    with open_store(str(tmp_path / "s.zarr")) as tree:
        f, b = tree.get("/f").storage, tree.get("/b").storage
    assert (f.codecs, f.compressor, f.string) == (("sharding_indexed", "bytes", "zstd"), "zstd", None)
    assert (b.codecs, b.compressor) == (("sharding_indexed", "vlen-bytes", "zstd"), "zstd")
    assert (b.string.length, b.string.charset) == ("variable", None)


def test_zarr_fails_pickle_never_loaded_by_whole_store_cli(tmp_path):
    marker = tmp_path / "PWNED"
    store = tmp_path / "p.zarr"
    write_pickle_array(store, marker)
    # Sanity: the payload really does create the marker when unpickled.
    probe = tmp_path / "probe"
    pickle.loads(pickle.dumps(Boom(str(probe)))).close()
    assert probe.exists()
    proc = subprocess.run(
        [sys.executable, "-m", "spec_validate", "--format", "json", str(store)], capture_output=True, text=True, timeout=120
    )
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1, proc.stderr
    assert not marker.exists()
    results = {r["id"]: r for r in json.loads(proc.stdout)["reports"][0]["results"]}
    monotonic = results["anndata.csr_matrix.indptr-monotonic"]
    # Never decoded, and said so: the clause is not checked (never not applicable) and the array is listed.
    assert monotonic["status"] == "not_checked" and "pickle" in monotonic["reason"]
    assert [u["path"] for u in monotonic["unchecked"]] == ["/X/indptr"]


def test_zarr_passes_zip_store_reads_values(tmp_path):
    src = write_hierarchy(tmp_path / "s.zarr", 2)
    target = tmp_path / "s.zip"
    with zipfile.ZipFile(target, "w") as zf:
        for dirpath, _, files in os.walk(src):
            for name in files:
                full = os.path.join(dirpath, name)
                zf.write(full, os.path.relpath(full, src))
    with open_store(str(target)) as tree:
        assert tree.format == "zarr-v2"
        assert np.concatenate([b.values for b in tree.get("/a/x").blocks(10)]).tolist() == X.tolist()


def test_zarr_passes_v2_store_without_root_documents_is_implicit_group(tmp_path):
    src = write_hierarchy(tmp_path / "s.zarr", 2)
    for name in (".zgroup", ".zattrs"):
        os.remove(os.path.join(src, name))
    with open_store(src) as tree:
        assert tree.root.kind == "group" and tree.root.implicit and "a" in tree.root.children()


def test_zarr_passes_directory_without_zarr_documents_is_not_a_node(v2):
    os.makedirs(os.path.join(v2, "junk", "deeper"))
    with open_store(v2) as tree:
        assert "junk" not in tree.root.children()


@pytest.mark.parametrize("zarr_format,chunk_key", [pytest.param(2, "a/x/0", id="v2"), pytest.param(3, "a/x/c/0", id="v3")])
def test_zarr_fails_chunk_symlinked_outside_store_is_never_read(tmp_path, zarr_format, chunk_key):
    store = write_hierarchy(tmp_path / "s.zarr", zarr_format)
    outside = tmp_path / "outside-chunk"
    os.rename(os.path.join(store, chunk_key), outside)  # a real chunk, so reading it would "work"
    os.symlink(outside, os.path.join(store, chunk_key))
    with open_store(store) as tree:
        with pytest.raises(NodeError, match="outside the store"):
            list(tree.get("/a/x").blocks())
        with pytest.raises(NodeError, match="outside the store"):
            tree.get("/a/x").edge_blocks()


@pytest.mark.parametrize(
    "key,content,expected",
    [
        pytest.param("a/x/zarr.json", b"{not json", "a/x/zarr.json: not valid JSON", id="array-broken-json"),
        pytest.param("a/x/zarr.json", b"[1, 2]", "a/x/zarr.json: not a JSON object but list", id="array-json-list"),
        pytest.param("zarr.json", b"{", "zarr.json: not valid JSON", id="root-broken-json"),
    ],
)
def test_zarr_v3_fails_broken_metadata_reported_as_problem(tmp_path, key, content, expected):
    store = write_hierarchy(tmp_path / "s.zarr", 3)
    with open(os.path.join(store, key), "wb") as fh:
        fh.write(content)
    with open_store(store) as tree:
        assert tree.format == "zarr-v3"
        for node in tree.walk():
            _ = (node.attrs, node.shape, node.dtype, node.chunks, node.storage)
        assert "/a" in [n.path for n in tree.walk()]
        assert any(str(p).startswith(expected) for p in tree.problems), tree.problems


# --- data: chunk by chunk through the codec module, never zarr-python --------------------------------------


@pytest.mark.parametrize(
    "zarr_format,keys", [pytest.param(2, ["0.0", "1.0"], id="v2"), pytest.param(3, ["c/0/0", "c/1/0"], id="v3")]
)
def test_zarr_passes_block_lists_the_chunks_it_read(tmp_path, zarr_format, keys):
    store = write_hierarchy(tmp_path / "s.zarr", zarr_format)
    with open_store(store) as tree:
        block = tree.get("/a/m").read_block((0, 6))
    assert [c.key for c in block.chunks] == keys and block.problem() is None
    np.testing.assert_array_equal(block.values, M.reshape(-1))


@pytest.mark.parametrize("zarr_format,key", [pytest.param(2, "a/m/1.0", id="v2"), pytest.param(3, "a/m/c/1/0", id="v3")])
def test_zarr_fails_corrupt_chunk_reported_on_the_block_raised_by_blocks(tmp_path, zarr_format, key):
    store = write_hierarchy(tmp_path / "s.zarr", zarr_format)
    full = os.path.join(store, *key.split("/"))
    with open(full, "r+b") as fh:
        fh.truncate(5)
    rel = key.split("/", 2)[2]
    with open_store(store) as tree:
        node = tree.get("/a/m")
        block = node.read_block((0, 6))
        assert [(c.key, c.problem is not None) for c in block.chunks if c.key == rel] == [(rel, True)]
        assert block.problem().startswith(f"/a/m: chunk {rel} ")
        values = block.values.reshape(6, 4)
        assert (values[4:, :] == 0).all()  # the fill value where the chunk could not be decoded
        np.testing.assert_array_equal(values[:4], M[:4])
        with pytest.raises(NodeError, match=f"/a/m: chunk {rel} "):
            list(node.blocks())
        with pytest.raises(NodeError, match=f"/a/m: chunk {rel} "):
            node.edge_blocks()


def test_zarr_fails_pickle_is_not_decoded(tmp_path):
    # The chunk is whole, only not read: its record says why and names the global its pickle calls; a reader that
    # wants the values (`blocks`) is told NotDecoded, never given the fill value as data.
    from spec_validate.errors import NotDecoded

    why = r"/obj: chunk 0: not decoded: its pickle calls io.open \(REDUCE\), which is not rebuilt"
    write_pickle_array(tmp_path / "p.zarr", tmp_path / "PWNED")
    with open_store(str(tmp_path / "p.zarr")) as tree:
        block = tree.get("/obj").read_block((0, 1))
        ((key, problem, unread, calls),) = block.chunks
        assert (key, problem, calls) == ("0", None, "io.open")
        assert re.fullmatch(why + ".*", unread) and block.damage() is None and block.problem() == unread
        with pytest.raises(NotDecoded, match=why):
            list(tree.get("/obj").blocks())
    assert not (tmp_path / "PWNED").exists()


def test_zarr_passes_tree_has_no_zarr_python_store(tmp_path):
    store = write_hierarchy(tmp_path / "s.zarr", 2)
    with open_store(store) as tree:
        assert not hasattr(tree, "zarr_store")


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_passes_arrays_of_one_document_share_a_plan_but_read_their_own_chunks(tmp_path, zarr_format):
    # Dataframe columns store the same metadata document: planned once, each still read from its own keys.
    root = zarr.open_group(str(tmp_path / "s.zarr"), mode="w", zarr_format=zarr_format)
    for i in range(3):
        root.create_array(f"c{i}", shape=(4,), chunks=(2,), dtype="i4", fill_value=0)[:] = np.arange(4) + 10 * i
    with open_store(str(tmp_path / "s.zarr")) as tree:
        nodes = [tree.get(f"/c{i}") for i in range(3)]
        plans = [n.plan for n in nodes]
        assert nodes[0].metadata is nodes[1].metadata  # equal documents are held once
        assert [p.path for p in plans] == ["/c0", "/c1", "/c2"]
        assert [p.key_prefix for p in plans] == ["c0/", "c1/", "c2/"]
        assert plans[0].codec is plans[2].codec
        values = [np.concatenate([n.read_block(r).values for r in n.block_rows()]) for n in nodes]
    assert [v.tolist() for v in values] == [[0, 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23]]


def test_zarr_fails_folder_that_cannot_be_listed_leaves_members_and_keys_unknown(v2, monkeypatch):
    """A group whose folder cannot be listed has members nobody saw (not none), the keys below it are not all known,
    and an array whose folder cannot be listed has its chunks read by key (not taken for none stored)."""
    import errno

    from spec_validate.nodes.base import Unreadable
    from spec_validate.storage import keyvalue

    real = os.scandir

    def scandir(path):
        if str(path).endswith((os.sep + "a", os.sep + "x")):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(keyvalue.os, "scandir", scandir)
    with open_store(v2) as tree:
        a = tree.get("/a")
        assert a.children() == {} and a.members_unread == "/a: its members cannot be listed (Permission denied)"
        with pytest.raises(Unreadable):
            tree.get("/a/x")
        with pytest.raises(Unreadable, match="not all known"):
            tree.root.stored_keys()
        assert [p.key for p in tree.problems] == ["a"]
    monkeypatch.setattr(keyvalue.os, "scandir", lambda path: scandir(path) if str(path).endswith(os.sep + "x") else real(path))
    with open_store(v2) as tree:
        x = tree.get("/a/x")
        assert x._stored_rows() is None  # not "no chunk stored": every block is read, each chunk by its key
        np.testing.assert_array_equal(x.read_block((0, len(X))).values, X)


@pytest.mark.parametrize("make", ["fifo", "folder"])
def test_zarr_fails_array_document_stored_unreadable_leaves_the_array_unknown(tmp_path, make):
    """A `.zarray` stored as a FIFO or a folder: the array is reported, and what its document would say (its shape,
    dtype, chunks) is unknown, so its clauses are not checked there; it is never taken for a group, and the
    consolidated metadata's copy of it is not called a copy of nothing."""
    from spec_validate import validate
    from spec_validate.model import Status
    from spec_validate.nodes.base import Unreadable

    store = tmp_path / "s.zarr"
    shutil.copytree(CORPUS_ZARR, store)
    (store / "X" / "indices" / ".zarray").unlink()
    if make == "fifo":
        os.mkfifo(store / "X" / "indices" / ".zarray")
    else:
        (store / "X" / "indices" / ".zarray").mkdir()
    with open_store(str(store)) as tree:
        node = tree.get("/X/indices")
        assert node.kind == "array"
        with pytest.raises(Unreadable, match=r"X/indices/\.zarray"):
            node.metadata  # noqa: B018
    report = validate(store)
    failed = {r.rule.id: r for r in report.results if r.status is Status.FAILED}
    assert not failed, {k: [f.message for f in r.findings] for k, r in failed.items()}
    unchecked = {r.rule.id for r in report.results if r.unchecked}
    assert {"anndata.csr_matrix.index-arrays-integer", "zarr.consolidated.matches-documents"} <= unchecked


@pytest.mark.parametrize("transport", ["directory", "zip", "http"])
def test_zarr_read_key_passes_a_small_document_and_fails_one_past_its_limit(tmp_path, transport):
    """A file beside the Zarr documents (bioformats2raw's OME/METADATA.ome.xml) is read by its key under a group, at
    most `limit` bytes: past it, TooLarge names the bound, locally, in a zip and remotely alike."""
    from latency_server import LatencyServer

    from spec_validate.errors import TooLarge

    src = write_hierarchy(tmp_path / "s.zarr", 2)
    os.makedirs(os.path.join(src, "a", "OME"))
    with open(os.path.join(src, "a", "OME", "METADATA.ome.xml"), "wb") as fh:
        fh.write(b"<OME/>" * 10)
    target, server = src, None
    if transport == "zip":
        target = str(tmp_path / "s.zip")
        with zipfile.ZipFile(target, "w") as zf:
            for dirpath, _, files in os.walk(src):
                for name in files:
                    full = os.path.join(dirpath, name)
                    zf.write(full, os.path.relpath(full, src))
    elif transport == "http":
        server = LatencyServer(tmp_path)
        server.__enter__()
        target = f"{server.url}/s.zarr"
    try:
        with open_store(target) as tree:
            group = tree.get("/a")
            assert group.read_key("OME/METADATA.ome.xml", 60) == b"<OME/>" * 10
            assert group.read_key("OME/absent.xml", 60) is None
            with pytest.raises(TooLarge, match="60 bytes, more than the 59 read for it"):
                group.read_key("OME/METADATA.ome.xml", 59)
    finally:
        if server is not None:
            server.__exit__(None, None, None)
