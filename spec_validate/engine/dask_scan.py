"""The array pass on a Dask cluster: one task per block, read on a worker, partials folded on the client.

Each task is a tiny descriptor (store source, node path, row range, fact requests). The worker opens the
store itself (once per worker process and run, see `_TreeCache`), reads its block and returns the kernels'
partials, which are small and of fixed size. The client folds them with `scan.fold` in block order, so the
facts are those of the serial run, down to the index and values of the first offending element, whichever
worker read which block.

Several inputs (`validate_on_dask`, `iter_on_dask`): each is one task that validates the whole input on a
worker, its blocks scanned on that worker's threads; the reports come back as the tasks finish, and a task
that fails (a worker that died, an exception) is its input's report, never the end of the run.

The source must be something every worker can open: a path on a file system the workers share, mounted at
the same place (relative paths are made absolute on the client), or a URL the workers can reach. A URL
reaches the workers as it was given (the tree's `locator`), so a signed URL's query string opens the store
there too; it travels in task arguments only and is never part of a message, report or log line of ours
(`source` is the URL without user, password and query). Other credentials come from each worker's own
environment. See docs/scaling.md.

dask and distributed are imported only here, and only when a Dask scanner or `--dask` is used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spec_validate.engine.scan import (
    ArrayScan,
    Facts,
    Partials,
    Progress,
    _sequential,
    default_workers,
    fold,
    read_and_summarize,
)
from spec_validate.errors import InputError, NodeError, NotDecoded, SpecValidateError
from spec_validate.kernels.facts import FactRequest
from spec_validate.nodes.base import DEFAULT_BLOCK_ELEMENTS, RowRange, Tree, row_elements

if TYPE_CHECKING:
    from distributed import Client

    from spec_validate.model import Report

# Tasks in flight per worker thread: enough to hide the scheduler round trip, few enough that the
# partials waiting on the workers (and the client's bookkeeping) stay small whatever the array size.
IN_FLIGHT_PER_THREAD = 4
CONNECT_TIMEOUT_S = 10
NETWORK_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")


# --- worker side -------------------------------------------------------------------------------------


class _TreeCache:
    """Opened trees of this worker process, keyed by (source, run token); thread-safe.

    A worker opens a store once per run, not once per task. The run token (one per `DaskScanner.run`)
    means a file rewritten between two runs on a long-lived cluster is opened afresh. At most `size`
    trees stay open; the least recently used one not being read from is closed.
    """

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._trees: OrderedDict[tuple[str, str], list[Any]] = OrderedDict()  # key -> [tree, users, forgotten]
        self.opened = 0  # stores opened by this process (tests check each worker opens a store once)

    @contextlib.contextmanager
    def tree(self, source: str, token: str, list_folders: bool = True) -> Iterator[Tree]:
        from spec_validate.nodes.open import open_store

        key = (source, token)
        with self._lock:
            entry = self._trees.get(key)
            if entry is None:
                # Opened under the lock so two threads of one worker never open the same store twice;
                # opening reads metadata only.
                entry = [open_store(source, list_folders), 0, False]
                self._trees[key] = entry
                self.opened += 1
            self._trees.move_to_end(key)
            entry[1] += 1
        try:
            yield entry[0]
        finally:
            with self._lock:
                entry[1] -= 1
                self._close_unused()

    def forget(self, token: str) -> int:
        """Close the trees of one run (now, or when their last reader is done); returns how many."""
        with self._lock:
            mine = [e for k, e in self._trees.items() if k[1] == token]
            for entry in mine:
                entry[2] = True
            self._close_unused()
        return len(mine)

    def sources(self) -> list[str]:
        """The sources of the open trees, as reports name them (without credentials)."""
        with self._lock:
            return [entry[0].source for entry in self._trees.values()]

    def _close_unused(self) -> None:
        # Called with the lock held.
        excess = len(self._trees) - self.size
        for key, (tree, users, forgotten) in list(self._trees.items()):
            if users == 0 and (forgotten or excess > 0):
                del self._trees[key]
                excess -= 1
                with contextlib.suppress(Exception):  # closing is best effort; the data was read
                    tree.close()


_TREES = _TreeCache()


def scan_block(
    source: str,
    node_path: str,
    rows: RowRange | None,
    requests: Sequence[FactRequest],
    token: str = "",
    block_elements: int = DEFAULT_BLOCK_ELEMENTS,
    list_folders: bool = True,
) -> list[Partials | None]:
    """One task: open `source` on this worker (cached), read the block `rows` of `node_path`, summarise it.

    `list_folders`: as the run's own tree was opened (False: a remote store read without listing, --no-list).

    `rows is None` scans the whole array in sequence (arrays whose blocks can only be read in order).
    Returns the partials in block order: one for a block, one per block for a sequential scan.
    Raises NodeError when the array cannot be read, InputError when the store cannot be opened here.
    """
    with _TREES.tree(source, token, list_folders) as tree:
        node = tree.get(node_path)
        if node is None:
            raise NodeError(f"{node_path}: not found in {tree.source} on the Dask worker")
        scan = ArrayScan(node, tuple(requests), None if rows is None else (tuple(rows),))
        if rows is None:
            return list(_sequential(scan, block_elements, None))
        return [read_and_summarize(node, tuple(rows), scan.requests)]


def forget_trees(token: str) -> int:
    """Close this worker's trees of run `token` (run on every worker at the end of a scan)."""
    return _TREES.forget(token)


