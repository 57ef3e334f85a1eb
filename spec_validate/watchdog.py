"""`--timeout`: each input validated in a child process that is ended when its time runs out, with a report either way.

A read can hang where no signal reaches it (inside HDF5 or TileDB, on a stalled network read) and a corrupt file can
crash a native library; neither may cost the other inputs their reports. So under `--timeout` each input runs in a
child process. The child tells the parent what it is reading through shared memory (`engine.activity`); when the
time is up the parent kills it and reports the input as timed out while reading that, and when the child dies
(a crash in a native library) the parent reports that, naming what was being read. Either is an `unreadable`
record of the input's report, and the run goes on with the next input.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from spec_validate.errors import SpecValidateError
from spec_validate.model import Problem, Report
from spec_validate.version import __version__

ACTIVITY_BYTES = 1024


def run_with_timeout(
    job: tuple,
    validate_one: Callable[..., Report],
    seconds: float,
    shown: str,
    node: str = "/",
    progress_label: str | None = None,
    quiet: bool = True,
) -> Report:
    """`validate_one(*job)` in a child process; its report, or one naming the timeout or crash and what was being read.

    Raises what the child raised when it was a SpecValidateError (an input that cannot be opened, a bad pack):
    those keep their one-line exit-2 meaning. `shown` names the input in a report made here.
    """
    ctx = _context()
    reading = ctx.Array("c", ACTIVITY_BYTES, lock=False)
    fmt = ctx.Array("c", 32, lock=False)
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, reading, fmt, validate_one, job, progress_label, quiet), daemon=True)
    child.start()
    send.close()
    deadline = time.monotonic() + seconds
    outcome: tuple[str, Any] | None = None
    try:
        if receive.poll(max(0.0, deadline - time.monotonic())):
            try:
                outcome = receive.recv()
            except (EOFError, OSError):  # the child died without a word
                outcome = None
            except Exception as exc:  # noqa: BLE001 (a report that does not unpickle: the child's, not ours)
                outcome = ("crash", f"its report could not be received ({type(exc).__name__}: {exc})")
        else:
            outcome = ("timeout", None)
    finally:
        if outcome is None or outcome[0] == "timeout":
            _kill(child)
        child.join(5)
        if child.is_alive():
            _kill(child)
            child.join()
        receive.close()
    what = _text(reading) or "starting"
    shown_format = _text(fmt)  # "" (null in JSON) when it timed out before the store was opened
    if outcome is None:
        code = child.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        return _report(shown, node, shown_format, what, f"the reader crashed ({how}) while {what}")
    kind, payload = outcome
    if kind == "report":
        return payload
    if kind == "timeout":
        return _report(shown, node, shown_format, what, f"timed out after {seconds:g} s while {what}")
    if kind == "error":
        raise SpecValidateError(payload)
    raise RuntimeError(payload)  # a bug in the child: main() reports it as an internal error


def _context() -> Any:
    # fork is fast and needs nothing pickled; it is safe while this process holds no open store and no native
    # library threads (TileDB's start with its first context; obstore's tokio runtime with its first request, and
    # a forked child's requests would wait on its threads forever). Elsewhere, and on other systems, spawn.
    if sys.platform.startswith("linux") and not {"tiledb", "obstore"} & sys.modules.keys():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _child(
    send: Any, reading: Any, fmt: Any, validate_one: Callable[..., Report], job: tuple, progress_label: str | None, quiet: bool
) -> None:
    from spec_validate.engine import activity

    def tell(where: Any) -> Callable[[str], None]:
        size = len(where)

        def write(text: str) -> None:
            where.value = text.encode("utf-8", errors="replace")[: size - 1]

        return write

    activity.listen(tell(reading), tell(fmt))
    try:
        if progress_label is not None:
            from spec_validate.progress import TerminalProgress

            with TerminalProgress(progress_label, quiet=quiet) as bar:
                report = validate_one(*job, progress=bar)
        else:
            report = validate_one(*job)
        outcome: tuple[str, Any] = ("report", report)
    except SpecValidateError as exc:
        outcome = ("error", str(exc))
    except BaseException as exc:  # noqa: BLE001 (a bug: the parent reports it as one line)
        outcome = ("crash", f"{type(exc).__name__}: {exc}")
    try:
        try:
            send.send(outcome)
        except Exception as exc:  # noqa: BLE001 (a report holding what does not pickle: a bug, said in one line)
            send.send(("crash", f"its report could not be sent ({type(exc).__name__}: {exc})"))
    finally:
        send.close()
    os._exit(0)  # no interpreter teardown: native libraries' exit handlers have nothing left to do here


def _kill(child: Any) -> None:
    if child.pid is not None and child.is_alive():
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGKILL)


def _text(buffer: Any) -> str:
    return bytes(buffer.value).decode("utf-8", errors="replace")


def _report(shown: str, node: str, fmt: str, what: str, message: str) -> Report:
    """The report of an input whose run did not finish: one unreadable record naming what was being read."""
    # "walking /obs", "checking RULE on /X", "reading /X/data rows 0..4096": the node; "opening PATH": the input's.
    words = what.split()
    path = node if words[:1] == ["opening"] else next((w for w in words if w.startswith("/")), node)
    return Report(shown, fmt, (), __version__, (), (Problem(path, message, path),), node=node)
