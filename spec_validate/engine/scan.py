"""The array pass: every requested kernel over each array, block by block, as map (per block) + combine.

The engine asks for facts per array (`ArrayScan`); a scanner reads the blocks, runs every kernel's
`summarize` on each (the map), and folds the partials in block order with `combine`. Because the fold
order is fixed and `combine` is associative, the serial scanner, the thread pool and Dask tasks give
identical facts, down to the index and values of the first offending element.
"""

from __future__ import annotations

import functools
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NamedTuple, Protocol

import numpy as np

from spec_validate.engine import activity
from spec_validate.errors import NodeError
from spec_validate.kernels import registry as kernels
from spec_validate.kernels.block import Block
from spec_validate.kernels.facts import FactRequest
from spec_validate.nodes.base import DEFAULT_BLOCK_ELEMENTS, Node, RowRange, describe, row_elements

Partials = dict[FactRequest, Any]
Facts = dict[FactRequest, Any]


class ArrayScan(NamedTuple):
    """What to compute over one array, and which of its blocks to read (None: in sequence via `blocks()`).

    `rows` is a sequence computed on demand for a full scan (`nodes.base.RowRanges`): never listed up front.
    """

    node: Node
    requests: tuple[FactRequest, ...]
    rows: Sequence[RowRange] | None

    @property
    def elements(self) -> int:
        """How many elements the scan reads (for progress)."""
        try:
            if self.rows is None or not self.node.shape:
                return self.node.size or 0
            if not isinstance(self.rows, tuple):  # every block: the whole array
                return self.node.size or 0
            per_row = row_elements(self.node.shape)
            return sum((stop - start) * per_row for start, stop in self.rows)
        except NodeError:
            return 0


class Progress(Protocol):
    """Told how much there is to read, then how much has been read (elements), then that it is done."""

    def start(self, total: int) -> None: ...
    def advance(self, elements: int) -> None: ...
    def finish(self) -> None: ...


def plan(node: Node, requests: Iterable[FactRequest], block_elements: int = DEFAULT_BLOCK_ELEMENTS) -> ArrayScan:
    """The blocks to read for `requests`: all of them, or the first and last when every request needs only edges."""
    wanted = tuple(sorted(set(requests), key=_order_key))
    try:
        rows = node.block_rows(block_elements)
        if rows is not None and all(r.edges_only for r in wanted):
            rows = () if not node.size or not len(rows) else tuple(sorted({tuple(rows[0]), tuple(rows[-1])}))
    except Exception:  # noqa: BLE001 (read in sequence: blocks() raises the same error inside the scanner, onto this array's rules)
        rows = None
    return ArrayScan(node, wanted, rows)


@functools.lru_cache(maxsize=4096)
def _order_key(request: FactRequest) -> str:
    """The request's place in a plan: its repr, worked out once (thousands of small arrays share a few requests, and
    a named tuple's repr costs more than the rest of planning one of them)."""
    return repr(request)


class Damaged(NamedTuple):
    """A value kernel's result where a block it needed did not decode: the first problem, in one line.

    `not_decoded`: the block is whole, only not read (a chunk whose pickle calls a class): the clauses are not
    checked, as for an array whose codec is not decoded, and nothing is reported as unreadable.
    """

    message: str
    not_decoded: bool = False


def summarize(block: Block, requests: Sequence[FactRequest], path: str = "") -> Partials | None:
    """The map step: every kernel's partial result for one block (None for an empty block).

    A block some of whose chunks did not decode still feeds the kernels that read the chunk records
    (`Kernel.reads_chunks`); every other kernel gets `Damaged` instead, since those values are not the array's. A
    block whose values are not the array's though its chunks decoded (`Block.values_problem`), or that holds a chunk
    which is whole but not read (`ChunkRead.unread`: its pickle calls a class), feeds only the kernels that read the
    chunk records and no value (`Kernel.reads_values` False); a chunk not read makes the others' `Damaged` say
    `not_decoded`.
    """
    if not block.size and not block.chunks and not block.shards:
        return None
    damage, unread = block.damage(), block.unread()
    out: Partials = {}
    fields: dict[str, Block] = {}
    for r in requests:
        kernel = kernels.get(r.kernel)
        if kernel.reads_chunks and kernel.reads_values and block.values_problem is not None:
            out[r] = Damaged(block.values_problem)
        elif kernel.reads_chunks and kernel.reads_values and unread is not None:
            out[r] = Damaged(unread, not_decoded=True)
        elif kernel.reads_chunks:
            out[r] = kernel.summarize(block, **dict(r.params))
        elif damage is not None:
            out[r] = Damaged(damage)
        elif unread is not None:
            out[r] = Damaged(unread, not_decoded=True)
        elif block.size:
            read = block if r.field is None else fields.get(r.field)
            if read is None:
                read = fields[r.field] = _field(block, r.field)
            out[r] = kernel.summarize(read, **dict(r.params))
    return out


