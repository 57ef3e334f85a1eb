"""Which of a rule's writer notes a finding gets: those whose values it holds, of a writer the store fits.

A note explains particular values (`Writer.when`: finding detail key -> accepted values), so it is attached only
to a finding whose details hold them; a note that explained away a finding it does not describe would invite
users to dismiss a real failure. Then the store must fit the writer (`Provenance.fits`): the note is *detected*
when the store shows that writer, and only *likely* when it shows no writer of that kind, which the report says.

How values compare: both sides as text (`as_text`: JSON's spelling for true, false and null, `str` otherwise),
each accepted value a shell-style pattern (`fnmatch`: `*` any run of characters, so `"|S*"` is every byte-string
dtype; `?` and `[...]` are special too); a list value (the fields that differ) matches when it is not empty and
each of its items does. Besides the finding's details, `when` may name `path`, the finding's node path (as a
rule's `message` template may).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from spec_validate.model import Finding, Provenance, Writer, WriterNote

__all__ = ["as_text", "attach", "describes", "fitting", "values_explained"]


def as_text(value: Any) -> str:
    """A detail value or an accepted value as the text they are compared by."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    return str(value)


def _matches(value: Any, accepted: Sequence[str]) -> bool:
    if isinstance(value, (list, tuple)):
        return bool(value) and all(_matches(item, accepted) for item in value)
    text = as_text(value)
    return any(fnmatchcase(text, pattern) for pattern in accepted)


def describes(writer: Writer, values: Mapping[str, Any]) -> bool:
    """Whether the finding whose details (and `path`) are `values` holds every value the note explains.

    A note with no `when` describes no finding: it names no values, so it cannot be told to fit one.
    """
    if not writer.when:
        return False
    return all(key in values and _matches(values[key], accepted) for key, accepted in writer.when)


def fitting(writers: Sequence[Writer], provenance: Provenance | None) -> tuple[Writer, ...]:
    """The notes whose writer fits the store (none without a provenance)."""
    if provenance is None:
        return ()
    return tuple(w for w in writers if provenance.fits(w.name, w.versions))


def attach(writers: Sequence[Writer], finding: Finding, path: str, provenance: Provenance | None) -> tuple[WriterNote, ...]:
    """The notes among `writers` (those that fit the store) that describe `finding` at `path`, each marked detected
    (with the store's evidence) or likely (with why)."""
    if provenance is None:
        return ()
    values = {**{k: v for k, v in finding.details.items() if isinstance(k, str)}, "path": path}
    notes = []
    for w in writers:
        if not describes(w, values):
            continue
        evidence = provenance.evidence(w.name, w.versions)
        notes.append(WriterNote(w, True, evidence) if evidence is not None else WriterNote(w, False, _likely(w)))
    return tuple(notes)


def values_explained(writer: Writer) -> str:
    """The values a note explains, for people: `path /uns or /obs; dtype uint64`."""
    return "; ".join(f"{key} {' or '.join(accepted)}" for key, accepted in writer.when)


def _likely(writer: Writer) -> str:
    """Why a note is shown though its writer is not detected: the finding holds the values the note explains."""
    return f"no writer of its kind is detected; the finding has the values the note explains: {values_explained(writer)}"
