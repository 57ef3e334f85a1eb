"""What a store carries about when and by what it was written: the era of its layout and its likely writers.

Read from metadata only (attributes, the layout of groups and arrays, and for Zarr the raw text of a few
metadata documents), never from array data. Each finding names its evidence, so a report can say why it
thinks a file is an anndata 0.7 file, or that its Zarr documents were written by zarr-python 3.

A writer is identified per *role* (the layer of the store it wrote: the Zarr documents, the AnnData
elements, ...). Two writers of one role exclude each other: a store whose Zarr documents tensorstore wrote
was not written by zarr-python. `Provenance.fits` decides whether a rule's writer note may be shown on a
store: when the store shows that writer, or shows nothing that contradicts it.

Detectors sit beside the format they date, one module per spec family in this package, each registered with
`@detector` (its name, and the roles of the writers it can tell). The modules are found, not listed: a new
one needs no entry anywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from spec_validate.discovery import PackageModules, claim
from spec_validate.engine import activity
from spec_validate.engine.provenance.model import Era, WriterMark, overlap
from spec_validate.nodes.base import Tree

__all__ = ["Detector", "Era", "Provenance", "WriterMark", "detect", "detector", "detectors", "roles"]

_PACKAGE = "spec_validate.engine.provenance"
_NOT_DETECTORS = ("model",)

DetectorFn = Callable[[Tree], Iterable[Era | WriterMark]]


class Detector(NamedTuple):
    name: str
    function: DetectorFn  # the eras and writer marks a tree shows; it may raise on odd metadata (then it found nothing)
    roles: Mapping[str, str]  # writer name (as packs' `writers:` name it) -> the role it plays


DETECTORS: dict[str, Detector] = {}
# Which role each writer the detectors can tell plays, so a note can be matched against what the store shows.
# A writer no detector names is never contradicted (nothing is known about it).
_ROLES: dict[str, str] = {}
_MODULES = PackageModules(_PACKAGE, skip=_NOT_DETECTORS)


def detector(name: str, *, roles: Mapping[str, str] | None = None) -> Callable[[DetectorFn], DetectorFn]:
    """Register an era and writer detector, `(tree) -> Iterable[Era | WriterMark]`, under `name`.

    `roles`: the writers it tells, each with the role (the layer of the store) it plays there. A writer has one
    role whichever detector names it.
    """

    def register(function: DetectorFn) -> DetectorFn:
        claim(DETECTORS, name, function, "era and writer detector", lambda d: d.function)
        for writer, role in (roles or {}).items():
            if _ROLES.get(writer, role) != role:
                raise RuntimeError(f"writer {writer!r} is given two roles: {_ROLES[writer]!r} and {role!r}")
        _ROLES.update(roles or {})
        DETECTORS[name] = Detector(name, function, dict(roles or {}))
        return function

    return register


def detectors() -> list[Detector]:
    """Every detector, in the order of its module's name and then of its place in the module (whatever order
    their modules were imported in), so the eras and writers of a report are always listed alike."""
    _MODULES.load()
    return sorted(DETECTORS.values(), key=lambda d: (d.function.__module__, d.function.__code__.co_firstlineno))


def roles() -> dict[str, str]:
    """Writer name -> the role it plays, for every writer a detector tells."""
    _MODULES.load()
    return dict(_ROLES)


class Provenance(NamedTuple):
    eras: tuple[Era, ...] = ()
    writers: tuple[WriterMark, ...] = ()

    def era_at(self, path: str, family: str) -> Era | None:
        return next((e for e in self.eras if e.path == path and e.family == family), None)

    def fits(self, name: str, versions: str = "") -> bool:
        """Whether a note about writer `name` (`versions`) may be shown on this store.

        Yes when the store shows that writer (and, where both versions are specifiers, they overlap), or shows
        no writer for the role the writer plays; no when it shows another writer of that role, or this writer
        in versions the note's do not include.
        """
        _MODULES.load()
        role = _ROLES.get(name)
        shown = [w for w in self.writers if w.name == name]
        if shown:
            return any(overlap(w.versions, versions) for w in shown)
        if role is None:
            return True
        return not any(w.role == role for w in self.writers)

    def evidence(self, name: str, versions: str = "") -> str | None:
        """What shows the store was written by writer `name` in versions overlapping `versions`: the evidence of
        the first such mark, or None when the store shows no such writer (a note about it is then only likely)."""
        return next((w.evidence for w in self.writers if w.name == name and overlap(w.versions, versions)), None)

    def describe(self) -> str:
        """One line for a report header: the eras and the likely writers."""
        parts = []
        eras = sorted({e.label for e in self.eras})
        if eras:
            parts.append("era: " + "; ".join(eras))
        writers = []
        for w in self.writers:
            if w.label not in writers:
                writers.append(w.label)
        if writers:
            parts.append("likely written by " + ", ".join(writers))
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "eras": [
                {"family": e.family, "path": e.path, "id": e.id, "label": e.label, "evidence": list(e.evidence)}
                for e in self.eras
            ],
            "writers": [{"name": w.name, "versions": w.versions, "role": w.role, "evidence": w.evidence} for w in self.writers],
        }


def detect(tree: Tree) -> Provenance:
    """The eras and likely writers a store shows. Reads metadata only; never raises on odd metadata."""
    eras: list[Era] = []
    writers: list[WriterMark] = []
    for d in detectors():
        for item in _found(d, tree):
            (eras if isinstance(item, Era) else writers).append(item)
    return Provenance(tuple(eras), tuple(_dedupe(writers)))


def _found(d: Detector, tree: Tree) -> list[Any]:
    """Detection never breaks a run: a detector that meets metadata it cannot read finds nothing."""
    activity.reading(f"reading metadata to recognise the era and writer ({d.name})")
    try:
        return list(d.function(tree))
    except Exception:  # noqa: BLE001 (odd metadata is the rules' business, not provenance's)
        return []


def _dedupe(writers: list[WriterMark]) -> Iterator[WriterMark]:
    seen = set()
    for w in writers:
        if (w.name, w.versions, w.role) not in seen:
            seen.add((w.name, w.versions, w.role))
            yield w
