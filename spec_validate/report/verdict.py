"""One input's verdict and the run's exit code, decided once for every format: a summary never contradicts the exit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

from spec_validate.model import LEGACY_REASON, OPENS, ClauseResult, Level, Status
from spec_validate.report.baseline import Baseline, located, new_failures

if TYPE_CHECKING:
    from spec_validate.model import LegacyVerdict, Report

CONFORMS = "conforms"
DOES_NOT_CONFORM = "does not conform"
# --fail-on-unchecked: no failure, but a clause at or above --fail-on was not judged on every node it selects.
NOT_FULLY_CHECKED = "not fully checked"
NOTHING_CHECKED = "nothing checked"
ERROR = "error"
SKIPPED = "skipped"


class Verdict(NamedTuple):
    """What one input came to at `--fail-on`, with the baseline applied."""

    outcome: str  # one of CONFORMS, DOES_NOT_CONFORM, NOT_FULLY_CHECKED, NOTHING_CHECKED, ERROR, SKIPPED
    new: int = 0  # failing findings at or above --fail-on that are not in the baseline: these fail the run
    known: int = 0  # failing findings (any level) that the baseline holds: reported, not failing
    # clauses with selected nodes that could not be checked (needs --deep, not decoded, unreadable), whatever their
    # status: those not checked at all (`not_checked`) and those that passed on their other nodes
    unchecked: int = 0
    reason: str = ""  # why nothing was checked, why the input was skipped, or the error
    not_checked: int = 0  # clauses of status not checked (any level): checked on none of their nodes

    @property
    def fails(self) -> bool:
        return self.outcome in (DOES_NOT_CONFORM, NOT_FULLY_CHECKED, ERROR)

    @property
    def partly_checked(self) -> int:
        """Clauses judged on some nodes (passed or failed) that could not be checked on others."""
        return max(0, self.unchecked - self.not_checked)

    def unchecked_notes(self) -> list[str]:
        """What was not checked, as the verdict qualifies itself: `2 clause(s) not checked`, `1 not fully`."""
        notes = []
        if self.not_checked:
            notes.append(f"{self.not_checked} clause(s) not checked")
        if self.partly_checked:
            notes.append(f"{self.partly_checked} clause(s) not fully checked")
        return notes

    def describe(self) -> str:
        """The outcome with what qualifies it, in one phrase: `conforms (1 known failure in the baseline)`."""
        if self.outcome in (ERROR, SKIPPED, NOTHING_CHECKED):
            return f"{self.outcome}: {self.reason}" if self.reason else self.outcome
        notes = []
        if self.known:
            notes.append(f"{self.known} known failure(s) in the baseline")
        notes.extend(self.unchecked_notes())
        return self.outcome + (f" ({'; '.join(notes)})" if notes else "")


def verdict(report: Report, fail_on: Level, baseline: Baseline | None = None, fail_on_unchecked: bool = False) -> Verdict:
    """The verdict on `report`: failures are counted with the baseline, as the exit code counts them. With
    `fail_on_unchecked` (--fail-on-unchecked), a report without new failures in which a clause at or above
    `fail_on` was not judged on every node it selects (`Report.unchecked_at`) is NOT_FULLY_CHECKED, which fails."""
    if report.error is not None:
        return Verdict(ERROR, reason=report.error)
    if report.skipped is not None:
        return Verdict(SKIPPED, reason=report.skipped)
    new = len(new_failures(report, fail_on, baseline))
    known = sum(1 for item in located(report) if baseline is not None and baseline.is_known(item))
    unchecked = sum(1 for r in report.results if r.unchecked or r.unchecked_count)
    not_checked = len(report.not_checked)
    counts = {"new": new, "known": known, "unchecked": unchecked, "not_checked": not_checked}
    if new:
        return Verdict(DOES_NOT_CONFORM, **counts)
    if fail_on_unchecked and report.unchecked_at(fail_on):
        at = len(report.unchecked_at(fail_on))
        reason = f"--fail-on-unchecked: {at} clause(s) at {fail_on.value} or stricter not judged on every node"
        return Verdict(NOT_FULLY_CHECKED, reason=reason, **counts)
    if (
        not known
        and not report.problems
        and not any(r.status in (Status.PASSED, Status.FAILED, Status.ERROR) for r in report.results)
    ):
        return Verdict(NOTHING_CHECKED, unchecked=unchecked, not_checked=not_checked, reason=_why_nothing(report))
    return Verdict(CONFORMS, **counts)


def sentence(report: Report, v: Verdict, fail_on: Level) -> str:
    """The verdict as the text and HTML reports print it, starting with the outcome:
    `conforms at --fail-on must (...). MUST: 0 failed, 85 passed, 4 n/a; ...`, or `nothing checked: why.`"""
    if v.outcome not in (CONFORMS, DOES_NOT_CONFORM, NOT_FULLY_CHECKED):
        return f"{v.outcome}: {v.reason}."
    # The clauses a legacy verdict stands for were not checked: counted apart, never as the store's "n/a".
    stood = sum(1 for r in report.results if stood_for(r))
    checked = replace(report, results=tuple(r for r in report.results if not stood_for(r)))
    summary = checked.summary()
    parts = []
    for lvl in ("MUST", "SHOULD", "MAY"):
        c = summary[lvl]
        if sum(c.values()):
            parts.append(
                f"{lvl}: {c['failed']} failed, {c['passed']} passed, {c['not_applicable']} n/a"
                + (f", {c['not_checked']} not checked" if c.get("not_checked") else "")
                + (f", {c['error']} error" if c["error"] else "")
                + (f", {c['notice']} notice" if c.get("notice") else "")
            )
    notes = []
    failing_legacy = report.legacy and v.outcome == DOES_NOT_CONFORM  # a verdict standing for a legacy file's clauses
    if failing_legacy:
        ids = ", ".join(sorted({lv.id for lv in report.legacy}))
        what = f"the {stood} clause(s) that depend on the era" if stood else "an era before the spec"
        notes.append(f"legacy: {ids} stands for {what}; --ignore {ids} to accept such files")
    elif stood:  # the legacy verdict ignored (or known in the baseline): what it would stand for is still unchecked
        notes.append(f"legacy: {stood} clause(s) that depend on the era not checked; --all-clauses checks them")
    if v.known:
        notes.append(f"{v.new} new failure(s), {v.known} known in the baseline")
    if v.outcome == NOT_FULLY_CHECKED:
        notes.append(v.reason)
    unchecked = v.unchecked_notes()
    if unchecked:  # "conforms" never stands alone when something was not checked
        notes.append(f"{', '.join(unchecked)}: each listed with why")  # --deep, the hierarchy, a codec...
    qualified = f" ({'; '.join(notes)})" if notes else ""
    counts = "; ".join(parts)
    if stood:  # what was checked on the legacy file, whatever its era
        if not checked.results:
            counts = "No clause is checked on a file of this era"
        elif any(r.status is not Status.NOT_APPLICABLE for r in checked.results):
            counts = f"Checked whatever the era: {counts}"
        else:
            counts = f"None of the {len(checked.results)} clause(s) checked whatever the era applies to a node here"
    return f"{v.outcome} at --fail-on {fail_on.value.lower()}{qualified}. " + counts


def legacy_checks(report: Report, lv: LegacyVerdict) -> str:
    """What a legacy verdict stands for, and what was checked at its scope whatever the era and how it went (its
    failures are the report's like any other): `It stands for the 64 clause(s) that depend on the era; the 31 that
    hold in every era are checked: 1 failed (below); --all-clauses checks the others`."""
    if not lv.still_checked:
        return f"It stands for the {lv.stands_for} clause(s) of the pack; --all-clauses checks them"
    kept = set(lv.still_checked)
    results = [r for r in report.results if r.rule.id in kept]
    failed = sum(1 for r in results if r.status in (Status.FAILED, Status.ERROR))
    passed = sum(1 for r in results if r.status is Status.PASSED)
    how = f"{failed} failed (below)" if failed else f"{passed} passed, none failed" if passed else "none applies here"
    return (
        f"It stands for the {lv.stands_for} clause(s) that depend on the era; the {len(kept)} that hold in every era "
        f"are checked: {how}; --all-clauses checks the others"
    )


def stood_for(result: ClauseResult) -> bool:
    """Whether a clause was left unchecked because a legacy verdict stands for it (an era before the spec)."""
    return result.status is Status.NOT_APPLICABLE and (result.reason or "").startswith(LEGACY_REASON)


def _why_nothing(report: Report) -> str:
    packs = ", ".join(f"{p.name} {p.version}" for p in report.packs)
    if not report.results:
        return f"no selected rule belongs to a pack that applies here ({packs})"
    stood = sum(1 for r in report.results if stood_for(r))
    if stood:
        others = len(report.results) - stood
        rest = f", and none of the {others} clause(s) checked whatever the era applies to a node in it" if others else ""
        return (
            f"the store is of an era before the spec (legacy): {stood} clause(s) that depend on the era are not "
            f"checked{rest}; --all-clauses checks them"
        )
    if any(r.unchecked for r in report.results):
        return (
            f"the nodes the {len(report.results)} selected clause(s) apply to could not be checked (needing --deep, "
            "not decoded or not readable), listed above"
        )
    where = "at or below " + report.node if report.node != "/" else "in this store"
    return f"none of the {len(report.results)} selected clause(s) applies to a node {where}"


class GateMiss(NamedTuple):
    """A reader requirement of the gate (`--readers 'anndata>=0.10'`) that one input does not meet."""

    requirement: str
    reader: str
    version: str | None  # the measured version predicted not to open, or unknown; None: no measured version in range
    verdict: str  # "does not open", "unknown", or "" where no measured version lies in the range
    message: str  # one line: which version and which fact


def reader_gate(report: Report) -> list[GateMiss]:
    """The requirements of the reader gate `report` does not meet: every measured version of the reader inside the
    requirement's range must be predicted to open the store, and at least one must lie in it."""
    verdicts = report.readers
    if verdicts is None or not verdicts.required:
        return []
    from packaging.requirements import Requirement

    misses = []
    for text in verdicts.required:
        req = Requirement(text)
        found = verdicts.reader(req.name)
        inside = [v for v in (found.versions if found else ()) if req.specifier.contains(v.version, prereleases=True)]
        if not inside:
            where = f"on {verdicts.format}" if verdicts.format else f"on this store ({verdicts.note})"
            message = f"{text}: no version of {req.name} in the range was measured {where}"
            misses.append(GateMiss(text, req.name, None, "", message))
        for v in inside:
            if v.verdict == OPENS:
                continue
            if v.facts:
                first = v.facts[0]
                why = f"{first.fact} ({first.outcome}, as measured on {first.cases[0]}; {first.rule})"
            else:
                why = v.reason
            message = f"{text}: {req.name} {v.version} {v.verdict}: {why}"
            misses.append(GateMiss(text, req.name, v.version, v.verdict, message))
    return misses


def exit_code(
    reports: Sequence[Report],
    fail_on: Level,
    baseline: Baseline | None = None,
    exit_zero: bool = False,
    fail_on_unchecked: bool = False,
) -> int:
    """The run's exit code, the first that applies: 2 when an input could not be opened; 1 when an input does not
    conform, or (with `fail_on_unchecked`) was not fully checked at `fail_on`; 3 when an input fails the reader gate
    (`--readers 'anndata>=0.10'`: a measured version in the range is predicted not to open it, or is unknown, or no
    measured version lies in the range); else 0. `exit_zero` turns 1 and 3 into 0 (never 2)."""
    verdicts = [verdict(r, fail_on, baseline, fail_on_unchecked) for r in reports]
    if any(v.outcome == ERROR for v in verdicts):
        return 2
    if exit_zero:
        return 0
    if any(v.fails for v in verdicts):
        return 1
    if any(reader_gate(r) for r in reports):
        return 3
    return 0
