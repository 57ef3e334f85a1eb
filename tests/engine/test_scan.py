"""The array pass: serial and threaded scanners give identical facts, read each block once, in bounded flight."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from memory_tree import Arr, MemoryNode, tree

from spec_validate.engine.scan import ArrayScan, SerialScanner, ThreadScanner, make_scanner, plan
from spec_validate.errors import NodeError
from spec_validate.kernels.facts import FactRequest

DECREASES = FactRequest("find_decreases", (("limit", 3),))
BOUNDS = FactRequest("count_outside", (("high", 99), ("limit", 4), ("low", 0)))
ENDS = FactRequest("first_last", edges_only=True)


def facts(scanner, node, requests, block_elements):
    return scanner.run([plan(node, requests, block_elements)])[node.path]


def expected_first_decreases(a: np.ndarray, limit: int) -> list[int]:
    return [int(i) + 1 for i in np.flatnonzero(a[1:] < a[:-1])[:limit]]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("block_elements", [1, 7, 64, 10_000])
def test_scanners_pass_identical_facts_whatever_the_blocks(seed, block_elements):
    rng = np.random.default_rng(seed)
    a = np.cumsum(rng.integers(0, 3, size=1000))
    a[rng.integers(1, 1000, size=5)] -= 50  # decreases (and values below 0) at random places
    a[rng.integers(0, 1000, size=3)] = 500  # values above 99
    node = tree({"a": Arr(a, chunks=(7,))}).get("/a")
    requests = {DECREASES, BOUNDS, ENDS}
    serial = facts(SerialScanner(block_elements), node, requests, block_elements)
    for workers in (2, 3, 5):
        assert facts(ThreadScanner(workers, block_elements), node, requests, block_elements) == serial
    assert [d.index for d in serial[DECREASES].found] == expected_first_decreases(a, 3)
    assert serial[DECREASES].count == int(np.count_nonzero(a[1:] < a[:-1]))
    outside = np.flatnonzero((a < 0) | (a > 99))
    assert [o.index for o in serial[BOUNDS].found] == outside[:4].tolist() and serial[BOUNDS].count == outside.size
    assert (serial[ENDS].first, serial[ENDS].last) == (a[0], a[-1])


def test_scanners_pass_two_dimensional_flat_indices():
    a = np.arange(60).reshape(12, 5)
    a[7, 3] = -1
    node = tree({"a": Arr(a, chunks=(2, 5))}).get("/a")
    for scanner in (SerialScanner(10), ThreadScanner(2, 10)):
        got = facts(scanner, node, {BOUNDS}, 10)[BOUNDS]
        assert [o.index for o in got.found] == [7 * 5 + 3]


def test_plan_passes_edges_only_reads_first_and_last_block():
    t = tree({"a": Arr(np.arange(100), chunks=(10,))})
    scan = plan(t.get("/a"), {ENDS}, 10)
    assert scan.rows == ((0, 10), (90, 100))
    got = ThreadScanner(2, 10).run([scan])["/a"][ENDS]
    assert (got.first, got.last, got.last_index) == (0, 99, 99)
    assert sorted(t.block_reads["/a"]) == [(0, 10), (90, 100)]


def test_plan_passes_empty_array_reads_nothing():
    t = tree({"a": Arr(np.arange(0), chunks=(10,))})
    assert SerialScanner(10).run([plan(t.get("/a"), {ENDS, DECREASES}, 10)])["/a"] == {ENDS: None, DECREASES: None}


def test_thread_scanner_passes_every_block_once_with_bounded_flight(monkeypatch):
    t = tree({"a": Arr(np.arange(1000), chunks=(10,)), "b": Arr(np.arange(500), chunks=(10,))})
    in_flight, peak, lock = [0], [0], threading.Lock()
    real = MemoryNode.read_block

    def read_block(self, rows):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        try:
            return real(self, rows)
        finally:
            with lock:
                in_flight[0] -= 1

    monkeypatch.setattr(MemoryNode, "read_block", read_block)
    scans = [plan(t.get(p), {DECREASES}, 10) for p in ("/a", "/b")]
    ThreadScanner(3, 10).run(scans)
    assert sorted(t.block_reads["/a"]) == [(i, i + 10) for i in range(0, 1000, 10)]
    assert sorted(t.block_reads["/b"]) == [(i, i + 10) for i in range(0, 500, 10)]
    assert peak[0] <= 6


class Recorder:
    def __init__(self) -> None:
        self.total, self.done, self.finished = None, 0, False

    def start(self, total: int) -> None:
        self.total = total

    def advance(self, elements: int) -> None:
        self.done += elements

    def finish(self) -> None:
        self.finished = True


@pytest.mark.parametrize("scanner", [SerialScanner(10), ThreadScanner(2, 10)], ids=["serial", "threads"])
def test_scanners_pass_progress_counts_every_element(scanner):
    t = tree({"a": Arr(np.arange(95).reshape(19, 5), chunks=(2, 5)), "b": Arr(np.arange(33), chunks=(4,))})
    scans = [plan(t.get("/a"), {BOUNDS}, 10), plan(t.get("/b"), {DECREASES}, 10)]
    progress = Recorder()
    progress.start(sum(s.elements for s in scans))
    scanner.run(scans, progress)
    assert progress.total == progress.done == 95 + 33


def test_thread_scanner_error_stays_on_its_array(monkeypatch):
    t = tree({"a": Arr(np.arange(100), chunks=(10,)), "b": Arr(np.arange(100), chunks=(10,))})
    real = MemoryNode.read_block

    def read_block(self, rows):
        if self.path == "/a" and rows == (50, 60):
            raise NodeError("/a: chunk 5 is corrupt")
        return real(self, rows)

    monkeypatch.setattr(MemoryNode, "read_block", read_block)
    out = ThreadScanner(2, 10).run([plan(t.get(p), {DECREASES}, 10) for p in ("/a", "/b")])
    assert isinstance(out["/a"], NodeError) and "chunk 5" in str(out["/a"])
    assert out["/b"][DECREASES].count == 0


def test_plan_passes_sequential_when_node_cannot_list_blocks():
    t = tree({"g": {}})
    scan = plan(t.get("/g"), {DECREASES})
    assert isinstance(scan, ArrayScan) and scan.rows is None
    assert isinstance(SerialScanner().run([scan])["/g"], NodeError)


def test_make_scanner_passes_serial_for_one_worker():
    assert isinstance(make_scanner(1), SerialScanner) and isinstance(make_scanner(3), ThreadScanner)


def test_scan_passes_a_kernel_failure_is_this_arrays_error_not_the_runs(monkeypatch):
    """A kernel that raises on values it did not expect puts that array's clauses in error; the run goes on."""
    from memory_tree import tree

    from spec_validate.engine.scan import SerialScanner, ThreadScanner, plan
    from spec_validate.kernels import registry
    from spec_validate.kernels.facts import FactRequest

    def boom(block, **params):
        raise TypeError("no such values")

    monkeypatch.setitem(registry.KERNELS, "first_last", registry.get("first_last")._replace(summarize=boom))
    t = tree({"a": np.arange(10), "b": np.arange(5)})
    scans = [plan(t.get("/a"), [FactRequest("first_last")]), plan(t.get("/b"), [FactRequest("find_decreases", (("limit", 3),))])]
    for scanner in (SerialScanner(), ThreadScanner(2)):
        got = scanner.run(scans)
        assert isinstance(got["/a"], NodeError) and "TypeError: no such values" in str(got["/a"])
        assert got["/b"][FactRequest("find_decreases", (("limit", 3),))].count == 0


