"""Hostile inputs, end to end through the command line: a report for every input, nothing read outside it, memory
bounded by blocks, walks that end, and `--timeout`. Each case runs the CLI in a fresh process (through a launcher, so
its peak RSS is its own) and checks the JSON report.

The guarantees these hold are listed in docs/security.md; tests/fuzz/ tries them on thousands of mutated inputs.
"""

from __future__ import annotations

import faulthandler
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from corpus_paths import VALID_H5AD

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "conformance-corpus"
LAUNCHER = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"
CHILD = """
import json, resource, sys
from spec_validate.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
LIMIT_MB = 200
TOKEN = b"CANARY-0123456789-root:x:0:0:"


def run_cli(*args: str | Path, tmp_path: Path, limit: float = 120) -> dict:
    """The CLI in a fresh process with `--format json`: exit code, peak RSS, stderr, the report (or None), all output."""
    out = tmp_path / f"report-{len(list(tmp_path.glob('report-*')))}.json"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    argv = [*map(str, args), "--format", "json", "--output", str(out), "--quiet", "--isolated"]
    proc = subprocess.run(
        [sys.executable, "-c", LAUNCHER, sys.executable, "-c", CHILD, *argv],
        capture_output=True,
        text=True,
        timeout=limit,
        env=env,
    )
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-3000:]
    status = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {"code": proc.returncode}
    text = out.read_text(encoding="utf-8") if out.exists() else ""
    report = json.loads(text)["reports"][0] if text else None
    return {**status, "stderr": proc.stderr, "report": report, "text": text + proc.stderr + proc.stdout}


def problems(result: dict) -> dict[str, str]:
    return {p["key"]: p["message"] for p in result["report"]["problems"]}


def statuses(report: dict) -> dict[str, str]:
    return {r["id"]: r["status"] for r in report["results"]}


def canary(tmp_path: Path) -> Path:
    """A file beside the input that must never be read: its access time is older than its modification time, so
    under relatime any read moves it."""
    path = tmp_path / "canary.bin"
    path.write_bytes(TOKEN * 64)
    st = path.stat()
    os.utime(path, ns=(st.st_mtime_ns - 10**12, st.st_mtime_ns))
    return path


def leaked(text: str) -> bool:
    words = [TOKEN[i : i + 8] for i in range(0, 24, 8)]
    return TOKEN.decode()[:12] in text or any(
        str(int.from_bytes(w, "little", signed=s)) in text for w in words for s in (True, False)
    )


# --- nothing outside the input: HDF5 external storage and virtual datasets -------------------------------------


@pytest.mark.parametrize("how", ["external-storage", "virtual-dataset"])
@pytest.mark.parametrize("fmt", ["json", "text", "sarif", "github", "junit", "markdown"])
def test_hdf5_data_outside_the_file_is_reported_and_the_canary_never_read(tmp_path, how, fmt):
    secret = canary(tmp_path)
    path = tmp_path / "outside.h5ad"
    shutil.copy(VALID_H5AD, path)
    with h5py.File(path, "a") as f:
        del f["X/indptr"]  # a dataset every value rule reads
        if how == "external-storage":
            f.create_dataset("X/indptr", shape=(13,), dtype="<i8", external=[(str(secret), 0, 13 * 8)])
        else:
            with h5py.File(tmp_path / "canary.h5", "w") as src:
                src["data"] = np.frombuffer(TOKEN.ljust(104, b"!")[:104], dtype="<i8")
            layout = h5py.VirtualLayout(shape=(13,), dtype="<i8")
            layout[:] = h5py.VirtualSource(str(tmp_path / "canary.h5"), "data", shape=(13,))
            f.create_virtual_dataset("X/indptr", layout, fillvalue=0)
        f["X/indptr"].attrs["encoding-type"], f["X/indptr"].attrs["encoding-version"] = "array", "0.2.0"
    before = secret.stat().st_atime_ns
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-m", "spec_validate", str(path), "--format", fmt, "--quiet", "--isolated", "--deep"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 1, proc.stderr
    assert "/X/indptr" in proc.stdout and "outside the file" in proc.stdout
    assert secret.stat().st_atime_ns == before
    assert not leaked(proc.stdout + proc.stderr)


@pytest.mark.parametrize("how", ["external-storage", "virtual-dataset", "external-link"])
def test_hdf5_canary_fifo_is_never_opened(tmp_path, how):
    """A FIFO blocks whoever opens it for reading: were it opened, the run would hang and be cut off."""
    fifo = tmp_path / "canary.fifo"
    os.mkfifo(fifo)
    path = tmp_path / "fifo.h5ad"
    shutil.copy(VALID_H5AD, path)
    with h5py.File(path, "a") as f:
        del f["X/indptr"]
        if how == "external-storage":
            f.create_dataset("X/indptr", shape=(13,), dtype="<i8", external=[(str(fifo), 0, 104)])
        elif how == "virtual-dataset":
            layout = h5py.VirtualLayout(shape=(13,), dtype="<i8")
            layout[:] = h5py.VirtualSource(str(fifo), "data", shape=(13,))
            f.create_virtual_dataset("X/indptr", layout, fillvalue=0)
        else:
            f["X/indptr"] = h5py.ExternalLink(str(fifo), "/data")
    result = run_cli(path, "--deep", "--timeout", "60", tmp_path=tmp_path)
    assert result["code"] == 1
    assert "/X/indptr" in problems(result) and "timed out" not in result["text"]


# --- memory bounded by blocks, never by declared sizes ----------------------------------------------------------


def _zarr_with_declared(tmp_path: Path, shape: list[int], chunks: list[int]) -> Path:
    store = tmp_path / "declared.zarr"
    shutil.copytree(CORPUS / "anndata/zarr-v2/valid-every-element.zarr", store)
    meta = json.loads((store / "X/indptr/.zarray").read_text())
    meta.update(shape=shape, chunks=chunks)
    (store / "X/indptr/.zarray").write_text(json.dumps(meta))
    for chunk in (store / "X/indptr").iterdir():
        if not chunk.name.startswith("."):
            chunk.unlink()  # no chunk written: every element is the fill value
    return store


@pytest.mark.parametrize(
    "shape,chunks",
    [([2**62], [1]), ([2**62], [2**20]), ([2**40], [1000]), ([2**76], [2**20]), ([2**80], [1])],
    ids=["2**62-chunks-of-1", "2**62-chunks-of-2**20", "2**40", "2**76", "2**80-chunks-of-1"],
)
def test_declared_huge_array_with_no_chunks_is_read_as_its_fill_value_in_bounded_memory(tmp_path, shape, chunks):
    result = run_cli(_zarr_with_declared(tmp_path, shape, chunks), "--timeout", "100", tmp_path=tmp_path)
    assert result["peak_mb"] < LIMIT_MB, result
    report = result["report"]
    assert "timed out" not in result["text"]
    by_id = {r["id"]: r for r in report["results"]}
    # indptr is scanned (every element the fill value 0): it starts at 0 and never decreases; its length is wrong.
    for rule in ("anndata.csr_matrix.indptr-monotonic", "anndata.csr_matrix.indptr-start"):
        assert by_id[rule]["status"] == "passed" and not by_id[rule].get("unchecked"), by_id[rule]
    assert by_id["anndata.csr_matrix.indptr-length"]["status"] == "failed"
    assert by_id["anndata.csr_matrix.indptr-end"]["status"] == "failed"  # the last of 2**62 zeros is no nnz


@pytest.mark.parametrize("fmt", ["zarr-v2", "zarr-v3"])
def test_declared_2_62_by_2_62_array_with_no_chunks_is_read_whole_under_deep_in_bounded_memory(tmp_path, fmt):
    """One range per declared row once grew to any memory cap: the array is one block of its fill value."""
    store = tmp_path / "wide.zarr"
    shutil.copytree(CORPUS / f"anndata/{fmt}/valid-every-element.zarr", store)
    folder = store / "obsm/X_pca"
    if fmt == "zarr-v2":
        meta = json.loads((folder / ".zarray").read_text())
        meta.update(shape=[2**62, 2**62])
        (folder / ".zarray").write_text(json.dumps(meta))
        (folder / "0.0").unlink()
    else:
        meta = json.loads((folder / "zarr.json").read_text())
        meta["shape"] = [2**62, 2**62]
        (folder / "zarr.json").write_text(json.dumps(meta))
        shutil.rmtree(folder / "c")
    result = run_cli(store, "--deep", "--timeout", "100", tmp_path=tmp_path)
    assert result["peak_mb"] < LIMIT_MB, result
    assert "timed out" not in result["text"] and not result["report"]["problems"]
    by_id = {r["id"]: r for r in result["report"]["results"]}
    assert by_id["anndata.anndata.obsm-shape"]["status"] == "failed"
    decoded = "zarr.chunks.decoded-size" if fmt == "zarr-v2" else "zarr3.chunks.decode"
    assert by_id[decoded]["status"] == "passed" and not by_id[decoded].get("unchecked"), by_id[decoded]


def test_declared_huge_hdf5_dataset_with_no_chunks_is_read_as_its_fill_value(tmp_path):
    path = tmp_path / "huge.h5ad"
    shutil.copy(VALID_H5AD, path)
    with h5py.File(path, "a") as f:
        del f["X/indptr"]
        f.create_dataset("X/indptr", shape=(2**40,), chunks=(2**16,), dtype="<i8", fillvalue=0)
        f["X/indptr"].attrs["encoding-type"], f["X/indptr"].attrs["encoding-version"] = "array", "0.2.0"
    result = run_cli(path, "--timeout", "100", tmp_path=tmp_path)
    assert result["peak_mb"] < LIMIT_MB, result
    by_id = {r["id"]: r for r in result["report"]["results"]}
    monotonic = by_id["anndata.csr_matrix.indptr-monotonic"]
    assert monotonic["status"] == "passed" and not monotonic.get("unchecked"), monotonic
    assert by_id["anndata.csr_matrix.indptr-end"]["status"] == "failed"


def test_block_larger_than_memory_bound_is_not_read_and_named(tmp_path):
    """2**25 x 2**25 declared, with one chunk written: the block holding it would be 256 TB; it is named, not read."""
    store = tmp_path / "wide.zarr"
    shutil.copytree(CORPUS / "anndata/zarr-v2/valid-every-element.zarr", store)
    meta = json.loads((store / "X/data/.zarray").read_text())
    meta.update(shape=[2**25, 2**25], chunks=[1, 2**20], compressor=None, filters=None)
    (store / "X/data/.zarray").write_text(json.dumps(meta))
    result = run_cli(store, "--timeout", "100", tmp_path=tmp_path)
    assert result["peak_mb"] < LIMIT_MB, result
    assert result["code"] in (0, 1)


def test_oversized_metadata_document_is_refused_before_it_is_read(tmp_path):
    store = tmp_path / "big-attrs.zarr"
    shutil.copytree(CORPUS / "anndata/zarr-v2/valid-zero-obs.zarr", store)
    with open(store / "obs" / ".zattrs", "r+b") as fh:
        fh.truncate(200 * 2**20)  # 200 MB (sparse): refused by its size, never read
    result = run_cli(store, tmp_path=tmp_path)
    assert result["peak_mb"] < LIMIT_MB, result
    assert "more than the" in problems(result)["obs/.zattrs"]


@pytest.mark.parametrize("depth", [1000, 100_000])
def test_deeply_nested_json_is_refused_with_a_finding_every_clause_keeps_a_verdict(tmp_path, depth):
    store = tmp_path / "deep.zarr"
    shutil.copytree(CORPUS / "anndata/zarr-v2/valid-zero-obs.zarr", store)
    (store / "uns" / ".zattrs").write_text(
        '{"encoding-type": "dict", "encoding-version": "0.1.0", "x": ' + "[" * depth + "]" * depth + "}"
    )
    result = run_cli(store, tmp_path=tmp_path)
    assert "nested" in problems(result)["uns/.zattrs"]
    assert "error" not in statuses(result["report"]).values()


# --- a report for every input ----------------------------------------------------------------------------------


def _corrupt_group(path: Path, group: str) -> None:
    """Break the local heap of `group` (an old-style HDF5 group): its member list can no longer be read."""
    marker = "m" * 40
    with h5py.File(path, "a") as f:
        f.create_group(group).create_group(marker)
    data = bytearray(path.read_bytes())
    at = data.rindex(b"HEAP", 0, data.index(marker.encode()))
    data[at : at + 4] = b"HEAX"
    path.write_bytes(bytes(data))


def test_corrupt_group_in_a_good_h5ad_is_one_unreadable_record_every_other_clause_its_verdict(tmp_path):
    good = tmp_path / "good.h5ad"
    shutil.copy(VALID_H5AD, good)
    with h5py.File(good, "a") as f:
        f.create_group("uns/broken").create_group("m" * 40)
    bad = tmp_path / "bad.h5ad"
    shutil.copy(VALID_H5AD, bad)
    _corrupt_group(bad, "uns/broken")
    clean, corrupt = run_cli(good, tmp_path=tmp_path), run_cli(bad, tmp_path=tmp_path)
    assert corrupt["code"] == 1
    assert list(problems(corrupt)) == ["/uns/broken"] and "cannot be listed" in problems(corrupt)["/uns/broken"]
    assert "error" not in statuses(corrupt["report"]).values()
    assert statuses(corrupt["report"]) == statuses(clean["report"])


def test_fifo_as_the_path_is_never_opened(tmp_path):
    fifo = tmp_path / "data.h5ad"
    os.mkfifo(fifo)
    result = run_cli(fifo, tmp_path=tmp_path, limit=60)
    assert result["code"] == 2 and "not a regular file" in result["stderr"] and result["stderr"].count("\n") == 1


def test_special_files_and_links_inside_a_store_are_reported_and_walks_end(tmp_path):
    secret = canary(tmp_path)
    store = tmp_path / "links.zarr"
    shutil.copytree(CORPUS / "anndata/zarr-v2/valid-zero-obs.zarr", store)
    os.mkfifo(store / "obs" / "fifo")
    os.symlink("..", store / "obs" / "loop")  # a loop inside the store
    os.symlink(secret, store / "uns" / "secret")  # a key leading outside
    (store / "X" / ".zattrs").unlink()
    os.mkfifo(store / "X" / ".zattrs")  # a document that is a FIFO
    atime = secret.stat().st_atime_ns
    result = run_cli(store, "--deep", "--timeout", "60", tmp_path=tmp_path)
    found = problems(result)
    assert {"obs/fifo", "obs/loop", "uns/secret"} <= set(found), found
    assert "timed out" not in result["text"] and secret.stat().st_atime_ns == atime and not leaked(result["text"])


def test_zip_entry_names_with_double_slashes_end_and_are_reported(tmp_path):
    path = tmp_path / "slashes.zarr.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(".zgroup", '{"zarr_format": 2}')
        z.writestr("a//.zgroup", '{"zarr_format": 2}')
        z.writestr("a//b/.zgroup", '{"zarr_format": 2}')
        z.writestr("../up/.zgroup", '{"zarr_format": 2}')
        z.writestr("/".join(["g"] * 10_000) + "/.zgroup", '{"zarr_format": 2}')
        z.writestr("/".join(["h"] * 32_000) + "/.zgroup", '{"zarr_format": 2}')  # a 64 KB name, the most a zip holds
    result = run_cli(path, "--timeout", "60", tmp_path=tmp_path)
    assert result["peak_mb"] < LIMIT_MB, result  # once, a listing prefix per level: 32,000 of up to 64 KB each
    found = problems(result)
    assert {"a//.zgroup", "a//b/.zgroup", "../up/.zgroup"} <= set(found)
    assert any("nest more than" in m for m in found.values()) and "timed out" not in result["text"]


def test_cxg_members_outside_the_group_are_reported_never_opened(tmp_path):
    tiledb = pytest.importorskip("tiledb")
    outside = tmp_path / "outside.tdb"
    schema = tiledb.ArraySchema(
        domain=tiledb.Domain(tiledb.Dim("i", domain=(0, 5), tile=6, dtype=np.uint32)), attrs=[tiledb.Attr("", dtype=np.int64)]
    )
    tiledb.Array.create(str(outside), schema)
    store = tmp_path / "members.cxg"
    shutil.copytree(CORPUS / "cxg/cxg-0.3.0/valid-every-element.cxg", store)
    tiledb.group_create(str(tmp_path / "scratch"))  # a new-layout group to copy the member list format from
    for name in os.listdir(tmp_path / "scratch"):
        if not (store / name).exists():
            shutil.copytree(tmp_path / "scratch" / name, store / name)
    with tiledb.Group(str(store), "w") as g:
        g.add(str(outside), name="absolute", relative=False)
        g.add("../outside.tdb", name="dotdot", relative=True)
    os.symlink(outside, store / "linked")
    os.mkfifo(store / "obs" / "__schema" / "fifo")
    result = run_cli(store, "--timeout", "60", tmp_path=tmp_path)
    found = problems(result)
    assert {"/absolute", "/dotdot", "/linked", "/obs"} <= set(found), found
    assert "timed out" not in result["text"]


# --- the path given is the path validated -----------------------------------------------------------------------


def test_file_beside_zarr_metadata_is_validated_not_its_folder(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / ".zgroup").write_text('{"zarr_format": 2}')
    path = folder / "data.h5ad"
    shutil.copy(CORPUS / "anndata/h5ad/anndata-var-missing.h5ad", path)
    result = run_cli(path, tmp_path=tmp_path)
    assert result["report"]["source"] == str(path) and result["code"] == 1


# --- --timeout -------------------------------------------------------------------------------------------------


@pytest.fixture
def silent_server():
    """An HTTP server that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for s in held:
        s.close()
    listener.close()