def cached_sources() -> list[str]:
    """The sources this worker process holds open (for tests and diagnostics)."""
    return _TREES.sources()


def stores_opened() -> int:
    """How many stores this worker process has opened so far (for tests and diagnostics)."""
    return _TREES.opened


# --- client side -------------------------------------------------------------------------------------


def worker_source(source: str) -> str:
    """The name workers open: local paths made absolute (workers do not share our cwd); URLs unchanged."""
    if "://" in source:
        return source
    return os.path.abspath(source)


@dataclass(frozen=True)
class _Task:
    scan: int  # index into the scans
    block: int  # position of the block in its array (the fold order)
    rows: RowRange | None
    elements: int


class DaskScanner:
    """Runs the array scans as Dask tasks, one per block, and folds the partials in block order.

    Args:
        client_or_address: a `distributed.Client`, or a scheduler address (`tcp://host:8786`) to connect to.
        block_elements: the block size for arrays read in sequence (the planned blocks come with the scans).
        in_flight: tasks submitted at once (default: `IN_FLIGHT_PER_THREAD` per worker thread).
    """

    def __init__(
        self, client_or_address: Client | str, block_elements: int = DEFAULT_BLOCK_ELEMENTS, in_flight: int | None = None
    ) -> None:
        self._own = isinstance(client_or_address, str)
        self.client = connect(client_or_address) if isinstance(client_or_address, str) else client_or_address
        self.block_elements = block_elements
        self.in_flight = in_flight

    def close(self) -> None:
        """Close the client if this scanner opened it."""
        if self._own:
            self.client.close()

    def __enter__(self) -> DaskScanner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, scans: Sequence[ArrayScan], progress: Progress | None = None) -> dict[str, Facts | NodeError]:
        from distributed import as_completed

        token = uuid.uuid4().hex
        tasks = _tasks(scans)
        first = next(tasks, None)
        if first is None:  # nothing to read (no arrays, or only empty ones): no round trip to the cluster
            return {scan.node.path: fold(scan.requests, ()) for scan in scans}
        sources = [worker_source(scan.node.tree.locator or scan.node.tree.source) for scan in scans]
        partials: list[dict[int, list[Partials | None]]] = [{} for _ in scans]
        failed: dict[int, tuple[int, NodeError]] = {}  # scan -> (block, error): the first failing block wins
        cap = self.in_flight or max(8, IN_FLIGHT_PER_THREAD * sum(self.client.nthreads().values()))
        queue = itertools.chain((first,), tasks)
        running: dict[str, tuple[_Task, Any]] = {}  # key -> (task, future)
        # Results are fetched in the client's event loop as tasks finish, not one blocking round trip each.
        done = as_completed(loop=self.client.loop, with_results=True, raise_errors=False)

        def submit(n: int) -> None:
            for task in itertools.islice(queue, n):
                if task.scan in failed:  # the array already failed: do not read the rest of it
                    if progress is not None:
                        progress.advance(task.elements)
                    continue
                scan = scans[task.scan]
                future = self.client.submit(
                    scan_block,
                    sources[task.scan],
                    scan.node.path,
                    task.rows,
                    scan.requests,
                    token,
                    self.block_elements,
                    scan.node.tree.list_folders,
                    key=f"spec-validate-scan-{token}-{task.scan}-{task.block}",
                )
                running[future.key] = (task, future)
                done.add(future)

        try:
            submit(cap)
            for future, result in done:
                task, _ = running.pop(future.key)
                if future.status == "error":
                    _record_failure(task, result[1], failed, scans[task.scan].node.path)  # result: (type, exception, traceback)
                elif isinstance(result, BaseException):  # cancelled behind our back (the cluster shut down)
                    raise SpecValidateError(f"Dask task {future.key} was cancelled ({result})")
                else:
                    partials[task.scan][task.block] = result
                if progress is not None:
                    progress.advance(task.elements)
                submit(1)
        finally:
            if running:  # an error stopped the scan: drop what is still queued or running
                self.client.cancel([f for _, f in running.values()])
            with contextlib.suppress(Exception):  # closing the workers' files is housekeeping, not a result
                self.client.run(forget_trees, token)

        return _gather(scans, partials, failed)