def test_thread_scanner_fails_array_reads_no_block_after_its_failure(monkeypatch):
    """An array whose every block fails (a layout that is not read, with a declared shape of millions of blocks)
    costs a few reads, not one per declared block: its result is its first failure whatever the rest say."""
    t = tree({"a": Arr(np.arange(100_000), chunks=(1,)), "b": Arr(np.arange(100), chunks=(10,))})
    calls = {"/a": 0}
    real = MemoryNode.read_block

    def read_block(self, rows):
        if self.path == "/a":
            calls["/a"] += 1
            raise NodeError("/a: array metadata is unusable, data cannot be read")
        return real(self, rows)

    monkeypatch.setattr(MemoryNode, "read_block", read_block)
    out = ThreadScanner(2, 1).run([plan(t.get(p), {DECREASES}, 1) for p in ("/a", "/b")])
    assert isinstance(out["/a"], NodeError) and "unusable" in str(out["/a"])
    assert out["/b"][DECREASES].count == 0 and len(t.block_reads["/b"]) == 10  # every block of the other array
    assert calls["/a"] <= 2 * 2 + 1  # at most the blocks in flight when the first failure came back


@pytest.fixture
def submitted(monkeypatch) -> list:
    """The arguments of every task the scan threads are given."""
    tasks: list = []
    real_submit = ThreadPoolExecutor.submit

    def submit(pool, fn, *args):
        tasks.append(args)
        return real_submit(pool, fn, *args)

    monkeypatch.setattr(ThreadPoolExecutor, "submit", submit)
    return tasks