def test_timeout_cuts_a_hang_and_names_what_was_read(tmp_path, silent_server):
    result = run_cli(f"{silent_server}/data.h5ad", "--timeout", "3", tmp_path=tmp_path, limit=100)
    assert result["code"] == 1
    (problem,) = result["report"]["problems"]
    assert "timed out after 3 s while opening" in problem["message"] and result["report"]["format"] is None


# The test forks on purpose (its patched reader must reach the child) and the child reads only .h5ad files; an
# earlier test in the same session may have made a TileDB context, whose fork handler then warns.
@pytest.mark.filterwarnings("ignore:TileDB is a multithreading library:UserWarning")
def test_timeout_reports_a_crashed_reader_and_goes_on(tmp_path, monkeypatch):
    """A native library that kills the process (a segfault) costs that input its scan, never the other reports."""
    from spec_validate import cli
    from spec_validate.model import Report

    def crash(path, *args, **kwargs) -> Report:
        if path.path.endswith("crash.h5ad"):
            faulthandler.disable()  # pytest's handler would print the child's stack; the point is the bare signal
            os.kill(os.getpid(), signal.SIGSEGV)
        return real(path, *args, **kwargs)

    import multiprocessing

    from spec_validate import watchdog

    real = cli._validate_one
    monkeypatch.setattr(cli, "_validate_one", crash)
    monkeypatch.setattr(watchdog, "_context", lambda: multiprocessing.get_context("fork"))  # the patch must reach it
    shutil.copy(VALID_H5AD, tmp_path / "crash.h5ad")
    out = tmp_path / "both.json"
    code = cli.main(
        [
            str(tmp_path / "crash.h5ad"),
            str(VALID_H5AD),
            "--timeout",
            "60",
            "--format",
            "json",
            "-o",
            str(out),
            "--quiet",
            "--isolated",
        ]
    )
    reports = json.loads(out.read_text())["reports"]
    assert code == 1 and [r["source"] for r in reports] == [str(tmp_path / "crash.h5ad"), str(VALID_H5AD)]
    assert "the reader crashed (killed by signal 11)" in reports[0]["problems"][0]["message"]
    assert reports[1]["problems"] == [] and reports[1]["results"]


