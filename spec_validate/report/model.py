"""The results of a validation run: per-clause results and the report (levels, statuses and findings are the
primitive API's, re-exported here)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spec_validate.primitive_api import Finding, Level, Status

__all__ = ["ClauseResult", "Finding", "LegacyVerdict", "Level", "PackInfo", "Problem", "Report", "Status"]

if TYPE_CHECKING:
    from spec_validate.engine.model import Rule
    from spec_validate.engine.provenance import Provenance


@dataclass(frozen=True)
class ClauseResult:
    """The verdict on one clause for one store, over every node the rule selected."""

    rule: Rule
    status: Status
    findings: tuple[Finding, ...] = ()
    nodes_checked: int = 0
    reason: str | None = None  # why not applicable, or the error, in one line
    finding_count: int = 0  # all findings, including those beyond the cap kept in `findings`
    # (node path, reason) for selected nodes that could not be checked (NotChecked), whatever the status; the first
    # ones, as for findings: `unchecked_count` counts them all
    unchecked: tuple[tuple[str, str], ...] = ()
    unchecked_count: int = 0

    @property
    def writer_notes(self) -> list[Any]:
        """The rule's writer notes attached to its listed findings (those that fit the store), each once, in rule order."""
        attached = {w for f in self.findings for w in f.writers}
        return [w for w in self.rule.writers if w in attached]


@dataclass(frozen=True)
class PackInfo:
    name: str
    title: str
    version: str
    scopes: tuple[str, ...]  # node paths the pack was applied at


@dataclass(frozen=True)
class Problem:
    """Something in the store that could not be read (an `unreadable` record): a node, its attributes or members, a
    metadata document, a chunk, a link or data lying outside the store, or the input's time running out.

    `message` is one line naming the node path and the underlying error; the rest of the store is still validated.
    """

    key: str  # a node path (`/X/indptr`) or a store key (`X/indptr/.zarray`)
    message: str
    path: str | None = None  # the node it belongs to, where known


@dataclass(frozen=True)
class LegacyVerdict:
    """One verdict on an AnnData group (or CXG) of an era before the spec it is checked against.

    It stands for every clause of the pack at that scope: they are not checked (unless `clauses_checked`,
    with --all-clauses). The file does not conform to the spec version checked, so the verdict counts as a
    MUST failure for the exit code at every --fail-on; `--ignore <pack>.legacy` (or a baseline) accepts it.
    """

    pack: str
    id: str  # "<pack>.legacy"
    path: str  # the scope root it is about
    era: str  # the era in words ("anndata 0.7 (...)")
    era_id: str  # the era id the pack's `legacy.eras` names
    writers: tuple[str, ...]  # the likely writers of that layer ("SeuratDisk", "anndata >=0.7,<0.8")
    message: str  # what such a file is and what current readers do with it
    clause: str  # the spec's own sentence about such files
    section: str
    evidence: tuple[str, ...] = ()
    clauses_checked: bool = False  # --all-clauses: the pack's clauses were checked as well

    level: Level = Level.MUST


@dataclass(frozen=True)
class Report:
    """Everything one validation of one store found.

    A report for an input that could not be opened has only `source` and `error`; one for a file found in a
    folder that is not a store spec-validate reads has only `source` and `skipped`.
    """

    source: str
    format: str
    packs: tuple[PackInfo, ...]
    tool_version: str
    results: tuple[ClauseResult, ...]
    problems: tuple[Problem, ...] = ()
    # node path -> the store key of its metadata document (Zarr: `X/indptr/.zarray`), for failing nodes only
    metadata_keys: Mapping[str, str] = field(default_factory=dict)
    # The node validated: "/" for the whole store, or the node a path inside the store named (`x.zarr/X`).
    node: str = "/"
    # Failed or errored clauses on the ancestors of `node`: shown as context, never failures of the path given.
    context: tuple[ClauseResult, ...] = ()
    error: str | None = None  # the input could not be opened or checked (exit 2); one line
    skipped: str | None = None  # found in a folder but not checked (not a store, or no pack applies); one line
    provenance: Provenance | None = None  # the eras and likely writers the store shows
    legacy: tuple[LegacyVerdict, ...] = ()  # scopes of an era before the spec: one verdict each
    # False for a store read without listing a folder (a server that lists none, or --no-list): its members are the
    # ones its consolidated metadata names, and the clauses on the keys stored are not checked.
    listed: bool = True

    @property
    def name(self) -> str:
        """The input as the user named it: the store, followed by the node when a path inside the store was given."""
        return self.source if self.node == "/" else self.source.rstrip("/") + self.node

    def __iter__(self) -> Iterator[ClauseResult]:
        return iter(self.results)

    @property
    def failures(self) -> list[ClauseResult]:
        return [r for r in self.results if r.status is Status.FAILED]

    def summary(self) -> dict[str, dict[str, int]]:
        """Counts of clause results per level and status."""
        counts: dict[str, Counter[str]] = {lvl.value: Counter() for lvl in Level}
        for r in self.results:
            counts[r.rule.level.value][r.status.value] += 1
        return {lvl: {s.value: c[s.value] for s in Status} for lvl, c in counts.items()}

    def fails_at(self, level: Level) -> bool:
        """True when a clause at `level` or stricter failed, errored, the store had unreadable parts, the input
        could not be opened, or a scope is of an era before its spec (a legacy verdict, which counts as a MUST
        failure)."""
        if self.problems or self.error is not None or self.legacy:
            return True
        return any(r.status in (Status.FAILED, Status.ERROR) and r.rule.level.rank >= level.rank for r in self.results)

    def to_json(self) -> dict[str, Any]:
        from spec_validate.report.json import report_to_json

        return report_to_json(self)

    def to_sarif(self) -> dict[str, Any]:
        """This report as a SARIF 2.1.0 log with one run."""
        from spec_validate.report.sarif import sarif_log

        return sarif_log([self], self.tool_version)
