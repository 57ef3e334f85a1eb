"""The vocabulary every layer speaks, as plain data: levels, statuses, findings, rules and packs, clause results and
reports, and what a primitive may ask of the place a pack is applied (`Scope`).

It imports nothing else of the package, so any layer may import it: storage and nodes never need it, primitives
yield its findings, the engine builds its results, the reports render them.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, NamedTuple, Protocol

__all__ = [
    "LEGACY_REASON",
    "CheckStep",
    "ClauseResult",
    "Finding",
    "Legacy",
    "LegacyVerdict",
    "Level",
    "NotApplicable",
    "NotChecked",
    "Omitted",
    "Pack",
    "PackInfo",
    "Problem",
    "Provenance",
    "ReaderFact",
    "ReaderVerdict",
    "ReaderVerdicts",
    "ReaderVersion",
    "Report",
    "Rule",
    "Scope",
    "SpecNote",
    "Status",
    "Writer",
    "WriterNote",
]


# ---------------------------------------------------------------- levels, statuses, findings
class Level(str, Enum):
    MUST = "MUST"
    SHOULD = "SHOULD"
    MAY = "MAY"

    @property
    def rank(self) -> int:
        return {"MUST": 3, "SHOULD": 2, "MAY": 1}[self.value]


class Status(str, Enum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_APPLICABLE = "not_applicable"
    # A clause whose selected nodes could none of them be checked (`NotChecked`: it needs --deep, a codec is not
    # decoded, a reader is not available, a chunk grid is an extension the pack does not read): never passed and
    # never not applicable, since nothing says the clause holds or does not concern the store.
    NOT_CHECKED = "not_checked"
    ERROR = "error"
    # A rule that reports a fact worth knowing which is no conformance failure (a `notice:` rule, such as the
    # pickle codec the hdmf-zarr spec names as its default, or a key beside Zarr chunks that no reader reads): its
    # findings are shown, never fail a run.
    NOTICE = "notice"


@dataclass(frozen=True)
class Finding:
    """One thing a primitive found wrong. The engine fills in `path` when the primitive leaves it empty."""

    message: str
    path: str = ""
    index: tuple[int, ...] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    # Set by the engine, never by a primitive: the rule's `writers:` notes (`WriterNote`s) that describe this finding
    # (its details hold the values the note explains) and fit the store (a note naming a writer the store shows it
    # was not written by is left off).
    writers: tuple[Any, ...] = ()


class Omitted(NamedTuple):
    """Yielded by a primitive after its findings: `count` more findings of the same kind that it does not list.

    A kernel that counts every offending element but keeps the first few (values_in_range) says how many it
    left out, so the report's count of findings, and its "... and N more", are exact.
    """

    count: int


class NotApplicable(Exception):
    """Raised while resolving a reference that does not exist; the clause is not applicable to this node."""


class NotChecked(NotApplicable):
    """The node is one the clause is about, but it cannot be checked safely (a codec off the allow-list, an
    object array, metadata too broken to read its data by, a chunk grid this tool does not read) or not in this run
    (it needs --deep). Unlike a plain NotApplicable, the report names such nodes even when the clause passes on the
    others, and a clause checked on none of its nodes is `Status.NOT_CHECKED`: a node that was skipped is never
    silent, nor counted as passed or not applicable."""


# ---------------------------------------------------------------- rules and packs, as loaded from YAML
class Writer(NamedTuple):
    """A real writer whose files depart from the clause: the report shows the note on a failure it describes.

    `when` holds the values the note explains, as (finding detail key, accepted values) pairs: a note is attached
    to a finding only when every key is among the finding's details (or is `path`, the finding's node path) with
    one of the accepted values, so a note never lands on a finding it does not describe. How values compare:
    `spec_validate.engine.writer_notes`.
    """

    name: str
    versions: str
    note: str
    when: tuple[tuple[str, tuple[str, ...]], ...] = ()


class WriterNote(NamedTuple):
    """A writer note attached to a finding it describes, and how the writer is known.

    `detected`: the store shows this writer (in versions the note's overlap), and `evidence` is what shows it.
    Otherwise no writer of its kind is detected, and the note is only likely: `evidence` says why (the finding's
    values are the ones the note explains).
    """

    writer: Writer
    detected: bool
    evidence: str

    @property
    def name(self) -> str:
        return self.writer.name

    @property
    def versions(self) -> str:
        return self.writer.versions

    @property
    def note(self) -> str:
        return self.writer.note

    @property
    def label(self) -> str:
        """The writer and how it is known, for a report line: `<name> <versions> (detected: ...)` or `likely ...`."""
        who = f"{self.writer.name} {self.writer.versions}".strip()
        if self.detected:
            return f"{who} (detected: {self.evidence})"
        return f"likely {who} ({self.evidence})"


# The start of the reason of a clause a legacy verdict stands for (not checked at a scope of an era before the spec).
LEGACY_REASON = "legacy: "


class Legacy(NamedTuple):
    """Eras of files that predate the spec a pack checks: such a scope gets one verdict, `<pack>.legacy`, standing for
    the clauses that depend on the era; the clauses named in `still_checked` hold in every era and are checked."""

    clause: str  # the spec's own sentence about such files, verbatim
    section: str
    # era id (spec_validate.engine.provenance) -> storage format glob ("hdf5", "zarr-*"; "*" for any) -> what such a
    # file is and what readers do, in the words of the storage read
    eras: Mapping[str, Mapping[str, str]]
    # rule ids or dotted prefixes (`anndata.csr_matrix`) of the clauses checked on a legacy scope all the same
    still_checked: tuple[str, ...] = ()

    def text(self, era_id: str, storage: str) -> str:
        """What a file of `era_id` read as `storage` (a tree format: "hdf5", "zarr-v2") is; "" where none fits."""
        texts = self.eras.get(era_id, {})
        return next((t for pattern, t in texts.items() if fnmatch.fnmatchcase(storage, pattern)), "")

    def keeps(self, rule_id: str) -> bool:
        """Whether the clause `rule_id` is checked on a legacy scope (it does not depend on the era)."""
        return any(rule_id == p or rule_id.startswith(p + ".") for p in self.still_checked)


class SpecNote(NamedTuple):
    """A place where the spec contradicts itself or its reference writer, and the side the pack takes."""

    id: str
    title: str
    rules: tuple[str, ...]
    text: str


class CheckStep(NamedTuple):
    primitive: str
    options: Mapping[str, Any]


class Rule(NamedTuple):
    id: str
    level: Level  # the level in force (after a user pack's overrides)
    spec_level: Level  # the level the spec states
    clause: str
    section: str
    spec_version: str
    applies_to: Mapping[str, Any]
    check: tuple[CheckStep, ...]
    pack: str
    message: str | None = None
    basis: str = "stated"  # or "derived"
    rationale: str | None = None
    writers: tuple[Writer, ...] = ()
    source_file: str = ""  # the pack file the rule is defined in
    spec_source: str = ""  # the spec file its clause is quoted from (the rule's own `source`, else the pack's)
    builtin: bool = False  # defined in a pack shipped with the tool (still so when a user pack extends that pack)
    # "security" or "unread-key" (pack.schema.json): a failure is reported as a notice (status notice), never as a failure
    notice: str | None = None

    @property
    def derived(self) -> bool:
        return self.basis == "derived"

    @property
    def key(self) -> tuple[str, str]:
        """(pack name, rule id): what results are keyed by (evaluations, SARIF rules[]), so that two packs handed
        to the engine with one rule id each keep their own results rather than sharing one."""
        return (self.pack, self.id)


class Pack(NamedTuple):
    """A loaded rule pack. The mappings have no defaults: a shared default would be one object for every pack."""

    name: str
    title: str
    version: str
    spec_source: str  # the spec file the clauses are quoted from
    path: str  # the YAML file
    rules: tuple[Rule, ...]
    scope: Mapping[str, Any]  # where the pack applies (`roots`, `fallback` selectors); empty: at the root
    shapes: Mapping[str, Any]  # encoding-type -> how to find the logical shape of such a group
    dimensions: Mapping[str, Any]  # named dimensions (n_obs, n_vars) and where their lengths come from
    redirects: Mapping[str, str]  # renamed rule id -> its id now
    formats: tuple[str, ...] = ()  # tree formats the pack applies to (globs); empty: any
    bases: tuple[str, ...] = ()  # names of the packs it extends, nearest first (`extends:`, through a chain)
    legacy: Legacy | None = None  # eras of files before the spec: one verdict instead of the clauses
    notes: tuple[SpecNote, ...] = ()  # where the spec contradicts itself or its reference writer

    @property
    def legacy_id(self) -> str:
        """The id of this pack's legacy verdict: selectable and ignorable like a rule id."""
        return f"{self.name}.legacy"


# ---------------------------------------------------------------- what a primitive sees of where it runs
class Scope(Protocol):
    """One place a pack is applied, as a primitive sees it: the scope root, the pack's definitions of shapes and
    dimensions, and `deep` (the user's --deep: primitives that read stored chunk bytes run only when it is set).

    Absolute paths in rules (`/obs`) are relative to the scope root, so an AnnData group inside a MuData file
    (`/mod/rna`) is checked exactly like one at the root of a file. Nodes are `spec_validate.nodes.base.Node`s;
    the engine's `PackScope` is the implementation.
    """

    @property
    def pack(self) -> Pack: ...

    @property
    def root(self) -> Any: ...

    @property
    def deep(self) -> bool: ...

    def relative_path(self, node: Any) -> str:
        """The node's path relative to the scope root ("/" for the root itself)."""
        ...

    def node(self, base: Any, path: str) -> Any | None:
        """The node at `path`: relative to `base`, or absolute from the scope root; None where there is none."""
        ...

    def logical_shape(self, node: Any) -> tuple[int, ...] | None:
        """The shape of the element a node encodes: an array's own shape, or what the pack's `shapes` say."""
        ...

    def dimension(self, name: str, base: Any) -> int:
        """The length of the pack's named dimension (`n_obs`) seen from `base`; NotApplicable where unknown."""
        ...

    def value(self, base: Any, ref: Any, what: str = "value") -> Any:
        """A number from a reference: a literal, `{dimension}`, or `{node, dim|length|attr[, index]}`, plus `plus`
        (`{name}` in `node` is `base`'s name; `attr` may list names, the first the node has being read)."""
        ...


class Provenance(Protocol):
    """The eras and likely writers a store shows (the engine's `provenance.Provenance` is the implementation)."""

    @property
    def eras(self) -> tuple[Any, ...]: ...

    @property
    def writers(self) -> tuple[Any, ...]: ...

    def fits(self, name: str, versions: str = "") -> bool:
        """Whether a note about writer `name` (`versions`) may be shown on this store."""
        ...

    def evidence(self, name: str, versions: str = "") -> str | None:
        """What shows the store was written by writer `name` in versions overlapping `versions`; None if nothing does."""
        ...

    def describe(self) -> str:
        """One line for a report header: the eras and the likely writers."""
        ...

    def to_json(self) -> dict[str, Any]:
        """The eras and writers as JSON data."""
        ...


# ---------------------------------------------------------------- results
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
    # The node paths of the findings not listed in `findings` (past the cap), each once: a baseline fingerprints them
    # too, so every failing node is known, not only the listed ones.
    unlisted_paths: tuple[str, ...] = ()

    @property
    def writer_notes(self) -> list[WriterNote]:
        """The writer notes attached to the listed findings (each describes one and fits the store), each once, in
        the rule's order."""
        attached: dict[WriterNote, None] = {}
        for f in self.findings:
            attached.update(dict.fromkeys(f.writers))
        order = {w: i for i, w in enumerate(self.rule.writers)}
        return sorted(attached, key=lambda n: order.get(n.writer, len(order)))


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

    It stands for the clauses of the pack that depend on the era: they are not checked at that scope (unless
    `clauses_checked`, with --all-clauses). The clauses that hold in every era (`still_checked`: sparse structure,
    index ranges, ...) are checked there all the same, and their results are the report's like any other. The file
    does not conform to the spec version checked, so the verdict counts as a MUST failure for the exit code at every
    --fail-on; `--ignore <pack>.legacy` (or a baseline) accepts it.
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
    still_checked: tuple[str, ...] = ()  # ids of the selected clauses checked at the scope whatever its era
    stands_for: int = 0  # how many selected clauses the verdict stands for (not checked there); 0 with --all-clauses

    level: Level = Level.MUST


# ---------------------------------------------------------------- reader verdicts (spec_validate.engine.readers)
OPENS = "opens"
DOES_NOT_OPEN = "does not open"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class ReaderFact:
    """A reader rule that fires on the store: the fact, what the reader did with files showing it, and the measured
    cases (ids of the compatibility matrix) that showed it."""

    rule: str  # the reader rule id (`readers.anndata.nullable-string-array`)
    fact: str  # one sentence a user reads
    outcome: str  # refused, crashed or wrong-values
    cases: tuple[str, ...]


@dataclass(frozen=True)
class ReaderVersion:
    """The prediction for one measured version of a reader: OPENS, DOES_NOT_OPEN (with every rule that fires) or
    UNKNOWN (with why: not measured on this format, a fact the measurements never saw, a fact not decided)."""

    version: str
    verdict: str
    facts: tuple[ReaderFact, ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class ReaderVerdict:
    """One reader's measured versions, oldest first, each with its prediction."""

    reader: str
    title: str
    versions: tuple[ReaderVersion, ...]


@dataclass(frozen=True)
class ReaderVerdicts:
    """Whether the measured reader versions open the store (`--readers`), and the gate the user asked for.

    `format` is the store's coarse format as the measurements name formats (`anndata-h5ad`); None where none is
    derived (then every reader is unknown). `unseen` lists the store's facts that no measured case of its format
    had: a version no rule stops is then unknown, never predicted to open. `required` holds the requirement strings
    of the gate (`anndata>=0.10`): each measured version inside one must be predicted to open.
    """

    format: str | None
    measured: str  # the date of the measurements
    readers: tuple[ReaderVerdict, ...] = ()
    unseen: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    note: str = ""  # why there are no verdicts, where there are none

    def reader(self, name: str) -> ReaderVerdict | None:
        return next((r for r in self.readers if r.reader == name), None)


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
    readers: ReaderVerdicts | None = None  # the reader verdicts, when asked for (`--readers`)

    @property
    def name(self) -> str:
        """The input as the user named it: the store, followed by the node when a path inside the store was given."""
        return self.source if self.node == "/" else self.source.rstrip("/") + self.node

    def __iter__(self) -> Iterator[ClauseResult]:
        return iter(self.results)

    def sharing_rules(self, rules: dict[tuple[str, str], Rule]) -> Report:
        """This report with each of its rules replaced by the equal one `rules` already holds (and `rules` given the
        ones it lacked).

        A report that comes from another process (a `--jobs` worker, a `--timeout` child, a Dask worker) brings its
        own copies of the rules it was checked against, which are most of its size: a run of thousands of inputs
        would hold thousands of copies of each rule, where a run in one process holds one."""

        def shared(result: ClauseResult) -> ClauseResult:
            rule = rules.setdefault(result.rule.key, result.rule)
            return result if rule is result.rule or rule != result.rule else replace(result, rule=rule)

        return replace(self, results=tuple(map(shared, self.results)), context=tuple(map(shared, self.context)))

    @property
    def failures(self) -> list[ClauseResult]:
        return [r for r in self.results if r.status is Status.FAILED]

    @property
    def not_checked(self) -> list[ClauseResult]:
        """The clauses checked on none of their nodes (`Status.NOT_CHECKED`)."""
        return [r for r in self.results if r.status is Status.NOT_CHECKED]

    def unchecked_at(self, level: Level | str) -> list[ClauseResult]:
        """The clauses at `level` or stricter that were not judged on every node they select: not checked at all,
        or passed with nodes not checked (a failed clause fails anyway). A notice rule's clauses are left out: they
        fail nothing. What `--fail-on-unchecked` fails a run on."""
        level = _level(level)
        return [
            r
            for r in self.results
            if r.rule.level.rank >= level.rank
            and not r.rule.notice
            and (r.status is Status.NOT_CHECKED or (r.status is Status.PASSED and bool(r.unchecked_count or r.unchecked)))
        ]

    def summary(self) -> dict[str, dict[str, int]]:
        """Counts of clause results per level and status."""
        counts: dict[str, Counter[str]] = {lvl.value: Counter() for lvl in Level}
        for r in self.results:
            counts[r.rule.level.value][r.status.value] += 1
        return {lvl: {s.value: c[s.value] for s in Status} for lvl, c in counts.items()}

    def fails_at(self, level: Level | str, unchecked: bool = False) -> bool:
        """True when a clause at `level` ("must", "should", "may" in any case, or a Level) or stricter failed,
        errored, the store had unreadable parts, the input could not be opened, or a scope is of an era before its
        spec (a legacy verdict, which counts as a MUST failure). With `unchecked` (`--fail-on-unchecked`), also
        when a clause at `level` or stricter was not judged on every node it selects (`unchecked_at`)."""
        level = _level(level)
        if self.problems or self.error is not None or self.legacy:
            return True
        if unchecked and self.unchecked_at(level):
            return True
        return any(r.status in (Status.FAILED, Status.ERROR) and r.rule.level.rank >= level.rank for r in self.results)


def _level(level: Level | str) -> Level:
    """A Level, or its name in any case."""
    return Level(level.upper()) if isinstance(level, str) and not isinstance(level, Level) else level