def test_thread_scanner_passes_small_local_blocks_many_to_a_task(monkeypatch, submitted):
    """Blocks under 1/64 of a full block cost more to hand to a thread than to read: a run of them is one task,
    read in order, with the same facts as a serial scan (and a read's failure kept to its own array)."""
    arrays = {f"c{i}": Arr(np.arange(100) if i != 7 else np.arange(100)[::-1], chunks=(100,)) for i in range(50)}
    t = tree(arrays)
    paths = [f"/c{i}" for i in range(50)]
    threads: set[int] = set()
    real = MemoryNode.read_block

    def read_block(self, rows):
        threads.add(threading.get_ident())
        if self.path == "/c3":
            raise NodeError("/c3: cannot be read")
        return real(self, rows)

    monkeypatch.setattr(MemoryNode, "read_block", read_block)
    block_elements = 64 * 101  # each 100-value array is a small block
    threaded = ThreadScanner(2, block_elements).run([plan(t.get(p), {DECREASES}, block_elements) for p in paths])
    assert len(submitted) == 1 and len(threads) == 1
    serial = SerialScanner(block_elements).run([plan(t.get(p), {DECREASES}, block_elements) for p in paths])
    assert isinstance(threaded.pop("/c3"), NodeError) and isinstance(serial.pop("/c3"), NodeError)
    assert threaded == serial
    assert threaded["/c7"][DECREASES].count == 99 and threaded["/c8"][DECREASES].count == 0


def test_thread_scanner_passes_remote_small_blocks_each_its_own_task(monkeypatch, submitted):
    """A remote store's small reads wait on the network: they are not joined, so they overlap."""
    t = tree({f"c{i}": Arr(np.arange(100), chunks=(100,)) for i in range(20)})
    monkeypatch.setattr(type(t), "remote", True, raising=False)
    block_elements = 64 * 101
    ThreadScanner(2, block_elements).run([plan(t.get(f"/c{i}"), {DECREASES}, block_elements) for i in range(20)])
    assert len(submitted) == 20


def test_thread_scanner_lets_a_remote_stores_small_reads_past_a_full_window(monkeypatch):
    """Each small read of a remote store is a round trip holding little: held back while a large array's blocks fill
    the window, it would start only when they are done, one latency after the rest. Here the large blocks finish
    only once every small read has started: held back, the small reads would wait out the large ones' timeout."""
    block_elements = 1000
    arrays = {"big": Arr(np.arange(4 * block_elements), chunks=(block_elements,))}  # 4 blocks: the whole window
    arrays.update({f"small{i}": Arr(np.arange(10)[::-1], chunks=(10,)) for i in range(3)})
    t = tree(arrays)
    monkeypatch.setattr(type(t), "remote", True, raising=False)
    small_started: list[str] = []
    all_small_started = threading.Event()
    big_waited: list[bool] = []
    real = MemoryNode.read_block

    def read_block(self, rows):
        if self.path == "/big":
            big_waited.append(all_small_started.wait(5))
        else:
            small_started.append(self.path)
            if len(small_started) == 3:
                all_small_started.set()
        return real(self, rows)

    monkeypatch.setattr(MemoryNode, "read_block", read_block)
    scans = [plan(t.get(p), {DECREASES}, block_elements) for p in ["/big", "/small0", "/small1", "/small2"]]
    threaded = ThreadScanner(2, block_elements).run(scans)
    assert big_waited == [True] * 4
    assert threaded == SerialScanner(block_elements).run(scans)
    assert [threaded[f"/small{i}"][DECREASES].count for i in range(3)] == [9, 9, 9]


