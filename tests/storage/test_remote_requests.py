"""Requests a remote run makes, counted by a loopback server (tests/latency_server.py): each metadata
document, each chunk needed and each folder is asked for once, nothing else but a few root documents probed (and
no folder with --no-list); a store whose consolidated metadata leaves a node out gives the local report; and an
HDF5 file behind a server that ignores Range requests is refused in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from latency_server import DOCUMENTS, LatencyServer  # tests/ is on the path (conftest)

from spec_validate.cli import main
from spec_validate.engine.run import scan_plan
from spec_validate.nodes.zarr import expect
from spec_validate.storage import objectstore, remote
from spec_validate.storage.remote import HDF5_BLOCK_SIZE
from spec_validate.storage.request_gate import FIRST_LIMIT

CORPUS = Path(__file__).resolve().parents[2] / "conformance-corpus"
HOSTILE = CORPUS / "hostile"
STORES = {
    "v2": CORPUS / "anndata" / "zarr-v2" / "valid-every-element.zarr",
    "v3": CORPUS / "anndata" / "zarr-v3" / "valid-every-element.zarr",
}
# OME-Zarr plates as ome-zarr-py writes them (not consolidated): wells, fields of view, resolution levels, a label image.
PLATES = {version: CORPUS / "ome-zarr" / f"zarr-{version}" / "ome-zarr-py-plate.zarr" for version in ("v2", "v3")}
# Root documents asked for together before the format is known (expect.ROOT_PROBES): those the store does not have
# are the only requests for keys that are not stored.
ROOT_PROBES = len(expect.ROOT_PROBES)


def stored(root: Path) -> tuple[set[str], set[str]]:
    """The store's metadata documents and its other keys, as URL paths relative to the store."""
    documents, others = set(), set()
    for path in root.rglob("*"):
        if path.is_file():
            (documents if path.name in DOCUMENTS else others).add(path.relative_to(root).as_posix())
    return documents, others


def chunks_needed(root: Path) -> set[str]:
    """The stored keys below the arrays a run scans: no run can read fewer."""
    arrays = [path.strip("/") for path, _ in scan_plan(str(root))]
    _, others = stored(root)
    return {k for k in others if any(k.startswith(a + "/") for a in arrays)}


def unconsolidated(src: Path, dst: Path) -> Path:
    """A copy of the store without consolidated metadata (no .zmetadata; no consolidated_metadata in zarr.json)."""
    shutil.copytree(src, dst)
    (dst / ".zmetadata").unlink(missing_ok=True)
    root = dst / "zarr.json"
    if root.exists():
        doc = json.loads(root.read_text())
        doc.pop("consolidated_metadata", None)
        root.write_text(json.dumps(doc))
    return dst


def requests_by_key(server: LatencyServer, store: str) -> dict[str, int]:
    prefix = f"/{store}/"
    return {k[len(prefix) :]: n for k, n in server.counter.keys.items() if k.startswith(prefix)}