def _field(block: Block, name: str) -> Block:
    """The block with one field of its records as its values (contiguous, as kernels read them; a uniform block
    stays a broadcast view)."""
    values = block.values[name]
    return block._replace(values=values if block.uniform else np.ascontiguousarray(values))


def fold(requests: Sequence[FactRequest], partials: Iterable[Partials | None]) -> Facts:
    """The combine step, left to right in block order; None for a request no block contributed to.

    The first `Damaged` partial of a request is its result: values after a chunk that did not decode are
    not worth combining.
    """
    facts: Facts = {r: None for r in requests}
    for partial in partials:
        if partial is None:
            continue
        for r in requests:
            if r not in partial or isinstance(facts[r], Damaged):
                continue
            if facts[r] is None or isinstance(partial[r], Damaged):
                facts[r] = partial[r]
            else:
                facts[r] = kernels.get(r.kernel).combine(facts[r], partial[r], **dict(r.params))
    return facts


def read(node: Node, rows: RowRange, requests: Sequence[FactRequest], fetched: Any = None) -> Block:
    """The block `rows` as the requests need it: only its shard indexes when no kernel asked reads anything else
    (no value is decoded), its values and their shard indexes when both are asked for, else its values.
    `fetched`: what `node.fetch_ahead(rows)` started, if anything."""
    wants_shards = [kernels.get(r.kernel).reads_shard_indexes for r in requests]
    if wants_shards and all(wants_shards):
        return node.read_shard_indexes(rows)
    block = node.read_block(rows) if fetched is None else node.read_block(rows, fetched)
    if any(wants_shards) and not block.shards:
        block = block._replace(shards=node.read_shard_indexes(rows).shards)
    return block


def read_and_summarize(node: Node, rows: RowRange, requests: Sequence[FactRequest], fetched: Any = None) -> Partials | None:
    """One task: read one block and summarise it. Any failure is a NodeError naming the array."""
    activity.reading("reading ", node.path, f" rows {rows[0]}..{rows[1]}")
    try:
        block = read(node, rows, requests, fetched)
    except NodeError:
        raise
    except Exception as exc:  # noqa: BLE001 (a backend's failure on this block: this array's, not the run's)
        raise NodeError(f"{node.path}: rows {rows[0]}..{rows[1]} cannot be read ({describe(exc)})") from None
    return _summarize_guarded(block, requests, node.path)


class KernelFailed(NodeError):
    """A kernel raised on an array's values: a bug, or values no kernel expected. The array's clauses are in error
    (the tool's failure, not the store's), where a block that cannot be read is an unreadable record."""


def _summarize_guarded(block: Block, requests: Sequence[FactRequest], path: str) -> Partials | None:
    """`summarize`, with a kernel's own failure (a bug, or values no kernel expected) turned into a NodeError on
    this array: its clauses are in error, and the rest of the run goes on."""
    try:
        return summarize(block, requests, path)
    except NodeError:
        raise
    except Exception as exc:  # noqa: BLE001 (one array's error, never the run's)
        raise KernelFailed(f"{path}: a kernel failed on these values ({describe(exc)})") from None


def _sequential(scan: ArrayScan, block_elements: int, progress: Progress | None) -> Iterator[Partials | None]:
    if scan.rows is not None:
        for rows in scan.rows:
            partial = read_and_summarize(scan.node, rows, scan.requests)
            yield partial
            if progress is not None:
                progress.advance((rows[1] - rows[0]) * (row_elements(scan.node.shape) if scan.node.shape else 1))
        return
    activity.reading(f"reading {scan.node.path}")
    blocks = scan.node.blocks(block_elements)
    while True:
        try:
            block = next(blocks, None)
        except NodeError:
            raise
        except Exception as exc:  # noqa: BLE001 (a backend's failure: this array's, not the run's)
            raise NodeError(f"{scan.node.path}: cannot be read ({describe(exc)})") from None
        if block is None:
            return
        partial = _summarize_guarded(block, scan.requests, scan.node.path)
        yield partial
        if progress is not None:
            progress.advance(block.size)


class Scanner(Protocol):
    def run(self, scans: Sequence[ArrayScan], progress: Progress | None = None) -> dict[str, Facts | NodeError]: ...


