"""The array pass on Dask: one task per block on worker processes, the same facts and reports as the serial run."""

from __future__ import annotations

import json
import shutil
from http.server import SimpleHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

import h5py
import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from corpus_paths import CASES  # noqa: E402
from loopback import serve  # noqa: E402

from spec_validate import to_json, validate  # noqa: E402
from spec_validate.cli import main  # noqa: E402
from spec_validate.engine import dask_scan  # noqa: E402
from spec_validate.engine.dask_scan import DaskScanner, cached_sources, stores_opened  # noqa: E402
from spec_validate.engine.loader import builtin_packs  # noqa: E402
from spec_validate.engine.run import iter_results  # noqa: E402
from spec_validate.engine.scan import SerialScanner, plan  # noqa: E402
from spec_validate.errors import InputError, SpecValidateError  # noqa: E402
from spec_validate.kernels.facts import FactRequest  # noqa: E402
from spec_validate.nodes.open import open_store  # noqa: E402
from spec_validate.report.json import result_to_json  # noqa: E402

pytestmark = pytest.mark.skipif(
    not (CASES / "h5ad" / "valid-every-element.h5ad").exists(), reason="conformance corpus not generated"
)

# Cases whose verdict depends on array values (decreasing indptr, indices and codes out of range), and valid ones.
CORPUS = [
    "h5ad/valid-every-element.h5ad",
    "h5ad/csr-indptr-decreasing.h5ad",
    "h5ad/csr-indptr-decreasing-deep.h5ad",
    "h5ad/csc-indptr-decreasing.h5ad",
    "h5ad/csr-indices-out-of-range.h5ad",
    "h5ad/csc-indices-out-of-range.h5ad",
    "h5ad/categorical-code-too-large.h5ad",
    "zarr-v2/categorical-code-too-large.zarr",
    "zarr-v2/valid-every-element.zarr",
    "zarr-v3/valid-every-element.zarr",
    # Zarr v3 shard indexes: read on the workers (index bytes only), checked by a kernel, folded on the client.
    "../zarr/zarr-v3/valid-every-element.zarr",
    "../zarr/zarr-v3/shard-index-range-outside.zarr",
    "../zarr/zarr-v3/shard-index-checksum-wrong.zarr",
]

ROWS = 300_000  # a 300,001-long indptr and 450,000 stored values
CHUNK = 4096
BLOCK = 4 * CHUNK  # ~19 blocks of indptr, ~28 each of indices and data: tasks for both workers
DECREASES_AT = (270_001, 290_000)  # both in late blocks


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=50
    ) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster, set_as_default=False) as client:
        yield client