@pytest.mark.parametrize("version", ["v2", "v3"])
@pytest.mark.parametrize("consolidated", [True, False], ids=["consolidated", "unconsolidated"])
def test_remote_zarr_asks_once_for_each_document_and_each_chunk_needed(version, consolidated, tmp_path, capsys):
    served = tmp_path / "served"
    served.mkdir()
    store = served / "store.zarr"
    if consolidated:
        shutil.copytree(STORES[version], store)
    else:
        unconsolidated(STORES[version], store)
    documents, _ = stored(store)
    needed = chunks_needed(store)
    assert needed, "the store has arrays the run reads: the count below is not vacuous"
    with LatencyServer(served) as server:
        assert main([f"{server.url}/store.zarr", "--quiet"]) == 0, capsys.readouterr().err
        asked = requests_by_key(server, "store.zarr")
        counts = server.counts
    assert all(n == 1 for n in asked.values()), {k: n for k, n in asked.items() if n > 1}
    asked_documents = {k for k in asked if k.rpartition("/")[2] in DOCUMENTS}
    asked_others = {k.rstrip("/") for k in asked if k not in asked_documents}
    assert len(asked_documents - documents) <= ROOT_PROBES and all("/" not in k for k in asked_documents - documents)
    listed = {k for k in asked_others if (store / k).is_dir() or k == ""}
    assert asked_others - listed <= needed
    # The server lists: folders are listed, consolidated metadata or not (what is stored is the store: Zarr has no
    # other way to name a group's members, and the chunk key rules check what is stored below an array), each
    # once (above). The consolidated metadata only has its documents fetched in one batch first.
    assert listed
    if consolidated:
        assert counts["document"] <= len(documents) + ROOT_PROBES - 1
    # Each folder is listed by one request: obstore drops the final "/" of a folder's URL, and the redirect guard of a
    # plain-HTTP store restores it (over HTTPS the server's redirect to it is followed: two).
    assert counts["listing"] == len(listed)
    asked_in_all = counts["document"] + counts["other"] + counts["listing"]
    assert asked_in_all <= len(documents) + len(needed) + len(listed) + ROOT_PROBES


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_remote_zarr_root_probe_is_one_round_trip(version, tmp_path, monkeypatch):
    # Before the format is known the root documents are asked for together; an HTTP server's gate lets FIRST_LIMIT
    # requests through until its first answer, so more than that would take a second round trip on every run.
    # The documents the consolidated metadata names come next, in one batch, the root's .zattrs among them.
    batches: list[int] = []
    real_gather = remote.gather

    def gather(fs, gate, calls, limit=None):
        batches.append(len(calls))
        return real_gather(fs, gate, calls, limit)

    monkeypatch.setattr(remote, "gather", gather)
    served = tmp_path / "served"
    store = served / "store.zarr"
    shutil.copytree(STORES[version], store)
    documents, _ = stored(store)
    with LatencyServer(served) as server:
        assert main([f"{server.url}/store.zarr", "--quiet", "--no-list"]) == 0
        asked = requests_by_key(server, "store.zarr")
    assert batches[0] <= FIRST_LIMIT
    assert batches[1] >= len(documents) - batches[0]  # the rest of the metadata in the second
    assert set(asked) >= documents and all(n == 1 for n in asked.values())


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_remote_zarr_with_consolidated_metadata_lists_its_folders_together(version, tmp_path, monkeypatch):
    # Where the server lists, the root's listing comes with the root documents, and every folder the consolidated
    # metadata names (for Zarr v3 each array's chunk folders too: `c/`, and a 2-d array's `c/<i>`) with the documents
    # it names, in the next batch: two round trips, and the walk, a level at a time, waits on none of them.
    batches: list[set[str]] = []
    sizes: list[int] = []
    listed_after: list[str] = []  # folders listed after the second batch: none
    real_gather, real_listing = remote.gather, remote.RemoteStore._listing

    def gather(fs, gate, calls, limit=None):
        batches.append({c.cr_code.co_name for c in calls})
        sizes.append(len(calls))
        return real_gather(fs, gate, calls, limit)

    def listing(self, prefix, where, entries):
        if len(batches) > 2:
            listed_after.append(prefix)
        return real_listing(self, prefix, where, entries)

    monkeypatch.setattr(remote, "gather", gather)
    monkeypatch.setattr(remote.RemoteStore, "_listing", listing)
    served = tmp_path / "served"
    shutil.copytree(STORES[version], served / "store.zarr")
    with LatencyServer(served) as server:
        assert main([f"{server.url}/store.zarr", "--quiet"]) == 0
        asked = requests_by_key(server, "store.zarr")
    assert all(n == 1 for n in asked.values())
    assert batches[:2] == [{"_cat_file", "_ls"}, {"_cat_file", "_ls"}]
    assert sizes[0] <= FIRST_LIMIT  # the root's listing in place of the `.zarray` probe: still one round trip
    assert not listed_after
    if version == "v3":  # not vacuous: the store has 2-d arrays, whose chunk keys lie in folders of their own
        assert any(p.is_dir() for p in (served / "store.zarr").rglob("c/*"))


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_remote_zarr_without_listing_asks_only_for_documents_and_chunks(version, tmp_path):
    # --no-list: the consolidated metadata is the map, so no folder is listed: one request per metadata document
    # and per chunk needed, and a few root documents probed. The clauses on the keys stored are not checked, each
    # array named; every other clause says what it says locally.
    from spec_validate import validate

    served = tmp_path / "served"
    store = served / "store.zarr"
    shutil.copytree(STORES[version], store)
    documents, _ = stored(store)
    needed = chunks_needed(store)
    local = validate(store, jobs=1)
    with LatencyServer(served) as server:
        remote = validate(f"{server.url}/store.zarr", jobs=1, list_folders=False)
        asked = requests_by_key(server, "store.zarr")
        counts = server.counts
    assert counts["listing"] == 0
    assert local.listed and not remote.listed  # the report says how the store was read
    assert all(n == 1 for n in asked.values()), {k: n for k, n in asked.items() if n > 1}
    asked_documents = {k for k in asked if k.rpartition("/")[2] in DOCUMENTS}
    assert asked_documents - documents <= {k for k in asked_documents if "/" not in k}  # root probes only
    assert set(asked) - asked_documents == needed
    assert sum(counts.values()) <= len(documents) + len(needed) + ROOT_PROBES
    unchecked = {r.rule.id for r in remote.results if r.unchecked_count}
    # (and the chunk decoding clause, here as locally: it needs --deep)
    on_keys = ("chunk-keys", "unread-keys", "array.metadata-document", "consolidated", "keys.", "chunks.decode")
    assert unchecked and all(any(part in rule for part in on_keys) for rule in unchecked)
    same = [(r.rule.id, r.status, r.finding_count) for r in remote.results if r.rule.id not in unchecked]
    assert same == [(r.rule.id, r.status, r.finding_count) for r in local.results if r.rule.id not in unchecked]


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_remote_zarr_without_listing_reads_every_block(version, tmp_path):
    # The listings of a store read without listing are what its consolidated metadata names: no chunk. The plan of
    # a large array must not take that for "nothing stored" (every block the fill value): it reads every block.
    from spec_validate.nodes.open import open_store

    served = tmp_path / "served"
    shutil.copytree(STORES[version], served / "store.zarr")
    with LatencyServer(served) as server:
        with open_store(f"{server.url}/store.zarr", list_folders=False) as tree:
            assert tree.get("/X/data")._stored_rows() is None
        with open_store(f"{server.url}/store.zarr") as tree:
            assert tree.get("/X/data")._stored_rows() == [0]


