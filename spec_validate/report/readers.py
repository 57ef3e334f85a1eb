"""The reader verdicts as every output format shows them: contiguous measured versions with one verdict (and the same
facts) grouped into ranges for display, and the text lines of a report's Readers section."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from spec_validate.model import DOES_NOT_OPEN, OPENS, ReaderFact, ReaderVerdict, ReaderVersion
from spec_validate.report.verdict import reader_gate

if TYPE_CHECKING:
    from spec_validate.model import Report


class VersionRun(NamedTuple):
    """Contiguous measured versions of one reader with one prediction (no version between them was measured)."""

    first: str
    last: str
    verdict: str
    facts: tuple[ReaderFact, ...]
    reason: str

    @property
    def label(self) -> str:
        return self.first if self.first == self.last else f"{self.first} to {self.last}"


def runs(reader: ReaderVerdict) -> list[VersionRun]:
    """The reader's measured versions, oldest first, grouped where neighbours share verdict, facts and reason."""
    out: list[VersionRun] = []
    for v in reader.versions:
        key = (v.verdict, tuple(f.rule for f in v.facts), v.reason)
        if out and (out[-1].verdict, tuple(f.rule for f in out[-1].facts), out[-1].reason) == key:
            out[-1] = out[-1]._replace(last=v.version)
        else:
            out.append(VersionRun(v.version, v.version, v.verdict, v.facts, v.reason))
    return out


def why(run: VersionRun | ReaderVersion) -> str:
    """Why a run of versions does not open the store (each fact, its outcome and one case that showed it), or why its
    verdict is unknown."""
    if run.facts:
        return "; ".join(describe_fact(f) for f in run.facts)
    return run.reason


def describe_fact(fact: ReaderFact) -> str:
    return f"{fact.fact} ({fact.outcome}, as measured on {fact.cases[0]}; {fact.rule})"


def opening(reader: ReaderVerdict) -> str:
    """The versions predicted to open the store, as ranges: `0.11.4 to 0.13.4`, or `none`."""
    labels = [r.label for r in runs(reader) if r.verdict == OPENS]
    return ", ".join(labels) or "none"


def text_lines(report: Report) -> list[str]:
    """The Readers section of the text report (indented two spaces under the input); none without verdicts."""
    verdicts = report.readers
    if verdicts is None:
        return []
    measured = f"as measured {verdicts.measured}" if verdicts.measured else "no measurements"
    lines = [f"  Readers ({verdicts.format or 'no measured format'}; {measured}):"]
    if not verdicts.readers:
        lines.append(f"    no reader verdicts: {verdicts.note or 'no reader was measured on ' + str(verdicts.format)}")
    for reader in verdicts.readers:
        lines.append(f"    {reader.reader}: opens {opening(reader)}")
        for run in runs(reader):
            if run.verdict != OPENS:
                lines.append(f"      {run.verdict} {run.label}: {why(run)}")
    for miss in reader_gate(report):
        lines.append(f"    GATE {miss.message}")
    return lines


def table_rows(report: Report) -> list[tuple[str, str, str, str]]:
    """(reader, versions, verdict, why) per run of versions, for the tables of the HTML and Markdown reports."""
    if report.readers is None:
        return []
    return [(reader.reader, run.label, run.verdict, why(run)) for reader in report.readers.readers for run in runs(reader)]


def does_not_open(report: Report) -> list[tuple[ReaderVerdict, ReaderVersion]]:
    """Every measured version predicted not to open the store, with its reader."""
    if report.readers is None:
        return []
    return [(r, v) for r in report.readers.readers for v in r.versions if v.verdict == DOES_NOT_OPEN]
