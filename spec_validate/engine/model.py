"""Rules and packs as frozen data, as loaded from YAML."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from spec_validate.primitive_api import Level


class Writer(NamedTuple):
    """A real writer whose files depart from the clause: the report shows the note on failure."""

    name: str
    versions: str
    note: str


class Legacy(NamedTuple):
    """Eras of files that predate the spec a pack checks: such a scope gets one verdict, `<pack>.legacy`."""

    clause: str  # the spec's own sentence about such files, verbatim
    section: str
    eras: Mapping[str, str]  # era id (spec_validate.engine.provenance) -> what such a file is and what readers do


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
    notice: str | None = None  # "security": a failure is reported as a notice (status notice), never as a failure

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