def test_remote_zarr_array_of_2_to_the_63_elements_storing_none_is_read_without_a_request_per_chunk(tmp_path):
    # A listing server shows no chunk folder: the array is its fill value, as locally; nothing is asked for its
    # 8.8e12 chunks (a run did, until its --timeout).
    from spec_validate import to_json, validate

    served = tmp_path / "served"
    store = served / "store.zarr"
    shutil.copytree(STORES["v3"], store)
    document = json.loads((store / "X" / "indptr" / "zarr.json").read_text())
    document["shape"] = [2**63 - 1]
    document["chunk_grid"]["configuration"]["chunk_shape"] = [2**20]
    (store / "X" / "indptr" / "zarr.json").write_text(json.dumps(document))
    shutil.rmtree(store / "X" / "indptr" / "c")
    (store / "zarr.json").write_text(
        json.dumps({k: v for k, v in json.loads((store / "zarr.json").read_text()).items() if k != "consolidated_metadata"})
    )
    local = validate(store, jobs=1)
    out = tmp_path / "remote.json"
    with LatencyServer(served) as server:
        # Under --timeout: a regression would ask for chunks until then, not hang the test suite.
        main([f"{server.url}/store.zarr", "--timeout", "60", "--format", "json", "-o", str(out), "--quiet", "--isolated"])
        asked = server.counts
    assert asked["other"] < 50, asked
    (remote,) = json.loads(out.read_text())["reports"]
    assert remote["results"] == to_json(local)["results"]


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_remote_plate_asks_once_for_each_document_and_walks_a_level_per_round_trip(version, tmp_path, monkeypatch):
    # A plate is deep (plate, row, well, field, resolution level, then the chunk key's folders) and unconsolidated:
    # its folders are found by listing, a level at a time. Each metadata document is asked for once, and each round
    # trip fetches one level's documents together with the listings of the level below, so that the walk waits on
    # the network about once per level, not twice (bench/ome_plate.py measures plates of 96 and 384 wells).
    from spec_validate import to_json, validate

    waits: list[int] = []
    real_sync = objectstore.sync

    def sync(loop, coroutine):
        waits.append(1)
        return real_sync(loop, coroutine)

    served = tmp_path / "served"
    store = served / "plate.zarr"
    shutil.copytree(PLATES[version], store)
    documents, _ = stored(store)
    depth = max(len(p.relative_to(store).parts) for p in store.rglob("*") if p.is_dir())
    local = validate(store, jobs=1)
    monkeypatch.setattr(objectstore, "sync", sync)
    monkeypatch.setattr(remote, "sync", sync)
    with LatencyServer(served) as server:
        over_http = validate(f"{server.url}/plate.zarr", jobs=1)
        asked = requests_by_key(server, "plate.zarr")
    assert to_json(over_http)["results"] == to_json(local)["results"]
    assert all(n == 1 for n in asked.values()), {k: n for k, n in asked.items() if n > 1}
    asked_documents = {k for k in asked if k.rpartition("/")[2] in DOCUMENTS}
    assert asked_documents >= documents
    assert len(asked_documents - documents) <= ROOT_PROBES and all("/" not in k for k in asked_documents - documents)
    # The root's documents and listing probed, then a round trip per level of folders and one for the documents of
    # the last: about depth + 3 in all, where listing a level and then fetching its documents took twice the levels.
    assert len(waits) <= depth + 4, (len(waits), depth)


