"""What an output format is told besides the reports: one set of options for every format, each reading the fields it uses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spec_validate.model import Level
from spec_validate.version import __version__

if TYPE_CHECKING:
    from spec_validate.model import Rule
    from spec_validate.report.baseline import Baseline


@dataclass(frozen=True)
class RenderOptions:
    # The lowest level whose failure fails the run: it decides each input's verdict.
    fail_on: Level = Level.MUST
    # Findings recorded earlier (--baseline): reported as known, and they do not fail the run.
    baseline: Baseline | None = None
    # --fail-on-unchecked: a clause at or above `fail_on` not judged on every node it selects (not checked, or
    # passed with nodes not checked) fails the input, as a failure does.
    fail_on_unchecked: bool = False
    tool_version: str = __version__
    # text: also list the passed and not-applicable clauses.
    verbose: bool = False
    # text: ANSI colours (the front end decides: a terminal, and no NO_COLOR).
    colour: bool = False
    # text and json: the failing findings per rule (--statistics) instead of the report.
    statistics: bool = False
    # A rule's documentation in Markdown (what --explain prints), for formats that carry it (SARIF's `help`). The
    # front end supplies it: the reports layer does not reach into the engine for primitives and spec notes.
    rule_help: Callable[[Rule], str] | None = None
    # The documentation site's base URL (--docs-url): rule links point at its pages. None: at `spec-validate
    # --explain <id>`, the documentation shipped with the tool (spec_validate/report/links.py).
    docs_url: str | None = None
