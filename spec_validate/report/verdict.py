"""One input's verdict and the run's exit code, decided once for every format: a summary never contradicts the exit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

from spec_validate.model import LEGACY_REASON, ClauseResult, Level, Status
from spec_validate.report.baseline import Baseline, located, new_failures

if TYPE_CHECKING:
    from spec_validate.model import LegacyVerdict, Report

CONFORMS = "conforms"
DOES_NOT_CONFORM = "does not conform"
NOTHING_CHECKED = "nothing checked"
ERROR = "error"
SKIPPED = "skipped"


class Verdict(NamedTuple):
    """What one input came to at `--fail-on`, with the baseline applied."""

    outcome: str  # one of CONFORMS, DOES_NOT_CONFORM, NOTHING_CHECKED, ERROR, SKIPPED
    new: int = 0  # failing findings at or above --fail-on that are not in the baseline: these fail the run
    known: int = 0  # failing findings (any level) that the baseline holds: reported, not failing
    unchecked: int = 0  # clauses with selected nodes that could not be checked (not decoded, unreadable)
    reason: str = ""  # why nothing was checked, why the input was skipped, or the error

    @property
    def fails(self) -> bool:
        return self.outcome in (DOES_NOT_CONFORM, ERROR)

    def describe(self) -> str:
        """The outcome with what qualifies it, in one phrase: `conforms (1 known failure in the baseline)`."""
        if self.outcome in (ERROR, SKIPPED, NOTHING_CHECKED):
            return f"{self.outcome}: {self.reason}" if self.reason else self.outcome
        notes = []
        if self.known:
            notes.append(f"{self.known} known failure(s) in the baseline")
        if self.unchecked:
            notes.append(f"{self.unchecked} clause(s) not fully checked")
        return self.outcome + (f" ({'; '.join(notes)})" if notes else "")


def verdict(report: Report, fail_on: Level, baseline: Baseline | None = None) -> Verdict:
    """The verdict on `report`: failures are counted with the baseline, as the exit code counts them."""
    if report.error is not None:
        return Verdict(ERROR, reason=report.error)
    if report.skipped is not None:
        return Verdict(SKIPPED, reason=report.skipped)
    new = len(new_failures(report, fail_on, baseline))
    known = sum(1 for item in located(report) if baseline is not None and baseline.is_known(item))
    unchecked = sum(1 for r in report.results if r.unchecked)
    if new:
        return Verdict(DOES_NOT_CONFORM, new, known, unchecked)
    if (
        not known
        and not report.problems
        and not any(r.status in (Status.PASSED, Status.FAILED, Status.ERROR) for r in report.results)
    ):
        return Verdict(NOTHING_CHECKED, unchecked=unchecked, reason=_why_nothing(report))
    return Verdict(CONFORMS, new, known, unchecked)


def sentence(report: Report, v: Verdict, fail_on: Level) -> str:
    """The verdict as the text and HTML reports print it, starting with the outcome:
    `conforms at --fail-on must (...). MUST: 0 failed, 85 passed, 4 n/a; ...`, or `nothing checked: why.`"""
    if v.outcome not in (CONFORMS, DOES_NOT_CONFORM):
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
    if v.unchecked:
        notes.append(f"{v.unchecked} clause(s) not fully checked: nodes not decoded, not readable or not listed")
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
            f"the nodes the {len(report.results)} selected clause(s) apply to could not be checked (not decoded or "
            "not readable), listed above"
        )
    where = "at or below " + report.node if report.node != "/" else "in this store"
    return f"none of the {len(report.results)} selected clause(s) applies to a node {where}"


def exit_code(reports: Sequence[Report], fail_on: Level, baseline: Baseline | None = None, exit_zero: bool = False) -> int:
    """2 when an input could not be opened; else 1 when an input does not conform (unless `exit_zero`); else 0."""
    verdicts = [verdict(r, fail_on, baseline) for r in reports]
    if any(v.outcome == ERROR for v in verdicts):
        return 2
    if not exit_zero and any(v.fails for v in verdicts):
        return 1
    return 0