def test_no_list_option_reaches_the_store(tmp_path, capsys):
    served = tmp_path / "served"
    shutil.copytree(STORES["v2"], served / "store.zarr")
    out, sarif = tmp_path / "report.json", tmp_path / "report.sarif"
    with LatencyServer(served) as server:
        assert main([f"{server.url}/store.zarr", "--no-list", "--quiet", "--isolated"]) == 0, capsys.readouterr().err
        assert server.counts["listing"] == 0
        text = capsys.readouterr().out
        main([f"{server.url}/store.zarr", "--no-list", "--isolated", "--format", "json", "-o", str(out)])
        main([f"{server.url}/store.zarr", "--no-list", "--isolated", "--format", "sarif", "-o", str(sarif)])
    assert "clause(s) not checked" in text
    # The header says the members are the consolidated metadata's, which every "missing member" finding rests on.
    assert "(zarr-v2, not listed: its members as its consolidated metadata names them;" in text
    assert json.loads(out.read_text())["reports"][0]["listed"] is False
    (artifact,) = json.loads(sarif.read_text())["runs"][0]["artifacts"]
    assert artifact["properties"]["listed"] is False


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_remote_zarr_sees_a_node_its_consolidated_metadata_leaves_out(version, tmp_path):
    # Consolidated, then a group written beside the others (hdmf-zarr caches its specifications so): a reader of the
    # consolidated metadata does not see it, the store has it. Read over a listing server, the report is the local
    # one, the consolidated-metadata rule's findings on it included.
    from spec_validate import to_json, validate

    served = tmp_path / "served"
    store = served / "store.zarr"
    shutil.copytree(STORES[version], store)
    later = store / "written-later"
    later.mkdir()
    if version == "v2":
        (later / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
    else:
        (later / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
    local = validate(store, jobs=1)
    with LatencyServer(served) as server:
        remote = validate(f"{server.url}/store.zarr", jobs=1)
    assert to_json(remote)["results"] == to_json(local)["results"]
    rule = "zarr.consolidated.matches-documents" if version == "v2" else "zarr3.consolidated.matches-documents"
    (result,) = [r for r in remote.results if r.rule.id == rule]
    assert any("written-later" in f.message for f in result.findings)


def test_remote_zarr_without_a_root_document_is_read_as_locally(tmp_path):
    # Arrays in folders below a root that holds no document (tensorstore writes a store so): a URL ending in .zarr
    # names a store, so its listing is taken as a local directory's is.
    from spec_validate import to_json, validate

    served = tmp_path / "served"
    store = served / "arrays.zarr"
    for name, values in (("a", np.arange(6, dtype="<i4")), ("b", np.ones(4, dtype="<f8"))):
        (store / name).mkdir(parents=True)
        meta = {
            "zarr_format": 2,
            "shape": [len(values)],
            "chunks": [len(values)],
            "dtype": values.dtype.str,
            "compressor": None,
            "fill_value": 0,
            "order": "C",
            "filters": None,
        }
        (store / name / ".zarray").write_text(json.dumps(meta))
        (store / name / "0").write_bytes(values.tobytes())
    local = validate(store, jobs=1)
    with LatencyServer(served) as server:
        remote = validate(f"{server.url}/arrays.zarr", jobs=1)
    assert remote.format == local.format == "zarr-v2"
    assert to_json(remote)["results"] == to_json(local)["results"]
    assert any(r.status.value == "passed" and r.rule.id == "zarr.array.shape" for r in remote.results)


def test_hdf5_behind_a_server_ignoring_range_requests_is_one_line_input_error(tmp_path, capsys):
    h5py = pytest.importorskip("h5py")
    served = tmp_path / "served"
    served.mkdir()
    with h5py.File(served / "big.h5ad", "w") as f:
        # Larger than a remote file's first block: the first read past it needs a range the server will not give.
        f.create_dataset("X", data=np.arange(HDF5_BLOCK_SIZE // 4, dtype=np.float64))
    with LatencyServer(served, ranges=False) as server:
        code = main([f"{server.url}/big.h5ad", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "internal error" not in err
    assert (
        err == f"spec-validate: error: {server.url}/big.h5ad: the server ignores range requests (it sends the whole file "
        "for every read); reading HDF5 over HTTP needs them\n"
    )


@pytest.mark.parametrize("user_block", [0, 512], ids=["no-user-block", "user-block"])
def test_remote_hdf5_scan_fetches_each_blocks_chunks_together(user_block, tmp_path, monkeypatch):
    # An .h5ad larger than a remote file's first block, its CSR X chunked small (1,024 values) and decreasing late in
    # indptr: the scan asks for a block's chunks at once, those lying together in one request, and gives the
    # local report. With a user block, every address in the file counts from after it.
    h5py = pytest.importorskip("h5py")
    from spec_validate import to_json, validate

    served = tmp_path / "served"
    served.mkdir()
    rows = 400_000
    indptr = np.arange(rows + 1, dtype=np.int64) * 3
    indptr[390_000] = indptr[390_001] + 1  # the first decrease, in a late block
    with h5py.File(served / "long.h5ad", "w", userblock_size=user_block) as f:
        f.attrs.update({"encoding-type": "anndata", "encoding-version": "0.1.0"})
        x = f.create_group("X")
        x.attrs.update({"encoding-type": "csr_matrix", "encoding-version": "0.1.0", "shape": np.array([rows, 8])})
        x.create_dataset("indptr", data=indptr, chunks=(1024,))
        x.create_dataset("indices", data=np.tile(np.arange(3, dtype=np.int32), rows), chunks=(1024,), compression="gzip")
        x.create_dataset("data", data=np.ones(3 * rows, dtype=np.float32), chunks=(1024,))
        chunks = sum(x[name].id.get_num_chunks() for name in ("indptr", "indices"))
    assert (served / "long.h5ad").stat().st_size > HDF5_BLOCK_SIZE
    from spec_validate.nodes.hdf5.structure import btree
    from spec_validate.storage import remote as remote_module

    asked: list[tuple[int, int]] = []  # (chunks, requests) of each batch
    index_batches: list[int] = []  # the batches that read the chunk indexes (object headers, B-tree nodes)
    read_soon = remote_module.RangeReader.read_soon  # every read, a block's chunks fetched ahead or not
    chunk_records = btree.chunk_records

    def counted(self, ranges):
        asked.append((len(ranges), len(remote_module._spans(ranges))))
        return read_soon(self, ranges)

    def index_read(read_ranges, *args, **kwargs):
        if not isinstance(read_ranges.__self__, remote_module.RangeReader):
            return chunk_records(read_ranges, *args, **kwargs)  # the local run's index, checked from the file

        def uncounted(ranges):
            index_batches.append(len(ranges))
            return read_soon(read_ranges.__self__, ranges)()

        return chunk_records(uncounted, *args, **kwargs)

    monkeypatch.setattr(remote_module.RangeReader, "read_soon", counted)
    monkeypatch.setattr(btree, "chunk_records", index_read)
    local = validate(served / "long.h5ad", jobs=1)
    with LatencyServer(served) as server:
        remote = validate(f"{server.url}/long.h5ad")
    assert to_json(remote)["results"] == to_json(local)["results"]
    assert "anndata.csr_matrix.indptr-monotonic" in {r.rule.id for r in remote.failures}
    # Every stored chunk the scan reads (X/data is not read) came through the batches, each once, those of a block
    # lying together in one request.
    assert sum(n for n, _ in asked) == chunks
    assert sum(r for _, r in asked) <= len(asked) * 2 and len(asked) < chunks / 20
    # Each array's chunk index (hundreds of chunks: a B-tree of two levels) came in a batch per level, after its
    # object header: not a round trip per node, as the HDF5 library reads it.
    assert len(index_batches) == 2 * 3 and max(index_batches) > 1


def test_range_spans_join_ranges_that_lie_together():
    from spec_validate.storage.remote import MAX_GAP_BYTES, MAX_SPAN_BYTES, _spans

    # Adjacent, then a gap within the bound, then one past it; given out of order.
    ranges = [(200, 100), (0, 100), (100, 100), (300 + MAX_GAP_BYTES, 10), (310 + 2 * MAX_GAP_BYTES + 1, 5)]
    assert _spans(ranges) == [
        (0, 310 + MAX_GAP_BYTES, [1, 2, 0, 3]),
        (310 + 2 * MAX_GAP_BYTES + 1, 315 + 2 * MAX_GAP_BYTES + 1, [4]),
    ]
    # No request longer than MAX_SPAN_BYTES, however many ranges lie together.
    size = MAX_SPAN_BYTES // 4
    spans = _spans([(i * size, size) for i in range(10)])
    assert [len(m) for _, _, m in spans] == [4, 4, 2] and all(b - a <= MAX_SPAN_BYTES for a, b, _ in spans)


def test_small_hdf5_behind_a_server_ignoring_range_requests_is_read(tmp_path, capsys):
    # Within a remote file's first block the whole file comes in one answer: no range is needed.
    served = tmp_path / "served"
    served.mkdir()
    shutil.copyfile(CORPUS / "anndata" / "h5ad" / "valid-every-element.h5ad", served / "small.h5ad")
    with LatencyServer(served, ranges=False) as server:
        assert main([f"{server.url}/small.h5ad", "--quiet"]) == 0, capsys.readouterr().err


def test_remote_batch_cuts_each_response_at_its_bound_and_leaves_its_key_out(tmp_path):
    """Documents and chunks are fetched many at a time (64 in flight): each response is cut at the bound of what is
    read of it (a metadata document, a chunk), not at the 1 GB any one URL may send, and its key is left for its
    caller to read alone, where it is refused with its reason."""
    from spec_validate.storage.remote import RemoteStore, filesystem

    served = tmp_path / "served"
    (served / "g").mkdir(parents=True)
    (served / "g" / "small").write_bytes(b"x" * 100)
    (served / "g" / "large").write_bytes(b"y" * 5000)
    with LatencyServer(served) as server:
        url = f"{server.url}/g"
        fs, path = filesystem(url)
        store = RemoteStore(fs, path, url)
        assert store.batched
        assert store.get_many(["small", "large"], limit=1000) == {"small": b"x" * 100}
        assert store.get_many(["small", "large"]) == {"small": b"x" * 100, "large": b"y" * 5000}


@pytest.mark.parametrize("version", [2, 3])
def test_remote_zarr_block_fetched_ahead_is_asked_for_once_and_read_as_locally(version, tmp_path):
    # A scan starts fetching the next blocks' chunks while it decodes (`fetch_ahead`): the requests go out at once,
    # the read that follows takes their answers and asks for nothing more, and the block is the one read locally.
    import time

    import zarr

    from spec_validate.nodes.open import open_store

    served = tmp_path / "served"
    values = np.arange(4000, dtype=np.int32)[::-1].copy()
    array = zarr.create_array(served / "store.zarr", shape=values.shape, chunks=(100,), dtype="int32", zarr_format=version)
    array[:] = values
    with LatencyServer(served, latency=0.01) as server, open_store(f"{server.url}/store.zarr") as tree:
        node = tree.get("/")
        rows = list(node.block_rows(1000))
        server.counter.reset()
        fetched = node.fetch_ahead(rows[1])
        assert fetched is not None
        deadline = time.monotonic() + 10
        while server.counts.get("other", 0) < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.counts.get("other", 0) == 10  # the block's ten chunks, asked for before any read
        block = node.read_block(rows[1], fetched)
        assert server.counts.get("other", 0) == 10  # the read asked for nothing more
    assert np.array_equal(block.values, values[1000:2000])


def test_remote_hdf5_block_fetched_ahead_is_asked_for_once_and_read_as_locally(tmp_path):
    import time

    import h5py

    from spec_validate.nodes.open import open_store

    served = tmp_path / "served"
    served.mkdir()
    values = np.arange(2_000_000, dtype=np.int32)[::-1].copy()  # larger than a remote file's first block
    with h5py.File(served / "f.h5", "w") as f:
        f.create_dataset("a", data=values, chunks=(100_000,))
    assert (served / "f.h5").stat().st_size > HDF5_BLOCK_SIZE
    with LatencyServer(served, latency=0.01) as server, open_store(f"{server.url}/f.h5") as tree:
        node = tree.get("/a")
        rows = list(node.block_rows(500_000))
        assert node.plan.table is not None  # the chunk index read: only the block's chunks are counted below
        before = server.counts.get("range", 0)
        fetched = node.fetch_ahead(rows[1])
        assert fetched is not None
        deadline = time.monotonic() + 10
        while server.counts.get("range", 0) == before and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
        asked = server.counts.get("range", 0) - before
        assert asked >= 1  # the block's chunks, asked for before any read (together: they lie side by side)
        block = node.read_block(rows[1], fetched)
        assert server.counts.get("range", 0) - before == asked  # the read asked for nothing more
    assert np.array_equal(block.values, values[500_000:1_000_000])


def test_an_unlisted_array_declaring_more_chunks_than_can_be_asked_for_is_not_read(tmp_path):
    """Read without listing (--no-list), a store cannot say which chunks it holds, so each is asked for by its key:
    an array declaring 2**62 elements in chunks of 2**20 (none written) would never finish. Past MOST_UNLISTED_CHUNKS
    it is reported unreadable instead (listed, it is read as its fill value: the hostile case's own verdict)."""
    served = tmp_path / "served"
    shutil.copytree(HOSTILE / "zarr-v2" / "huge-unwritten.zarr", served / "store.zarr")
    out = tmp_path / "report.json"
    with LatencyServer(served) as server:
        # Under --timeout: a regression would ask for chunks until then, not hang the test suite.
        url = f"{server.url}/store.zarr"
        main([url, "--no-list", "--timeout", "60", "--format", "json", "-o", str(out), "--quiet", "--isolated"])
        asked = server.counts
    (report,) = json.loads(out.read_text())["reports"]
    (problem,) = [p for p in report["problems"] if p["key"] == "/X/indptr"]
    assert "declares 4398046511104 chunks, which cannot be listed here" in problem["message"]
    assert asked["other"] < 100, asked  # chunks are "other" requests: not one asked for each declared chunk
