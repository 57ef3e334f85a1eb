"""A progress bar on stderr for long scans: only on a terminal, only after about a second, erased when done."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

DELAY_ENV = "SPEC_VALIDATE_PROGRESS_DELAY"
DEFAULT_DELAY = 1.0
LABEL_WIDTH = 28  # the input's name is shortened (…) beyond this


def progress_delay() -> float:
    """Seconds a scan must last before its bar appears: $SPEC_VALIDATE_PROGRESS_DELAY, else 1."""
    try:
        value = float(os.environ.get(DELAY_ENV, DEFAULT_DELAY))
    except ValueError:  # a bad value is not worth failing a validation over
        return DEFAULT_DELAY
    return value if value >= 0 else DEFAULT_DELAY


def bar_wanted(stream: TextIO, quiet: bool = False) -> bool:
    """A bar may be drawn on `stream`: not --quiet, a terminal, and not TERM=dumb."""
    if quiet or os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class TerminalProgress:
    """A `Progress` (spec_validate.engine.scan) drawn as a transient rich bar on stderr.

    start() starts the clock; the bar (label, done / total, rate, ETA) appears only once `delay` seconds
    have passed and the work is still running, so short scans draw nothing and never import rich
    (importing it costs 50-100 ms of startup). finish() erases it, leaving the terminal as it was.
    Safe to call from several threads; a disabled instance (--quiet, not a terminal, TERM=dumb) does nothing.
    Also a context manager: leaving the block finishes the bar, on errors and Ctrl-C too.
    """

    def __init__(
        self, label: str, *, unit: str = "elements", stream: TextIO | None = None, quiet: bool = False, delay: float | None = None
    ) -> None:
        self.label = label
        self.unit = unit
        self.stream = sys.stderr if stream is None else stream
        self.enabled = bar_wanted(self.stream, quiet)
        self.delay = progress_delay() if delay is None else delay
        self._lock = threading.Lock()
        self._total = 0
        self._done = 0
        self._running = False
        self._timer: threading.Timer | None = None
        self._bar: Any = None  # rich.progress.Progress, once drawn
        self._task: Any = None

    @property
    def drawn(self) -> bool:
        """Whether the bar has been drawn (and rich imported)."""
        return self._bar is not None

    def start(self, total: int) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._stop_locked()
            self._total, self._done, self._running = max(0, int(total)), 0, True
            if not self._total:
                return  # nothing to read: over at once
            if self.delay <= 0:
                self._draw_locked()
                return
            self._timer = threading.Timer(self.delay, self._due)
            self._timer.daemon = True  # never keeps the process alive
            self._timer.start()

    def advance(self, elements: int) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._done += elements
            if self._bar is not None:
                self._bar.update(self._task, completed=min(self._done, self._total))

    def finish(self) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._stop_locked()

    def __enter__(self) -> TerminalProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()

    def _due(self) -> None:
        """The timer thread: the delay has passed; draw the bar if the work still runs."""
        _import_rich()  # outside the lock: the scanning thread keeps advancing meanwhile
        with self._lock:
            if self._running and self._bar is None:
                self._draw_locked()

    def _draw_locked(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn
        from rich.table import Column

        fixed = lambda: Column(no_wrap=True)  # noqa: E731 - numbers are cut, never wrapped onto a second line
        count, rate = _columns(self.unit, fixed)
        console = Console(file=self.stream, no_color="NO_COLOR" in os.environ, highlight=False)
        self._bar = Progress(
            TextColumn("{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis", max_width=LABEL_WIDTH)),
            BarColumn(bar_width=None, table_column=Column(ratio=1)),  # the bar takes what the text leaves
            TaskProgressColumn(table_column=fixed()),
            count,
            rate,
            TimeRemainingColumn(table_column=fixed()),
            console=console,
            transient=True,
            expand=True,
            redirect_stdout=False,  # stdout is the report, perhaps a pipe: never routed through the bar
            redirect_stderr=True,  # a warning printed mid-scan goes above the bar, not through it
        )
        self._task = self._bar.add_task(self.label, total=self._total, completed=min(self._done, self._total))
        self._bar.start()

    def _stop_locked(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._bar is not None:
            self._bar.stop()  # transient: erases the bar
            self._bar = None
            self._task = None
        self._running = False


def _import_rich() -> None:
    import rich.console
    import rich.progress  # noqa: F401


def human(n: float) -> str:
    """A count for people: 950, 12.3k, 4.19M, 1.2G."""
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= limit:
            value = n / limit
            return f"{value:.3g}{suffix}"
    return f"{n:.3g}" if isinstance(n, float) and not n.is_integer() else str(int(n))


def _columns(unit: str, column: Callable[[], Any]) -> tuple[Any, Any]:
    """The rich columns 'done/total unit' and 'rate/s' (defined here so rich is imported only when drawing)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class Count(ProgressColumn):
        def render(self, task: Any) -> Text:
            return Text(f"{human(int(task.completed))}/{human(int(task.total or 0))} {unit}", style="progress.download")

    class Rate(ProgressColumn):
        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            return Text("" if speed is None else f"{human(speed)}/s", style="progress.data.speed")

    return Count(table_column=column()), Rate(table_column=column())