def _tasks(scans: Sequence[ArrayScan]) -> Iterator[_Task]:
    """One task per block of rows of each scan (one for a scan read whole), made as they are submitted: never listed
    up front, since a declared shape may ask for more blocks than memory holds."""
    for i, scan in enumerate(scans):
        if scan.rows is None:
            yield _Task(i, 0, None, scan.elements)
            continue
        per_row = row_elements(scan.node.shape) if scan.node.shape else 1
        for j, rows in enumerate(scan.rows):
            yield _Task(i, j, rows, (rows[1] - rows[0]) * per_row)


def _record_failure(task: _Task, exc: BaseException, failed: dict[int, tuple[int, NodeError]], path: str) -> None:
    """Keep a worker's NodeError as its array's result (the first failing block's), and a block whose workers died
    reading it as one; raise anything else."""
    from distributed import KilledWorker

    if isinstance(exc, KilledWorker):
        # Each worker given the block died (a crash of a native reader, or out of memory): a verdict on reading
        # this array, as a block that does not decode is, not the end of the run.
        rows = "the whole array" if task.rows is None else f"rows {task.rows[0]}..{task.rows[1]}"
        exc = NodeError(f"{path}: the Dask worker reading {rows} died ({_workers(exc.allowed_failures + 1)} tried in turn)")
    if isinstance(exc, NodeError):
        # A fresh NodeError: the message only, without the remote traceback.
        if task.scan not in failed or task.block < failed[task.scan][0]:
            # NotDecoded stays NotDecoded: its array is not checked, not reported as unreadable.
            kind = NotDecoded if isinstance(exc, NotDecoded) else NodeError
            failed[task.scan] = (task.block, kind(str(exc)))
    elif isinstance(exc, InputError):
        raise InputError(f"{exc} (on a Dask worker: workers must reach the store at the same path or URL)") from None
    else:
        raise exc  # a bug: as in the serial scanner, not a verdict on the array


def _workers(count: int) -> str:
    return "1 worker" if count == 1 else f"{count} workers"


def _gather(
    scans: Sequence[ArrayScan], partials: list[dict[int, list[Partials | None]]], failed: dict[int, tuple[int, NodeError]]
) -> dict[str, Facts | NodeError]:
    """Each array's facts, folded from its blocks' partials in row order, or its NodeError."""
    results: dict[str, Facts | NodeError] = {}
    for i, scan in enumerate(scans):
        if i in failed:
            results[scan.node.path] = failed[i][1]
        else:
            ordered = (p for j in sorted(partials[i]) for p in partials[i][j])
            results[scan.node.path] = fold(scan.requests, ordered)
    return results


