"""Output formats by name: `@output_format` registers a renderer beside its code; the front ends look it up here.

Every renderer has one signature, `render(reports, options) -> str | bytes` (`options` a `RenderOptions`). A format
that can also write each input's report as it finishes (jsonl) registers a `stream` beside it: the command then
streams rather than rendering once at the end (spec_validate/resume.py). The
modules of this package are found, not listed: a new format is one module with one decorated function. A lookup
imports the module named after the format first (the convention every built-in format follows), so a run imports
only the renderer it writes with; listing the names, or a format whose module is named otherwise, imports them all.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, TextIO

from spec_validate.discovery import PackageModules, claim
from spec_validate.errors import SpecValidateError
from spec_validate.model import Report
from spec_validate.report.options import RenderOptions

Renderer = Callable[[Sequence[Report], RenderOptions], str | bytes]


class ReportStream(Protocol):
    """A format written as the run goes: what identifies the run first, each input's report as it finishes, the
    summary over every input last. Each part is on the output (flushed) when its call returns."""

    def start(self, run: Mapping[str, Any]) -> None: ...

    def add(self, report: Report, position: int, key: str) -> None:
        """One input's report; `position` is the input's place among the run's inputs, `key` the input as the
        search named it (what a resumed run matches)."""

    def finish(self) -> None: ...


Streamer = Callable[[TextIO, RenderOptions], ReportStream]

_PACKAGE = "spec_validate.report"


class OutputFormat(NamedTuple):
    name: str
    render: Renderer
    summary: str  # the first line of the renderer's docstring
    stream: Streamer | None = None  # for a format that can write each report as its input finishes


FORMATS: dict[str, OutputFormat] = {}
_MODULES = PackageModules(_PACKAGE, skip=("formats",))


def output_format(name: str, stream: Streamer | None = None) -> Callable[[Renderer], Renderer]:
    """Register `render(reports, options) -> str | bytes` as the output format `name`; `stream(out, options)`, where
    given, writes the same format to `out` one input at a time (a `ReportStream`)."""

    def register(render: Renderer) -> Renderer:
        claim(FORMATS, name, render, "output format", lambda f: f.render)
        doc = (render.__doc__ or "").strip()
        FORMATS[name] = OutputFormat(name, render, doc.splitlines()[0] if doc else "", stream)
        return render

    return register


def find(name: str) -> OutputFormat | None:
    """The format registered as `name`, or None."""
    if name not in FORMATS and not _MODULES.loaded and name.isidentifier():
        module = f"{_PACKAGE}.{name}"
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:  # the module is there but imports something that is not: a real error
                raise
    if name not in FORMATS:
        _MODULES.load()
    return FORMATS.get(name)


def get(name: str) -> OutputFormat:
    """The format registered as `name`; an unknown name is a one-line error naming those there are."""
    found = find(name)
    if found is None:
        raise SpecValidateError(f"no output format {name!r} (one of: {', '.join(names())})")
    return found


def names() -> list[str]:
    """Every format's name, in name order."""
    _MODULES.load()
    return sorted(FORMATS)


class Names(Collection[str]):
    """The format names as argparse's `choices`: asking whether a name is one imports only its module; listing them
    (for --help, or to name the choices after a wrong one) imports every renderer."""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and find(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(names())

    def __len__(self) -> int:
        return len(names())