@pytest.mark.filterwarnings("ignore:TileDB is a multithreading library:UserWarning")  # as the test above
def test_timeout_names_the_node_whose_attributes_were_being_read(tmp_path, monkeypatch):
    """An object whose attributes take long to read (100,000 of them) is named, whatever the engine was doing when
    it met it (here the writer detection, which once was all the report said, against the store's root)."""
    import multiprocessing
    import time

    from spec_validate import cli, watchdog
    from spec_validate.nodes.hdf5.tree import HDF5Tree

    real = HDF5Tree.attributes_problem

    def slow(self, node, oid):
        if node.path == "/uns":
            time.sleep(120)
        return real(self, node, oid)

    monkeypatch.setattr(HDF5Tree, "attributes_problem", slow)
    monkeypatch.setattr(watchdog, "_context", lambda: multiprocessing.get_context("fork"))  # the patch must reach it
    out = tmp_path / "report.json"
    code = cli.main([str(VALID_H5AD), "--timeout", "3", "--format", "json", "-o", str(out), "--quiet", "--isolated"])
    (problem,) = json.loads(out.read_text())["reports"][0]["problems"]
    assert code == 1 and problem["key"] == "/uns"
    assert problem["message"] == "timed out after 3 s while reading the attributes of /uns"


@pytest.mark.filterwarnings("ignore:TileDB is a multithreading library:UserWarning")  # as the test above
def test_timeout_says_a_report_that_cannot_be_sent_in_one_line_not_as_a_crash(monkeypatch):
    """A report holding what does not pickle (once an h5py reference in a finding) is the tool's bug: one line, never
    "the reader crashed" (the child was killed while it raised, after the parent had given up on it)."""
    import multiprocessing
    import threading

    from spec_validate import watchdog

    monkeypatch.setattr(watchdog, "_context", lambda: multiprocessing.get_context("fork"))
    with pytest.raises(RuntimeError, match="its report could not be sent"):
        watchdog.run_with_timeout((), lambda: threading.Lock(), 60, "in.h5ad")