def connect(address: str, timeout: float | None = None) -> Client:
    """A client of the scheduler at `address`; SpecValidateError (one line) when none answers."""
    try:
        from distributed import Client
    except ImportError:
        raise SpecValidateError("--dask needs dask and distributed: pip install 'spec-validate[dask]'") from None
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        # Checked before connecting: a Client that fails on a malformed address hangs in __del__ at exit.
        scheme, location = parse_address(address)
        if scheme not in NETWORK_SCHEMES:
            raise ValueError(f"{scheme}:// is not a protocol another process can connect over")
        if scheme in ("tcp", "tls"):
            parse_host_port(location)
    except ValueError as exc:
        raise SpecValidateError(
            f"--dask {address}: not a scheduler address ({exc}; expected tcp://host:port, local or local:N)"
        ) from None
    try:
        return Client(address, timeout=timeout or CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SpecValidateError(f"--dask {address}: cannot connect to a Dask scheduler ({first})") from None


def parse_local(address: str) -> int | None:
    """Workers for a `local` / `local:N` address (None for a scheduler address)."""
    if address == "local":
        return default_workers()
    if address.startswith("local:"):
        text = address[len("local:") :]
        if not text.isdigit() or int(text) < 1:
            raise SpecValidateError(f"--dask {address}: expected local or local:N with N a whole number of workers, 1 or more")
        return int(text)
    return None


@contextlib.contextmanager
def dask_client(address: str, children: bool = False) -> Iterator[Client]:
    """A client of the scheduler at `address`, or of a LocalCluster for `local` / `local:N` (N worker processes).

    `children`: the tasks start processes of their own (`validate_on_dask`), which a daemonic process may not: the
    local workers are started as ordinary processes, and a scheduler's workers are asked whether they are."""
    workers = parse_local(address)
    if workers is None:
        client = connect(address)
        try:
            if children:
                _check_workers_may_start_processes(client, address)
            yield client
        finally:
            client.close()
        return
    try:
        import logging

        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise SpecValidateError("--dask needs dask and distributed: pip install 'spec-validate[dask]'") from None
    threads = max(1, default_workers() // workers)
    # Logs silenced: workers log heartbeat errors while the cluster shuts down; task errors reach us anyway.
    with (
        dask.config.set({"distributed.worker.daemon": not children}),
        LocalCluster(
            n_workers=workers, threads_per_worker=threads, processes=True, dashboard_address=None, silence_logs=logging.CRITICAL
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        yield client


def _is_daemon() -> bool:
    import multiprocessing

    return bool(multiprocessing.current_process().daemon)


def _check_workers_may_start_processes(client: Client, address: str) -> None:
    """SpecValidateError (one line) when a worker of the cluster is a daemonic process, which may start none."""
    try:
        daemonic = client.run(_is_daemon)
    except Exception:  # noqa: BLE001 (a worker that does not answer: its tasks say so, input by input)
        return
    if any(daemonic.values()):
        raise SpecValidateError(
            f"--dask {address} with --timeout: each input runs in a child process of its worker, and these workers "
            "are daemonic processes, which may start none; start them with DASK_DISTRIBUTED__WORKER__DAEMON=False "
            "in their environment (or dask worker --no-nanny)"
        )


# --- several inputs: one task each ---------------------------------------------------------------------

# Inputs a worker validates at once per thread of its own. A small store behind a URL is mostly waiting: a
# round trip per level of its tree, a request per document the listing does not answer for. One input at a
# time per thread leaves the core idle for most of the run; several overlap their waits (docs/scaling.md has
# the benchmark that chose this number). Each holds its own block in memory while it scans, so this many
# blocks per thread at most.
INPUTS_PER_THREAD = 8

_SLOTS_LOCK = threading.Lock()
_SLOTS: dict[tuple[str, int], threading.Semaphore] = {}  # (worker address, inputs it may validate at once) -> its slots


def validate_input(validate_one: Callable[..., Report], job: tuple, per_thread: int = INPUTS_PER_THREAD) -> Report:
    """One task: `validate_one(*job)` on a worker, among at most `per_thread` inputs per worker thread at once.

    The task waits for one of the worker's input slots while holding its Dask thread (so the scheduler sends it
    no more inputs than it can start), then leaves the thread pool (`distributed.secede`): the next task takes
    the thread and waits for a slot in turn. Outside a worker, the input is validated at once.
    """
    try:
        from distributed import get_worker, secede

        worker = get_worker()
    except (ImportError, ValueError):
        return validate_one(*job)
    with _SLOTS_LOCK:
        size = max(1, worker.state.nthreads * per_thread)
        slots = _SLOTS.setdefault((worker.address, size), threading.Semaphore(size))
    with slots:
        secede()
        return validate_one(*job)


def iter_on_dask(
    client: Client, jobs: Sequence[tuple], validate_one: Callable[..., Report], per_thread: int | None = None
) -> Iterator[tuple[int, Report]]:
    """(index in `jobs`, report) of each input as its task finishes, each input one task on the cluster.

    `jobs` are the arguments of `spec_validate.cli._validate_one` (the input, select, ignore, extend, pack files,
    threads). A task that fails is its input's report, never the end of the run: a worker that died running it
    (the scheduler gave it to `allowed-failures` workers in turn) is an unreadable record, any other failure the
    input's error. A bad rule pack is raised: it is every input's. `per_thread`: inputs a worker validates at once
    per thread (default: INPUTS_PER_THREAD).
    """
    from distributed import as_completed

    per_thread = per_thread or INPUTS_PER_THREAD
    token = uuid.uuid4().hex
    nthreads = client.nthreads().values()
    # Scan threads per input: the cluster's threads shared out among the inputs, a worker's worth at most.
    threads = max(1, min(max(nthreads, default=1), sum(nthreads) // max(1, len(jobs))))
    futures = {}
    for i, (item, select, ignore, extend, pack_files, _threads) in enumerate(jobs):
        packs = tuple(worker_source(str(f)) for f in pack_files)  # --pack files too are opened on the worker
        job = (item._replace(path=worker_source(item.path)), select, ignore, extend, packs, threads)
        future = client.submit(validate_input, validate_one, job, per_thread, key=f"spec-validate-input-{token}-{i}", pure=False)
        futures[future.key] = (i, future)
    rules: dict[tuple[str, str], Any] = {}
    try:
        for future in as_completed([f for _, f in futures.values()], loop=client.loop):
            i, _ = futures.pop(future.key)
            yield i, _input_report(jobs[i][0], future, rules)
    finally:
        if futures:  # stopped early (a bad pack, an interrupt): drop what is still queued or running
            client.cancel([f for _, f in futures.values()])


def _input_report(item: Any, future: Any, rules: dict[tuple[str, str], Any]) -> Report:
    """The report of the input `item` from its finished task: as the worker made it, or one naming why it has none.
    `rules`: the rules the earlier reports of the run brought (`Report.sharing_rules`)."""
    from distributed import KilledWorker

    from spec_validate.errors import PackError
    from spec_validate.model import Problem, Report
    from spec_validate.version import __version__

    shown = _shown(item.path)
    if future.status == "finished":
        report = future.result()
        # Workers opened the absolute path; the report names the input as the user gave it, its error too.
        if report.error is not None:
            report = dataclasses.replace(report, error=_as_given(report.error, worker_source(shown), shown))
        return dataclasses.replace(report.sharing_rules(rules), source=shown)
    exc = future.exception() if future.status == "error" else None
    if isinstance(exc, PackError):
        raise PackError(str(exc)) from None
    if isinstance(exc, KilledWorker):
        # As a reader that crashed under --timeout: an unreadable record of the input (exit 1), the others go on.
        message = (
            f"the Dask worker validating it died ({_workers(exc.allowed_failures + 1)} tried in turn): a crash of a "
            "native reader on this input, or a worker out of memory (run with --timeout to validate each input in a "
            "process of its own)"
        )
        return Report(shown, "", (), __version__, (), (Problem(item.node, message, item.node),), node=item.node)
    if exc is None:  # cancelled: the cluster shut down, or the scheduler lost the task
        why = f"its Dask task was {future.status}"
    else:
        first = (str(exc).strip().splitlines() or [""])[0]
        why = f"its Dask task failed ({type(exc).__name__}{': ' + first if first else ''})"
    return Report(shown, "", (), __version__, (), node=item.node, error=f"{shown}: {why}")


def _shown(path: str) -> str:
    """The input as reports name it: a URL without user:password or query string (a signed URL's token)."""
    if "://" not in path:
        return path
    from spec_validate.storage.remote import redact_url

    return redact_url(path)


def _as_given(error: str, opened: str, given: str) -> str:
    """A worker's error about the input, naming it as the user gave it; where the worker found no file that is here,
    with the hint that workers must see it (the same error as a local run's otherwise)."""
    if opened != given and error.startswith(opened):
        error = given + error[len(opened) :]
    if "://" not in given and os.path.exists(given) and error.endswith(("no such file or directory", "permission denied")):
        error += " (on a Dask worker: workers must reach the store at the same path or URL)"
    return error


def validate_on_dask(
    address: str,
    jobs: Sequence[tuple],
    validate_one: Callable[..., Report],
    children: bool = False,
    progress: Any = None,
    emit: Callable[[int, Report], None] | None = None,
) -> list[Report]:
    """Validate the inputs on the cluster at `address`; reports in input order.

    `jobs` are the arguments of `spec_validate.cli._validate_one` (the input, select, ignore, extend, pack files,
    threads), `validate_one` that function. One input: opened here, its blocks scanned as Dask tasks. Several
    inputs: each is one task validating the whole input on a worker (`iter_on_dask`), whose block scans run on
    threads of that worker (not as nested tasks). `children`: `validate_one` runs each input in a child process
    (`--timeout`): every input is then one task, even alone. `progress` counts the inputs finished. With `emit`,
    each report is handed to it (with its input's position in `jobs`) as its task finishes, and none is kept: the
    list returned is empty.
    """
    with dask_client(address, children) as client:
        if len(jobs) == 1 and not children:
            reports = [validate_one(*jobs[0], scanner=DaskScanner(client))]
            if emit is None:
                return reports
            emit(0, reports[0])
            return []
        kept: dict[int, Report] = {}
        if progress is not None:
            progress.start(len(jobs))
        try:
            for i, report in iter_on_dask(client, jobs, validate_one):
                if emit is None:
                    kept[i] = report
                else:
                    emit(i, report)
                if progress is not None:
                    progress.advance(1)
        finally:
            if progress is not None:
                progress.finish()
        return [kept[i] for i in range(len(jobs))] if emit is None else []