def test_summarize_passes_a_field_request_as_the_kernel_on_that_field():
    # A request on one field of structured records gives what the same kernel gives on that field's own values.
    from spec_validate.engine.scan import summarize
    from spec_validate.kernels.block import Block

    records = np.zeros(6, dtype=np.dtype({"names": ["obs", "var", ""], "formats": ["<u4", "<u4", "<f4"]}))
    records["var"] = [0, 1, 2, 7, 1, 9]
    request = FactRequest("count_outside", (("low", 0), ("high", 2), ("limit", 5)))
    on_field = summarize(Block(10, records), [request._replace(field="var")])
    alone = summarize(Block(10, records["var"].copy()), [request])
    assert on_field == {request._replace(field="var"): alone[request]}


def test_summarize_passes_a_uniform_block_stays_uniform_on_a_field():
    from spec_validate.engine.scan import _field
    from spec_validate.kernels.block import Block

    one = np.zeros(1, dtype=np.dtype({"names": ["obs", "var"], "formats": ["<u4", "<u4"]}))
    block = Block(0, np.broadcast_to(one, (2**40,)))
    assert block.uniform and _field(block, "var").uniform


def test_thread_scanner_fetches_a_remote_stores_next_blocks_while_the_window_reads(monkeypatch):
    """A remote store's blocks beyond the window have their stored bytes fetched ahead (`Node.fetch_ahead`) while the
    window's blocks are read: here the first block is read only once the fifth has been fetched ahead, so a scanner
    that fetched nothing ahead would wait out the timeout. Each fetch is handed to its block's read, never more than
    two windows' worth are held, and the facts are a serial scan's."""
    block_elements = 1000
    t = tree({"big": Arr(np.arange(12 * block_elements)[::-1].copy(), chunks=(block_elements,))})
    monkeypatch.setattr(type(t), "remote", True, raising=False)
    fetched_ahead: list[tuple[int, int]] = []
    handed: dict[tuple[int, int], object] = {}
    held, most_held, lock = [0], [0], threading.Lock()
    fifth_fetched = threading.Event()
    waited: list[bool] = []
    real = MemoryNode.read_block

    def fetch_ahead(self, rows):
        with lock:
            fetched_ahead.append(rows)
            held[0] += 1
            most_held[0] = max(most_held[0], held[0])
        if rows[0] == 4 * block_elements:
            fifth_fetched.set()
        return ("fetched", rows)

    def read_block(self, rows, fetched=None):
        if rows[0] == 0:
            waited.append(fifth_fetched.wait(5))
        handed[rows] = fetched
        if fetched is not None:
            with lock:
                held[0] -= 1
        return real(self, rows)

    monkeypatch.setattr(MemoryNode, "fetch_ahead", fetch_ahead, raising=False)
    monkeypatch.setattr(MemoryNode, "read_block", read_block)
    scan = plan(t.get("/big"), {DECREASES}, block_elements)
    got = ThreadScanner(2, block_elements).run([scan])  # a window of 2 x 2 blocks
    assert waited == [True]
    blocks = [(i * block_elements, (i + 1) * block_elements) for i in range(12)]
    assert fetched_ahead == blocks[4:]  # the first window is read at once; every later block fetched ahead, once
    assert all(handed[rows] == ("fetched", rows) for rows in blocks[4:]) and all(handed[rows] is None for rows in blocks[:4])
    assert most_held[0] <= 8
    assert got == SerialScanner(block_elements).run([scan])