def test_timed_out_input_is_shown_as_not_checked_with_what_was_read():
    from spec_validate.model import Level
    from spec_validate.report.options import RenderOptions
    from spec_validate.report.text import render
    from spec_validate.watchdog import _report

    opening = _report("http://host/data.h5ad", "/", "", "opening http://host/data.h5ad", "timed out after 3 s while opening")
    reading = _report("a.zarr", "/", "zarr-v2", "reading /X/data rows 0..4096", "timed out after 3 s while reading /X/data")
    text = render([opening, reading], RenderOptions(fail_on=Level.MUST, colour=False)).splitlines()
    assert text[:2] == [
        "http://host/data.h5ad (format unknown; not checked)",
        "  UNREADABLE /: timed out after 3 s while opening",
    ]
    assert "  UNREADABLE /X/data: timed out after 3 s while reading /X/data" in text


def test_memory_limit_turns_an_allocation_past_it_into_an_unreadable_record(tmp_path):
    """--memory-limit caps the data segment: a read needing more (here a 240 MB stored chunk, within every other
    bound) fails with MemoryError, reported as that array's unreadable record; every other clause keeps its
    verdict, and without the cap the same store reads."""
    store = tmp_path / "big-chunk.zarr"
    shutil.copytree(CORPUS / "anndata/zarr-v2/valid-zero-obs.zarr", store)
    (store / "uns" / "big").mkdir()
    (store / "uns" / "big" / ".zarray").write_text(
        json.dumps(
            {
                "zarr_format": 2,
                "shape": [30_000_000],
                "chunks": [30_000_000],
                "dtype": "<f8",
                "compressor": None,
                "fill_value": 0.0,
                "filters": None,
                "order": "C",
            }
        )
    )
    (store / "uns" / "big" / ".zattrs").write_text('{"encoding-type": "array", "encoding-version": "0.2.0"}')
    with open(store / "uns" / "big" / "0", "wb") as fh:
        fh.truncate(240_000_000)  # sparse: no disk space
    capped = run_cli(store, "--memory-limit", "200", "--jobs", "1", "--deep", tmp_path=tmp_path)
    assert "/uns/big" in problems(capped) and "MemoryError" in problems(capped)["/uns/big"], problems(capped)
    free = run_cli(store, "--jobs", "1", "--deep", tmp_path=tmp_path)
    assert "/uns/big" not in problems(free)
    assert {k: v for k, v in statuses(capped["report"]).items() if v != "passed"} == {
        k: v for k, v in statuses(free["report"]).items() if v != "passed"
    }