def write_long_csr(path, corrupt_chunk: int | None = None) -> str:
    """An h5ad whose CSR X has a 300,001-long indptr, chunked by 4096, decreasing at DECREASES_AT."""
    counts = np.tile(np.array([1, 2], dtype=np.int64), ROWS // 2)
    indptr = np.zeros(ROWS + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    for at in DECREASES_AT:
        indptr[at - 1] = indptr[at] + 1
    nnz = int(indptr[-1])
    comp = dict(chunks=(CHUNK,), compression="gzip", compression_opts=1)
    with h5py.File(path, "w") as f:
        f.attrs.update({"encoding-type": "anndata", "encoding-version": "0.1.0"})
        x = f.create_group("X")
        x.attrs.update({"encoding-type": "csr_matrix", "encoding-version": "0.1.0", "shape": np.array([ROWS, 4])})
        x.create_dataset("indptr", data=indptr, **comp)
        x.create_dataset("indices", data=np.tile(np.array([0, 1, 3], dtype=np.int32), nnz // 3), **comp)
        x.create_dataset("data", data=np.ones(nnz, dtype=np.float32), **comp)
        if corrupt_chunk is not None:
            info = x["indptr"].id.get_chunk_info(corrupt_chunk)
            offset, size = info.byte_offset, info.size
    if corrupt_chunk is not None:
        with open(path, "r+b") as fh:
            fh.seek(offset)
            fh.write(b"\xff" * size)  # no longer a gzip stream
    return str(path)


def results_json(path, scanner) -> list[dict]:
    with open_store(str(path)) as tree:
        return [result_to_json(r) for r in iter_results(tree, builtin_packs(), block_elements=BLOCK, scanner=scanner)]


def rule(results: list[dict], rule_id: str) -> dict:
    return next(r for r in results if r["id"] == rule_id)


@pytest.mark.parametrize("case", CORPUS, ids=CORPUS)
def test_dask_scanner_gives_the_serial_report_on_the_corpus(client, case):
    path = CASES / case
    assert to_json(validate(path, scanner=DaskScanner(client))) == to_json(validate(path, jobs=1))


class _TokenHandler(SimpleHTTPRequestHandler):
    """A static file server that answers only requests carrying ?token=s3cret (a signed URL)."""

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        if parse_qs(urlsplit(self.path).query).get("token") != ["s3cret"]:
            self.send_error(403)
            return
        super().do_GET()


@pytest.mark.parametrize("case", ["zarr-v2/categorical-code-too-large.zarr", "zarr-v2/valid-every-element.zarr"])
def test_dask_workers_read_a_signed_url_and_give_the_local_report(client, case):
    # The workers open the URL themselves (the client sends no array data), with its query string: a signed
    # URL works on the cluster as it does locally. Served on loopback, which the LocalCluster's workers reach.
    folder, name = case.split("/")
    server, thread = serve(_TokenHandler, CASES / folder)
    base = f"http://127.0.0.1:{server.server_address[1]}/{name}"
    try:
        remote = validate(f"{base}?token=s3cret", scanner=DaskScanner(client, block_elements=64))
        with pytest.raises(InputError):
            validate(base, scanner=DaskScanner(client, block_elements=64))  # no token: refused, as the server says
    finally:
        server.shutdown()
        thread.join()
    local = validate(CASES / case, jobs=1)
    # The server answers no listing (its links would not carry the token): the store is read from its consolidated
    # metadata, and the clauses on the keys stored are not checked; every other result is the local one. (The
    # chunk decoding clause is not checked either, here as locally: it needs --deep.)
    unlisted = {r["id"] for r in to_json(remote)["results"] if r.get("unchecked")}
    assert unlisted == {
        "zarr.chunks.decoded-size",
        "zarr.array.chunk-keys",
        "zarr.array.chunk-keys-in-grid",
        "zarr.array.only-chunk-keys",
        "zarr.group.unread-keys",
        "zarr.consolidated.matches-documents",
        "zarr.keys.normalized",
        "zarr.keys.ascii",
    }
    assert [r for r in to_json(remote)["results"] if r["id"] not in unlisted] == [
        r for r in to_json(local)["results"] if r["id"] not in unlisted
    ]
    assert remote.failures == local.failures
    assert "s3cret" not in json.dumps(to_json(remote)) and "s3cret" not in remote.source
    assert all("s3cret" not in s for sources in client.run(cached_sources).values() for s in sources)


def test_dask_scanner_finds_the_serial_first_decrease_in_a_late_block_on_both_workers(client, tmp_path):
    path = write_long_csr(tmp_path / "long.h5ad")
    opened = client.run(stores_opened)
    with distributed.get_task_stream(client) as stream:
        spread = results_json(path, DaskScanner(client, block_elements=BLOCK))
    serial = results_json(path, SerialScanner(BLOCK))
    assert spread == serial
    finding = rule(serial, "anndata.csr_matrix.indptr-monotonic")["findings"][0]
    # indptr[270000] was set to indptr[270001] + 1 = 405,002: the first of the two decreases.
    assert finding["index"] == [DECREASES_AT[0]] and (finding["details"]["previous"], finding["details"]["value"]) == (
        405_002,
        405_001,
    )
    scans = [t for t in stream.data if t["key"].startswith("spec-validate-scan-")]
    assert len(scans) > 40 and len({t["worker"] for t in scans}) == 2
    # Each worker opened the file once for all its tasks, and closed it after the run.
    assert all(n - opened[w] == 1 for w, n in client.run(stores_opened).items())
    assert all(not sources for sources in client.run(cached_sources).values())


def test_dask_scanner_reports_an_unreadable_block_as_the_serial_run_does(client, tmp_path):
    path = write_long_csr(tmp_path / "corrupt.h5ad", corrupt_chunk=60)
    spread = results_json(path, DaskScanner(client, block_elements=BLOCK))
    assert spread == results_json(path, SerialScanner(BLOCK))
    monotonic = rule(spread, "anndata.csr_matrix.indptr-monotonic")
    # The unreadable array is a record of its own (the tree's problems); the clause names it as not checked.
    (unchecked,) = monotonic["unchecked"]
    assert unchecked["path"] == "/X/indptr" and "Traceback" not in unchecked["reason"]


class Count:
    def __init__(self):
        self.total, self.done, self.finished = 0, 0, False

    def start(self, total):
        self.total = total

    def advance(self, elements):
        self.done += elements

    def finish(self):
        self.finished = True


def test_dask_scanner_advances_progress_to_the_total(client, tmp_path):
    path = write_long_csr(tmp_path / "long.h5ad")
    count = Count()
    with open_store(path) as tree:
        list(
            iter_results(
                tree, builtin_packs(), block_elements=BLOCK, scanner=DaskScanner(client, block_elements=BLOCK), progress=count
            )
        )
    assert count.total > 2 * ROWS and count.done == count.total and count.finished


def test_dask_scanner_fails_as_input_error_when_workers_cannot_open_the_store(client, tmp_path):
    path = write_long_csr(tmp_path / "here-only.h5ad")
    with open_store(path) as tree:  # open here, then take the file away from the workers
        scan = plan(tree.get("/X/indptr"), {FactRequest("find_decreases", (("limit", 3),))}, BLOCK)
        (tmp_path / "here-only.h5ad").rename(tmp_path / "moved.h5ad")
        with pytest.raises(InputError, match=r"here-only\.h5ad.*workers must reach the store"):
            DaskScanner(client, block_elements=BLOCK).run([scan])


def test_cli_dask_on_two_inputs_gives_the_local_json(cluster, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # relative inputs: the workers' cwd is elsewhere
    shutil.copy(CASES / "h5ad" / "csr-indptr-decreasing.h5ad", "a.h5ad")
    shutil.copytree(CASES / "zarr-v2" / "categorical-code-too-large.zarr", "b.zarr")
    assert main(["--format", "json", "--jobs", "1", "a.h5ad", "b.zarr"]) == 1
    local = json.loads(capsys.readouterr().out)
    assert main(["--format", "json", "--dask", cluster.scheduler_address, "a.h5ad", "b.zarr"]) == 1
    assert json.loads(capsys.readouterr().out) == local
    assert main(["--format", "json", "--dask", cluster.scheduler_address, "a.h5ad"]) == 1
    assert json.loads(capsys.readouterr().out)["reports"] == local["reports"][:1]


def test_cli_dask_fails_in_one_line_without_a_scheduler(monkeypatch, capsys):
    monkeypatch.setattr(dask_scan, "CONNECT_TIMEOUT_S", 0.5)
    assert main([str(CASES / "h5ad" / "valid-every-element.h5ad"), "--dask", "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spec-validate: error: --dask tcp://127.0.0.1:9: cannot connect") and err.count("\n") == 1


@pytest.mark.parametrize("address", ["local:zero", "local:0", "tcp://10.0.0.5", "scheduler-without-port", "inproc://x"])
def test_cli_dask_rejects_a_malformed_address_at_once(address, capsys):
    assert main([str(CASES / "h5ad" / "valid-every-element.h5ad"), "--dask", address]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"spec-validate: error: --dask {address}: ") and "local:N" in err and err.count("\n") == 1


def test_connect_fails_as_spec_validate_error():
    with pytest.raises(SpecValidateError, match="cannot connect"):
        dask_scan.connect("tcp://127.0.0.1:9", timeout=0.5)


# --- several inputs: one task each ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def isolating_cluster():
    """Workers that may start processes (for --timeout), and a task given up after one worker died running it.

    The configuration holds while the cluster is made only: the `cluster` fixture's workers stay daemonic. A worker
    restarted after it died is daemonic again, so the test that kills one comes last."""
    import dask

    config = {"distributed.worker.daemon": False, "distributed.scheduler.allowed-failures": 0}
    with dask.config.set(config):  # a dashboard on any free port: the `cluster` fixture's holds the default one
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", silence_logs=50
        )
    with cluster:
        yield cluster


def _folder(tmp_path) -> str:
    """A folder of inputs that pass, fail, cannot be opened or are skipped."""
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    shutil.copy(CASES / "h5ad" / "csr-indptr-decreasing.h5ad", data / "a.h5ad")
    shutil.copytree(CASES / "zarr-v2" / "categorical-code-too-large.zarr", data / "sub" / "b.zarr")
    shutil.copytree(CASES / "zarr-v3" / "valid-every-element.zarr", data / "sub" / "c.zarr")
    shutil.copy(CASES / "h5ad" / "valid-every-element.h5ad", data / "sub" / "d.h5ad")
    (data / "sub" / "e.h5ad").write_bytes(b"not even hdf5")  # named as one: opened, and said not to be one
    (data / "notes.txt").write_text("skipped")
    return "data"


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "junit", "markdown", "html"])
def test_cli_dask_on_a_folder_gives_the_local_report_in_every_format(cluster, tmp_path, monkeypatch, capsys, fmt):
    # "The report is the same as a local run's, in every format" (#41): each input a task, finished in any order.
    monkeypatch.chdir(tmp_path)  # relative inputs: the workers' cwd is elsewhere
    folder = _folder(tmp_path)
    local = main(["--format", fmt, "--jobs", "1", "--quiet", folder, "missing.h5ad"]), capsys.readouterr()
    on_dask = main(["--format", fmt, "--dask", cluster.scheduler_address, "--quiet", folder, "missing.h5ad"])
    assert (on_dask, capsys.readouterr()) == local
    assert local[0] == 2 and "missing.h5ad: no such file or directory" in local[1].err  # said, and the others reported


def test_cli_dask_jsonl_writes_each_input_as_it_finishes_and_the_local_summary(cluster, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = _folder(tmp_path)
    assert main(["--format", "jsonl", "--jobs", "1", "--quiet", "-o", "local.jsonl", folder]) == 1
    assert main(["--format", "jsonl", "--dask", cluster.scheduler_address, "--quiet", "-o", "dask.jsonl", folder]) == 1
    local, on_dask = ((tmp_path / name).read_text().splitlines() for name in ("local.jsonl", "dask.jsonl"))
    # The same run line and summary; the same line per input, in the order the inputs finished.
    assert (on_dask[0], on_dask[-1]) == (local[0], local[-1]) and sorted(on_dask[1:-1]) == sorted(local[1:-1])


def test_iter_on_dask_raises_a_bad_pack_met_on_a_worker(isolating_cluster, tmp_path):
    from spec_validate.errors import PackError
    from spec_validate.inputs import Input

    def validate_one(item, *rest, **options):
        raise PackError("rules.yaml: x.y: check[0].attr_type.typ: unknown option")

    with distributed.Client(isolating_cluster, set_as_default=False) as client, pytest.raises(PackError, match="unknown option"):
        list(dask_scan.iter_on_dask(client, [(Input("a.h5ad"), (), (), (), (), 1)] * 2, validate_one))


def test_cli_dask_timeout_reports_the_input_past_it_as_a_local_run_does(isolating_cluster, tmp_path, monkeypatch, capsys):
    # --timeout was refused with --dask; each input now runs in a child process of its worker, given that long.
    pytest.importorskip("obstore")
    from latency_server import LatencyServer

    monkeypatch.chdir(tmp_path)
    shutil.copy(CASES / "h5ad" / "valid-every-element.h5ad", "fast.h5ad")
    (tmp_path / "srv").mkdir()
    shutil.copy(CASES / "h5ad" / "valid-every-element.h5ad", tmp_path / "srv" / "slow.h5ad")
    # Long enough for a child started by spawn to be opening the slow file when its time is up, whatever the load.
    seconds = "6"
    with LatencyServer(tmp_path / "srv", latency=120) as server:
        args = ["--format", "json", "--quiet", "--timeout", seconds, f"{server.url}/slow.h5ad", "fast.h5ad"]
        local = main(args), json.loads(capsys.readouterr().out)
        on_dask = main([*args, "--dask", isolating_cluster.scheduler_address]), json.loads(capsys.readouterr().out)
    assert on_dask == local and local[0] == 1
    slow, fast = local[1]["reports"]
    assert slow["problems"] == [
        {"key": "/", "message": f"timed out after {seconds} s while opening {server.url}/slow.h5ad", "path": "/"}
    ]
    assert fast["source"] == "fast.h5ad" and fast["verdict"]["outcome"] == "conforms"


def test_cli_dask_timeout_on_daemonic_workers_fails_in_one_line(cluster, capsys):
    path = str(CASES / "h5ad" / "valid-every-element.h5ad")
    assert main([path, "--quiet", "--timeout", "5", "--dask", cluster.scheduler_address]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "DASK_DISTRIBUTED__WORKER__DAEMON=False" in err


def test_iter_on_dask_streams_each_input_as_it_finishes_a_dead_worker_or_raising_task_is_that_inputs(isolating_cluster, tmp_path):
    from spec_validate.cli import _validate_one
    from spec_validate.inputs import Input

    def validate_one(item, *rest, **options):
        # Defined here, so that it travels to the workers by value.
        import os
        import signal
        import time

        if item.path.endswith("dies.h5ad"):
            time.sleep(2)  # the other inputs finish first: only this one's worker dies
            os.kill(os.getpid(), signal.SIGKILL)
        if item.path.endswith("raises.h5ad"):
            raise RuntimeError("a bug met on this input")
        return _validate_one(item, *rest, **options)

    good = str(CASES / "h5ad" / "csr-indptr-decreasing.h5ad")
    inputs = (good, str(tmp_path / "dies.h5ad"), str(tmp_path / "raises.h5ad"), good)
    jobs = [(Input(p), (), (), (), (), 1) for p in inputs]
    with distributed.Client(isolating_cluster, set_as_default=False) as client:
        finished = list(dask_scan.iter_on_dask(client, jobs, validate_one))
    assert finished[-1][0] == 1 and sorted(i for i, _ in finished) == [0, 1, 2, 3]  # the dead worker's input comes last
    reports = dict(finished)
    assert to_json(reports[0]) == to_json(_validate_one(*jobs[0])) == to_json(reports[3])
    # Each rule held once on the client, as in a local run, not once per report that came from a worker.
    assert all(a.rule is b.rule for a, b in zip(reports[0].results, reports[3].results, strict=True))
    (problem,) = reports[1].problems
    assert problem.message.startswith("the Dask worker validating it died (1 worker tried in turn)")
    assert reports[1].source == jobs[1][0].path and reports[1].error is None  # an unreadable record: exit 1
    assert reports[2].error == f"{jobs[2][0].path}: its Dask task failed (RuntimeError: a bug met on this input)"


def test_iter_on_dask_validates_several_inputs_at_once_on_a_worker_of_one_thread():
    # A small remote store mostly waits on round trips: a worker of one thread still validates INPUTS_PER_THREAD
    # inputs at once. Each input here waits for the others at a barrier, which only inputs run together pass.
    from spec_validate.inputs import Input
    from spec_validate.model import Report

    def validate_one(item, *rest, **options):
        import threading

        worker = distributed.get_worker()
        barrier = worker.__dict__.setdefault("inputs_barrier", threading.Barrier(3))
        barrier.wait(timeout=60)
        return Report(item.path, "", (), "0", ())

    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        jobs = [(Input(f"{i}.h5ad"), (), (), (), (), 1) for i in range(3)]
        finished = dict(dask_scan.iter_on_dask(client, jobs, validate_one, per_thread=3))
    assert sorted(finished) == [0, 1, 2] and all(r.error is None for r in finished.values())