def test_thread_scanner_fetches_nothing_ahead_for_a_local_store(monkeypatch):
    t = tree({"big": Arr(np.arange(12_000), chunks=(1000,))})
    calls: list = []
    monkeypatch.setattr(MemoryNode, "fetch_ahead", lambda self, rows: calls.append(rows), raising=False)
    ThreadScanner(2, 1000).run([plan(t.get("/big"), {DECREASES}, 1000)])
    assert calls == []


def test_thread_scanner_reads_no_block_fetched_ahead_once_its_array_failed(monkeypatch):
    """A remote array whose every block fails: the blocks fetched ahead while the first failures came back are
    dropped unread, so its reads stay within the window and what was fetched ahead."""
    t = tree({"a": Arr(np.arange(10_000), chunks=(1,))})
    monkeypatch.setattr(type(t), "remote", True, raising=False)
    calls = [0]

    def read_block(self, rows, fetched=None):
        calls[0] += 1
        raise NodeError("/a: array metadata is unusable, data cannot be read")

    monkeypatch.setattr(MemoryNode, "read_block", read_block)
    monkeypatch.setattr(MemoryNode, "fetch_ahead", lambda self, rows: None, raising=False)
    out = ThreadScanner(2, 100).run([plan(t.get("/a"), {DECREASES}, 100)])  # a window of 2 x 2 blocks
    assert isinstance(out["/a"], NodeError)
    assert calls[0] <= 2 * 2 + 1  # the window, and the block after the first failure; not the 4 fetched ahead


def test_summarize_gives_a_block_whose_values_are_not_the_arrays_to_the_chunk_record_kernels_only():
    # Chunks not stored whose fill value is no value of the dtype: the stored chunks decoded, so the kernels that read
    # only the chunk records summarise the block; a value kernel, and one reading chunks and values, get Damaged.
    from spec_validate.engine.scan import Damaged, summarize
    from spec_validate.kernels.block import Block, ChunkRead

    chunks = FactRequest("chunk_problems", (("limit", 20),))
    json_text = FactRequest("invalid_json", (("limit", 20),))
    why = "/x: chunk 1 is not stored, and its fill_value '0' is not a value of int32; values not read"
    block = Block(0, np.zeros(4, dtype="<i4"), (ChunkRead("0"),), values_problem=why)
    out = summarize(block, [chunks, json_text, DECREASES])
    assert out[chunks].read == 1 and out[chunks].bad == 0
    assert out[json_text] == Damaged(why) and out[DECREASES] == Damaged(why)


def test_summarize_gives_a_block_with_a_chunk_not_read_to_the_chunk_record_kernels_and_not_decoded_to_the_others():
    # A chunk whose pickle calls a class is whole but not read: the kernels that read only the chunk records summarise
    # the block (the globals called, the chunk counted apart); a value kernel gets Damaged marked not decoded.
    from spec_validate.engine.scan import Damaged, summarize
    from spec_validate.kernels.block import Block, ChunkRead

    chunks = FactRequest("chunk_problems", (("limit", 20),))
    calls = FactRequest("pickle_calls", (("limit", 20),))
    json_text = FactRequest("invalid_json", (("limit", 20),))
    why = "/x: chunk 1: not decoded: its pickle calls hdmf_zarr.utils.ZarrReference (NEWOBJ), which is not rebuilt"
    unread = ChunkRead("1", unread=why, calls="hdmf_zarr.utils.ZarrReference")
    block = Block(0, np.zeros(4, dtype=object), (ChunkRead("0"), unread))
    out = summarize(block, [chunks, calls, json_text, DECREASES])
    assert (out[chunks].read, out[chunks].bad, out[chunks].unread) == (2, 0, 1)
    assert [c.name for c in out[calls].called] == ["hdmf_zarr.utils.ZarrReference"]
    assert out[json_text] == Damaged(why, not_decoded=True) and out[DECREASES] == Damaged(why, not_decoded=True)
    # Damage elsewhere in the block is what the value kernels are told: it is a problem of the store.
    damaged = block._replace(chunks=(*block.chunks, ChunkRead("2", "/x: chunk 2 does not decode")))
    assert summarize(damaged, [DECREASES])[DECREASES] == Damaged("/x: chunk 2 does not decode")