def test_memory_limit_fits_tiledbs_budgets_so_a_valid_cxg_reads_the_same(tmp_path):
    """TileDB sizes its reader from budgets of several GB; under --memory-limit they follow the limit, so a valid
    CXG reads as without it (before, every array was `std::bad_alloc` under 640 MB)."""
    pytest.importorskip("tiledb")
    store = CORPUS / "cxg/cxg-0.3.0/valid-every-element.cxg"
    capped = run_cli(store, "--memory-limit", "640", "--jobs", "2", tmp_path=tmp_path)
    free = run_cli(store, "--jobs", "2", tmp_path=tmp_path)
    assert capped["report"]["problems"] == [] and statuses(capped["report"]) == statuses(free["report"])


def test_a_thread_that_cannot_start_under_the_memory_limit_is_one_line(monkeypatch, capsys):
    """--memory-limit caps the data segment, which counts every thread's stack: near the cap Python cannot start a
    thread (RuntimeError, not MemoryError; found by the fuzzer over HTTP, a store made deep by a looping link). That
    is the input's error in one line, as MemoryError is, never an internal error."""
    import spec_validate
    from spec_validate import cli

    def no_thread(*args, **kwargs):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(spec_validate, "validate", no_thread)
    path = str(CORPUS / "anndata/zarr-v2/valid-zero-obs.zarr")
    assert cli.main([path, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" not in err
    assert "needed more memory than --memory-limit allows (for a thread)" in err


GLOBAL_HEAP_LOOPS = sorted((REPO / "tests" / "data" / "hdf5-global-heap-loop").glob("*.h5ad"))


@pytest.mark.parametrize("path", GLOBAL_HEAP_LOOPS, ids=[p.stem for p in GLOBAL_HEAP_LOOPS])
def test_damaged_global_heap_collection_is_reported_not_looped_on(path, tmp_path):
    """The HDF5 library loops forever reading an attribute stored in these collections (see the folder's README): the
    collections are walked first, and the attributes reported unread, well inside the time limit."""
    result = run_cli(path, "--timeout", "20", tmp_path=tmp_path, limit=60)
    messages = [p["message"] for p in result["report"]["problems"]]
    assert not any("timed out" in m for m in messages)
    assert any("global heap collection" in m and "is damaged" in m for m in messages)
