"""Rules and packs as frozen data, as loaded from YAML."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from validator.report.model import Level


@dataclass(frozen=True)
class Writer:
    """A real writer whose files depart from the clause: the report shows the note on failure."""

    name: str
    versions: str
    note: str


@dataclass(frozen=True)
class CheckStep:
    primitive: str
    options: Mapping[str, Any]


@dataclass(frozen=True)
class Rule:
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
    source_file: str = ""

    @property
    def derived(self) -> bool:
        return self.basis == "derived"


@dataclass(frozen=True)
class Pack:
    name: str
    title: str
    version: str
    spec_source: str  # the spec file the clauses are quoted from
    path: str  # the YAML file
    rules: tuple[Rule, ...]
    scope: Mapping[str, Any] = field(default_factory=dict)
    shapes: Mapping[str, Any] = field(default_factory=dict)
    dimensions: Mapping[str, Any] = field(default_factory=dict)
    formats: tuple[str, ...] = ()
    redirects: Mapping[str, str] = field(default_factory=dict)
    known_values: Mapping[str, Any] = field(default_factory=dict)
