"""The reader verdicts on one store: for its coarse format and each reader measured on it, each measured version
opens, does not open (with every rule that fires), or is unknown (never measured on the format, a fact the
measurements never saw, a fact not decided in this run). Versions between measured ones are never interpolated."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from spec_validate.engine.readers.conditions import holds
from spec_validate.engine.readers.facts import StoreFacts, store_facts, unseen
from spec_validate.engine.readers.formats import coarse_format
from spec_validate.engine.readers.packs import ReaderRule, Readers
from spec_validate.errors import InputError
from spec_validate.model import DOES_NOT_OPEN, OPENS, UNKNOWN, ReaderFact, ReaderVerdict, ReaderVerdicts, ReaderVersion

if TYPE_CHECKING:
    from packaging.version import Version

    from spec_validate.nodes.base import Tree

# How many of the store's unseen facts an unknown verdict names (the report's `unseen` lists them all).
NAMED_UNSEEN = 3


def predict(facts: StoreFacts | None, fmt: str | None, readers: Readers, required: Sequence[str] = ()) -> ReaderVerdicts:
    """The verdicts of every reader measured on `fmt` for a store with `facts` (None: the store could not be read)."""
    measured = readers.measured
    if fmt is None or facts is None:
        why = "the store could not be read" if facts is None else "no measured format fits this store"
        return ReaderVerdicts(fmt, measured.date, (), (), tuple(required), note=why)
    new = unseen(facts, measured.vocabulary.get(fmt))
    verdicts = []
    for name in readers.names:
        versions = measured.readers.get(name, {})
        if not any(fmt in formats for formats in versions.values()):
            continue  # never measured on this format: nothing to say per version
        pack = readers.pack(name)
        rules = [r for r in (pack.rules if pack else ()) if fmt in r.formats]
        decided = {r.id: holds(r.when, facts) for r in rules}
        out = []
        for version in sorted(versions, key=_version):
            if fmt not in versions[version]:
                out.append(ReaderVersion(version, UNKNOWN, reason=f"not measured on {fmt}"))
                continue
            concerned = [r for r in rules if _in(version, r.versions)]
            fired = [r for r in concerned if decided[r.id] is True]
            if fired:
                out.append(ReaderVersion(version, DOES_NOT_OPEN, tuple(_fact(r) for r in fired)))
            elif undecided := [r for r in concerned if decided[r.id] is None]:
                why = f"{undecided[0].id} not decided: a clause it names was not evaluated"
                out.append(ReaderVersion(version, UNKNOWN, reason=why))
            elif new:
                more = f" and {len(new) - NAMED_UNSEEN} more" if len(new) > NAMED_UNSEEN else ""
                named = ", ".join(new[:NAMED_UNSEEN])
                out.append(ReaderVersion(version, UNKNOWN, reason=f"no measured {fmt} case had {named}{more}"))
            else:
                out.append(ReaderVersion(version, OPENS))
        verdicts.append(ReaderVerdict(name, pack.title if pack else name, tuple(out)))
    return ReaderVerdicts(fmt, measured.date, tuple(verdicts), tuple(new), tuple(required))


def store_verdicts(
    tree: Tree,
    applied: Mapping[str, Sequence[str]],
    failed: Iterable[str],
    evaluated: Iterable[str],
    readers: Readers,
    required: Sequence[str] = (),
    noticed: Iterable[str] = (),
) -> ReaderVerdicts:
    """The verdicts on an opened store, validated: `applied` maps each pack name (and those of the packs it extends)
    to the scope roots it was applied at; `failed` and `evaluated` are the clause ids (legacy verdicts included)
    its validation failed and evaluated, `noticed` the notice rules that reported findings."""
    facts = store_facts(tree, failed, evaluated, noticed)
    try:
        attrs = tree.root.attrs
    except Exception:  # noqa: BLE001 (unreadable root attributes: the validation reports them)
        attrs = {}
    return predict(facts, coarse_format(tree.format, applied, attrs), readers, required)


def check_requirements(texts: Sequence[str], readers: Readers) -> tuple[str, ...]:
    """The gate's requirement strings (`anndata>=0.10`), each a PEP 440 requirement naming a known reader, with
    nothing but a name and a specifier set; InputError naming the first bad one."""
    from packaging.requirements import InvalidRequirement, Requirement

    known = readers.names
    for text in texts:
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise InputError(f"--readers {text!r}: not a requirement such as 'anndata>=0.10' ({exc})") from None
        if req.extras or req.marker or req.url:
            raise InputError(f"--readers {text!r}: a reader and versions only, such as 'anndata>=0.10'")
        if req.name not in known:
            raise InputError(f"--readers {text!r}: no reader named {req.name!r} (known: {', '.join(known) or 'none'})")
    return tuple(texts)


def _fact(rule: ReaderRule) -> ReaderFact:
    return ReaderFact(rule.id, rule.fact, rule.outcome, rule.cases)


def _version(text: str) -> Version:
    from packaging.version import Version

    return Version(text)


def _in(version: str, specifiers: str) -> bool:
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(specifiers).contains(version, prereleases=True)