class SerialScanner:
    """Reads and summarises every block in the calling thread."""

    def __init__(self, block_elements: int = DEFAULT_BLOCK_ELEMENTS) -> None:
        self.block_elements = block_elements

    def run(self, scans: Sequence[ArrayScan], progress: Progress | None = None) -> dict[str, Facts | NodeError]:
        results: dict[str, Facts | NodeError] = {}
        for scan in scans:
            try:
                results[scan.node.path] = fold(scan.requests, _sequential(scan, self.block_elements, progress))
            except NodeError as exc:
                # Kept without its traceback: its frames hold the backend's objects (an HDF5 dataset), which must be
                # released with the tree, not at interpreter exit (see `nodes.hdf5.HDF5Tree.close`).
                results[scan.node.path] = exc.with_traceback(None)
            except Exception as exc:  # noqa: BLE001 (a kernel's combine on values it cannot compare: this array's)
                results[scan.node.path] = KernelFailed(f"{scan.node.path}: a kernel failed on these values ({describe(exc)})")
        return results


# Threads for a remote store: its block reads mostly wait on the network, so more of them than cores overlap
# round trips (each block's chunks are fetched together as well); the elements in flight stay bounded.
REMOTE_THREADS = 16


class ThreadScanner:
    """Reads and summarises blocks on a thread pool, a bounded number in flight; folds in block order.

    Decompression (zlib, blosc, zstd), direct `preadv` reads and numpy reductions release the GIL, so
    blocks of one array, and of several arrays, proceed in parallel. Arrays whose blocks can only be
    read in sequence run as one task each; the small blocks of a local store (dataframe columns) run many to
    a task (see `_batched`). In flight: at most 2 tasks per thread, and at most 2 full blocks' worth of
    elements per worker, so memory stays a few blocks whatever the file. For a remote store, the blocks next in
    line while that window is full have their stored bytes fetched ahead (`Node.fetch_ahead`), as many elements'
    worth as the window holds: the network is kept busy while blocks decode, so a scan waits on its latency about
    once, not once per window; what is held then is also those blocks' stored (usually compressed) bytes.
    """

    def __init__(self, workers: int, block_elements: int = DEFAULT_BLOCK_ELEMENTS) -> None:
        self.workers = max(1, workers)
        self.block_elements = block_elements

    def run(self, scans: Sequence[ArrayScan], progress: Progress | None = None) -> dict[str, Facts | NodeError]:
        partials: list[list[Partials | None]] = [[] for _ in scans]
        failed: dict[int, NodeError] = {}
        remote = any(s.node.tree.remote for s in scans)
        threads = max(self.workers, REMOTE_THREADS) if remote else self.workers
        budget = 2 * self.workers * self.block_elements
        # A remote store's small reads (a dataframe column's one chunk) go past a window full of large blocks: each
        # is a round trip holding little, and held back it would start only when the large blocks are done, one
        # latency after the rest. (Reading the small arrays first instead spread the large blocks over more threads,
        # whose malloc arenas kept about 60 MB more resident.) At most 2 tasks per thread: bounded still.
        exempt = max(1, self.block_elements // SMALL_BLOCK_FRACTION) if remote else 0
        with ThreadPoolExecutor(threads, thread_name_prefix="spec-validate-scan") as pool:
            pending: deque[tuple[Future, int]] = deque()
            ahead: deque[tuple[Work, int]] = deque()  # next in line, their stored bytes fetched ahead (remote only)
            in_flight = ahead_size = 0
            tasks = _tasks(scans, self.block_elements, failed)
            queue = tasks if remote else _batched(tasks, self.block_elements)
            upcoming = next(queue, None)
            while upcoming is not None or ahead or pending:
                # Submit in order while the window has room (always at least one task in flight).
                while (task := ahead[0] if ahead else upcoming) is not None and (
                    len(pending) < 2 * threads and (not pending or in_flight + task[1] <= budget or task[1] < exempt)
                ):
                    if ahead:
                        ahead.popleft()
                        ahead_size -= task[1]
                        if all(i in failed for i, _ in task[0]):
                            continue  # its array failed while it waited: its result is that failure, not read
                    else:
                        upcoming = next(queue, None)
                    pending.append((pool.submit(_run_all, task[0]), task[1]))
                    in_flight += task[1]
                while (
                    remote
                    and upcoming is not None
                    and len(ahead) < 2 * threads
                    and (not ahead or ahead_size + upcoming[1] <= budget or upcoming[1] < exempt)
                ):
                    _fetch_ahead(upcoming[0])
                    ahead.append(upcoming)
                    ahead_size += upcoming[1]
                    upcoming = next(queue, None)
                future, size = pending.popleft()
                in_flight -= size
                for i, outcome in future.result():
                    if isinstance(outcome, NodeError):
                        failed.setdefault(i, outcome.with_traceback(None))  # see SerialScanner.run
                    elif isinstance(outcome, Exception):  # a sequential scan's own failure: this array's, not the run's
                        failed.setdefault(i, KernelFailed(f"{scans[i].node.path}: a kernel failed ({describe(outcome)})"))
                    else:
                        partials[i].extend(outcome)
                if progress is not None:
                    progress.advance(size)
        return _fold_all(scans, partials, failed)


Work = list[tuple[int, Callable[[], list[Partials | None]]]]  # (scan index, one read) in order


class _BlockRead:
    """One block of one scan, read and summarised when called; `fetch_ahead` starts fetching its stored bytes
    first (a remote store), and the read takes them."""

    __slots__ = ("fetched", "rows", "scan")

    def __init__(self, scan: ArrayScan, rows: RowRange) -> None:
        self.scan, self.rows, self.fetched = scan, rows, None

    def fetch_ahead(self) -> None:
        try:
            self.fetched = self.scan.node.fetch_ahead(self.rows)
        except Exception:  # noqa: BLE001 (nothing fetched ahead: the read meets the problem and reports it)
            self.fetched = None

    def __call__(self) -> list[Partials | None]:
        fetched, self.fetched = self.fetched, None  # held no longer than the read
        return [read_and_summarize(self.scan.node, self.rows, self.scan.requests, fetched)]


def _fetch_ahead(work: Work) -> None:
    """Start fetching the stored bytes of a task's blocks (those read in sequence fetch nothing ahead)."""
    for _, read_one in work:
        if isinstance(read_one, _BlockRead):
            read_one.fetch_ahead()


def _run_all(work: Work) -> list[tuple[int, list[Partials | None] | Exception]]:
    """Each read of one task in order, with its scan's index; a read that raises gives its exception, and the
    same scan's later reads in the task are skipped (its result is its first failure)."""
    out: list[tuple[int, list[Partials | None] | Exception]] = []
    failed: set[int] = set()
    for i, read_one in work:
        if i in failed:
            continue
        try:
            out.append((i, read_one()))
        except Exception as exc:  # noqa: BLE001 (this array's failure, sorted out by the caller)
            failed.add(i)
            out.append((i, exc))
    return out


# A local block this small (under 1/64 of a full block) costs more to hand to a thread than to read: a dataframe
# column of a thousand values is a few hundred microseconds of Python holding the GIL (and, for HDF5, h5py's
# lock), and two threads doing that contend for it. Such reads run in order, many to a task: a full block's
# worth of elements, or BATCH_READS reads. A remote store's small reads are not joined: they wait on the network.
SMALL_BLOCK_FRACTION = 64
BATCH_READS = 4096


def _batched(tasks: Iterator[tuple[Work, int]], block_elements: int) -> Iterator[tuple[Work, int]]:
    """The tasks, with runs of small ones joined into one (up to a full block's elements, or BATCH_READS reads)."""
    small = max(1, block_elements // SMALL_BLOCK_FRACTION)
    batch: Work = []
    batch_size = 0
    for work, size in tasks:
        if size >= small:
            if batch:
                yield batch, batch_size
                batch, batch_size = [], 0
            yield work, size
            continue
        batch.extend(work)
        batch_size += size
        if batch_size >= block_elements or len(batch) >= BATCH_READS:
            yield batch, batch_size
            batch, batch_size = [], 0
    if batch:
        yield batch, batch_size


def _tasks(scans: Sequence[ArrayScan], block_elements: int, failed: Mapping[int, NodeError]) -> Iterator[tuple[Work, int]]:
    """(work, elements) for every block of every scan, made as they are taken (never listed up front: a declared
    shape may ask for more blocks than memory holds). A scan in `failed` gets no more blocks: its result is its
    failure whatever the rest would say, and an array whose every block fails the same way (a layout that is not
    read) may declare millions of them."""
    for i, scan in enumerate(scans):
        if scan.rows is None:
            yield [(i, lambda s=scan: list(_sequential(s, block_elements, None)))], scan.elements
            continue
        per_row = row_elements(scan.node.shape) if scan.node.shape else 1
        for rows in scan.rows:
            if i in failed:
                break
            yield [(i, _BlockRead(scan, rows))], (rows[1] - rows[0]) * per_row


def _fold_all(
    scans: Sequence[ArrayScan], partials: list[list[Partials | None]], failed: dict[int, NodeError]
) -> dict[str, Facts | NodeError]:
    """Each scan's facts from its partials, or its failure."""
    results: dict[str, Facts | NodeError] = {}
    for i, scan in enumerate(scans):
        try:
            results[scan.node.path] = failed[i] if i in failed else fold(scan.requests, partials[i])
        except Exception as exc:  # noqa: BLE001 (a kernel's combine on values it cannot compare: this array's)
            results[scan.node.path] = KernelFailed(f"{scan.node.path}: a kernel failed on these values ({describe(exc)})")
    return results


def default_workers() -> int:
    """One scan thread per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def make_scanner(workers: int | None = None, block_elements: int = DEFAULT_BLOCK_ELEMENTS) -> Scanner:
    """A serial scanner for one worker, else a thread pool of `workers` (default: the cores available)."""
    n = default_workers() if workers is None else workers
    return SerialScanner(block_elements) if n <= 1 else ThreadScanner(n, block_elements)
