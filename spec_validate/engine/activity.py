"""What a run is reading now, in one line: told to a watcher (the `--timeout` parent) that names it if time runs out.

The engine says what it opens, walks, matches and reads; by default nobody listens and each call costs a function
call. A run under `--timeout` sets a sink (shared memory its parent process reads) before it starts.
"""

from __future__ import annotations

from collections.abc import Callable

_reading: Callable[[str], None] | None = None
_opened: Callable[[str], None] | None = None


def listen(reading: Callable[[str], None] | None, opened: Callable[[str], None] | None = None) -> None:
    """Send every later `reading` to `reading`, and the format of the opened store to `opened` (None: to nobody)."""
    global _reading, _opened
    _reading, _opened = reading, opened


def reading(what: str, *more: str) -> None:
    """Tell the watcher, if any, that `what` is being read now ("walking /obs", "reading /X/data rows 0..4096").

    `more` is joined to `what` only when someone listens: the engine says this for every rule step on every node,
    and formatting 60,000 lines nobody reads was a few percent of a many-node run.
    """
    if _reading is not None:
        _reading(what + "".join(more) if more else what)


def opened(fmt: str) -> None:
    """Tell the watcher, if any, the format of the store just opened ("hdf5", "zarr-v2", ...)."""
    if _opened is not None:
        _opened(fmt)
