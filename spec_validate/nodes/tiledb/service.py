"""The TileDB reader process: every libtiledb call of one input made in a child process, so that a crash of the
library on a corrupt file (a segfault, a double free) costs that input the part being read, not the run.

libtiledb parses fragment metadata, tiles and filter pipelines in C; some corrupt files make it crash the process
(found by the fuzzer: a fragment's footer naming a data file of 945 GB segfaulted about one run in ten). Size fields
are checked before it reads them (`fragments.py`), but no check in Python can promise to find every field the library
mishandles. So each TileDB tree starts one reader process (spawned: a fresh interpreter, never a fork of this
process, whose obstore and TileDB threads would not survive it) and sends it each call (`library.py`): a group's
metadata or members, an array's schema and metadata, a scan's batches. A reply is plain data; a scan's cells come
one batch at a time (each at most TileDB-Py's result buffers), asked for one by one, so neither process holds more
than a batch in flight. If the reader dies, the call it was answering fails with the signal and what was being read
(`Failure`: the part is reported unreadable), every clause judged elsewhere keeps its verdict, and the next call
starts a new reader, up to `MAX_STARTS` per input.

Replies are unpickled with an allow-list (numpy arrays and scalars, and Python's own types), never by importing
what a reply names. `LocalReader` makes the same calls in this process (tests that change the library's budgets).
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from spec_validate.nodes.base import describe, one_line
from spec_validate.nodes.tiledb import library
from spec_validate.nodes.tiledb.library import Failure

MAX_STARTS = 4  # reader processes one input may start: a file that crashes the library that often is read no further
ANSWER_LIMIT = 300.0  # seconds the reader may take over one call before it is taken as hung, killed and reported
MAX_MESSAGE = 2**31  # bytes of one message: a reply is at most a batch of cells or a dense block (at most 256 MB)
HEADER = struct.Struct("<QI")  # the pickle's length, the number of its out-of-band buffers (each length a Q after it)

_SIGNALS = {signal.SIGSEGV: "SIGSEGV", signal.SIGABRT: "SIGABRT", signal.SIGBUS: "SIGBUS", signal.SIGKILL: "SIGKILL"}
_SIGNALS.update({signal.SIGFPE: "SIGFPE", signal.SIGILL: "SIGILL"})


# ---------------------------------------------------------------------------------------------- messages


def send(fd: int, message: Any) -> None:
    """Write `message` to the pipe `fd`: its pickle, then its arrays' bytes out of band (no copy into the pickle)."""
    buffers: list[pickle.PickleBuffer] = []
    head = pickle.dumps(message, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    _write(fd, HEADER.pack(len(head), len(raws)) + b"".join(struct.pack("<Q", r.nbytes) for r in raws) + head)
    for raw in raws:
        _write(fd, raw)


def _write(fd: int, data: Any) -> None:
    view = memoryview(data).cast("B")
    while view:
        view = view[os.write(fd, view) :]


def receive(fd: int, deadline: float | None = None) -> Any:
    """Read one message from the pipe `fd` (EOFError when the writer is gone; TimeoutError past `deadline`)."""
    length, count = HEADER.unpack(_read(fd, HEADER.size, deadline))
    sizes = struct.unpack(f"<{count}Q", _read(fd, 8 * count, deadline)) if count else ()
    if length + sum(sizes) > MAX_MESSAGE:
        raise EOFError(f"a message of {length + sum(sizes)} bytes")
    head = _read(fd, length, deadline).tobytes()
    buffers = [_read(fd, size, deadline) for size in sizes]
    return _Unpickler(io.BytesIO(head), buffers=buffers).load()


def _read(fd: int, size: int, deadline: float | None) -> Any:
    out = np.empty(size, dtype=np.uint8)  # not zeroed first, as a bytearray is: every byte is read into it
    view, got = memoryview(out), 0
    while got < size:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
        n = os.readv(fd, [view[got:]])
        if n == 0:
            raise EOFError
        got += n
    return out


class _Unpickler(pickle.Unpickler):
    """Only what a reply is made of: numpy arrays, dtypes and scalars (under numpy's old and new module names)."""

    ALLOWED = frozenset(
        (module, name)
        for module in ("numpy.core.multiarray", "numpy._core.multiarray", "numpy.core.numeric", "numpy._core.numeric")
        for name in ("_reconstruct", "scalar", "_frombuffer")
    ) | {("numpy", "ndarray"), ("numpy", "dtype")}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not a type a reply holds")
        return super().find_class(module, name)


# ----------------------------------------------------------------------------------------- the reader process


def serve(requests: int, replies: int) -> None:
    """Answer calls from `requests` on `replies` until the parent closes its end (the reader process's loop)."""
    scans: dict[int, library.Scan] = {}
    calls: dict[str, Callable[..., Any]] = {
        "group_meta": library.group_meta,
        "group_members": library.group_members,
        "array_info": library.array_info,
        "cell_count": library.cell_count,
    }
    while True:
        try:
            op, args = receive(requests)
        except EOFError:
            return
        ahead = None
        try:
            if op in calls:
                value = calls[op](*args)
            elif op == "scan_open":
                key, uri, budget = args
                scans[key] = library.Scan(uri, budget)
                value = None
            elif op in ("scan_first", "scan_next"):
                ahead = scans[args[0]]
                value = ahead.first(args[1]) if op == "scan_first" else ahead.next()
            elif op == "scan_close":
                scan = scans.pop(args[0], None)
                value = scan.close() if scan is not None else None
            else:
                raise Failure(f"no call named {op!r}")
            reply: tuple[str, Any] = ("ok", value)
        except Failure as exc:
            reply, ahead = ("failed", str(exc)), None
        except MemoryError:  # past --memory-limit (inherited): the part is unreadable, the reader goes on
            reply, ahead = ("failed", "MemoryError: more memory than --memory-limit allows"), None
        except Exception as exc:  # a bug here: that part's failure, in one line
            reply, ahead = ("failed", describe(exc)), None
        send(replies, reply)
        if ahead is not None:
            ahead.prefetch()  # the next batch, decoded while the parent works on this one


def _die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies (a `--timeout` child killed mid-read leaves no reader)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def main(argv: list[str]) -> None:
    requests, replies = int(argv[0]), int(argv[1])
    _die_with_parent()
    try:
        library.tiledb()  # imported while the parent goes on: the first call finds it loaded
        send(replies, ("ok", os.getpid()))
    except Exception as exc:  # said to the parent in one line
        send(replies, ("failed", f"the TileDB reader could not start ({describe(exc)})"))
        return
    serve(requests, replies)
    os._exit(0)  # no interpreter teardown: TileDB's exit handlers have nothing left to do


# --------------------------------------------------------------------------------------------- the parent side


class LocalReader:
    """The calls made in this process."""

    def call(self, op: str, *args: Any, what: str) -> Any:
        return getattr(library, op)(*args)

    def scan(self, uri: str, budget: int, what: str) -> _LocalScan:
        return _LocalScan(library.Scan(uri, budget))

    def close(self) -> None:
        pass


class _LocalScan:
    def __init__(self, scan: library.Scan) -> None:
        self._scan = scan

    def batches(self, spec: tuple, what: str) -> Iterator[Any]:
        batch = self._scan.first(spec)
        while batch is not None:
            yield batch
            batch = self._scan.next()

    def close(self) -> None:
        self._scan.close()


class IsolatedReader:
    """The calls made in a reader process of this input's own, started now (it imports TileDB while the run goes on).

    Thread-safe: each call is one request and its reply under a lock. A call the reader dies on (or does not answer
    within ANSWER_LIMIT) raises Failure naming the signal and `what` was being read; the next call starts a new one.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._starts = 0
        self._generation = 0  # which reader process a scan was opened in
        self._keys = 0
        self._last_crash = ""
        self._start()

    def _start(self) -> None:
        self._starts += 1
        self._generation += 1
        ours_read, theirs_write = os.pipe()
        theirs_read, ours_write = os.pipe()
        # The reader's stderr, kept open while it lives: the library's last words, if it crashes.
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (_package_root(), os.environ.get("PYTHONPATH")) if p))
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "spec_validate.nodes.tiledb.service", str(theirs_read), str(theirs_write)],
                pass_fds=(theirs_read, theirs_write),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._errors,
                env=env,
                close_fds=True,
            )
        finally:
            os.close(theirs_read)
            os.close(theirs_write)
        self._requests, self._replies = ours_write, ours_read
        # A reader whose tree is dropped unclosed: its pipes closed when it is collected, so the process sees its
        # requests end and exits (subprocess reaps it). Detached where they are closed here.
        self._pipes = weakref.finalize(self, _close_fds, ours_write, ours_read)
        self._ready = False
        _live.add(self)

    def _ensure(self, what: str) -> None:
        """A reader that has said it is ready, started again if the last one died. Raises Failure."""
        if self._process is None:
            if self._starts >= MAX_STARTS:
                raise Failure(f"not read: the TileDB reader crashed {self._starts} times on this input ({self._last_crash})")
            self._start()
        if not self._ready:
            kind, value = self._exchange(None, what)
            if kind != "ok":
                self._stop()
                self._starts = MAX_STARTS  # it cannot start: no use trying again
                raise Failure(value)
            self._ready = True

    def _exchange(self, request: Any, what: str) -> tuple[str, Any]:
        """Send `request` (None: only wait for the reader's word) and return its reply; Failure if it dies first."""
        try:
            if request is not None:
                send(self._requests, request)
            return receive(self._replies, time.monotonic() + ANSWER_LIMIT)
        except TimeoutError:
            self._stop()
            raise Failure(f"the TileDB reader did not answer within {ANSWER_LIMIT:g} s while {what}") from None
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            how = self._stop()
            self._last_crash = f"{how} while {what}"
            if isinstance(exc, pickle.UnpicklingError):
                how = f"{how}: {exc}"
            raise Failure(f"the TileDB reader crashed ({how}) while {what}") from None

    def call(self, op: str, *args: Any, what: str) -> Any:
        with self._lock:
            self._ensure(what)
            kind, value = self._exchange((op, args), what)
        if kind != "ok":
            raise Failure(value)
        return value

    def scan(self, uri: str, budget: int, what: str) -> _IsolatedScan:
        with self._lock:
            self._keys += 1
            key = self._keys
        self.call("scan_open", key, uri, budget, what=what)
        return _IsolatedScan(self, key, self._generation)

    def _stop(self) -> str:
        """End the reader (killed if it is still there) and say how it ended."""
        process, self._process = self._process, None
        if self._pipes.detach() is not None:
            _close_fds(self._requests, self._replies)
        _live.discard(self)
        if process is None:
            return "gone"
        try:
            code = process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
        how = _ended(code)
        last = _last_line(self._errors)
        self._errors.close()
        return f"{how}: {last}" if last else how

    def close(self) -> None:
        """End the reader: it sees its requests end and exits (it is waited for, so it is no orphan)."""
        with self._lock:
            process = self._process
            if process is None or self._pipes.detach() is None:
                return
            _close_fds(self._requests)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            self._process = None
            _close_fds(self._replies)
            self._errors.close()
            _live.discard(self)


class _IsolatedScan:
    def __init__(self, reader: IsolatedReader, key: int, generation: int) -> None:
        self.reader, self.key, self.generation = reader, key, generation

    def batches(self, spec: tuple, what: str) -> Iterator[Any]:
        batch = self._call("scan_first", spec, what=what)
        while batch is not None:
            yield batch
            batch = self._call("scan_next", what=what)

    def _call(self, op: str, *args: Any, what: str) -> Any:
        if self.reader._generation != self.generation or self.reader._process is None:
            raise Failure(f"not read: the TileDB reader crashed ({self.reader._last_crash})")
        return self.reader.call(op, self.key, *args, what=what)

    def close(self) -> None:
        if self.reader._generation == self.generation and self.reader._process is not None:
            with contextlib.suppress(Failure):
                self.reader.call("scan_close", self.key, what="closing the array")


def _close_fds(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _package_root() -> str:
    """The folder holding the spec_validate package, for the reader's import path."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(library.__file__)))))


def _ended(code: int | None) -> str:
    if code is not None and code < 0:
        return f"killed by signal {-code}, {_SIGNALS.get(-code, 'a signal')}"
    return f"exited with code {code}"


def _last_line(errors: Any) -> str:
    """The last line the reader wrote to stderr (glibc's `double free or corruption`, TileDB's last message)."""
    with contextlib.suppress(OSError, ValueError):
        errors.seek(0, os.SEEK_END)
        size = errors.tell()
        errors.seek(max(0, size - 2000))
        lines = errors.read().decode("utf-8", "replace").strip().splitlines()
        return one_line(lines[-1], 200) if lines else ""
    return ""


_live: weakref.WeakSet[IsolatedReader] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for reader in list(_live):
        with contextlib.suppress(Exception):
            reader.close()


if __name__ == "__main__":
    main(sys.argv[1:])
